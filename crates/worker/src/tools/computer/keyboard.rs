//! Keyboard actions: `type` (real key events for US-keyboard characters, insertText for the
//! rest, `\n` as Enter), `key` (space-separated keys and chords, repeated) and `hold_key` (one
//! key or chord held down for a time, with a keyboard's auto-repeat, then released).

use super::keys::{self, Chord, Key, SHIFT};
use crate::cdp;
use crate::js::{now_ms, sleep_ms};
use serde_json::json;

/// A held key repeats as a keyboard's does by default: the first repeat 500 ms after the press,
/// then every 50 ms (20 a second).
const REPEAT_DELAY_MS: f64 = 500.0;
const REPEAT_EVERY_MS: f64 = 50.0;

async fn key_event(tab: i32, kind: &str, key: &Key, modifiers: u32) -> Result<(), String> {
    key_event_repeated(tab, kind, key, modifiers, false).await
}

async fn key_event_repeated(
    tab: i32,
    kind: &str,
    key: &Key,
    modifiers: u32,
    auto_repeat: bool,
) -> Result<(), String> {
    let mut params = json!({
        "type": kind,
        "key": key.key,
        "code": key.code,
        "windowsVirtualKeyCode": key.vk,
        "nativeVirtualKeyCode": key.vk,
        "modifiers": modifiers,
    });
    if auto_repeat {
        params["autoRepeat"] = json!(true);
    }
    // Text only when the key types something and no command modifier turns it into a shortcut.
    if kind == "keyDown" {
        if let Some(text) = &key.text {
            if modifiers & !SHIFT == 0 {
                params["text"] = json!(text);
                params["unmodifiedText"] = json!(text);
            }
        }
    }
    let kind_sent = if kind == "keyDown" && params.get("text").is_none() {
        "rawKeyDown"
    } else {
        kind
    };
    params["type"] = json!(kind_sent);
    cdp::send(tab, "Input.dispatchKeyEvent", params)
        .await
        .map(drop)
        .map_err(String::from)
}

/// Presses a chord: modifiers down in order, the key down and up, modifiers up in reverse.
pub async fn press(tab: i32, chord: &Chord) -> Result<(), String> {
    let mut held = 0;
    for m in &chord.held {
        held |= keys::modifier(&m.key).map(|(b, _)| b).unwrap_or(0);
        key_event(tab, "keyDown", m, held).await?;
    }
    if let Some(k) = &chord.key {
        key_event(tab, "keyDown", k, chord.modifiers).await?;
        key_event(tab, "keyUp", k, chord.modifiers).await?;
    }
    for m in chord.held.iter().rev() {
        held &= !keys::modifier(&m.key).map(|(b, _)| b).unwrap_or(0);
        key_event(tab, "keyUp", m, held).await?;
    }
    Ok(())
}

pub async fn key(tab: i32, text: &str, repeat: u32) -> Result<String, String> {
    let chords: Vec<Chord> = text
        .split_whitespace()
        .map(keys::chord)
        .collect::<Result<_, _>>()?;
    if chords.is_empty() {
        return Err(
            "Invalid argument `text`: name at least one key, e.g. \"Enter\" or \"ctrl+a\".".into(),
        );
    }
    for _ in 0..repeat {
        for c in &chords {
            press(tab, c).await?;
        }
    }
    let n = chords.len() as u32 * repeat;
    Ok(format!(
        "Pressed {n} key(s): {}",
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    ))
}

/// When, in ms after the press, a key held for `hold_ms` repeats.
pub fn repeat_times(hold_ms: f64) -> impl Iterator<Item = f64> {
    (0..)
        .map(|n| REPEAT_DELAY_MS + f64::from(n) * REPEAT_EVERY_MS)
        .take_while(move |t| *t < hold_ms)
}

/// One chord from `hold_key`'s text: a single key or chord, no sequence.
pub fn held_chord(text: &str) -> Result<Chord, String> {
    let mut parts = text.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(one), None) => keys::chord(one),
        (None, _) => Err("Invalid argument `text`: name the key or chord to hold, e.g. \"shift\", \"ArrowRight\" or \"ctrl+a\".".into()),
        (Some(_), Some(_)) => Err(format!("Invalid argument `text`: hold_key holds one key or chord, got \"{}\" (use key for a sequence, or join keys held together with +).", text.trim())),
    }
}

/// `hold_key`: the chord's modifiers down in order, then its key, held for `secs` with a
/// keyboard's auto-repeat (keydown events with `repeat` set; a lone modifier does not repeat),
/// then released in reverse order. Whatever went down is released even when a step fails.
pub async fn hold(tab: i32, text: &str, secs: f64) -> Result<String, String> {
    let chord = held_chord(text)?;
    let hold_ms = secs * 1000.0;
    // What went down, released in reverse when this ends, however it ends (a command the
    // person stopped is dropped here: its keys are released then).
    let mut down = Down {
        tab,
        keys: Vec::new(),
    };
    let mut held = 0;
    let mut repeats = 0u32;
    let pressed: Result<(), String> = async {
        for m in &chord.held {
            held |= keys::modifier(&m.key).map(|(b, _)| b).unwrap_or(0);
            key_event(tab, "keyDown", m, held).await?;
            down.keys.push(m.clone());
        }
        let start = now_ms();
        if let Some(k) = &chord.key {
            key_event(tab, "keyDown", k, chord.modifiers).await?;
            down.keys.push(k.clone());
            for at in repeat_times(hold_ms) {
                let wait = start + at - now_ms();
                if wait > 0.0 {
                    sleep_ms(wait as u32).await;
                }
                key_event_repeated(tab, "keyDown", k, chord.modifiers, true).await?;
                repeats += 1;
            }
        }
        let wait = start + hold_ms - now_ms();
        if wait > 0.0 {
            sleep_ms(wait as u32).await;
        }
        Ok(())
    }
    .await;
    let released = release(tab, std::mem::take(&mut down.keys)).await;
    pressed?;
    released?;
    let also = match repeats {
        0 => String::new(),
        n => format!(" ({n} key repeats)"),
    };
    Ok(format!("Held {} for {secs} second(s){also}", text.trim()))
}

/// Keys a `hold_key` holds down.
struct Down {
    tab: i32,
    keys: Vec<Key>,
}

impl Drop for Down {
    /// Ended before it released them (the person's Stop): released now.
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let (tab, keys) = (self.tab, std::mem::take(&mut self.keys));
        wasm_bindgen_futures::spawn_local(async move {
            if let Err(e) = release(tab, keys).await {
                crate::js::log(&format!("releasing held keys on tab {tab}: {e}"));
            }
        });
    }
}

/// Releases keys in reverse, each with the modifiers still down after it.
async fn release(tab: i32, mut down: Vec<Key>) -> Result<(), String> {
    let mut released = Ok(());
    while let Some(k) = down.pop() {
        let still = down.iter().fold(0, |acc, m| {
            acc | keys::modifier(&m.key).map(|(b, _)| b).unwrap_or(0)
        });
        if let Err(e) = key_event(tab, "keyUp", &k, still).await {
            released = released.and(Err(e));
        }
    }
    released
}

/// Whether the focused element (through shadow roots and same-origin frames) may be a
/// password field: true unless it is known not to be.
const FOCUS_MAY_BE_SECRET: &str = r#"(() => { try { let e = document.activeElement; for (let i = 0; e && i < 32; i++) { if (e.shadowRoot && e.shadowRoot.activeElement) { e = e.shadowRoot.activeElement; continue; } if (e.tagName === "IFRAME" || e.tagName === "FRAME") { const d = e.contentDocument; if (!d) return true; e = d.activeElement; continue; } break; } return !!e && e.tagName === "INPUT" && String(e.type).toLowerCase() === "password"; } catch (_) { return true; } })()"#;

/// `type`: the text goes in as key events. Whether it goes into a password field is asked
/// beside the first keys (answered while they are sent, so it costs the command no round
/// trip), for the log to mask it.
pub async fn type_text(tab: i32, text: &str) -> Result<String, String> {
    let probe = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": FOCUS_MAY_BE_SECRET, "returnByValue": true, "silent": true}),
    );
    let (secret, typed) = futures_util::future::join(probe, type_keys(tab, text)).await;
    let known_plain = secret.ok().and_then(|v| {
        v.pointer("/result/value")
            .and_then(serde_json::Value::as_bool)
    }) == Some(false);
    if !known_plain {
        crate::journal::mark_secret(tab);
    }
    typed
}

async fn type_keys(tab: i32, text: &str) -> Result<String, String> {
    let mut pending = String::new();
    for c in text.chars() {
        let key = match c {
            '\n' => keys::named("Enter"),
            '\r' => continue,
            '\t' => keys::named("Tab"),
            c => keys::for_char(c),
        };
        match key {
            Some(k) => {
                flush(tab, &mut pending).await?;
                let modifiers = if k.shifted { SHIFT } else { 0 };
                key_event(tab, "keyDown", &k, modifiers).await?;
                key_event(tab, "keyUp", &k, modifiers).await?;
            }
            None => pending.push(c),
        }
    }
    flush(tab, &mut pending).await?;
    Ok(format!("Typed \"{text}\""))
}

/// Characters without a US key go in through the IME path.
async fn flush(tab: i32, pending: &mut String) -> Result<(), String> {
    if pending.is_empty() {
        return Ok(());
    }
    cdp::send(tab, "Input.insertText", json!({"text": pending})).await?;
    pending.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{held_chord, repeat_times};

    #[test]
    fn a_held_key_repeats_after_the_delay_at_the_rate() {
        assert_eq!(repeat_times(500.0).count(), 0);
        assert_eq!(repeat_times(0.0).count(), 0);
        let r: Vec<f64> = repeat_times(700.0).collect();
        assert_eq!(r, [500.0, 550.0, 600.0, 650.0]);
        assert_eq!(repeat_times(30_000.0).count(), 590);
    }

    #[test]
    fn hold_key_takes_one_key_or_chord() {
        assert_eq!(held_chord(" shift ").expect("a modifier").key, None);
        let c = held_chord("ctrl+ArrowRight").expect("a chord");
        assert_eq!(c.key.expect("a key").key, "ArrowRight");
        let e = held_chord("a b").expect_err("a sequence");
        assert!(e.contains("one key or chord"), "{e}");
        assert!(held_chord("  ").expect_err("nothing").contains("`text`"));
        assert!(held_chord("hyper+a")
            .expect_err("no such modifier")
            .contains("Unknown modifier"));
    }
}
