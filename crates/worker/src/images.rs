//! The images screenshots and zooms keep for upload_image: each under an id, the last 10 per tab
//! in memory, and the newest within 3 MB (all tabs) in chrome.storage.session, written once the
//! screenshot's answer is on its way (one write: the image and the index together), so
//! upload_image finds them after a worker restart. Also reads an image's size from its header.

use crate::chrome::storage::{self, Area};
use crate::vec_map::VecMap;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

/// Images kept per tab for upload_image.
const KEPT_PER_TAB: usize = 10;

/// Bytes of base64 image data kept in chrome.storage.session (10 MB in all, shared with the
/// results outbox): the newest images fit, older ones are dropped from storage (still in memory
/// while the worker runs).
const STORED_BYTES: usize = 3 << 20;
const STORED_INDEX_KEY: &str = "keptImages";
/// How long after a screenshot's answer its image is written to storage (see `store_image`).
const STORE_AFTER_MS: u32 = 5;

pub struct Image {
    pub data: String,
    pub mime: &'static str,
}

/// An image kept for upload_image: its id and the image, shared with the storage write.
type Kept = (String, Rc<Image>);

thread_local! {
    static NEXT_IMAGE: Cell<u32> = const { Cell::new(1) };
    static IMAGES: RefCell<VecMap<i32, VecDeque<Kept>>> = const { RefCell::new(VecMap::new()) };
    /// What chrome.storage.session holds, oldest first; `None` until read.
    static STORED: RefCell<Option<Vec<StoredImage>>> = const { RefCell::new(None) };
    /// One writer at a time, so the stored index never goes back.
    static WRITER: Rc<futures_util::lock::Mutex<()>> = Rc::default();
}

#[derive(Clone, Serialize, Deserialize)]
struct StoredImage {
    id: String,
    tab: i32,
    mime: String,
    bytes: usize,
    /// The number in the id: a restarted worker numbers on from the highest.
    n: u32,
}

#[derive(Deserialize)]
struct StoredData {
    mime: String,
    data: String,
}

/// What is written: borrowed from the kept image, not a copy of it.
#[derive(Serialize)]
struct StoredDataRef<'a> {
    mime: &'a str,
    data: &'a str,
}

fn data_key(id: &str) -> String {
    format!("keptImage:{id}")
}

/// The stored index, read once per worker start (and image numbers go on after it).
async fn stored_index() -> Vec<StoredImage> {
    if let Some(list) = STORED.with(|s| s.borrow().clone()) {
        return list;
    }
    let list: Vec<StoredImage> = storage::get(Area::Session, STORED_INDEX_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let next = list.iter().map(|i| i.n + 1).max().unwrap_or(1);
    NEXT_IMAGE.with(|n| n.set(n.get().max(next)));
    STORED.with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            *s = Some(list);
        }
        s.clone().unwrap_or_default()
    })
}

/// Keeps the image in session storage within the byte bound, dropping the oldest.
async fn store_image(tab: i32, id: String, n: u32, image: Rc<Image>) {
    // After the answer has left: Chrome hands a large WebSocket frame to the network in more
    // than one task of the worker's, and a 0 ms timer's task ran among them (the write's
    // conversions and its call into Chrome take 0.3-1.0 ms of the thread), holding the
    // screenshot's answer back by about 0.8 ms.
    crate::js::sleep_ms(STORE_AFTER_MS).await;
    let lock = WRITER.with(Rc::clone);
    let _one = lock.lock().await;
    let mut list = stored_index().await;
    let bytes = image.data.len();
    if bytes > STORED_BYTES {
        return;
    }
    list.push(StoredImage {
        id: id.clone(),
        tab,
        mime: image.mime.into(),
        bytes,
        n,
    });
    let mut dropped = Vec::new();
    while list.iter().map(|i| i.bytes).sum::<usize>() > STORED_BYTES {
        dropped.push(data_key(&list.remove(0).id));
    }
    // Dropped first, so the bound holds at every step.
    let _ = storage::remove_session(&dropped).await;
    let stored = StoredDataRef {
        mime: image.mime,
        data: &image.data,
    };
    // The image and the index that lists it in one write: both stored, or neither.
    let written = async {
        let items = js_sys::Object::new();
        for (key, value) in [
            (data_key(&id), crate::js::to_js(&stored)?),
            (STORED_INDEX_KEY.to_string(), crate::js::to_js(&list)?),
        ] {
            js_sys::Reflect::set(&items, &key.into(), &value)
                .map_err(|e| crate::js::error_text(&e))?;
        }
        STORED.with(|s| *s.borrow_mut() = Some(list.clone()));
        storage::set_session_now(&items).await
    };
    if let Err(e) = written.await {
        crate::js::log(&format!("cannot keep image {id} across a restart: {e}"));
        list.retain(|i| i.id != id);
        write_index(list).await;
    }
}

async fn write_index(list: Vec<StoredImage>) {
    STORED.with(|s| *s.borrow_mut() = Some(list.clone()));
    if let Err(e) = storage::set(Area::Session, STORED_INDEX_KEY, &list).await {
        crate::js::log(&format!("cannot keep the image index: {e}"));
    }
}

/// Keeps a new image of the tab under a new id (in memory at once, in storage after the answer).
pub async fn keep(tab: i32, image: Image) -> (String, Rc<Image>) {
    // Numbers go on after those a previous worker stored.
    stored_index().await;
    let n = NEXT_IMAGE.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    let id = format!("ss_{tab}_{n}");
    let image = Rc::new(image);
    wasm_bindgen_futures::spawn_local(store_image(tab, id.clone(), n, Rc::clone(&image)));
    IMAGES.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.entry(tab).or_default();
        list.push_back((id.clone(), Rc::clone(&image)));
        while list.len() > KEPT_PER_TAB {
            list.pop_front();
        }
    });
    (id, image)
}

/// A kept image, by id: from memory, else from what a previous worker stored.
pub async fn image(id: &str) -> Option<Rc<Image>> {
    let kept = IMAGES.with(|m| {
        m.borrow()
            .values()
            .flatten()
            .find(|(i, _)| i == id)
            .map(|(_, img)| Rc::clone(img))
    });
    if kept.is_some() {
        return kept;
    }
    let stored: StoredData = storage::get(Area::Session, &data_key(id))
        .await
        .ok()
        .flatten()?;
    Some(Rc::new(Image {
        data: stored.data,
        mime: if stored.mime == "image/png" {
            "image/png"
        } else {
            "image/jpeg"
        },
    }))
}

/// An image's width and height, read from its header.
pub fn image_size(img: &Image) -> Option<(u32, u32)> {
    if img.mime == "image/png" {
        png_size(&img.data)
    } else {
        jpeg_size(&img.data)
    }
}

/// Width and height from a base64 JPEG's first SOF marker.
pub fn jpeg_size(b64: &str) -> Option<(u32, u32)> {
    // Headers sit near the start (Chrome's within the first kilobyte): decode a short prefix,
    // and a longer one (bounded) only when the marker lies beyond it.
    for n in [4 * 1024, 64 * 1024] {
        let end = b64.len().min(n) / 4 * 4;
        if let Some(size) = jpeg_sof(&decode_base64_prefix(b64.get(..end)?)?) {
            return Some(size);
        }
        if end == b64.len() / 4 * 4 {
            break;
        }
    }
    None
}

fn jpeg_sof(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut i = 2;
    while i + 9 < bytes.len() {
        if bytes[i] != 0xFF {
            return None;
        }
        let marker = bytes[i + 1];
        let len = usize::from(bytes[i + 2]) << 8 | usize::from(bytes[i + 3]);
        if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
            let h = u32::from(bytes[i + 5]) << 8 | u32::from(bytes[i + 6]);
            let w = u32::from(bytes[i + 7]) << 8 | u32::from(bytes[i + 8]);
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// Width and height from a base64 PNG's IHDR chunk (bytes 16..24).
pub fn png_size(b64: &str) -> Option<(u32, u32)> {
    let head = decode_base64_prefix(b64.get(..32)?)?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let w = u32::from_be_bytes(head.get(16..20)?.try_into().ok()?);
    let h = u32::from_be_bytes(head.get(20..24)?.try_into().ok()?);
    Some((w, h))
}

fn decode_base64_prefix(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.trim_end_matches('=').as_bytes().chunks_exact(4) {
        let n = chunk
            .iter()
            .try_fold(0u32, |acc, &c| Some((acc << 6) | val(c)?))?;
        out.extend_from_slice(&n.to_be_bytes()[1..]);
    }
    Some(out)
}

/// Whether images of the tab are kept.
pub fn holds(tab: i32) -> bool {
    IMAGES.with(|m| m.borrow().contains_key(&tab))
}

/// A tab closed: its images go, from memory and storage.
pub fn forget(tab: i32) {
    IMAGES.with(|m| m.borrow_mut().remove(&tab));
    wasm_bindgen_futures::spawn_local(async move {
        let lock = WRITER.with(Rc::clone);
        let _one = lock.lock().await;
        let mut list = stored_index().await;
        let gone: Vec<String> = list
            .iter()
            .filter(|i| i.tab == tab)
            .map(|i| data_key(&i.id))
            .collect();
        if gone.is_empty() {
            return;
        }
        list.retain(|i| i.tab != tab);
        let _ = storage::remove_session(&gone).await;
        write_index(list).await;
    });
}

#[cfg(test)]
mod tests {
    use super::{jpeg_size, png_size};

    #[test]
    fn reads_jpeg_dimensions() {
        // SOI, APP0 (length 16), SOF0 with height 600, width 800.
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        bytes.extend_from_slice(&[0; 14]);
        bytes.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03]);
        bytes.extend_from_slice(&[0; 12]);
        let b64 = encode(&bytes);
        assert_eq!(jpeg_size(&b64), Some((800, 600)));
    }

    #[test]
    fn reads_jpeg_dimensions_behind_a_large_header_segment() {
        // SOI, an APP1 segment of 6,000 bytes (beyond the first prefix decoded), then SOF0.
        let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE1, 0x17, 0x70];
        bytes.extend_from_slice(&[0; 5998]);
        bytes.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xB5, 0x03, 0x0C, 0x03]);
        bytes.extend_from_slice(&[0; 12]);
        assert_eq!(jpeg_size(&encode(&bytes)), Some((780, 437)));
        // Cut before the marker: no size rather than a wrong one.
        assert_eq!(jpeg_size(&encode(&bytes[..3000])), None);
    }

    fn encode(bytes: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in bytes.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                out.push(A[((n >> (18 - 6 * k)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn reads_png_dimensions() {
        // A 1x1 PNG, then a header claiming 800x600.
        let one = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        assert_eq!(png_size(one), Some((1, 1)));
        let big = "iVBORw0KGgoAAAANSUhEUgAAAyAAAAJYCAYAAAA";
        assert_eq!(png_size(big), Some((800, 600)));
        assert_eq!(png_size("/9j/4AAQSkZJRgABAQAAAQABAAD/2wBD"), None);
        assert_eq!(png_size("short"), None);
    }
}
