//! Fuzz targets of the protocol crate, run as ordinary tests: a quick pass in `cargo test`, a
//! long one with `./build.sh fuzz` (`FUZZ_SECONDS` per target; `FUZZ_SEED` replays). Each
//! target checks properties, not only the absence of panics. What a run found is kept below as
//! explicit regression tests.

use crate::btcp::{declarations, without_lone_surrogates, PageTools};
use crate::catalog::catalog;
use crate::config::ConnectionConfig;
use crate::frames::{ExtensionFrame, ServerFrame};
use crate::fuzzing::{run, Rng};
use crate::pairing::{is_web_origin, PairOffer};
use crate::schema::check_args;
use crate::sse::{SseDecoder, SseError, SseEvent};
use serde_json::{json, Map, Value};

/// Text that is JSON-ish: a valid seed mutated as bytes, or random bytes.
fn json_text(rng: &mut Rng, seeds: &[Value]) -> String {
    let mut bytes = if rng.one_in(8) {
        rng.bytes(300)
    } else {
        let mut v = rng.pick(seeds).clone();
        if rng.one_in(2) {
            rng.mutate_json(&mut v, 3);
        }
        serde_json::to_vec(&v).unwrap_or_default()
    };
    if rng.one_in(2) {
        rng.mutate_bytes(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `v` with every float replaced by null: serde_json's default float reading may differ from the
/// written float in the last bit, which says nothing about the frames.
fn shape(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => Value::Null,
        Value::Array(a) => Value::Array(a.into_iter().map(shape).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, shape(v))).collect()),
        v => v,
    }
}

/// A frame read back from its own serialization is the same frame.
fn round_trips<T: serde::Serialize + serde::de::DeserializeOwned>(frame: &T, text: &str) {
    let once = serde_json::to_value(frame).expect("a frame serializes");
    let again: T = serde_json::from_str(&once.to_string()).expect("its own text reads back");
    let twice = serde_json::to_value(&again).expect("a frame serializes");
    assert_eq!(shape(twice), shape(once), "{text}");
}

#[test]
fn fuzz_websocket_frames() {
    let seeds = [
        json!({"type": "auth_ok"}),
        json!({"type": "command", "id": "c1", "tool": "navigate", "args": {"tabId": 1, "url": "https://a.example"}}),
        json!({"type": "error", "message": "bad token"}),
        json!({"type": "auth", "token": "t0k", "target": "work"}),
        json!({"type": "result", "commandId": "c1", "result": {"content": [{"type": "text", "text": "ok"}]}}),
        json!({"type": "result", "commandId": "c1", "error": "no"}),
        json!({"type": "whatever", "x": 1}),
    ];
    run("websocket frames", 200, |rng| {
        let text = json_text(rng, &seeds);
        if let Ok(frame) = serde_json::from_str::<ServerFrame>(&text) {
            round_trips(&frame, &text);
        }
        if let Ok(frame) = serde_json::from_str::<ExtensionFrame>(&text) {
            round_trips(&frame, &text);
        }
    });
}

/// A stream of SSE lines: fields, comments, BOMs, every line end, multi-byte text.
fn sse_stream(rng: &mut Rng) -> Vec<u8> {
    const LINES: &[&str] = &[
        "data: {\"id\":\"1\"}",
        "data:",
        "data",
        "data:  two spaces",
        "event: command",
        "event:",
        "id: 7",
        "id: a\0b",
        "retry: 1500",
        "retry: x",
        ": keep-alive",
        ":",
        "",
        "",
        "unknown: x",
        "data: é€😀",
        "\u{feff}data: bom",
    ];
    const ENDS: &[&str] = &["\n", "\r", "\r\n", "\n\n", "\r\r"];
    let mut out = Vec::new();
    if rng.one_in(4) {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    for _ in 0..rng.len(40) {
        if rng.one_in(10) {
            out.extend(rng.bytes(20));
        } else {
            out.extend_from_slice(rng.pick(LINES).as_bytes());
        }
        out.extend_from_slice(rng.pick(ENDS).as_bytes());
    }
    out
}

fn decode(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<SseError>, Option<u32>) {
    let mut d = SseDecoder::new();
    let mut events = Vec::new();
    for c in chunks {
        match d.push(c) {
            Ok(mut e) => events.append(&mut e),
            Err(e) => return (events, Some(e), d.retry()),
        }
    }
    (events, None, d.retry())
}

#[test]
fn fuzz_sse_decoder_split_anywhere_equals_whole() {
    run("sse decoder", 200, |rng| {
        let stream = sse_stream(rng);
        let whole = decode(&[&stream]);
        // The same bytes in random chunks (UTF-8 sequences and CRLFs split too).
        let mut cuts: Vec<usize> = (0..rng.below(8))
            .map(|_| rng.below(stream.len() + 1))
            .collect();
        if rng.one_in(4) {
            cuts = (0..=stream.len()).collect();
        }
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for c in cuts {
            chunks.push(&stream[at..c]);
            at = c;
        }
        chunks.push(&stream[at..]);
        let split = decode(&chunks);
        assert_eq!(
            split,
            whole,
            "{:?} in {} chunks",
            String::from_utf8_lossy(&stream),
            chunks.len()
        );
    });
}

#[test]
fn fuzz_pair_offers() {
    let seeds = [
        json!({"__browserOperator": "pair-offer", "config": {"transport": "sse-http", "serverUrl": "https://app.example", "token": "t0k", "commandPath": "/browser/{target}/events", "resultPath": "/browser/result", "target": "ch"}, "brand": {"name": "Example CRM"}}),
        json!({"config": {"transport": "websocket", "serverUrl": "ws://127.0.0.1:8787/ws", "token": "t"}}),
        json!({"config": {"transport": "http-poll", "serverUrl": "http://localhost:1", "token": "x"}, "brand": null}),
    ];
    run("pair offers", 200, |rng| {
        let mut m = rng.pick(&seeds).clone();
        for _ in 0..1 + rng.below(3) {
            rng.mutate_json(&mut m, 3);
        }
        if let Ok(offer) = PairOffer::parse(&m) {
            // What is accepted is a valid, normalized config and a short one-line brand.
            assert_eq!(offer.config.validate(), Ok(()), "{m}");
            assert_eq!(
                offer.config.clone().normalized().as_ref(),
                Ok(&offer.config),
                "{m}"
            );
            if let Some(name) = &offer.brand.name {
                assert!(
                    name.chars().count() <= 64 && !name.chars().any(char::is_control),
                    "{m}"
                );
            }
        }
        let origin = rng.string(60);
        if is_web_origin(&origin) {
            assert!(origin.starts_with("http://") || origin.starts_with("https://"));
            let rest = origin.split_once("://").map_or("", |(_, r)| r);
            assert!(
                !rest.is_empty() && !rest.contains(['/', '@', '?', '#']),
                "{origin}"
            );
        }
    });
}

#[test]
fn fuzz_connection_configs() {
    const URLS: &[&str] = &[
        "ws://127.0.0.1:8787/ws",
        "wss://a.example/ws",
        "http://127.0.0.1:8787",
        "https://a.example/",
        "  http://h//  ",
        "ftp://x",
        "",
        "ws://",
        "http://[::1]:80",
    ];
    const PATHS: &[&str] = &[
        "/browser/events",
        "/browser/{target}/events",
        "events",
        "/a b",
        "",
        " /x ",
    ];
    run("connection configs", 200, |rng| {
        let mut c = json!({
            "transport": rng.pick(&["websocket", "sse-http", "http-poll", "http-short-poll", "fax"]).to_string(),
            "serverUrl": if rng.one_in(3) { rng.string(80) } else { rng.pick(URLS).to_string() },
            "token": if rng.one_in(3) { rng.string(30) } else { "t0k-123".into() },
        });
        for key in ["commandPath", "resultPath", "target"] {
            if rng.one_in(2) {
                c[key] = match rng.below(3) {
                    0 => Value::String(rng.string(20)),
                    1 => Value::String(rng.pick(PATHS).to_string()),
                    _ => rng.json(1),
                };
            }
        }
        if rng.one_in(4) {
            rng.mutate_json(&mut c, 2);
        }
        let Ok(config) = serde_json::from_value::<ConnectionConfig>(c.clone()) else {
            return;
        };
        match config.normalized() {
            Ok(n) => {
                assert_eq!(n.validate(), Ok(()), "{c}");
                assert_eq!(
                    n.clone().normalized().as_ref(),
                    Ok(&n),
                    "normalizing twice: {c}"
                );
                let (cmd, res) = (n.command_url(), n.result_url());
                assert!(cmd.starts_with(&n.server_url) && res.starts_with(&n.server_url));
                let path = &cmd[n.server_url.len()..];
                assert!(
                    !path.contains("{target}") && !path.contains(char::is_whitespace),
                    "{cmd}"
                );
                let text = serde_json::to_string(&n).expect("a config serializes");
                assert_eq!(
                    serde_json::from_str::<ConnectionConfig>(&text).ok(),
                    Some(n)
                );
            }
            Err(e) => assert!(!e.message.is_empty() && !e.field.is_empty()),
        }
    });
}

/// A value that `schema` accepts (the catalog's subset of JSON Schema).
fn valid(rng: &mut Rng, schema: &Value) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return rng.pick(options).clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .get(rng.below(ts.len()))
            .and_then(Value::as_str)
            .unwrap_or("string")
            .to_string(),
        _ => "string".into(),
    };
    let min = schema
        .get("minimum")
        .and_then(Value::as_f64)
        .unwrap_or(-1000.0);
    let max = schema
        .get("maximum")
        .and_then(Value::as_f64)
        .unwrap_or(1000.0);
    match ty.as_str() {
        "integer" => {
            let (lo, hi) = (min.ceil() as i64, max.floor() as i64);
            Value::from(lo + (rng.next_u64() % (hi - lo + 1).max(1) as u64) as i64)
        }
        "number" => Value::from(min + (max - min) * (rng.below(1001) as f64 / 1000.0)),
        "boolean" => Value::Bool(rng.one_in(2)),
        "array" => {
            let lo = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            let hi = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(lo as u64 + 4) as usize;
            let n = lo + rng.below(hi - lo + 1);
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..n).map(|_| valid(rng, &items)).collect())
        }
        "object" => Value::Object(valid_object(rng, schema, false)),
        "null" => Value::Null,
        _ => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            let mut s = rng.string(20);
            while s.chars().count() < min {
                s.push('x');
            }
            Value::String(s)
        }
    }
}

fn valid_object(rng: &mut Rng, schema: &Value, all: bool) -> Map<String, Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            if all || required.contains(&name.as_str()) || rng.one_in(2) {
                out.insert(name.clone(), valid(rng, sub));
            }
        }
    }
    out
}

/// A value of a JSON type `schema`'s `type` does not allow, if there is one.
fn wrong_type(rng: &mut Rng, schema: &Value) -> Option<Value> {
    let types: Vec<&str> = match schema.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let mut candidates = vec![json!("text"), json!(true), json!([1]), json!({"a": 1})];
    if !types.contains(&"integer") && !types.contains(&"number") {
        candidates.push(json!(7));
    }
    if !types.contains(&"number") {
        candidates.push(json!(1.5));
    }
    candidates.retain(|v| {
        !types.iter().any(|t| match *t {
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "number" => v.is_number(),
            "integer" => v.is_i64(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => true,
        })
    });
    (!candidates.is_empty()).then(|| rng.pick(&candidates).clone())
}

#[test]
fn fuzz_every_tools_argument_checking() {
    let tools = catalog();
    run("tool arguments", 500, |rng| {
        let t = rng.pick(&tools);
        let schema = &t.input_schema;
        // Random arguments: an answer, never a panic.
        let keys: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let random = rng.object(3, &keys);
        let _ = check_args(schema, &random);
        // Valid arguments pass.
        let mut args = valid_object(rng, schema, true);
        assert_eq!(check_args(schema, &args), Ok(()), "{}: {args:?}", t.name);
        // One argument of a wrong type: the error names it.
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let names: Vec<&String> = props.keys().collect();
        if names.is_empty() {
            return;
        }
        let name = rng.pick(&names).to_string();
        if let Some(bad) = wrong_type(rng, &props[&name]) {
            args.insert(name.clone(), bad.clone());
            let e = check_args(schema, &args).expect_err(&format!("{}.{name} = {bad}", t.name));
            assert!(e.contains(&format!("`{name}")), "{}: {e}", t.name);
        }
        // A required argument left out: the error names it.
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            if let Some(r) = req.get(rng.below(req.len())).and_then(Value::as_str) {
                let mut args = valid_object(rng, schema, true);
                args.remove(r);
                let e = check_args(schema, &args).expect_err(r);
                assert!(e.contains(&format!("`{r}`")), "{}: {e}", t.name);
            }
        }
    });
}

#[test]
fn fuzz_page_tool_interfaces() {
    let todo = json!({"namespace": "todo", "source": "btcp", "interface": {
        "name": "Todo list", "version": "1.0", "description": "Items.",
        "methods": [{"name": "add", "description": "Add an item.", "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to do."}, "tags": {"type": "array", "items": {"type": "string"}}, "when": {"type": ["string", "null"], "enum": ["now", "later"]}},
            "required": ["text"]
        }, "outputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}}, "annotations": {"readOnlyHint": true}}]
    }});
    let webmcp = json!({"namespace": "webmcp", "source": "webmcp", "interface": {"name": "webmcp", "version": "1",
        "methods": [{"name": "account.sign_out", "description": "Sign out.", "inputSchema": {"type": "object"}, "title": "Sign out"}]}});
    let seeds = [
        json!({"revision": 1, "namespaces": [todo.clone(), webmcp.clone()]}),
        json!({"revision": 0, "namespaces": []}),
        json!({"revision": 9, "namespaces": [webmcp, todo]}),
    ];
    run("page-tool interfaces", 200, |rng| {
        let text = json_text(rng, &seeds);
        let _ = without_lone_surrogates(&text);
        let Ok(tools) = PageTools::from_page(&text) else {
            return;
        };
        // What was kept reads back the same and is kept again; what was refused says why.
        let again = serde_json::to_string(&PageTools {
            refused: Vec::new(),
            ..tools.clone()
        })
        .expect("serializes");
        let reread = PageTools::from_page(&again).expect("kept namespaces read back");
        assert_eq!(reread.namespaces, tools.namespaces, "{text}");
        assert!(reread.refused.is_empty(), "{:?}", reread.refused);
        assert!(tools.refused.iter().all(|r| !r.error.is_empty()));
        let tools = tools.with_browser();
        for ns in &tools.namespaces {
            let d = declarations(ns);
            assert!(
                d.contains(&format!("declare namespace {} {{", ns.namespace)),
                "{d}"
            );
        }
        let _ = tools.interfaces_json();
        let _ = tools.listed();
    });
}

// Regressions the fuzzers found, kept as explicit tests.

/// A lone surrogate escape (which the page's JSON.stringify writes) made serde refuse the whole
/// registry, so one odd string took every namespace of the tab down.
#[test]
fn regression_lone_surrogate_in_a_registry() {
    let text = r#"{"revision":1,"namespaces":[{"namespace":"a","source":"btcp","interface":{"name":"\udc00","version":"1","methods":[{"name":"m","description":"\ud800\ud800x","inputSchema":{"type":"object"}}]}}]}"#;
    let tools = PageTools::from_page(text).expect("read");
    assert_eq!(tools.names(), ["a"]);
    assert_eq!(
        tools.namespaces[0].interface.methods[0].description,
        "\u{fffd}\u{fffd}x"
    );
}

/// A CR ending one chunk, then an LF alone in the next chunk, then another LF: the second LF
/// (an empty line, which ends an event) was dropped as if it also belonged to the CR, so an
/// event read byte by byte was lost or merged with the next one.
#[test]
fn regression_sse_lf_after_a_cr_split_across_chunks() {
    let stream = b"data: a\r\n\ndata: b\n\n";
    let whole = decode(&[stream]);
    assert_eq!(whole.0.len(), 2);
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode(&bytes), whole);
    assert_eq!(decode(&[b"data: a\r", b"\n", b"\n", b"data: b\n\n"]), whole);
}
