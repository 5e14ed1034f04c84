//! Geometry, in one place: where an element is (its box, the centre a click lands on), where an
//! out-of-process frame's viewport sits in the top one (the iframes' offsets), and the
//! screenshot's scale (`scale`), the coordinate space agents use. Points are CSS pixels of the
//! tab's top viewport unless said otherwise.

pub mod scale;

use crate::cdp::{self, Target};
use crate::isolated_world::{self as world, stale};
use serde_json::{json, Value};

/// The backend node id of a resolved element.
async fn backend_of(target: &Target, object: &str) -> Result<i64, String> {
    let out = cdp::send_to(target, "DOM.describeNode", json!({"objectId": object})).await?;
    out.pointer("/node/backendNodeId")
        .and_then(Value::as_i64)
        .ok_or_else(|| "DOM.describeNode returned no node".to_string())
}

/// The centre of the element's first box, in CSS pixels of the (top) viewport, after scrolling
/// it into view.
pub async fn point(tab: i32, r: &str) -> Result<(f64, f64), String> {
    let element = world::resolve(tab, r).await?;
    let target = element.target;
    let backend = backend_of(&target, &element.object).await?;
    // An out-of-process iframe's element: its iframes into view first, outermost first.
    let mut owners = Vec::new();
    let mut inner = target.clone();
    while let Some((parent, frame)) = cdp::embedder(&inner) {
        owners.push((parent.clone(), frame));
        inner = parent;
    }
    for (parent, frame) in owners.iter().rev() {
        if let Ok(owner) = frame_owner(parent, frame).await {
            let node = json!({"backendNodeId": owner});
            let _ = cdp::send_to(parent, "DOM.scrollIntoViewIfNeeded", node).await;
        }
    }
    let node = json!({"backendNodeId": backend});
    if let Err(e) = cdp::send_to(&target, "DOM.scrollIntoViewIfNeeded", node.clone()).await {
        if e.is_gone() {
            return Err(stale(r, "it was removed from the page"));
        }
    }
    let why = |e| {
        match e {
        BoxError::Gone => stale(r, "it was removed from the page"),
        BoxError::Hidden => format!("The element {r} is not visible (it has no box on the page), so it can't be clicked or scrolled to."),
    }
    };
    let mut at = box_of(&target, backend).await.map_err(why)?;
    if target.session.is_some() {
        // Scrolling inside a frame of another process moves its ancestors asynchronously (the
        // request crosses processes): measure until two readings a frame apart agree.
        for _ in 0..10 {
            crate::js::sleep_ms(40).await;
            let again = box_of(&target, backend).await.map_err(why)?;
            if again == at {
                break;
            }
            at = again;
        }
    }
    Ok((at.0, at.1))
}

pub enum BoxError {
    Gone,
    Hidden,
}

/// Centre and size of a node's first content quad, CSS pixels of the top viewport (a node of an
/// out-of-process iframe, `target` a child session, is moved by its iframes' offsets).
pub async fn box_of(
    target: impl Into<Target>,
    backend: i64,
) -> Result<(f64, f64, f64, f64), BoxError> {
    let target = target.into();
    let out = cdp::send_to(
        &target,
        "DOM.getContentQuads",
        json!({"backendNodeId": backend}),
    )
    .await
    .map_err(|e| {
        if e.is_gone() {
            BoxError::Gone
        } else {
            BoxError::Hidden
        }
    })?;
    let (x, y, w, h) = quad_centre(&out).ok_or(BoxError::Hidden)?;
    let (dx, dy) = frame_offset(&target).await.map_err(|_| BoxError::Hidden)?;
    Ok((x + dx, y + dy, w, h))
}

/// Where a session's viewport starts in the top viewport: the sum of the content-box origins of
/// the iframe elements that hold it (zero for the tab's own session).
pub async fn frame_offset(target: &Target) -> Result<(f64, f64), String> {
    let (mut dx, mut dy) = (0.0, 0.0);
    let mut inner = target.clone();
    while let Some((parent, frame)) = cdp::embedder(&inner) {
        let owner = frame_owner(&parent, &frame).await?;
        let model =
            cdp::send_to(&parent, "DOM.getBoxModel", json!({"backendNodeId": owner})).await?;
        let content = model
            .pointer("/model/content")
            .and_then(Value::as_array)
            .ok_or("DOM.getBoxModel returned no content box")?;
        let (Some(x), Some(y)) = (
            content.first().and_then(Value::as_f64),
            content.get(1).and_then(Value::as_f64),
        ) else {
            return Err("DOM.getBoxModel returned no content box".into());
        };
        dx += x;
        dy += y;
        inner = parent;
    }
    Ok((dx, dy))
}

/// The backend node id of the `<iframe>` element that holds `frame`, in the session `parent`.
async fn frame_owner(parent: &Target, frame: &str) -> Result<i64, String> {
    let out = cdp::send_to(parent, "DOM.getFrameOwner", json!({"frameId": frame})).await?;
    out.get("backendNodeId")
        .and_then(Value::as_i64)
        .ok_or_else(|| "DOM.getFrameOwner returned no element".to_string())
}

/// Centre, width and height of the first non-empty quad of a `DOM.getContentQuads` result.
pub fn quad_centre(out: &Value) -> Option<(f64, f64, f64, f64)> {
    for q in out.get("quads")?.as_array()? {
        let p: Vec<f64> = q.as_array()?.iter().filter_map(Value::as_f64).collect();
        if p.len() != 8 {
            continue;
        }
        let xs = [p[0], p[2], p[4], p[6]];
        let ys = [p[1], p[3], p[5], p[7]];
        let (x0, x1) = (
            xs.iter().cloned().fold(f64::MAX, f64::min),
            xs.iter().cloned().fold(f64::MIN, f64::max),
        );
        let (y0, y1) = (
            ys.iter().cloned().fold(f64::MAX, f64::min),
            ys.iter().cloned().fold(f64::MIN, f64::max),
        );
        if x1 - x0 > 0.0 && y1 - y0 > 0.0 {
            return Some(((x0 + x1) / 2.0, (y0 + y1) / 2.0, x1 - x0, y1 - y0));
        }
    }
    None
}

/// The viewport's size in CSS pixels, scrollbars included (what a screenshot shows).
pub async fn viewport(tab: i32) -> Result<(i64, i64), String> {
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": "[innerWidth, innerHeight]", "returnByValue": true}),
    )
    .await?;
    let v = out.pointer("/result/value").and_then(Value::as_array);
    let dim = |i: usize| {
        v.and_then(|v| v.get(i))
            .and_then(Value::as_f64)
            .map(|f| f.round() as i64)
    };
    match (dim(0), dim(1)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err("reading the viewport size failed".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quads_have_a_centre() {
        let q = json!({"quads": [[10.0, 20.0, 30.0, 20.0, 30.0, 40.0, 10.0, 40.0]]});
        assert_eq!(quad_centre(&q), Some((20.0, 30.0, 20.0, 20.0)));
        assert_eq!(quad_centre(&json!({"quads": []})), None);
    }
}
