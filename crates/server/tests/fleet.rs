//! A fleet (`serve --redis`): three instances in this process sharing a real `redis-server` of
//! the test's own, fake extensions over real WebSockets connected to different instances, and
//! raw HTTP to every instance. Commands reach the browser wherever it is, `/status` lists the
//! fleet, tokens issued and revoked anywhere count everywhere, and the faults (an instance
//! gone, Redis restarted or unreachable) end in clear errors and recovery.

mod common;

use browser_operator_server::fleet::FleetConfig;
use browser_operator_server::{RunningServer, ServerConfig};
use common::redis::Redis;
use common::{binary, closed, extension, extension_with, http, local, next_frame, send, status};
use common::{temp_dir, text, Ws, BEARER, TOKEN};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// The presence TTL the fleets here run with: a gone instance's browsers leave within it.
const TTL: Duration = Duration::from_secs(2);

fn fleet_config(redis: &str, prefix: &str, instance: &str) -> FleetConfig {
    let mut config = FleetConfig::new(redis);
    config.prefix = prefix.to_string();
    config.instance = Some(instance.to_string());
    config.presence_ttl = TTL;
    config
}

async fn instance(redis: &str, prefix: &str, name: &str) -> RunningServer {
    RunningServer::start(ServerConfig {
        command_timeout: Duration::from_secs(8),
        fleet: Some(fleet_config(redis, prefix, name)),
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .expect("instance starts")
}

async fn command(addr: SocketAddr, body: Value) -> (u16, Value) {
    let (status, body) = http(addr, "POST /commands", &[BEARER], &body.to_string()).await;
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|_| json!({ "raw": body })),
    )
}

/// The text of a command's result.
fn answer_text(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap_or("")
}

/// A fake extension that answers every command with `<target>:<args.n>` (while `answering`),
/// and records every command id it got.
struct FakeBrowser {
    ids: Arc<Mutex<Vec<String>>>,
    answering: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Option<u16>>,
}

impl FakeBrowser {
    fn run(mut ws: Ws, target: &str) -> FakeBrowser {
        let ids = Arc::new(Mutex::new(Vec::new()));
        let answering = Arc::new(AtomicBool::new(true));
        let (ids2, answering2, target) =
            (Arc::clone(&ids), Arc::clone(&answering), target.to_string());
        let task = tokio::spawn(async move {
            while let Some(message) = ws.next().await {
                match message {
                    Ok(Message::Text(t)) => {
                        let frame: Value = serde_json::from_str(t.as_str()).expect("JSON");
                        if frame["type"] != "command" {
                            continue;
                        }
                        let id = frame["id"].as_str().expect("id").to_string();
                        ids2.lock().unwrap().push(id.clone());
                        if answering2.load(Ordering::SeqCst) {
                            let text = format!("{target}:{}", frame["args"]["n"]);
                            send(
                                &mut ws,
                                json!({"type": "result", "commandId": id,
                                       "result": {"content": [{"type": "text", "text": text}]}}),
                            )
                            .await;
                        }
                    }
                    Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                    Ok(_) => {}
                    Err(_) => return None,
                }
            }
            None
        });
        FakeBrowser {
            ids,
            answering,
            task,
        }
    }

    fn ids(&self) -> Vec<String> {
        self.ids.lock().unwrap().clone()
    }
}

/// One JSON-RPC request to MCP over HTTP at `url` (with `session`, once there is one): the
/// session id the answer gave, and the response to `id`.
fn mcp(url: &str, session: &str, id: Option<u64>, method: &str, params: Value) -> (String, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    let mut req = agent
        .post(url)
        .header("Authorization", format!("Bearer {TOKEN}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    if !session.is_empty() {
        req = req.header("Mcp-Session-Id", session);
    }
    let mut response = req.send(body.to_string()).expect("POST /mcp");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or(session)
        .to_string();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    let found = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| id.is_some_and(|id| m["id"] == json!(id)))
        .unwrap_or(Value::Null);
    (session, found)
}

/// Polls `addr`'s `/status` until `check` holds (bounded).
async fn until(addr: SocketAddr, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let st = status(addr).await;
        if check(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "{what} never happened: {st}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The fleet's browsers `/status` lists: target → instance.
fn listed(st: &Value) -> HashMap<String, String> {
    st["browsers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["target"].as_str().unwrap_or("").to_string(),
                b["instance"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn lists(st: &Value, pairs: &[(&str, &str)]) -> bool {
    let l = listed(st);
    l.len() == pairs.len()
        && pairs
            .iter()
            .all(|(t, i)| l.get(*t).map(String::as_str) == Some(*i))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_every_browser_through_every_instance_and_status_lists_the_fleet() {
    let redis = Redis::start("route");
    let url = redis.url();
    let a = instance(&url, "t1:", "a").await;
    let b = instance(&url, "t1:", "b").await;
    let c = instance(&url, "t1:", "c").await;
    let one = FakeBrowser::run(extension(a.addr(), Some("one")).await, "one");
    let two = FakeBrowser::run(extension(b.addr(), Some("two")).await, "two");
    for server in [&a, &b, &c] {
        let st = until(server.addr(), "both browsers listed", |st| {
            lists(st, &[("one", "a"), ("two", "b")])
        })
        .await;
        assert_eq!(st["fleet"]["state"], "ok", "{st}");
    }
    let st = status(c.addr()).await;
    assert_eq!(st["fleet"]["instance"], "c");
    assert_eq!(st["browsers"][0]["local"], false);

    // Through every instance to both browsers, wherever they are.
    for (i, server) in [&a, &b, &c].into_iter().enumerate() {
        for target in ["one", "two"] {
            let (code, v) = command(
                server.addr(),
                json!({"tool": "t", "target": target, "args": {"n": i}}),
            )
            .await;
            assert_eq!(code, 200, "{v}");
            assert_eq!(answer_text(&v), format!("{target}:{i}"));
        }
    }
    // No target with two browsers in the fleet: say which, naming both (from any instance).
    let (code, v) = command(c.addr(), json!({"tool": "t"})).await;
    assert_eq!(code, 409, "{v}");
    let said = v["error"].as_str().unwrap();
    assert!(said.contains("'one'") && said.contains("'two'"), "{said}");
    // A target the fleet does not have.
    let (code, v) = command(a.addr(), json!({"tool": "t", "target": "three"})).await;
    assert_eq!(code, 409, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("No browser is connected with target 'three'"),
        "{v}"
    );

    // 50 interleaved commands from all instances to both browsers: each answered once, with
    // its own result.
    let before = one.ids().len() + two.ids().len();
    let servers = [a.addr(), b.addr(), c.addr()];
    let calls: Vec<_> = (0..50)
        .map(|n| {
            let addr = servers[n % 3];
            let target = if n % 2 == 0 { "one" } else { "two" };
            tokio::spawn(async move {
                let (code, v) = command(
                    addr,
                    json!({"tool": "t", "target": target, "args": {"n": n}}),
                )
                .await;
                (n, target, code, v)
            })
        })
        .collect();
    for call in calls {
        let (n, target, code, v) = call.await.unwrap();
        assert_eq!(code, 200, "{v}");
        assert_eq!(answer_text(&v), format!("{target}:{n}"));
    }
    let mut all = one.ids();
    all.extend(two.ids());
    assert_eq!(
        all.len() - before,
        50,
        "each command reached its browser once"
    );
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "no id twice");

    // MCP over HTTP on an instance that holds no browser: both listed, and a call to the
    // selected one reaches it on its instance.
    let url_c = format!("http://{}/mcp", c.addr());
    let session = tokio::task::spawn_blocking(move || {
        let (session, init) = mcp(&url_c, "", Some(0), "initialize", json!({
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
        assert_eq!(init["result"]["serverInfo"]["name"], "browser-operator", "{init}");
        mcp(&url_c, &session, None, "notifications/initialized", json!({}));
        let (_, listed) = mcp(&url_c, &session, Some(1), "tools/call", json!({"name": "list_connected_browsers", "arguments": {}}));
        let text = listed["result"]["content"][0]["text"].as_str().unwrap_or("").to_string();
        assert!(text.contains("\"one\"") && text.contains("\"two\""), "{listed}");
        let (_, chosen) = mcp(&url_c, &session, Some(2), "tools/call", json!({"name": "select_browser", "arguments": {"target": "two"}}));
        assert_eq!(chosen["result"]["isError"], false, "{chosen}");
        let (_, called) = mcp(&url_c, &session, Some(3), "tools/call", json!({"name": "update_plan", "arguments": {"n": 9, "domains": ["x"], "approach": ["y"]}}));
        assert_eq!(called["result"]["content"][0]["text"], "two:9", "{called}");
        session
    })
    .await
    .unwrap();
    assert!(!session.is_empty());

    // A key prefix is a fleet of its own: another product on the same Redis sees none of it.
    let other = instance(&url, "t1-other:", "x").await;
    let st = status(other.addr()).await;
    assert_eq!(st["browsers"], json!([]), "{st}");
    let (code, v) = command(other.addr(), json!({"tool": "t", "target": "one"})).await;
    assert_eq!(code, 409, "{v}");

    // A browser that leaves is gone from the fleet at once (not after the TTL).
    two.task.abort();
    until(a.addr(), "two leaves", |st| lists(st, &[("one", "a")])).await;
    for s in [a, b, c, other] {
        s.shutdown().await;
    }
    drop(one);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_the_same_id_reaches_the_browser_as_the_same_command_and_waits_for_one_result()
{
    let redis = Redis::start("retry");
    let url = redis.url();
    let a = instance(&url, "t2:", "a").await;
    let b = instance(&url, "t2:", "b").await;
    let c = instance(&url, "t2:", "c").await;
    let one = FakeBrowser::run(extension(a.addr(), Some("one")).await, "one");
    until(c.addr(), "one listed", |st| lists(st, &[("one", "a")])).await;
    one.answering.store(false, Ordering::SeqCst);

    let body = json!({"tool": "t", "target": "one", "id": "order-42", "args": {"n": 7}});
    let first = tokio::spawn(command(b.addr(), body.clone()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while one.ids().is_empty() {
        assert!(Instant::now() < deadline, "the first never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The caller retries through another instance while the first still waits.
    let second = tokio::spawn(command(c.addr(), body.clone()));
    while one.ids().len() < 2 {
        assert!(Instant::now() < deadline, "the retry never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The browser sees the same id both times (it runs an id once and answers a repeat
    // with that run's result).
    assert_eq!(one.ids(), ["req-order-42", "req-order-42"]);
    // The browser answers once (here: the third try, on the instance holding it, which the
    // fake answers): every caller waiting for that id gets the one result.
    one.answering.store(true, Ordering::SeqCst);
    let (code, v) = command(a.addr(), body.clone()).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(answer_text(&v), "one:7");
    for call in [first, second] {
        let (code, v) = call.await.unwrap();
        assert_eq!(code, 200, "{v}");
        assert_eq!(answer_text(&v), "one:7");
    }
    // An id outside the rule is refused, saying the rule.
    let bad = command(a.addr(), json!({"tool": "t", "id": "bad id"})).await;
    assert_eq!(bad.0, 400, "{}", bad.1);
    for s in [a, b, c] {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_goes_away_loses_only_its_browsers_and_its_commands_fail_clearly() {
    let redis = Redis::start("death");
    let url = redis.url();
    let a = instance(&url, "t3:", "a").await;
    // b is a process of its own, killed without a word to anyone.
    let port = common::free_port();
    let config = temp_dir("fleet-death");
    let mut b = binary(
        &[
            "serve",
            "--port",
            &port.to_string(),
            "--token",
            TOKEN,
            "--redis",
            &url,
            "--redis-prefix",
            "t3:",
            "--instance",
            "b",
            "--presence-ttl",
            "2",
        ],
        &config,
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("b starts");
    let b_addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(b_addr).await.is_err() {
        assert!(Instant::now() < deadline, "b never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let c = instance(&url, "t3:", "c").await;
    let _one = FakeBrowser::run(extension(a.addr(), Some("one")).await, "one");
    let two = FakeBrowser::run(extension(b_addr, Some("two")).await, "two");
    until(a.addr(), "both listed", |st| {
        lists(st, &[("one", "a"), ("two", "b")])
    })
    .await;

    // A command in flight when the instance holding its browser dies: a clear error well
    // within its timeout (60 s), saying what to do.
    two.answering.store(false, Ordering::SeqCst);
    let started = Instant::now();
    let waiting = tokio::spawn(command(
        a.addr(),
        json!({"tool": "t", "target": "two", "id": "x1", "timeoutMs": 60000}),
    ));
    while two.ids().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Gone without a word to the fleet (its presence stays until the TTL).
    b.kill().expect("killed");
    b.wait().expect("reaped");
    let (code, v) = waiting.await.unwrap();
    assert_eq!(code, 503, "{v}");
    let said = v["error"].as_str().unwrap();
    assert!(
        said.contains("Instance 'b'") && said.contains("stopped") && said.contains("same id"),
        "{said}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // Sent meanwhile: fails at once or, once the presence expired, says the target is not
    // connected; never hangs.
    let (code, v) = command(
        c.addr(),
        json!({"tool": "t", "target": "two", "timeoutMs": 60000}),
    )
    .await;
    assert!(code == 503 || code == 409, "{code} {v}");
    // The others keep working.
    let (code, v) = command(
        c.addr(),
        json!({"tool": "t", "target": "one", "args": {"n": 1}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    until(c.addr(), "two's presence expires", |st| {
        lists(st, &[("one", "a")])
    })
    .await;

    // The browser reconnects to another instance: reachable from every instance again.
    let _two = FakeBrowser::run(extension(c.addr(), Some("two")).await, "two");
    until(a.addr(), "two back on c", |st| {
        lists(st, &[("one", "a"), ("two", "c")])
    })
    .await;
    let (code, v) = command(
        a.addr(),
        json!({"tool": "t", "target": "two", "args": {"n": 2}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(answer_text(&v), "two:2");
    for s in [a, c] {
        s.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarting_degrades_the_fleet_and_it_recovers_by_itself() {
    let mut redis = Redis::start("restart");
    let url = redis.url();
    let a = instance(&url, "t4:", "a").await;
    let b = instance(&url, "t4:", "b").await;
    let _one = FakeBrowser::run(extension(a.addr(), Some("one")).await, "one");
    let _two = FakeBrowser::run(extension(b.addr(), Some("two")).await, "two");
    until(a.addr(), "both listed", |st| {
        lists(st, &[("one", "a"), ("two", "b")])
    })
    .await;

    redis.kill();
    let st = until(a.addr(), "degraded", |st| {
        st["fleet"]["state"] == "degraded"
    })
    .await;
    assert!(
        st["fleet"]["error"].as_str().unwrap().contains("Redis"),
        "{st}"
    );
    // Its own browsers still listed and answering.
    assert!(lists(&st, &[("one", "a")]), "{st}");
    let (code, v) = command(
        a.addr(),
        json!({"tool": "t", "target": "one", "args": {"n": 1}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    // No target: this instance's only browser.
    let (code, v) = command(a.addr(), json!({"tool": "t", "args": {"n": 2}})).await;
    assert_eq!(code, 200, "{v}");
    // The other instance's browser: a clear error at once, not a hang.
    let started = Instant::now();
    let (code, v) = command(
        a.addr(),
        json!({"tool": "t", "target": "two", "timeoutMs": 60000}),
    )
    .await;
    assert_eq!(code, 503, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("fleet cannot be reached"),
        "{v}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Redis is back, empty: the instances write their presence again, no restart.
    redis.restart();
    for server in [&a, &b] {
        until(server.addr(), "recovered", |st| {
            st["fleet"]["state"] == "ok" && lists(st, &[("one", "a"), ("two", "b")])
        })
        .await;
    }
    let (code, v) = command(
        a.addr(),
        json!({"tool": "t", "target": "two", "args": {"n": 3}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(answer_text(&v), "two:3");
    for s in [a, b] {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_issued_and_revoked_with_the_cli_count_on_every_instance_behind_a_password() {
    let redis = Redis::start_with("tokens", Some("s3cret-pw"));
    let url = redis.url();
    let config = temp_dir("fleet-tokens");
    // A wrong password stops the server at once, saying so, without the password.
    let wrong = format!("redis://:nope@127.0.0.1:{}", redis.port);
    let e = RunningServer::start(ServerConfig {
        fleet: Some(fleet_config(&wrong, "t5:", "z")),
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .err()
    .expect("refused");
    assert!(e.to_string().contains("refused this server"), "{e}");
    assert!(!e.to_string().contains("nope"), "{e}");

    let a = instance(&url, "t5:", "a").await;
    let b = instance(&url, "t5:", "b").await;
    let cli = |args: &[&str]| {
        let out = binary(args, &config)
            .env("BROWSER_OPERATOR_REDIS", &url)
            .args(["--redis-prefix", "t5:"])
            .output()
            .expect("runs");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = cli(&["token", "issue", "work"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains("s3cret-pw"), "{err}");
    let token = out
        .lines()
        .find_map(|l| l.strip_prefix("Token       "))
        .expect("the token")
        .to_string();
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("Token id    "))
        .expect("the id")
        .to_string();
    let (code, out, _) = cli(&["token", "list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(&id) && out.contains("work"), "{out}");
    // Not in the file store: the fleet's tokens are Redis's.
    assert!(!config.join("tokens.json").exists());

    // Every instance knows it: the browser connects to one with it.
    for s in [&a, &b] {
        until(s.addr(), "the token known", |st| st["fleet"]["tokens"] == 1).await;
    }
    let mut ws = extension_with(a.addr(), &token, None).await;
    until(b.addr(), "work listed", |st| lists(st, &[("work", "a")])).await;
    let (code, v) = {
        let addr = b.addr();
        let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "work"})));
        let frame = next_frame(&mut ws).await;
        let id = frame["id"].as_str().unwrap().to_string();
        send(&mut ws, json!({"type": "result", "commandId": id, "result": {"content": [{"type": "text", "text": "hi"}]}})).await;
        call.await.unwrap()
    };
    assert_eq!(code, 200, "{v}");

    // Revoked with the CLI (no instance named): the browser on instance a is disconnected,
    // told why, and every instance refuses the token from then on.
    let (code, out, err) = cli(&["token", "revoke", &id]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (close, frames) = closed(&mut ws).await;
    assert_eq!(close, Some(4001), "{frames:?}");
    for s in [&a, &b] {
        until(s.addr(), "the token gone", |st| st["fleet"]["tokens"] == 0).await;
        let mut again = common::connect(s.addr()).await;
        send(&mut again, json!({"type": "auth", "token": token})).await;
        assert_eq!(closed(&mut again).await.0, Some(4001));
    }
    // POST /disconnect on one instance reaches a browser on another.
    let mut ws = extension(a.addr(), Some("other")).await;
    until(b.addr(), "other listed", |st| lists(st, &[("other", "a")])).await;
    let (code, body) = http(
        b.addr(),
        "POST /disconnect",
        &[BEARER],
        r#"{"target":"other","reason":"bye"}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(closed(&mut ws).await.0, Some(4001));
    for s in [a, b] {
        s.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(config);
}

/// Runs `openssl` with `args` in `dir`.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (Debian's openssl package)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        text(&out.stderr)
    );
}

/// A redis-server that speaks only TLS, with a certificate from a CA of the test's own.
struct TlsRedis {
    port: u16,
    child: std::process::Child,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_with_a_private_ca_given_by_file() {
    let dir = temp_dir("fleet-tls");
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=fleet-test-ca",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "redis.key",
            "-out",
            "redis.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        dir.join("ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "redis.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "redis.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
    let port = common::free_port();
    let child = std::process::Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args([
            "--tls-cert-file",
            "redis.pem",
            "--tls-key-file",
            "redis.key",
            "--tls-ca-cert-file",
            "ca.pem",
        ])
        .args([
            "--tls-auth-clients",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let redis = TlsRedis { port, child };
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", redis.port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "the TLS redis-server never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = format!("rediss://127.0.0.1:{}", redis.port);
    let with_ca = |name: &str| {
        let mut config = fleet_config(&url, "t6:", name);
        config.ca_file = Some(dir.join("ca.pem"));
        config
    };
    let start = |config: FleetConfig| async move {
        RunningServer::start(ServerConfig {
            fleet: Some(config),
            ..ServerConfig::new(local(), TOKEN)
        })
        .await
        .expect("instance starts")
    };
    let a = start(with_ca("a")).await;
    let b = start(with_ca("b")).await;
    let _one = FakeBrowser::run(extension(a.addr(), Some("one")).await, "one");
    until(b.addr(), "one listed over TLS", |st| {
        st["fleet"]["state"] == "ok" && lists(st, &[("one", "a")])
    })
    .await;
    let (code, v) = command(
        b.addr(),
        json!({"tool": "t", "target": "one", "args": {"n": 5}}),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(answer_text(&v), "one:5");

    // Without the CA file the certificate is not trusted: degraded, saying why.
    let untrusting = start(fleet_config(&url, "t6:", "c")).await;
    let st = status(untrusting.addr()).await;
    assert_eq!(st["fleet"]["state"], "degraded", "{st}");
    for s in [a, b, untrusting] {
        s.shutdown().await;
    }
    drop(redis);
    let _ = std::fs::remove_dir_all(dir);
}
