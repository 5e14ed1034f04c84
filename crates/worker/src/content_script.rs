//! The worker's line to the content script (`extension/content.js`) in each tab's top frame:
//! one `runtime.Port` per tab, opened by the first question and kept until Chrome disconnects
//! it (the page navigated, went into the back/forward cache, or its tab closed; at once where
//! no content script runs). Each question carries a number and its answer the same number, so
//! questions to one tab may overlap.
//!
//! A port, not `tabs.sendMessage`: a message opens a channel of its own each time. From the
//! worker, on the bench's article (60 calls each, alternating, three runs, AMD EPYC), a round
//! trip with an empty answer took 0.4-0.6 ms on a port against 0.8-1.2 ms by message, and
//! get_page_text's 50,000 characters 2.5-3.2 ms against 3.4-4.1 ms.

use crate::chrome::{runtime, runtime::Port, tabs};
use crate::js::field;
use crate::vec_map::VecMap;
use futures_channel::oneshot;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// The port's name; content.js answers no other.
const PORT_NAME: &str = "worker";

struct Line {
    /// Tells this line from a later one to the same tab, for the listeners of an old port.
    serial: u32,
    port: Port,
    waiting: VecMap<u32, oneshot::Sender<JsValue>>,
    _listeners: [Closure<dyn FnMut(JsValue)>; 2],
}

impl Drop for Line {
    fn drop(&mut self) {
        self.port.disconnect();
    }
}

#[derive(Default)]
struct Lines {
    by_tab: VecMap<i32, Line>,
    serials: u32,
    questions: u32,
}

thread_local! {
    static LINES: RefCell<Lines> = RefCell::default();
}

/// Asks the content script of `tab_id`'s top frame `question` (a JSON object; its number is
/// added). Its answer, or `None` when no content script answers there: none runs in the page
/// (not http(s), or loaded before the extension), or the page went before it answered. The
/// caller bounds the wait: a hung page never answers.
pub async fn ask(tab_id: i32, mut question: serde_json::Value) -> Option<JsValue> {
    let n = LINES.with(|l| {
        let mut l = l.borrow_mut();
        l.questions = l.questions.wrapping_add(1);
        l.questions
    });
    question.as_object_mut()?.insert("n".into(), n.into());
    let message = crate::js::to_js(&question).ok()?;
    // A port Chrome closed before this worker heard of it refuses the message: then one new
    // port.
    let answer = match post(tab_id, n, &message) {
        Some(answer) => answer,
        None => {
            let stale = LINES.with(|l| l.borrow_mut().by_tab.remove(&tab_id));
            drop(stale);
            post(tab_id, n, &message)?
        }
    };
    let _forget = Forget { tab_id, n };
    answer.await.ok()
}

/// Sends the message on the tab's line (opened first when it has none); where its answer will
/// come, or `None` when the port refused it.
fn post(tab_id: i32, n: u32, message: &JsValue) -> Option<oneshot::Receiver<JsValue>> {
    LINES.with(|l| {
        let mut l = l.borrow_mut();
        if !l.by_tab.contains_key(&tab_id) {
            l.serials = l.serials.wrapping_add(1);
            let line = open(tab_id, l.serials).ok()?;
            l.by_tab.insert(tab_id, line);
        }
        let line = l.by_tab.get_mut(&tab_id)?;
        line.port.post_message(message).ok()?;
        let (tx, rx) = oneshot::channel();
        line.waiting.insert(n, tx);
        Some(rx)
    })
}

fn open(tab_id: i32, serial: u32) -> Result<Line, String> {
    let port = tabs::connect(tab_id, PORT_NAME)?;
    let on_message = Closure::<dyn FnMut(JsValue)>::new(move |reply: JsValue| {
        answered(tab_id, serial, &reply);
    });
    let on_disconnect = Closure::<dyn FnMut(JsValue)>::new(move |_: JsValue| {
        let _ = runtime::last_error();
        gone(tab_id, serial);
    });
    port.on_each_message(on_message.as_ref().unchecked_ref());
    port.on_disconnected(on_disconnect.as_ref().unchecked_ref());
    Ok(Line {
        serial,
        port,
        waiting: VecMap::new(),
        _listeners: [on_message, on_disconnect],
    })
}

/// A reply `{n, answer}`: to the question of that number, if it still waits.
fn answered(tab_id: i32, serial: u32, reply: &JsValue) {
    let Some(n) = field(reply, "n").as_f64() else {
        return;
    };
    let waiting = LINES.with(|l| {
        let mut l = l.borrow_mut();
        let line = l.by_tab.get_mut(&tab_id).filter(|x| x.serial == serial)?;
        line.waiting.remove(&(n as u32))
    });
    if let Some(tx) = waiting {
        let _ = tx.send(field(reply, "answer"));
    }
}

/// The port disconnected: its questions get no answer, and the next question opens a new one.
fn gone(tab_id: i32, serial: u32) {
    let line = LINES.with(|l| {
        let mut l = l.borrow_mut();
        let current = l.by_tab.get(&tab_id).is_some_and(|x| x.serial == serial);
        current.then(|| l.by_tab.remove(&tab_id)).flatten()
    });
    if let Some(mut line) = line {
        line.waiting.clear();
        // Freed after this listener returns: a closure must not be freed while it runs.
        wasm_bindgen_futures::spawn_local(async move { drop(line) });
    }
}

/// Takes a question's entry back when its asker stops waiting (its bound passed).
struct Forget {
    tab_id: i32,
    n: u32,
}

impl Drop for Forget {
    fn drop(&mut self) {
        LINES.with(|l| {
            if let Some(line) = l.borrow_mut().by_tab.get_mut(&self.tab_id) {
                line.waiting.remove(&self.n);
            }
        });
    }
}
