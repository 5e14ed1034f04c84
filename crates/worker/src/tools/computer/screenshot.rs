//! Screenshots: the viewport captured in CSS pixels, scaled down to the image budget, as JPEG;
//! `zoom` captures a region scaled up, to fit the screenshot's size (at most 8 times the
//! screenshot's own scale). One `Page.captureScreenshot` per image: Chrome
//! scales to the target size in the capture itself (the clip's scale), and the whole viewport at
//! its own device pixels is captured without a clip. The tab remembers the screenshot/viewport
//! ratio (coords) and each image is kept under an id for upload_image (`crate::images`). A tab
//! whose last screenshot was the whole viewport at its own pixels is captured while its viewport
//! is read (not after), the read then confirming that the capture fits: the viewport's read is
//! off the screenshot's path.

use crate::cdp;
use crate::chrome::tabs::{self, UpdateProperties};
use crate::geometry::scale as coords;
use crate::images::{self, Image};
use crate::vec_map::VecSet;
use futures_util::future::{select, Either};
use protocol::ContentBlock;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Longest side of a screenshot.
const MAX_SIDE: f64 = 1568.0;
/// About 1568 image tokens of 28×28 px.
const MAX_PIXELS: f64 = 1568.0 * 28.0 * 28.0;
const JPEG_QUALITY: u32 = 80;
/// The most a zoom enlarges a region, in image pixels per screenshot pixel.
const ZOOM_MAX: f64 = 8.0;

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

/// Image pixels per CSS pixel of a zoom into a `w`×`h` CSS px region of a viewport of this size:
/// the region fitted into the size of the viewport's screenshot (its aspect kept), so that it
/// is never smaller than in the screenshot, never larger than the screenshot (within the image
/// limits), and enlarged at most [`ZOOM_MAX`] times.
pub fn zoom_scale(vp_width: f64, vp_height: f64, w: f64, h: f64) -> f64 {
    let fit = (vp_width / w).min(vp_height / h);
    budget_scale(vp_width, vp_height) * fit.clamp(1.0, ZOOM_MAX)
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
    static PLAIN: RefCell<VecSet<i32>> = const { RefCell::new(VecSet::new()) };
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
    let fits = images::image_size(&img).is_some_and(|(w, h)| {
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

/// Whether a capture mode of the tab is kept.
pub fn holds(tab: i32) -> bool {
    PLAIN.with(|p| p.borrow().contains(&tab))
}

/// A tab closed: its capture mode goes.
pub fn forget(tab: i32) {
    PLAIN.with(|p| p.borrow_mut().remove(&tab));
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
    let (w, h) = images::image_size(&img).ok_or("the captured image could not be read")?;
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
    let (id, img) = images::keep(tab, img).await;
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

/// The zoom action: a region given in screenshot coordinates, scaled up (see [`zoom_scale`]);
/// Chrome renders the region at that scale in the capture (a sharp image, not enlarged pixels).
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
    let scale = zoom_scale(vp.width, vp.height, w, h);
    let clip = Region {
        x: vp.scroll_x + x0,
        y: vp.scroll_y + y0,
        width: w,
        height: h,
    };
    let img = capture(tab, capture_params(&vp, clip, scale)).await?;
    let (iw, ih) = images::image_size(&img).ok_or("the captured image could not be read")?;
    let (id, img) = images::keep(tab, img).await;
    Ok(vec![
        ContentBlock::text(format!(
            "Successfully captured zoomed screenshot of region ({},{}) to ({},{}) - {iw}x{ih} pixels - ID: {id}",
            region[0], region[1], region[2], region[3]
        )),
        ContentBlock::Image { data: img.data.clone(), mime_type: img.mime.into() },
    ])
}

#[cfg(test)]
mod tests {
    use super::{
        budget_scale, capture_params, whole, zoom_scale, Region, Viewport, MAX_PIXELS, MAX_SIDE,
    };
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
    fn a_zoom_fits_its_region_into_the_screenshot_size_enlarged_at_most_8_times() {
        // 1280x720 at scale 1: a 320x90 region is fitted to the width (4x), a 64x360 one to
        // the height (2x), a 20x10 icon enlarged 8x, the whole viewport 1:1.
        assert_eq!(zoom_scale(1280.0, 720.0, 320.0, 90.0), 4.0);
        assert_eq!(zoom_scale(1280.0, 720.0, 64.0, 360.0), 2.0);
        assert_eq!(zoom_scale(1280.0, 720.0, 20.0, 10.0), 8.0);
        assert_eq!(zoom_scale(1280.0, 720.0, 1280.0, 720.0), 1.0);
        // A viewport the budget scales down: the zoom is at most the screenshot's size.
        let (vw, vh) = (1700.0, 900.0);
        let shot = budget_scale(vw, vh);
        for (w, h) in [(400.0, 300.0), (1700.0, 900.0), (1000.0, 100.0), (3.0, 2.0)] {
            let s = zoom_scale(vw, vh, w, h);
            assert!(s >= shot, "{w}x{h}: smaller than in the screenshot");
            assert!(
                w * s <= vw * shot + 1e-6 && h * s <= vh * shot + 1e-6,
                "{w}x{h}: beyond the screenshot's size"
            );
            assert!((w * s) * (h * s) <= MAX_PIXELS + 1.0 && (w * s).max(h * s) <= MAX_SIDE);
        }
    }

    #[test]
    fn budget_keeps_side_and_tokens() {
        assert_eq!(budget_scale(1280.0, 720.0), 1.0);
        let s = budget_scale(3000.0, 1000.0);
        assert!((3000.0 * s - 1568.0).abs() < 0.01);
        let s = budget_scale(1500.0, 1500.0);
        assert!(1500.0 * s * 1500.0 * s <= 1568.0 * 784.0 + 1.0);
    }
}
