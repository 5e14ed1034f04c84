//! Screenshots: the viewport captured in CSS pixels, scaled down to the image budget, as JPEG;
//! `zoom` captures a region at full resolution. One `Page.captureScreenshot` per image: Chrome
//! scales to the target size in the capture itself (the clip's scale), and the whole viewport at
//! its own device pixels is captured without a clip. The tab remembers the screenshot/viewport
//! ratio (coords) and each image is kept under an id for upload_image: the last 10 per tab in
//! memory, and the newest within 3 MB (all tabs) in chrome.storage.session, written once the
//! screenshot's answer is on its way (one write: the image and the index together), so
//! upload_image finds them after a worker restart. A tab whose last screenshot was the whole
//! viewport at its own pixels is captured while its viewport is read (not after), the read
//! then confirming that the capture fits: the viewport's read is off the screenshot's path.

use crate::cdp;
use crate::chrome::storage::{self, Area};
use crate::chrome::tabs::{self, UpdateProperties};
use crate::geometry::scale as coords;
use futures_util::future::{select, Either};
use protocol::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

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

/// An image kept for upload_image: its id and the image, shared with the storage write.
type Kept = (String, Rc<Image>);

thread_local! {
    static NEXT_IMAGE: Cell<u32> = const { Cell::new(1) };
    static IMAGES: RefCell<HashMap<i32, VecDeque<Kept>>> = RefCell::new(HashMap::new());
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
    // After the answer: a timer's task runs once the tasks that send the result have run, so
    // the write's conversions and its call into Chrome are not on the screenshot's path.
    crate::js::sleep_ms(0).await;
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

/// The viewport's CSS size, scroll offset, device pixel ratio, and whether the page is shown.
pub struct Viewport {
    pub width: f64,
    pub height: f64,
    pub scroll_x: f64,
    pub scroll_y: f64,
    pub dpr: f64,
    /// `document.visibilityState` is "visible": the tab paints, so a capture returns.
    pub visible: bool,
}

pub async fn viewport(tab: i32) -> Result<Viewport, String> {
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": "[innerWidth, innerHeight, visualViewport ? visualViewport.pageLeft : scrollX, visualViewport ? visualViewport.pageTop : scrollY, devicePixelRatio, document.visibilityState === 'visible' ? 1 : 0]", "returnByValue": true}),
    )
    .await?;
    let v: Vec<f64> = out
        .pointer("/result/value")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    if v.len() != 6 || v[0] <= 0.0 || v[1] <= 0.0 {
        return Err("reading the viewport size failed".into());
    }
    Ok(Viewport {
        width: v[0],
        height: v[1],
        scroll_x: v[2],
        scroll_y: v[3],
        dpr: if v[4] > 0.0 { v[4] } else { 1.0 },
        visible: v[5] == 1.0,
    })
}

/// Screenshot pixels per CSS pixel for a viewport of this size.
pub fn budget_scale(width: f64, height: f64) -> f64 {
    1.0_f64
        .min(MAX_SIDE / width.max(height))
        .min((MAX_PIXELS / (width * height)).sqrt())
}

/// The viewport of a tab that paints: a hidden tab (a background tab never paints, so its
/// capture would hang) is brought to the front first, and its viewport read again.
async fn shown_viewport(tab: i32) -> Result<Viewport, String> {
    let vp = viewport(tab).await?;
    if vp.visible {
        return Ok(vp);
    }
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
    viewport(tab).await
}

thread_local! {
    /// Tabs whose last screenshot was the whole viewport at its own pixels (no clip): the next
    /// one is captured while the viewport is read.
    static PLAIN: RefCell<HashSet<i32>> = RefCell::new(HashSet::new());
    /// One capture at a time: Chrome applies a clip's scale as a temporary device-metrics
    /// override and restores what it found, so overlapping captures restore each other's
    /// override and leave it behind, freezing the viewport at its size then (a window resized
    /// later no longer resizes the page).
    static CAPTURE: Rc<futures_util::lock::Mutex<()>> = Rc::default();
}

/// A region of the page in CSS px, page coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// The one `Page.captureScreenshot` for `region` at `scale` output pixels per CSS pixel: JPEG at
/// JPEG_QUALITY, scaled by Chrome in the capture. The whole viewport at its own device pixels
/// needs no clip (a clip makes Chrome apply a device-metrics override for the capture, and
/// restore it after).
pub fn capture_params(vp: &Viewport, region: Region, scale: f64) -> Value {
    let mut params = json!({
        "format": "jpeg",
        "quality": JPEG_QUALITY,
        "captureBeyondViewport": false,
        "fromSurface": true,
    });
    let whole = region
        == Region {
            x: vp.scroll_x,
            y: vp.scroll_y,
            width: vp.width,
            height: vp.height,
        };
    // CDP's clip scale multiplies device pixels: divide by the ratio to get CSS-based sizes.
    let clip_scale = scale / vp.dpr;
    if !(whole && clip_scale == 1.0) {
        params["clip"] = json!({
            "x": region.x,
            "y": region.y,
            "width": region.width,
            "height": region.height,
            "scale": clip_scale,
        });
    }
    params
}

async fn capture(tab: i32, params: Value) -> Result<Image, String> {
    let lock = CAPTURE.with(Rc::clone);
    let _one_at_a_time = lock.lock().await;
    image_of(cdp::send_js(tab, "Page.captureScreenshot", params).await?)
}

/// The whole viewport of `vp`, in page coordinates.
fn whole(vp: &Viewport) -> Region {
    Region {
        x: vp.scroll_x,
        y: vp.scroll_y,
        width: vp.width,
        height: vp.height,
    }
}

/// The screenshot's capture of this viewport: the whole of it, within the image budget.
fn screenshot_params(vp: &Viewport) -> Value {
    capture_params(vp, whole(vp), budget_scale(vp.width, vp.height))
}

/// For a tab whose last screenshot was plain (the whole viewport at its own pixels, no clip):
/// that capture sent while the viewport is read, and kept when the viewport says the
/// screenshot is still plain (the tab shown, pixel ratio 1, within the budget) and the image
/// has its size. `None`: take the screenshot the ordinary way (the tab hidden, zoomed, beyond
/// the budget, or resized while captured).
async fn plain_capture(tab: i32) -> Result<Option<(Viewport, Image)>, String> {
    if !PLAIN.with(|p| p.borrow().contains(&tab)) || !cdp::is_attached(tab) {
        return Ok(None);
    }
    let lock = CAPTURE.with(Rc::clone);
    let _one_at_a_time = lock.lock().await;
    let params = json!({
        "format": "jpeg",
        "quality": JPEG_QUALITY,
        "captureBeyondViewport": false,
        "fromSurface": true,
    });
    // The capture is polled first: its request is sent before the viewport's.
    let shot = Box::pin(cdp::send_js(tab, "Page.captureScreenshot", params.clone()));
    let read = Box::pin(viewport(tab));
    let (vp, shot) = match select(shot, read).await {
        Either::Left((done, read)) => (read.await?, Either::Left(done)),
        Either::Right((vp, pending)) => (vp?, Either::Right(pending)),
    };
    // A hidden tab's capture is left behind (it returns once the tab paints); a shown tab's is
    // awaited even when it does not fit, so that no capture of ours is under way when a clip's
    // capture sets its device-metrics override.
    if !vp.visible {
        return Ok(None);
    }
    let shot = match shot {
        Either::Left(done) => done,
        Either::Right(pending) => pending.await,
    };
    if screenshot_params(&vp) != params {
        return Ok(None);
    }
    let img = image_of(shot?)?;
    let fits = image_size(&img).is_some_and(|(w, h)| {
        f64::from(w) == vp.width.round() && f64::from(h) == vp.height.round()
    });
    Ok(fits.then_some((vp, img)))
}

/// The image in a `Page.captureScreenshot` result: its base64 string read once from Chrome's
/// result (not the result stringified, parsed and the string copied out of it).
fn image_of(out: wasm_bindgen::JsValue) -> Result<Image, String> {
    match crate::js::field(&out, "data").as_string() {
        Some(data) => Ok(Image {
            data,
            mime: "image/jpeg",
        }),
        None => Err("Page.captureScreenshot returned no image".into()),
    }
}

async fn keep(tab: i32, image: Image) -> (String, Rc<Image>) {
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

/// Whether images (or a capture mode) of the tab are kept.
pub fn holds(tab: i32) -> bool {
    IMAGES.with(|m| m.borrow().contains_key(&tab)) || PLAIN.with(|p| p.borrow().contains(&tab))
}

/// A tab closed: its images go, from memory and storage.
pub fn forget(tab: i32) {
    IMAGES.with(|m| m.borrow_mut().remove(&tab));
    PLAIN.with(|p| p.borrow_mut().remove(&tab));
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

fn kind(mime: &str) -> &'static str {
    if mime == "image/png" {
        "png"
    } else {
        "jpeg"
    }
}

/// The screenshot action: text block and image block.
pub async fn screenshot(tab: i32) -> Result<Vec<ContentBlock>, String> {
    let (vp, img) = match plain_capture(tab).await? {
        Some(done) => done,
        None => {
            let vp = shown_viewport(tab).await?;
            let img = capture(tab, screenshot_params(&vp)).await?;
            (vp, img)
        }
    };
    let (w, h) = image_size(&img).ok_or("the captured image could not be read")?;
    let plain = screenshot_params(&vp).get("clip").is_none();
    PLAIN.with(|p| {
        let mut p = p.borrow_mut();
        if plain {
            p.insert(tab);
        } else {
            p.remove(&tab);
        }
    });
    coords::set_scale(tab, f64::from(w) / vp.width);
    let (id, img) = keep(tab, img).await;
    Ok(vec![
        ContentBlock::text(format!(
            "Successfully captured screenshot ({w}x{h}, {}) - ID: {id}",
            kind(img.mime)
        )),
        ContentBlock::Image {
            data: img.data.clone(),
            mime_type: img.mime.into(),
        },
    ])
}

/// The zoom action: a region given in screenshot coordinates, captured at full resolution.
pub async fn zoom(tab: i32, region: [f64; 4]) -> Result<Vec<ContentBlock>, String> {
    let vp = shown_viewport(tab).await?;
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
    let clip = Region {
        x: vp.scroll_x + x0,
        y: vp.scroll_y + y0,
        width: w,
        height: h,
    };
    let img = capture(tab, capture_params(&vp, clip, scale)).await?;
    let (iw, ih) = image_size(&img).ok_or("the captured image could not be read")?;
    let (id, img) = keep(tab, img).await;
    Ok(vec![
        ContentBlock::text(format!(
            "Successfully captured zoomed screenshot of region ({},{}) to ({},{}) - {iw}x{ih} pixels - ID: {id}",
            region[0], region[1], region[2], region[3]
        )),
        ContentBlock::Image { data: img.data.clone(), mime_type: img.mime.into() },
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

#[cfg(test)]
mod tests {
    use super::{budget_scale, capture_params, jpeg_size, png_size, Region, Viewport};
    use serde_json::json;

    fn viewport(width: f64, height: f64, dpr: f64) -> Viewport {
        Viewport {
            width,
            height,
            scroll_x: 0.0,
            scroll_y: 120.0,
            dpr,
            visible: true,
        }
    }

    fn whole(vp: &Viewport) -> Region {
        Region {
            x: vp.scroll_x,
            y: vp.scroll_y,
            width: vp.width,
            height: vp.height,
        }
    }

    #[test]
    fn one_jpeg_capture_of_the_viewport_without_a_clip_at_its_own_size() {
        let vp = viewport(780.0, 437.0, 1.0);
        let p = capture_params(&vp, whole(&vp), budget_scale(vp.width, vp.height));
        assert_eq!(
            p,
            json!({"format": "jpeg", "quality": 80, "captureBeyondViewport": false, "fromSurface": true})
        );
    }

    #[test]
    fn chrome_scales_in_the_capture_when_the_budget_or_the_pixel_ratio_asks() {
        // DPR 2: device pixels are halved to CSS pixels by the clip's scale.
        let vp = viewport(780.0, 437.0, 2.0);
        let p = capture_params(&vp, whole(&vp), budget_scale(vp.width, vp.height));
        assert_eq!(p["format"], "jpeg");
        assert_eq!(
            p["clip"],
            json!({"x": 0.0, "y": 120.0, "width": 780.0, "height": 437.0, "scale": 0.5})
        );
        // A window the budget scales down.
        let vp = viewport(1700.0, 1000.0, 1.0);
        let scale = budget_scale(vp.width, vp.height);
        assert!(scale < 1.0);
        let p = capture_params(&vp, whole(&vp), scale);
        assert_eq!(p["clip"]["scale"], json!(scale));
        assert_eq!(p["clip"]["width"], json!(1700.0));
        // zoom: a part of the viewport, always a clip.
        let vp = viewport(780.0, 437.0, 1.0);
        let part = Region {
            x: 100.0,
            y: 200.0,
            width: 400.0,
            height: 100.0,
        };
        let p = capture_params(&vp, part, 1.0);
        assert_eq!(
            p["clip"],
            json!({"x": 100.0, "y": 200.0, "width": 400.0, "height": 100.0, "scale": 1.0})
        );
        assert_eq!(p["quality"], 80);
    }

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
