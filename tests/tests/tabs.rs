//! The group's active tab, `switch_tab`, `browser_state` and `file_upload`, end to end: which
//! tab is active after each way a tab joins, is switched to, closes, and after a worker restart
//! (as `browser_state`, `tabs_context_mcp` and Chrome's own selection say); the changes each
//! report drains; files set on a fixture page that reads back their names, sizes and bytes.

use base64::Engine;
use browser_operator_e2e::{tabs_context, Backend, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// `browser_state`, parsed.
async fn state(backend: &Backend) -> Result<Value> {
    let text = backend.text("browser_state", json!({})).await?;
    Ok(serde_json::from_str(&text).expect("browser_state is one block of JSON"))
}

/// The active tab of a report, checking that exactly one is.
fn active_of(state: &Value) -> i64 {
    let tabs = state["tabs"].as_array().expect("tabs");
    let active: Vec<i64> = tabs
        .iter()
        .filter(|t| t["active"] == json!(true))
        .filter_map(|t| t["tabId"].as_i64())
        .collect();
    assert_eq!(active.len(), 1, "exactly one active tab: {state}");
    active[0]
}

fn ids_of(state: &Value) -> Vec<i64> {
    state["tabs"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["tabId"].as_i64()).collect())
        .unwrap_or_default()
}

fn opened(tabs: &[i64]) -> Value {
    json!(tabs
        .iter()
        .map(|t| json!({"type": "tab_opened", "tabId": t}))
        .collect::<Vec<_>>())
}

/// The tabs `tabs_context_mcp` marks active.
async fn context_active(backend: &Backend) -> Result<Vec<i64>> {
    let ctx = tabs_context(&backend.text("tabs_context_mcp", json!({})).await?);
    Ok(ctx["availableTabs"]
        .as_array()
        .expect("availableTabs")
        .iter()
        .filter(|t| t["active"] == json!(true))
        .filter_map(|t| t["tabId"].as_i64())
        .collect())
}

/// Waits (bounded) until `f` holds of the report; the report.
async fn state_until(backend: &Backend, what: &str, f: impl Fn(&Value) -> bool) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut changes = Vec::new();
    loop {
        let mut s = state(backend).await?;
        changes.extend(s["changes"].as_array().cloned().unwrap_or_default());
        s["changes"] = Value::Array(changes.clone());
        if f(&s) {
            return Ok(s);
        }
        assert!(Instant::now() < deadline, "{what}: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_active_tab_switch_tab_and_browser_state() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;

    // The group's first tab joins: active, reported once.
    let (a, _) = backend.first_tab().await?;
    let s = state(&backend).await?;
    assert_eq!(ids_of(&s), [a]);
    assert_eq!(active_of(&s), a);
    assert_eq!(s["changes"], opened(&[a]), "{s}");
    assert_eq!(s["dropped"], 0);
    // A blank tab: empty title and URL.
    assert_eq!(
        (&s["tabs"][0]["title"], &s["tabs"][0]["url"]),
        (&json!(""), &json!(""))
    );
    // Drained: the next report has no changes.
    assert_eq!(state(&backend).await?["changes"], json!([]));

    backend.navigate(a, &fixtures.url("dialogs.html")).await?;
    let s = state(&backend).await?;
    assert_eq!(s["tabs"][0]["url"], fixtures.url("dialogs.html"));
    assert_eq!(s["tabs"][0]["title"], "Fixture: dialogs");

    // A new tab is the only active one, in the report, the tab context and Chrome's window.
    let b = backend.new_tab().await?;
    let s = state(&backend).await?;
    assert_eq!(active_of(&s), b);
    assert_eq!(s["changes"], opened(&[b]), "{s}");
    assert_eq!(context_active(&backend).await?, [b]);
    let worker = browser.worker().await?;
    let selected = |tab: i64| format!("chrome.tabs.get({tab}).then((t) => t.active)");
    assert_eq!(worker.eval(&selected(b)).await?, json!(true));

    // switch_tab: active in the group, selected in its window.
    let out = backend.text("switch_tab", json!({"tabId": a})).await?;
    assert!(
        out.starts_with(&format!("Switched to tab {a}: \"Fixture: dialogs\"")),
        "{out}"
    );
    let s = state(&backend).await?;
    assert_eq!(active_of(&s), a);
    assert_eq!(s["changes"], json!([]), "switching opens nothing: {s}");
    assert_eq!(context_active(&backend).await?, [a]);
    assert_eq!(worker.eval(&selected(a)).await?, json!(true));
    assert_eq!(worker.eval(&selected(b)).await?, json!(false));

    // A tab outside the group: the same error as every tool's.
    let outside = browser.open_page(&fixtures.url("hello.html")).await?;
    let outside_id = worker
        .eval(&format!(
            "chrome.tabs.query({{url: {}}}).then((t) => t[0].id)",
            browser_operator_e2e::js_string(&fixtures.url("hello.html"))
        ))
        .await?
        .as_i64()
        .expect("the outside tab's id");
    let e = backend
        .error("switch_tab", json!({"tabId": outside_id}))
        .await?;
    assert!(
        e.contains(&format!(
            "Tab {outside_id} is not in the automation tab group"
        )) && e.contains("Valid tab ids"),
        "{e}"
    );
    assert_eq!(active_of(&state(&backend).await?), a);

    // A tab the person drags into the group joins it, reported, but does not take over.
    let group = worker
        .eval(&format!("chrome.tabs.get({a}).then((t) => t.groupId)"))
        .await?;
    worker
        .eval(&format!(
            "chrome.tabs.group({{tabIds: [{outside_id}], groupId: {group}}}).then(() => 'ok')"
        ))
        .await?;
    let s = state_until(&backend, "the dragged tab reported", |s| {
        s["changes"] == opened(&[outside_id])
    })
    .await?;
    assert_eq!(active_of(&s), a);
    outside.close().await?;
    state_until(&backend, "the dragged tab gone", |s| {
        !ids_of(s).contains(&outside_id)
    })
    .await?;

    // A person selecting another tab in Chrome does not change the group's active tab.
    worker
        .eval(&format!(
            "chrome.tabs.update({b}, {{active: true}}).then(() => 'ok')"
        ))
        .await?;
    assert_eq!(worker.eval(&selected(b)).await?, json!(true));
    assert_eq!(active_of(&state(&backend).await?), a);

    // The active tab outlives a worker restart (Chrome's selection says b: it is not guessed).
    worker.detach().await?;
    browser.stop_worker().await?;
    let s = state_of_restarted(&backend).await?;
    assert_eq!(active_of(&s), a);
    assert_eq!(s["changes"], json!([]));

    // A tab a's page opens (window.open on a click) joins the group as its active tab; before
    // it, b was made active again.
    backend.text("switch_tab", json!({"tabId": b})).await?;
    let (ox, oy) = centre(&backend, a, "open").await?;
    backend
        .text(
            "computer",
            json!({"tabId": a, "action": "left_click", "coordinate": [ox, oy]}),
        )
        .await?;
    let s = state_until(&backend, "the popup joins", |s| ids_of(s).len() == 3).await?;
    let c = *ids_of(&s)
        .iter()
        .find(|t| ![a, b].contains(t))
        .expect("the popup");
    assert_eq!(active_of(&s), c, "a {a}, b {b}: {s}");
    assert_eq!(s["changes"], opened(&[c]), "{s}");
    assert_eq!(context_active(&backend).await?, [c]);

    // Closing the active tab: the most recently active remaining one is active (b: neither the
    // first of the tab strip, a, nor the opener Chrome selects when a popup closes, a).
    backend.text("tabs_close_mcp", json!({"tabId": c})).await?;
    let s = state(&backend).await?;
    assert_eq!(ids_of(&s), [a, b], "{s}");
    assert_eq!(active_of(&s), b);
    // Closing a tab that is not active leaves the active one.
    backend.text("tabs_close_mcp", json!({"tabId": a})).await?;
    let s = state(&backend).await?;
    assert_eq!(ids_of(&s), [b]);
    assert_eq!(active_of(&s), b);
    assert_eq!(s["changes"], json!([]), "closing reports no opening: {s}");

    // switch_tab is a tool every client sees: the MCP server lists the new tools.
    let mcp =
        browser_operator_e2e::mcp::HttpMcp::connect(&backend.http_url(), backend.token()).await?;
    let listed: Vec<String> = mcp
        .tools()
        .await?
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    for name in ["switch_tab", "browser_state", "file_upload"] {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} over MCP: {listed:?}"
        );
    }
    let over_mcp =
        browser_operator_e2e::mcp::text_of(&mcp.call("browser_state", json!({})).await?)?;
    let s: Value = serde_json::from_str(&over_mcp).expect("JSON over MCP");
    assert_eq!(active_of(&s), b);

    browser.close().await?;
    Ok(())
}

/// `browser_state` from a worker Chrome starts again for the command (after its connection is
/// back).
async fn state_of_restarted(backend: &Backend) -> Result<Value> {
    let r = backend
        .caller()
        .command_when_connected("browser_state", json!({}), Duration::from_secs(30))
        .await?;
    match r.outcome {
        protocol::Outcome::Result { result } => {
            Ok(serde_json::from_str(&result.joined_text()).expect("JSON"))
        }
        protocol::Outcome::Error { error } => panic!("browser_state after a restart: {error}"),
    }
}

/// The CSS centre of an element (the tab's screenshot scale is 1 before any screenshot).
async fn centre(backend: &Backend, tab: i64, id: &str) -> Result<(f64, f64)> {
    let v = backend
        .js(tab, &format!("const r = document.getElementById('{id}').getBoundingClientRect(); [r.x + r.width / 2, r.y + r.height / 2]"))
        .await?;
    let v: Vec<f64> = serde_json::from_str(&v).expect("point");
    Ok((v[0], v[1]))
}

/// The ref `find` gives the element named `label`.
async fn ref_of(backend: &Backend, tab: i64, label: &str) -> Result<String> {
    let found = backend
        .text("find", json!({"tabId": tab, "query": label}))
        .await?;
    let quoted = format!("\"{label}\"");
    let line = found
        .lines()
        .find(|l| l.starts_with("[ref_") && l.contains(&quoted))
        .unwrap_or_else(|| panic!("{label} in {found}"));
    Ok(line[1..line.find(']').expect("a ref")].to_string())
}

/// What the fixture's input `id` read back once its change handler finished.
async fn picked(backend: &Backend, tab: i64, id: &str) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = backend
            .js(tab, &format!("JSON.stringify(picked['{id}'] || null)"))
            .await?;
        let v: Value = serde_json::from_str(&v).expect("JSON");
        if !v.is_null() {
            return Ok(v);
        }
        assert!(Instant::now() < deadline, "the page read no files on #{id}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn reset(backend: &Backend, tab: i64) -> Result<()> {
    backend.js(tab, "picked = {}; events = []; 'ok'").await?;
    Ok(())
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The fixture's checksum of bytes.
fn sum(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(*b)))
}

#[tokio::test]
async fn file_upload_sets_a_file_input_s_files() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("upload.html")).await?;
    let one = ref_of(&backend, tab, "One file").await?;
    let many = ref_of(&backend, tab, "Many files").await?;
    let off = ref_of(&backend, tab, "Disabled").await?;
    let words = ref_of(&backend, tab, "Words").await?;
    let button = ref_of(&backend, tab, "Send").await?;

    // Bytes the backend sends: one text file, its name cut to its last component, its type
    // guessed; input then change fire, as after a person's choice.
    let out = backend
        .text(
            "file_upload",
            json!({"tabId": tab, "ref": one, "files": [{"name": "../../secret/notes.txt", "data": b64(b"hello, file")}]}),
        )
        .await?;
    assert!(
        out.contains("\"notes.txt\" (11 bytes, text/plain)"),
        "{out}"
    );
    let v = picked(&backend, tab, "one").await?;
    assert_eq!(
        v,
        json!([{"name": "notes.txt", "size": 11, "type": "text/plain", "text": "hello, file", "sum": sum(b"hello, file")}])
    );
    assert_eq!(
        backend.js(tab, "events.join()").await?,
        "one:input,one:change"
    );

    // Several files on a multiple input: every byte value, a given type, a name with controls.
    reset(&backend, tab).await?;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    backend
        .text(
            "file_upload",
            json!({"tabId": tab, "ref": many, "files": [
                {"name": "all-bytes.bin", "mimeType": "application/octet-stream", "data": b64(&bytes)},
                {"name": "re\u{202e}port\n.csv", "data": b64(b"a,b\n1,2\n")},
            ]}),
        )
        .await?;
    let v = picked(&backend, tab, "many").await?;
    assert_eq!(v[0]["name"], "all-bytes.bin");
    assert_eq!(v[0]["size"], 70_000);
    assert_eq!(v[0]["type"], "application/octet-stream");
    assert_eq!(v[0]["sum"], sum(&bytes));
    assert_eq!(
        (&v[1]["name"], &v[1]["type"], &v[1]["text"]),
        (
            &json!("report.csv"),
            &json!("text/csv"),
            &json!("a,b\n1,2\n")
        )
    );

    // The size cap: 1 MiB in all passes; one byte more is refused, saying the limit.
    let mib = vec![b'x'; 1 << 20];
    reset(&backend, tab).await?;
    backend
        .text(
            "file_upload",
            json!({"tabId": tab, "ref": one, "files": [{"name": "big.txt", "data": b64(&mib)}]}),
        )
        .await?;
    assert_eq!(picked(&backend, tab, "one").await?[0]["size"], 1 << 20);
    let e = backend
        .error(
            "file_upload",
            json!({"tabId": tab, "ref": many, "files": [
                {"name": "big.txt", "data": b64(&mib)}, {"name": "one-more.txt", "data": b64(b"!")}
            ]}),
        )
        .await?;
    assert!(e.contains("limit of 1048576 bytes (1 MiB)"), "{e}");

    // Refusals, each naming what is wrong; the page's inputs are untouched by them.
    reset(&backend, tab).await?;
    let two = json!([{"name": "a.txt", "data": b64(b"a")}, {"name": "b.txt", "data": b64(b"b")}]);
    let refused = [
        (
            json!({"ref": one, "files": two}),
            "takes one file (it has no multiple attribute); 2 were given",
        ),
        (
            json!({"ref": words, "files": [{"name": "a.txt", "data": "YQ=="}]}),
            "an input of type \"text\", not a file input",
        ),
        (
            json!({"ref": button, "files": [{"name": "a.txt", "data": "YQ=="}]}),
            "The element is <button#go>, not a file input",
        ),
        (
            json!({"ref": off, "files": [{"name": "a.txt", "data": "YQ=="}]}),
            "The file input is disabled",
        ),
        (
            json!({"ref": one, "files": [{"name": "a.txt", "data": "not base64!"}]}),
            "files[0].data is not base64",
        ),
        (
            json!({"ref": one, "files": [{"name": "a.txt", "mimeType": "nonsense", "data": "YQ=="}]}),
            "is not a MIME type",
        ),
        (
            json!({"ref": one, "files": [{"name": "a.txt", "data": "YQ=="}], "paths": ["/tmp/a"]}),
            "not both",
        ),
        (json!({"ref": one}), "needs `files`"),
        (
            json!({"ref": one, "paths": ["relative.txt"]}),
            "paths[0] is not an absolute path",
        ),
        (
            json!({"ref": "ref_99999", "files": [{"name": "a.txt", "data": "YQ=="}]}),
            "Unknown ref",
        ),
    ];
    for (args, says) in refused {
        let mut args = args;
        args["tabId"] = json!(tab);
        let e = backend.error("file_upload", args.clone()).await?;
        assert!(e.contains(says), "{args}: {e}");
    }
    assert_eq!(backend.js(tab, "events.join()").await?, "");

    // Paths on the browser's machine: Chrome sets them; the page reads the file's bytes.
    let dir = browser_operator_e2e::temp_dir("file-upload");
    let path = dir.join("on-disk.txt");
    std::fs::write(&path, b"bytes from the disk").expect("a file on disk");
    let out = backend
        .text(
            "file_upload",
            json!({"tabId": tab, "ref": one, "paths": [path.to_string_lossy()]}),
        )
        .await?;
    assert!(
        out.contains("\"on-disk.txt\" (19 bytes, text/plain)"),
        "{out}"
    );
    let v = picked(&backend, tab, "one").await?;
    assert_eq!(
        (&v[0]["name"], &v[0]["text"]),
        (&json!("on-disk.txt"), &json!("bytes from the disk"))
    );
    assert_eq!(
        backend.js(tab, "events.join()").await?,
        "one:input,one:change"
    );
    // A path that names no file: refused, and the input is left without it.
    let missing = dir.join("missing.txt");
    let e = backend
        .error(
            "file_upload",
            json!({"tabId": tab, "ref": one, "paths": [missing.to_string_lossy()]}),
        )
        .await?;
    assert!(
        e.contains("could not read the file \"missing.txt\"") && e.contains("cleared"),
        "{e}"
    );
    assert_eq!(
        backend
            .js(tab, "String(document.getElementById('one').files.length)")
            .await?,
        "0"
    );
    let _ = std::fs::remove_dir_all(&dir);

    browser.close().await?;
    Ok(())
}
