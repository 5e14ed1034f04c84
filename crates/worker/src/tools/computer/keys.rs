//! The key table: names an agent writes ("Enter", "ctrl+a", "ArrowDown", "F5", "?") to the
//! `key`, `code`, `windowsVirtualKeyCode` and `text` that `Input.dispatchKeyEvent` needs, for a
//! US keyboard layout. Pure data and parsing, no browser.

#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub key: String,
    pub code: String,
    pub vk: u32,
    /// What the key types (None for control keys).
    pub text: Option<String>,
    /// Shift is needed to produce this character.
    pub shifted: bool,
}

/// CDP modifier bits.
pub const ALT: u32 = 1;
pub const CTRL: u32 = 2;
pub const META: u32 = 4;
pub const SHIFT: u32 = 8;

/// A modifier's bit and its own key, from a name.
pub fn modifier(name: &str) -> Option<(u32, Key)> {
    let (bit, key, code, vk) = match name.to_ascii_lowercase().as_str() {
        "ctrl" | "control" => (CTRL, "Control", "ControlLeft", 17),
        "shift" => (SHIFT, "Shift", "ShiftLeft", 16),
        "alt" | "option" | "opt" => (ALT, "Alt", "AltLeft", 18),
        "meta" | "cmd" | "command" | "win" | "windows" | "super" => (META, "Meta", "MetaLeft", 91),
        _ => return None,
    };
    Some((bit, control(key, code, vk)))
}

fn control(key: &str, code: &str, vk: u32) -> Key {
    Key {
        key: key.into(),
        code: code.into(),
        vk,
        text: None,
        shifted: false,
    }
}

/// Punctuation on a US keyboard: (unshifted, shifted, code, virtual key code).
const PUNCT: &[(char, char, &str, u32)] = &[
    ('`', '~', "Backquote", 192),
    ('-', '_', "Minus", 189),
    ('=', '+', "Equal", 187),
    ('[', '{', "BracketLeft", 219),
    (']', '}', "BracketRight", 221),
    ('\\', '|', "Backslash", 220),
    (';', ':', "Semicolon", 186),
    ('\'', '"', "Quote", 222),
    (',', '<', "Comma", 188),
    ('.', '>', "Period", 190),
    ('/', '?', "Slash", 191),
];
const SHIFTED_DIGITS: &str = ")!@#$%^&*(";

/// The key that types `c` on a US keyboard, if there is one.
pub fn for_char(c: char) -> Option<Key> {
    let text = Some(c.to_string());
    if c.is_ascii_lowercase() || c.is_ascii_uppercase() {
        let up = c.to_ascii_uppercase();
        return Some(Key {
            key: c.to_string(),
            code: format!("Key{up}"),
            vk: up as u32,
            text,
            shifted: c.is_ascii_uppercase(),
        });
    }
    if c.is_ascii_digit() {
        return Some(Key {
            key: c.to_string(),
            code: format!("Digit{c}"),
            vk: c as u32,
            text,
            shifted: false,
        });
    }
    if let Some(i) = SHIFTED_DIGITS.find(c) {
        return Some(Key {
            key: c.to_string(),
            code: format!("Digit{i}"),
            vk: 48 + i as u32,
            text,
            shifted: true,
        });
    }
    if c == ' ' {
        return Some(Key {
            key: " ".into(),
            code: "Space".into(),
            vk: 32,
            text,
            shifted: false,
        });
    }
    PUNCT.iter().find_map(|&(plain, shift, code, vk)| {
        (c == plain || c == shift).then(|| Key {
            key: c.to_string(),
            code: code.into(),
            vk,
            text: text.clone(),
            shifted: c == shift,
        })
    })
}

/// A named key ("Enter", "tab", "PageDown", "F4", "a", "?").
pub fn named(name: &str) -> Option<Key> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return for_char(c);
    }
    let lower = name.to_ascii_lowercase();
    let k = |key: &str, code: &str, vk: u32| Some(control(key, code, vk));
    match lower.as_str() {
        "enter" | "return" => Some(Key {
            text: Some("\r".into()),
            ..control("Enter", "Enter", 13)
        }),
        "tab" => k("Tab", "Tab", 9),
        "escape" | "esc" => k("Escape", "Escape", 27),
        "backspace" => k("Backspace", "Backspace", 8),
        "delete" | "del" => k("Delete", "Delete", 46),
        "insert" => k("Insert", "Insert", 45),
        "space" | "spacebar" => for_char(' '),
        "arrowup" | "up" => k("ArrowUp", "ArrowUp", 38),
        "arrowdown" | "down" => k("ArrowDown", "ArrowDown", 40),
        "arrowleft" | "left" => k("ArrowLeft", "ArrowLeft", 37),
        "arrowright" | "right" => k("ArrowRight", "ArrowRight", 39),
        "home" => k("Home", "Home", 36),
        "end" => k("End", "End", 35),
        "pageup" | "page_up" => k("PageUp", "PageUp", 33),
        "pagedown" | "page_down" => k("PageDown", "PageDown", 34),
        "capslock" => k("CapsLock", "CapsLock", 20),
        "contextmenu" | "menu" => k("ContextMenu", "ContextMenu", 93),
        _ => {
            if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u32>().ok()) {
                if (1..=12).contains(&n) {
                    let name = format!("F{n}");
                    return Some(control(&name, &name, 111 + n));
                }
            }
            modifier(&lower).map(|(_, key)| key)
        }
    }
}

/// One chord: modifier bits, the modifier keys in order, and the main key (None when the chord
/// is only modifiers, e.g. "shift").
#[derive(Debug, PartialEq)]
pub struct Chord {
    pub modifiers: u32,
    pub held: Vec<Key>,
    pub key: Option<Key>,
}

/// The key as Shift gives it: a character key's shifted character (its code and key code
/// unchanged); other keys as they are.
fn shifted(key: Key) -> Key {
    let mut chars = key.key.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return key;
    };
    let up = if c.is_ascii_lowercase() {
        Some(c.to_ascii_uppercase())
    } else if let Some(d) = c.to_digit(10) {
        SHIFTED_DIGITS.chars().nth(d as usize)
    } else {
        PUNCT
            .iter()
            .find(|&&(plain, ..)| plain == c)
            .map(|&(_, shift, ..)| shift)
    };
    match up {
        Some(up) => Key {
            key: up.to_string(),
            text: Some(up.to_string()),
            shifted: true,
            ..key
        },
        None => key,
    }
}

/// Parses "ctrl+shift+k"; an error names the part it doesn't know.
pub fn chord(text: &str) -> Result<Chord, String> {
    let parts: Vec<&str> = if text == "+" {
        vec!["+"]
    } else {
        text.split('+').collect()
    };
    let mut out = Chord {
        modifiers: 0,
        held: Vec::new(),
        key: None,
    };
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        if !last || modifier(part).is_some() && parts.len() > 1 {
            let (bit, key) = modifier(part).ok_or_else(|| {
                format!(
                    "Unknown modifier \"{part}\" in \"{text}\" (use ctrl, shift, alt, cmd/meta)."
                )
            })?;
            out.modifiers |= bit;
            out.held.push(key);
        } else {
            let key = named(part).ok_or_else(|| {
                format!("Unknown key \"{part}\" in \"{text}\". Keys are names like Enter, Tab, Escape, Backspace, Delete, ArrowUp, Home, PageDown, F5, Space, or single characters; chords join them with +, e.g. ctrl+a.")
            })?;
            if modifier(part).is_some() {
                out.modifiers |= modifier(part).map(|m| m.0).unwrap_or(0);
                out.held.push(key);
            } else if out.modifiers & SHIFT != 0 {
                // Shift held: the key gives its shifted character, as on a keyboard
                // ("shift+a" is "A", "shift+1" is "!").
                out.key = Some(shifted(key));
            } else {
                out.key = Some(key);
            }
        }
    }
    Ok(out)
}

/// Modifier bits from the `modifiers` argument of clicks ("ctrl+shift").
pub fn modifier_bits(text: &str) -> Result<u32, String> {
    text.split('+')
        .filter(|p| !p.trim().is_empty())
        .try_fold(0, |acc, p| {
            modifier(p.trim())
                .map(|(bit, _)| acc | bit)
                .ok_or_else(|| format!("Invalid argument `modifiers`: unknown modifier \"{p}\" (use ctrl, shift, alt, cmd/meta, win joined with +)."))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_submits_and_letters_have_codes() {
        let enter = named("Enter").expect("Enter is a named key");
        assert_eq!(
            (enter.code.as_str(), enter.vk, enter.text.as_deref()),
            ("Enter", 13, Some("\r"))
        );
        let a = for_char('A').expect("A is typeable");
        assert_eq!(
            (a.key.as_str(), a.code.as_str(), a.vk, a.shifted),
            ("A", "KeyA", 65, true)
        );
        let q = for_char('?').expect("? is typeable");
        assert_eq!((q.code.as_str(), q.vk, q.shifted), ("Slash", 191, true));
        assert_eq!(for_char('!').expect("! is typeable").code, "Digit1");
        assert_eq!(for_char('1').expect("1 is typeable").code, "Digit1");
        assert_eq!(named("F12").expect("F12 is a named key").vk, 123);
        assert_eq!(
            named("pagedown").expect("names are case-insensitive").key,
            "PageDown"
        );
        assert_eq!(
            named("Space")
                .expect("Space is a named key")
                .text
                .as_deref(),
            Some(" ")
        );
        assert!(for_char('é').is_none());
        assert!(named("F13").is_none());
    }

    #[test]
    fn chords() {
        let c = chord("ctrl+a").expect("a chord");
        assert_eq!(c.modifiers, CTRL);
        assert_eq!(c.key.expect("a key besides the modifier").code, "KeyA");
        let c = chord("cmd+shift+k").expect("a chord");
        assert_eq!(c.modifiers, META | SHIFT);
        assert_eq!(c.held.len(), 2);
        let c = chord("shift").expect("a lone modifier is a chord");
        assert_eq!((c.modifiers, c.key), (SHIFT, None));
        assert_eq!(
            chord("+")
                .expect("a lone + is the key")
                .key
                .expect("a key")
                .code,
            "Equal"
        );
        let c = chord("shift+a").expect("a chord");
        let a = c.key.expect("a key");
        assert_eq!(
            (a.key.as_str(), a.code.as_str(), a.text.as_deref()),
            ("A", "KeyA", Some("A"))
        );
        let c = chord("shift+1").expect("a chord");
        assert_eq!(c.key.expect("a key").key, "!");
        let c = chord("shift+/").expect("a chord");
        assert_eq!(c.key.expect("a key").key, "?");
        let c = chord("shift+Tab").expect("a chord");
        assert_eq!(c.key.expect("a key").key, "Tab");
        assert_eq!(
            chord("ctrl+a").expect("a chord").key.expect("a key").key,
            "a"
        );
        assert!(chord("hyper+a")
            .expect_err("hyper is no modifier")
            .contains("Unknown modifier \"hyper\""));
        assert!(chord("ctrl+nope")
            .expect_err("nope is no key")
            .contains("Unknown key \"nope\""));
        assert_eq!(
            modifier_bits("ctrl+shift").expect("known modifiers"),
            CTRL | SHIFT
        );
        assert!(modifier_bits("ctrl+x").is_err());
    }
}
