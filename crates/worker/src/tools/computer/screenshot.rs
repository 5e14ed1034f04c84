//! Screenshots: the viewport captured in CSS pixels, scaled down to the image budget, JPEG or PNG
//! whichever is smaller; `zoom` captures a region at full resolution. The tab remembers the
//! screenshot/viewport ratio (coords) and each image is kept under an id for upload_image: the
//! last 10 per tab in memory, and the newest within 3 MB (all tabs) in chrome.storage.session,
//! written after the screenshot is answered, so upload_image finds them after a worker restart.

use crate::cdp;
use crate::chrome::storage::{self, Area};
use crate::chrome::tabs::{self, UpdateProperties};
use crate::coords;
use protocol::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

/// Longest side of a screenshot.
const MAX_SIDE: f64 = 1568.0;
/// About 1568 image tokens of 28×28 px.
const MAX_PIXELS: f64 = 1568.0 * 28.0 * 28.0;
/// Images kept per tab for upload_image.
const KEPT_PER_TAB: usize = 10;
const JPEG_QUALITY: u32 = 80;
/// Bytes of base64 image data kept in chrome.storage.session (10 MB in all, shared with the
/// results outbox): the newest images fit, older ones are dropped from storage (still in memory
/// while the worker runs).
const STORED_BYTES: usize = 3 << 20;
const STORED_INDEX_KEY: &str = "keptImages";

pub struct Image {
    pub data: String,
    pub mime: &'static str,
}

thread_local! {
    static NEXT_IMAGE: Cell<u32> = const { Cell::new(1) };
    static IMAGES: RefCell<HashMap<i32, VecDeque<(String, Image)>>> = RefCell::new(HashMap::new());
    /// What chrome.storage.session holds, oldest first; `None` until read.
    static STORED: RefCell<Option<Vec<StoredImage>>> = const { RefCell::new(None) };
    /// One writer at a time, so the stored index never goes back.
    static WRITER: std::rc::Rc<futures_util::lock::Mutex<()>> = std::rc::Rc::default();
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

#[derive(Serialize, Deserialize)]
struct StoredData {
    mime: String,
    data: String,
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
async fn store_image(tab: i32, id: String, n: u32, mime: &'static str, data: String) {
    let lock = WRITER.with(std::rc::Rc::clone);
    let _one = lock.lock().await;
    let mut list = stored_index().await;
    let bytes = data.len();
    if bytes > STORED_BYTES {
        return;
    }
    list.push(StoredImage {
        id: id.clone(),
        tab,
        mime: mime.into(),
        bytes,
        n,
    });
    let mut dropped = Vec::new();
    while list.iter().map(|i| i.bytes).sum::<usize>() > STORED_BYTES {
        dropped.push(data_key(&list.remove(0).id));
    }
    // Dropped first, so the bound holds at every step.
    let _ = storage::remove_session(&dropped).await;
    let stored = StoredData {
        mime: mime.into(),
        data,
    };
    if let Err(e) = storage::set(Area::Session, &data_key(&id), &stored).await {
        crate::js::log(&format!("cannot keep image {id} across a restart: {e}"));
        list.retain(|i| i.id != id);
    }
    write_index(list).await;
}

async fn write_index(list: Vec<StoredImage>) {
    STORED.with(|s| *s.borrow_mut() = Some(list.clone()));
    if let Err(e) = storage::set(Area::Session, STORED_INDEX_KEY, &list).await {
        crate::js::log(&format!("cannot keep the image index: {e}"));
    }
}

/// The viewport's CSS size, scroll offset and device pixel ratio.
pub struct Viewport {
    pub width: f64,
    pub height: f64,
    pub scroll_x: f64,
    pub scroll_y: f64,
    pub dpr: f64,
}

pub async fn viewport(tab: i32) -> Result<Viewport, String> {
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": "[innerWidth, innerHeight, visualViewport ? visualViewport.pageLeft : scrollX, visualViewport ? visualViewport.pageTop : scrollY, devicePixelRatio]", "returnByValue": true}),
    )
    .await?;
    let v: Vec<f64> = out
        .pointer("/result/value")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    if v.len() != 5 || v[0] <= 0.0 || v[1] <= 0.0 {
        return Err("reading the viewport size failed".into());
    }
    Ok(Viewport {
        width: v[0],
        height: v[1],
        scroll_x: v[2],
        scroll_y: v[3],
        dpr: if v[4] > 0.0 { v[4] } else { 1.0 },
    })
}

/// Screenshot pixels per CSS pixel for a viewport of this size.
pub fn budget_scale(width: f64, height: f64) -> f64 {
    1.0_f64
        .min(MAX_SIDE / width.max(height))
        .min((MAX_PIXELS / (width * height)).sqrt())
}

/// A background tab never paints, so its capture would hang: bring it to the front first.
async fn bring_to_front(tab: i32) -> Result<(), String> {
    if !tabs::get(tab).await?.active {
        tabs::update(
            tab,
            &UpdateProperties {
                active: Some(true),
                ..Default::default()
            },
        )
        .await?;
    }
    Ok(())
}

thread_local! {
    /// One capture at a time: Chrome applies a clip's scale as a temporary device-metrics
    /// override and restores what it found, so overlapping captures restore each other's
    /// override and leave it behind, freezing the viewport at its size then (a window resized
    /// later no longer resizes the page).
    static CAPTURE: std::rc::Rc<futures_util::lock::Mutex<()>> = std::rc::Rc::default();
}

async fn capture(tab: i32, format: &str, clip: &Value) -> Result<String, String> {
    let lock = CAPTURE.with(std::rc::Rc::clone);
    let _one_at_a_time = lock.lock().await;
    let mut params = json!({"format": format, "clip": clip, "captureBeyondViewport": false, "fromSurface": true});
    if format == "jpeg" {
        params["quality"] = json!(JPEG_QUALITY);
    }
    let out = cdp::send(tab, "Page.captureScreenshot", params).await?;
    out.get("data")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "Page.captureScreenshot returned no image".into())
}

/// Captures `clip` (CSS px, page coordinates) at `scale` output pixels per CSS pixel, in the
/// smaller of JPEG and PNG.
async fn capture_best(
    tab: i32,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    scale: f64,
    dpr: f64,
) -> Result<Image, String> {
    // CDP's clip scale multiplies device pixels: divide by the ratio to get CSS-based sizes.
    let clip = json!({"x": x, "y": y, "width": w, "height": h, "scale": scale / dpr});
    let jpeg = capture(tab, "jpeg", &clip).await?;
    let png = capture(tab, "png", &clip).await;
    Ok(match png {
        Ok(png) if png.len() < jpeg.len() => Image {
            data: png,
            mime: "image/png",
        },
        _ => Image {
            data: jpeg,
            mime: "image/jpeg",
        },
    })
}

async fn keep(tab: i32, image: &Image) -> String {
    // Numbers go on after those a previous worker stored.
    stored_index().await;
    let n = NEXT_IMAGE.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    let id = format!("ss_{tab}_{n}");
    wasm_bindgen_futures::spawn_local(store_image(
        tab,
        id.clone(),
        n,
        image.mime,
        image.data.clone(),
    ));
    IMAGES.with(|m| {
        let mut m = m.borrow_mut();
        let list = m.entry(tab).or_default();
        list.push_back((
            id.clone(),
            Image {
                data: image.data.clone(),
                mime: image.mime,
            },
        ));
        while list.len() > KEPT_PER_TAB {
            list.pop_front();
        }
    });
    id
}

/// A kept image, by id: from memory, else from what a previous worker stored.
pub async fn image(id: &str) -> Option<Image> {
    let kept = IMAGES.with(|m| {
        m.borrow()
            .values()
            .flatten()
            .find(|(i, _)| i == id)
            .map(|(_, img)| Image {
                data: img.data.clone(),
                mime: img.mime,
            })
    });
    if kept.is_some() {
        return kept;
    }
    let stored: StoredData = storage::get(Area::Session, &data_key(id))
        .await
        .ok()
        .flatten()?;
    Some(Image {
        data: stored.data,
        mime: if stored.mime == "image/png" {
            "image/png"
        } else {
            "image/jpeg"
        },
    })
}

/// A tab closed: its images go, from memory and storage.
pub fn forget(tab: i32) {
    IMAGES.with(|m| m.borrow_mut().remove(&tab));
    wasm_bindgen_futures::spawn_local(async move {
        let lock = WRITER.with(std::rc::Rc::clone);
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

fn kind(mime: &str) -> &'static str {
    if mime == "image/png" {
        "png"
    } else {
        "jpeg"
    }
}

/// The screenshot action: text block and image block.
pub async fn screenshot(tab: i32) -> Result<Vec<ContentBlock>, String> {
    bring_to_front(tab).await?;
    let vp = viewport(tab).await?;
    let scale = budget_scale(vp.width, vp.height);
    let img = capture_best(
        tab,
        vp.scroll_x,
        vp.scroll_y,
        vp.width,
        vp.height,
        scale,
        vp.dpr,
    )
    .await?;
    let (w, h) = image_size(&img).ok_or("the captured image could not be read")?;
    coords::set_scale(tab, f64::from(w) / vp.width);
    let id = keep(tab, &img).await;
    Ok(vec![
        ContentBlock::text(format!(
            "Successfully captured screenshot ({w}x{h}, {}) - ID: {id}",
            kind(img.mime)
        )),
        ContentBlock::Image {
            data: img.data,
            mime_type: img.mime.into(),
        },
    ])
}

/// The zoom action: a region given in screenshot coordinates, captured at full resolution.
pub async fn zoom(tab: i32, region: [f64; 4]) -> Result<Vec<ContentBlock>, String> {
    bring_to_front(tab).await?;
    let vp = viewport(tab).await?;
    let (x0, y0) = coords::to_viewport(tab, region[0], region[1]);
    let (x1, y1) = coords::to_viewport(tab, region[2], region[3]);
    if x1 <= x0 || y1 <= y0 {
        return Err(
            "Invalid argument `region`: [x0, y0, x1, y1] needs x1 > x0 and y1 > y0.".into(),
        );
    }
    if x0 < 0.0 || y0 < 0.0 || x1 > vp.width + 0.5 || y1 > vp.height + 0.5 {
        return Err(format!(
            "Invalid argument `region`: it leaves the viewport ({}x{} in screenshot coordinates).",
            (vp.width * coords::scale(tab)).round(),
            (vp.height * coords::scale(tab)).round()
        ));
    }
    let (w, h) = (x1 - x0, y1 - y0);
    // Full resolution: device pixels, within the image budget.
    let scale = vp.dpr * budget_scale(w * vp.dpr, h * vp.dpr);
    let img = capture_best(tab, vp.scroll_x + x0, vp.scroll_y + y0, w, h, scale, vp.dpr).await?;
    let (iw, ih) = image_size(&img).ok_or("the captured image could not be read")?;
    let id = keep(tab, &img).await;
    Ok(vec![
        ContentBlock::text(format!(
            "Successfully captured zoomed screenshot of region ({},{}) to ({},{}) - {iw}x{ih} pixels - ID: {id}",
            region[0], region[1], region[2], region[3]
        )),
        ContentBlock::Image { data: img.data, mime_type: img.mime.into() },
    ])
}

fn image_size(img: &Image) -> Option<(u32, u32)> {
    if img.mime == "image/png" {
        png_size(&img.data)
    } else {
        jpeg_size(&img.data)
    }
}

/// Width and height from a base64 JPEG's first SOF marker.
pub fn jpeg_size(b64: &str) -> Option<(u32, u32)> {
    // Headers sit near the start; decode a bounded prefix.
    let prefix = &b64[..b64.len().min(64 * 1024) / 4 * 4];
    let bytes = decode_base64_prefix(prefix)?;
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

#[cfg(test)]
mod tests {
    use super::{budget_scale, jpeg_size, png_size};

    #[test]
    fn budget_keeps_side_and_tokens() {
        assert_eq!(budget_scale(1280.0, 720.0), 1.0);
        let s = budget_scale(3000.0, 1000.0);
        assert!((3000.0 * s - 1568.0).abs() < 0.01);
        let s = budget_scale(1500.0, 1500.0);
        assert!(1500.0 * s * 1500.0 * s <= 1568.0 * 784.0 + 1.0);
    }

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
