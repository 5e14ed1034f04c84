//! A fleet with real browsers: three `browser-operator serve --redis` processes sharing one
//! redis-server, nginx in front of them for the browsers, and two headless Chromiums with the
//! built extension, each its own target, connected through nginx. One launch pair covers:
//! commands through every instance to both browsers; 50 interleaved commands each answered
//! once; a retry with the same id through another instance that runs once; the instance holding
//! a browser killed during a stream of commands (the browser reconnects through nginx to
//! another instance; meanwhile commands fail clearly, none hangs); Redis restarted (the fleet
//! recovers by itself); a per-target token revoked with the CLI, which disconnects the browser
//! on whichever instance holds it.

use browser_operator_e2e::bench::http::Api;
use browser_operator_e2e::fleet::{listed, Instance, Nginx, RedisProcess};
use browser_operator_e2e::{Browser, BrowserOptions, Error, FixtureServer, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_browser-operator-cli");
const TOKEN: &str = "fleet-e2e-token-0123456789";
const WAIT: Duration = Duration::from_secs(45);

/// Polls `api`'s `/status` until `check` holds.
async fn until(api: &Api, what: &str, check: impl Fn(&Value) -> bool) -> Result<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(st) = api.status().await {
            if check(&st) {
                return Ok(st);
            }
            if Instant::now() > deadline {
                return Err(Error::new(format!("{what}: not within {WAIT:?}: {st}")));
            }
        } else if Instant::now() > deadline {
            return Err(Error::new(format!("{what}: no status within {WAIT:?}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `POST /commands` with `body`: the status and the JSON answer.
async fn post(api: &Api, body: Value) -> Result<(u16, Value)> {
    let answer = api.post("/commands", &body.to_string()).await?;
    let v = serde_json::from_str(&answer.body).unwrap_or_else(|_| json!({"raw": answer.body}));
    Ok((answer.status, v))
}

fn text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn cli(args: &[&str], redis: &str, config: &Path) -> Result<String> {
    let out = std::process::Command::new(CLI)
        .args(args)
        .env("BROWSER_OPERATOR_REDIS", redis)
        .env("BROWSER_OPERATOR_CONFIG_DIR", config)
        .output()?;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Error::new(format!(
            "{args:?}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(said)
}

/// The tab of `target`'s group (made if needed).
async fn group_tab(api: &Api, target: &str) -> Result<i64> {
    let (code, v) = post(
        api,
        json!({"tool": "tabs_context_mcp", "target": target, "args": {"createIfEmpty": true}}),
    )
    .await?;
    if code != 200 {
        return Err(Error::new(format!("tabs_context_mcp: {code} {v}")));
    }
    let ctx = browser_operator_e2e::tabs_context(&text(&v));
    ctx["availableTabs"][0]["tabId"]
        .as_i64()
        .ok_or_else(|| Error::new(format!("no tab in {ctx}")))
}

#[tokio::test]
async fn a_fleet_of_three_behind_nginx_serves_two_browsers_through_every_fault() -> Result<()> {
    browser_operator_e2e::init();
    let dir = browser_operator_e2e::temp_dir("fleet");
    let fixtures = FixtureServer::start();
    let mut redis = RedisProcess::start("fleet").await?;
    let url = redis.url();
    let bin = Path::new(CLI);
    let mut instances = Vec::new();
    for name in ["i1", "i2", "i3"] {
        instances.push(Instance::start(bin, &url, name, TOKEN, 2, &dir).await?);
    }
    let apis: Vec<Api> = instances.iter().map(|i| Api::new(i.addr, TOKEN)).collect();
    let nginx = Nginx::start(&instances.iter().map(|i| i.addr).collect::<Vec<_>>(), &dir).await?;

    // beta connects with a per-target token issued on the fleet by the CLI (no instance).
    let config = dir.join("cli-config");
    let issued = cli(&["token", "issue", "beta"], &url, &config)?;
    let beta_token = issued
        .lines()
        .find_map(|l| l.strip_prefix("Token       "))
        .ok_or_else(|| Error::new(format!("no token in {issued}")))?
        .to_string();
    let beta_id = issued
        .lines()
        .find_map(|l| l.strip_prefix("Token id    "))
        .ok_or_else(|| Error::new(format!("no id in {issued}")))?
        .to_string();
    for api in &apis {
        until(api, "the token known", |st| st["fleet"]["tokens"] == 1).await?;
    }

    let alpha = Browser::launch(BrowserOptions::default()).await?;
    let beta = Browser::launch(BrowserOptions::default()).await?;
    alpha
        .configure_extension(&nginx.ws_url(), TOKEN, Some("alpha"))
        .await?;
    beta.configure_extension(&nginx.ws_url(), &beta_token, Some("beta"))
        .await?;
    for api in &apis {
        until(api, "both browsers in the fleet", |st| {
            let l = listed(st);
            l.len() == 2 && l[0].0 == "alpha" && l[1].0 == "beta"
        })
        .await?;
    }

    // Commands through every instance reach both browsers, wherever they are connected.
    let page = fixtures.url("/hello.html");
    let alpha_tab = group_tab(&apis[0], "alpha").await?;
    let beta_tab = group_tab(&apis[1], "beta").await?;
    for (target, tab) in [("alpha", alpha_tab), ("beta", beta_tab)] {
        let (code, v) = post(
            &apis[2],
            json!({"tool": "navigate", "target": target, "args": {"tabId": tab, "url": page}}),
        )
        .await?;
        assert_eq!(code, 200, "{v}");
    }
    for (i, api) in apis.iter().enumerate() {
        for (target, tab) in [("alpha", alpha_tab), ("beta", beta_tab)] {
            let (code, v) = post(api, json!({"tool": "javascript_tool", "target": target,
                "args": {"tabId": tab, "action": "javascript_exec", "text": format!("'{target} via {i}'")}})).await?;
            assert_eq!(code, 200, "{v}");
            assert!(text(&v).contains(&format!("{target} via {i}")), "{v}");
        }
    }

    // 50 interleaved commands from every instance to both browsers: each answered once, with
    // its own result (the page counts the runs).
    let count = "window.__runs = (window.__runs || 0) + 1";
    for (target, tab) in [("alpha", alpha_tab), ("beta", beta_tab)] {
        let (code, v) = post(
            &apis[0],
            json!({"tool": "javascript_tool", "target": target,
            "args": {"tabId": tab, "action": "javascript_exec", "text": "window.__runs = 0"}}),
        )
        .await?;
        assert_eq!(code, 200, "{v}");
    }
    let mut calls = Vec::new();
    for n in 0..50usize {
        let (target, tab) = if n % 2 == 0 {
            ("alpha", alpha_tab)
        } else {
            ("beta", beta_tab)
        };
        let api = Api::new(instances[n % 3].addr, TOKEN);
        let body = json!({"tool": "javascript_tool", "target": target,
            "args": {"tabId": tab, "action": "javascript_exec", "text": format!("{count}; 'n={n}'")}});
        calls.push(tokio::spawn(async move { (n, post(&api, body).await) }));
    }
    for call in calls {
        let (n, answer) = call.await.map_err(|e| Error::new(e.to_string()))?;
        let (code, v) = answer?;
        assert_eq!(code, 200, "{v}");
        assert!(text(&v).contains(&format!("n={n}")), "command {n}: {v}");
    }
    for (target, tab) in [("alpha", alpha_tab), ("beta", beta_tab)] {
        let (_, v) = post(
            &apis[1],
            json!({"tool": "javascript_tool", "target": target,
            "args": {"tabId": tab, "action": "javascript_exec", "text": "window.__runs"}}),
        )
        .await?;
        assert_eq!(
            text(&v).trim(),
            "25",
            "{target}: each command ran once: {v}"
        );
    }

    // A retry with the same id through another instance runs once: its answer is the first's.
    let once = json!({"tool": "javascript_tool", "target": "alpha", "id": "fleet-once-1",
        "args": {"tabId": alpha_tab, "action": "javascript_exec", "text": count}});
    let (_, first) = post(&apis[1], once.clone()).await?;
    let (_, again) = post(&apis[2], once.clone()).await?;
    assert_eq!(text(&first).trim(), "26", "{first}");
    assert_eq!(text(&again).trim(), "26", "the retry ran again: {again}");

    // Kill the instance holding alpha during a stream of commands sent through the others.
    let st = apis[0].status().await?;
    let holder = listed(&st)
        .into_iter()
        .find(|(t, _)| t == "alpha")
        .map(|(_, i)| i)
        .ok_or_else(|| Error::new("alpha not listed"))?;
    let victim = instances
        .iter()
        .position(|i| i.name == holder)
        .ok_or_else(|| Error::new("no such instance"))?;
    let survivors: Vec<usize> = (0..3).filter(|i| *i != victim).collect();
    let stream_addrs: Vec<_> = survivors.iter().map(|i| instances[*i].addr).collect();
    let stream = tokio::spawn(async move {
        let mut outcomes = Vec::new();
        let started = Instant::now();
        let mut n = 0usize;
        // Until 5 in a row succeed after at least one failed (the browser is back), bounded.
        let mut ok_after_failure = 0;
        let mut failed = false;
        while started.elapsed() < Duration::from_secs(40) && ok_after_failure < 5 {
            let api = Api::new(stream_addrs[n % stream_addrs.len()], TOKEN);
            let sent = Instant::now();
            let answer = post(
                &api,
                json!({"tool": "tabs_context_mcp", "target": "alpha",
                "id": format!("stream-{n}"), "timeoutMs": 8000}),
            )
            .await;
            let took = sent.elapsed();
            match &answer {
                Ok((200, _)) if failed => ok_after_failure += 1,
                Ok((200, _)) => {}
                _ => failed = true,
            }
            outcomes.push((n, took, answer.map_err(|e| e.to_string())));
            n += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        outcomes
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    instances[victim].kill();
    let outcomes = stream.await.map_err(|e| Error::new(e.to_string()))?;
    let mut failures = 0;
    for (n, took, outcome) in &outcomes {
        // No command hangs: each is answered within its timeout and the routing margin.
        assert!(*took < Duration::from_secs(12), "command {n} took {took:?}");
        match outcome {
            Ok((200, _)) => {}
            Ok((code, v)) => {
                failures += 1;
                let said = v["error"].as_str().unwrap_or("");
                assert!(matches!(code, 409 | 503 | 504), "command {n}: {code} {v}");
                assert!(said.contains("alpha"), "command {n} says which target: {v}");
            }
            Err(e) => panic!("command {n}: no HTTP answer: {e}"),
        }
    }
    assert!(failures > 0, "the kill left no gap? {outcomes:?}");
    assert!(
        matches!(outcomes.last(), Some((_, _, Ok((200, _))))),
        "alpha never came back through nginx: {:?}",
        outcomes.last()
    );
    let st = until(&apis[survivors[0]], "alpha on a surviving instance", |st| {
        listed(st).iter().any(|(t, i)| t == "alpha" && *i != holder)
    })
    .await?;
    assert!(!listed(&st).iter().any(|(_, i)| *i == holder), "{st}");

    // Redis restarted, empty: the instances say so, keep their browsers, and recover alone.
    redis.restart().await?;
    for i in &survivors {
        until(&apis[*i], "the fleet recovered", |st| {
            st["fleet"]["state"] == "ok" && listed(st).len() == 2
        })
        .await?;
    }
    for i in &survivors {
        for target in ["alpha", "beta"] {
            let (code, v) = post(
                &apis[*i],
                json!({"tool": "tabs_context_mcp", "target": target}),
            )
            .await?;
            assert_eq!(code, 200, "after Redis restarted, {target} via {i}: {v}");
        }
    }
    // The tokens came back from the instances' copies: beta's token still counts.
    assert_eq!(apis[survivors[0]].status().await?["fleet"]["tokens"], 1);

    // Revoked with the CLI: the instance holding beta disconnects it, and it stays out.
    let said = cli(&["token", "revoke", &beta_id], &url, &config)?;
    assert!(said.contains("Revoked"), "{said}");
    let status = beta.wait_status("error", WAIT).await?;
    assert!(
        status.contains("rejected the token") || status.contains("isconnected"),
        "{status}"
    );
    until(&apis[survivors[1]], "beta gone from the fleet", |st| {
        let l = listed(st);
        l.len() == 1 && l[0].0 == "alpha"
    })
    .await?;

    alpha.close().await?;
    beta.close().await?;
    drop(nginx);
    drop(instances);
    Ok(())
}
