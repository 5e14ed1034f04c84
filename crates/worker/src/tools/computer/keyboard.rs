//! Keyboard actions: `type` (real key events for US-keyboard characters, insertText for the
//! rest, `\n` as Enter) and `key` (space-separated keys and chords, repeated).

use super::keys::{self, Chord, Key, SHIFT};
use crate::cdp;
use serde_json::json;

async fn key_event(tab: i32, kind: &str, key: &Key, modifiers: u32) -> Result<(), String> {
    let mut params = json!({
        "type": kind,
        "key": key.key,
        "code": key.code,
        "windowsVirtualKeyCode": key.vk,
        "nativeVirtualKeyCode": key.vk,
        "modifiers": modifiers,
    });
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

pub async fn type_text(tab: i32, text: &str) -> Result<String, String> {
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
