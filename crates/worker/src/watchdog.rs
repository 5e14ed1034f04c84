//! The watchdog: while the user wants a connection, an offscreen document
//! (`extension/watchdog.html`) holds a runtime port to this worker and connects again the moment
//! Chrome stops the worker, which makes Chrome start it at once. Without it a stopped worker
//! waits for the keep-alive alarm (Chrome's 30 s minimum period, often 15–30 s in practice).
//!
//! It only restarts: it sends nothing on the port, so Chrome stops the worker by its own rules
//! as before. Closed on the user's Disconnect and on a rejected token, so a disconnected
//! extension is never woken.

use crate::chrome::{offscreen, runtime};
use crate::js::log;

const URL: &str = "extension/watchdog.html";
/// Chrome's list has no reason for "restarts the service worker"; WORKERS (the document exists
/// for a worker's sake) is the nearest, and the justification says exactly what it does.
const REASONS: &[&str] = &["WORKERS"];
const JUSTIFICATION: &str = "Restarts the extension's service worker as soon as Chrome stops it \
    while the user has it connected to their backend, so commands are not refused for up to 30 s. \
    It holds one runtime port to the worker and sends nothing.";

async fn open() -> Result<bool, String> {
    Ok(runtime::count_contexts("OFFSCREEN_DOCUMENT").await? > 0)
}

/// Opens the watchdog unless it is open. Failures are logged: the alarm remains the backstop.
pub async fn start() {
    if matches!(open().await, Ok(true)) {
        return;
    }
    if let Err(e) = offscreen::create_document(URL, REASONS, JUSTIFICATION).await {
        // Two starts racing: the other one opened it.
        if !matches!(open().await, Ok(true)) {
            log(&format!(
                "cannot open the watchdog ({e}); a stopped worker restarts on its alarm"
            ));
        }
    }
}

/// Closes the watchdog if it is open.
pub async fn stop() {
    if matches!(open().await, Ok(false)) {
        return;
    }
    if let Err(e) = offscreen::close_document().await {
        if matches!(open().await, Ok(true)) {
            log(&format!("cannot close the watchdog: {e}"));
        }
    }
}
