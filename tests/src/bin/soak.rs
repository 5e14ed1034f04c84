//! Soak under faults: N commands (default 10,000) over each network transport while the server
//! is restarted every N/10 commands and the extension's service worker is stopped three times.
//! Checks that every command gets exactly one answer (a result or an error), that none runs
//! twice (each command counts itself in the page: the page's counts are compared with the
//! answers), and that the worker's memory (JS heap, wasm memory) and the server's (the RSS of
//! this process, which hosts the server and is restarted in it) stay flat.
//!
//! Run: `./build.sh soak` (the server's log goes to a file). Settings, from the environment:
//! - `SOAK_COMMANDS` per transport (default 10000); `SOAK_TRANSPORTS` comma-separated (default
//!   `websocket,sse-http,http-poll,http-short-poll`);
//! - `SOAK_CONCURRENCY` commands in flight (default 32), spread over `SOAK_TABS` tabs (default 4);
//! - `SOAK_MINUTES` the most one transport may take (default 45): past it the run stops and fails.
//!
//! Exit status 1 if anything was lost, ran twice, answered wrongly or was not accounted for.

use browser_operator_e2e::{Backend, Browser, Error, FixtureServer, Result, Session};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TRANSPORTS: [&str; 4] = ["websocket", "sse-http", "http-poll", "http-short-poll"];
/// What the browser gets to answer one command (the server's timeout for it).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// After a refusal (server down, no browser connected) a sender waits this long.
const REFUSED_PAUSE: Duration = Duration::from_millis(50);
const WORKER_STOP_AT: [f64; 3] = [0.25, 0.55, 0.85];
const RECONNECT_WAIT: Duration = Duration::from_secs(90);

struct Settings {
    commands: usize,
    transports: Vec<String>,
    concurrency: usize,
    tabs: usize,
    limit: Duration,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

impl Settings {
    fn from_env() -> Result<Settings> {
        let transports = match std::env::var("SOAK_TRANSPORTS") {
            Ok(list) if !list.trim().is_empty() => {
                let list: Vec<String> = list.split(',').map(|t| t.trim().to_string()).collect();
                if let Some(bad) = list.iter().find(|t| !TRANSPORTS.contains(&t.as_str())) {
                    return Err(Error::new(format!(
                        "SOAK_TRANSPORTS: unknown transport {bad:?} (known: {})",
                        TRANSPORTS.join(", ")
                    )));
                }
                list
            }
            _ => TRANSPORTS.iter().map(|t| t.to_string()).collect(),
        };
        Ok(Settings {
            commands: env_usize("SOAK_COMMANDS", 10_000),
            transports,
            concurrency: env_usize("SOAK_CONCURRENCY", 32),
            tabs: env_usize("SOAK_TABS", 4),
            limit: Duration::from_secs(60 * env_usize("SOAK_MINUTES", 45) as u64),
        })
    }
}

/// How one command ended, from the sender's side.
#[derive(Debug, Clone)]
enum Outcome {
    /// The result, with the text the command returns.
    Answered,
    /// A result with the wrong text (another command's answer).
    WrongAnswer(String),
    /// An error result from the browser.
    ToolError(String),
    /// Never reached a browser: no server listening, no browser connected, too many pending.
    Refused(String),
    /// Accepted by the server, then an HTTP error or a broken connection instead of a result.
    Failed(String),
    /// The server's timeout: no answer from the browser at all.
    TimedOut,
}

struct Attempt {
    n: usize,
    tab: i64,
    outcome: Outcome,
}

/// The command's script: counts itself in the page and answers its number.
fn script(n: usize) -> String {
    format!(
        "(() => {{ const s = (window.__soak ??= {{count: 0, runs: {{}}}}); s.count += 1; \
         s.runs[{n}] = (s.runs[{n}] || 0) + 1; return 'soak {n}'; }})()"
    )
}

/// `POST /commands` for command `n`, told apart finely enough to know whether it reached a
/// browser.
fn send(agent: &ureq::Agent, url: &str, token: &str, n: usize, tab: i64) -> Outcome {
    let body = json!({
        "tool": "javascript_tool",
        "args": {"tabId": tab, "text": script(n)},
        "timeoutMs": COMMAND_TIMEOUT.as_millis() as u64,
    });
    let response = agent
        .post(format!("{url}/commands"))
        .header("Authorization", format!("Bearer {token}"))
        .send_json(&body);
    let mut response = match response {
        Ok(r) => r,
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Outcome::Refused("server down (connection refused)".into())
        }
        Err(ureq::Error::ConnectionFailed) => {
            return Outcome::Refused("server down (connection failed)".into())
        }
        Err(e) => return Outcome::Failed(format!("transport: {}", kind_of(&e))),
    };
    let status = response.status().as_u16();
    let text = match response.body_mut().read_to_string() {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(format!("reading the answer: {}", kind_of(&e))),
    };
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if status != 200 {
        let message = value["error"].as_str().unwrap_or(&text).to_string();
        return match status {
            504 => Outcome::TimedOut,
            503 if message.contains("No browser is connected") => {
                Outcome::Refused("no browser connected".into())
            }
            503 if message.contains("Too many commands") => {
                Outcome::Refused("too many commands pending".into())
            }
            _ => Outcome::Failed(format!("HTTP {status}: {}", short(&message))),
        };
    }
    if let Some(error) = value["error"].as_str() {
        return Outcome::ToolError(error.to_string());
    }
    let answer = value["result"]["content"][0]["text"].as_str().unwrap_or("");
    if answer == format!("soak {n}") {
        Outcome::Answered
    } else {
        Outcome::WrongAnswer(short(answer))
    }
}

fn kind_of(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) => format!("{:?}", io.kind()),
        other => short(&other.to_string()),
    }
}

fn short(s: &str) -> String {
    let s: String = s.chars().take(90).collect();
    s.replace('\n', " ")
}

/// An error message without the numbers in it (command ids, seconds), to group by kind.
fn error_kind(message: &str) -> String {
    let mut kind: String = message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(100)
        .collect();
    while kind.contains("##") {
        kind = kind.replace("##", "#");
    }
    kind
}

/// One memory sample.
struct Memory {
    at: usize,
    label: String,
    worker: String,
    heap_used: u64,
    heap_total: u64,
    wasm: u64,
    server_rss_kb: u64,
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

async fn sample(browser: &Browser, at: usize, label: &str) -> Result<Memory> {
    let worker: Session = browser.worker().await?;
    let read = async {
        // Garbage collected first, so what is left is what the worker holds.
        worker
            .call("HeapProfiler.collectGarbage", json!({}))
            .await?;
        let heap = worker.call("Runtime.getHeapUsage", json!({})).await?;
        let wasm = worker
            .eval("self.browserOperator.wasmMemoryBytes()")
            .await?
            .as_u64()
            .unwrap_or(0);
        Ok::<_, Error>(Memory {
            at,
            label: label.to_string(),
            worker: worker.target_id().chars().take(8).collect(),
            heap_used: heap["usedSize"].as_f64().unwrap_or(0.0) as u64,
            heap_total: heap["totalSize"].as_f64().unwrap_or(0.0) as u64,
            wasm,
            server_rss_kb: rss_kb(),
        })
    }
    .await;
    let _ = worker.detach().await;
    read
}

/// Keeps a memory sample; a sample that could not be taken is reported, not fatal.
fn record(report: &mut Report, sample: Result<Memory>) {
    match sample {
        Ok(m) => report.memory.push(m),
        Err(e) => {
            println!("[{}] a memory sample failed: {e}", report.transport);
            report.failed_samples += 1;
        }
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

async fn connected_at(backend: &Backend) -> Result<Option<u64>> {
    Ok(backend.status().await?["browsers"][0]["connectedAt"].as_u64())
}

/// Waits until the server holds a connection other than the one made at `before`.
async fn reconnected(backend: &Backend, before: Option<u64>) -> Result<Duration> {
    let start = Instant::now();
    loop {
        let now = connected_at(backend).await?;
        if now.is_some() && now != before {
            return Ok(start.elapsed());
        }
        if start.elapsed() > RECONNECT_WAIT {
            return Err(Error::new(format!(
                "the browser did not connect again within {RECONNECT_WAIT:?}: {}",
                backend.status().await?
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// After a worker stop: a worker other than `old` runs and answers a command (polling
/// transports keep their registration across the stop, so the server's connection time does
/// not tell).
async fn serving_again(browser: &Browser, backend: &Backend, old: Option<&str>) -> Result<()> {
    let start = Instant::now();
    loop {
        if let Some(t) = browser.worker_target().await? {
            if Some(t.id.as_str()) != old {
                break;
            }
        }
        if start.elapsed() > RECONNECT_WAIT {
            return Err(Error::new(format!(
                "no new worker within {RECONNECT_WAIT:?} of the stop"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    backend
        .caller()
        .command_when_connected("tabs_context_mcp", json!({}), RECONNECT_WAIT)
        .await
        .map(drop)
}

#[derive(Default)]
struct Report {
    transport: String,
    sent: usize,
    answered: usize,
    errors: BTreeMap<String, (usize, usize)>,
    refused: BTreeMap<String, usize>,
    ran_twice: usize,
    answered_not_run: usize,
    refused_but_ran: usize,
    wrong: usize,
    lost: usize,
    unknown_runs: usize,
    page_count: u64,
    page_runs: u64,
    restarts: Vec<Duration>,
    stops: Vec<Duration>,
    memory: Vec<Memory>,
    elapsed: Duration,
    unfinished: bool,
    failed_samples: usize,
}

impl Report {
    fn violations(&self) -> usize {
        self.ran_twice
            + self.answered_not_run
            + self.refused_but_ran
            + self.wrong
            + self.lost
            + self.unknown_runs
            + usize::from(self.unfinished)
            + usize::from(self.page_count != self.page_runs)
    }
}

async fn soak(transport: &str, settings: &Settings) -> Result<Report> {
    let fixtures = FixtureServer::start();
    let mut backend = Backend::start().await?;
    let browser = Browser::launch(Default::default()).await?;
    browser_operator_e2e::connect(&browser, &backend, transport).await?;
    let (first, _) = backend.first_tab().await?;
    let mut tabs = vec![first];
    while tabs.len() < settings.tabs {
        tabs.push(backend.new_tab().await?);
    }
    for &tab in &tabs {
        backend.navigate(tab, &fixtures.url("hello.html")).await?;
    }

    let total = settings.commands;
    let restart_every = (total / 10).max(1);
    let mut restarts_at: Vec<usize> = (1..10).map(|k| k * restart_every).collect();
    restarts_at.retain(|&a| a < total);
    let mut stops_at: Vec<usize> = WORKER_STOP_AT
        .iter()
        .map(|f| ((total as f64) * f) as usize)
        .collect();
    stops_at.dedup();

    let mut report = Report {
        transport: transport.to_string(),
        ..Default::default()
    };
    record(&mut report, sample(&browser, 0, "start").await);

    let accepted = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(1));
    let attempts: Arc<Mutex<Vec<Attempt>>> = Arc::new(Mutex::new(Vec::with_capacity(total + 1024)));
    let started = Instant::now();
    let deadline = started + settings.limit;
    let mut senders = Vec::new();
    for _ in 0..settings.concurrency {
        let (accepted, next, attempts) = (accepted.clone(), next.clone(), attempts.clone());
        let (url, token, tabs) = (
            backend.http_url(),
            backend.token().to_string(),
            tabs.clone(),
        );
        senders.push(tokio::task::spawn_blocking(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(COMMAND_TIMEOUT + Duration::from_secs(15)))
                .build()
                .into();
            while accepted.load(Ordering::SeqCst) < total && Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::SeqCst);
                let tab = tabs[n % tabs.len()];
                let outcome = send(&agent, &url, &token, n, tab);
                let refused = matches!(outcome, Outcome::Refused(_));
                if !refused {
                    accepted.fetch_add(1, Ordering::SeqCst);
                }
                if let Ok(mut list) = attempts.lock() {
                    list.push(Attempt { n, tab, outcome });
                }
                if refused {
                    std::thread::sleep(REFUSED_PAUSE);
                }
            }
        }));
    }

    // The faults, as the count of accepted commands passes each mark.
    let middle = total / 2;
    let mut sampled_middle = false;
    while senders.iter().any(|s| !s.is_finished()) {
        let done = accepted.load(Ordering::SeqCst);
        if !sampled_middle && done >= middle {
            sampled_middle = true;
            record(&mut report, sample(&browser, done, "middle").await);
        }
        // A mark passed while another fault was under way is served by the next one (a quick
        // run can outpace the restarts); a worker stop goes first.
        if stops_at.first().is_some_and(|&at| done >= at) {
            stops_at.retain(|&at| at > done);
            record(
                &mut report,
                sample(&browser, done, "before a worker stop").await,
            );
            let old = browser.worker_target().await?.map(|t| t.id);
            let t = Instant::now();
            browser.stop_worker().await?;
            serving_again(&browser, &backend, old.as_deref()).await?;
            let back = t.elapsed();
            println!(
                "[{transport}] {done}/{total}: worker stopped; a new worker answered {:.2} s after the stop",
                back.as_secs_f64()
            );
            report.stops.push(back);
            continue;
        }
        if restarts_at.first().is_some_and(|&at| done >= at) {
            restarts_at.retain(|&at| at > done);
            let before = connected_at(&backend).await?;
            backend.stop().await;
            backend.start_again().await?;
            let back = reconnected(&backend, before).await?;
            println!(
                "[{transport}] {done}/{total}: server restarted; the browser was back in {:.2} s",
                back.as_secs_f64()
            );
            report.restarts.push(back);
            continue;
        }
        if Instant::now() > deadline {
            report.unfinished = true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for s in senders {
        s.await
            .map_err(|e| Error::new(format!("a sender failed: {e}")))?;
    }
    report.elapsed = started.elapsed();
    report
        .memory
        .push(sample(&browser, accepted.load(Ordering::SeqCst), "end").await?);

    // What ran in each page.
    let mut runs: HashMap<usize, u64> = HashMap::new();
    for &tab in &tabs {
        let r = backend
            .caller()
            .command_when_connected(
                "javascript_tool",
                json!({"tabId": tab, "text": "JSON.stringify(window.__soak || {count: 0, runs: {}})"}),
                RECONNECT_WAIT,
            )
            .await?;
        let text = match r.outcome {
            protocol::Outcome::Result { result } => result.joined_text(),
            protocol::Outcome::Error { error } => {
                return Err(Error::new(format!("reading tab {tab}'s counts: {error}")))
            }
        };
        let page: Value = serde_json::from_str(&text)?;
        report.page_count += page["count"].as_u64().unwrap_or(0);
        if let Some(map) = page["runs"].as_object() {
            for (n, times) in map {
                let times = times.as_u64().unwrap_or(0);
                report.page_runs += times;
                if let Ok(n) = n.parse::<usize>() {
                    *runs.entry(n).or_default() += times;
                }
            }
        }
    }

    let attempts = std::mem::take(&mut *attempts.lock().map_err(|_| Error::new("poisoned"))?);
    let mut sent_ns = std::collections::HashSet::new();
    for a in &attempts {
        sent_ns.insert(a.n);
        let ran = runs.get(&a.n).copied().unwrap_or(0);
        if ran > 1 {
            report.ran_twice += 1;
            println!(
                "[{transport}] command {} (tab {}) ran {ran} times",
                a.n, a.tab
            );
        }
        match &a.outcome {
            Outcome::Refused(why) => {
                *report.refused.entry(why.clone()).or_default() += 1;
                if ran > 0 {
                    report.refused_but_ran += 1;
                    println!("[{transport}] command {} was refused ({why}) yet ran", a.n);
                }
                continue;
            }
            Outcome::Answered => {
                report.answered += 1;
                if ran != 1 {
                    report.answered_not_run += 1;
                    println!(
                        "[{transport}] command {} was answered but ran {ran} times",
                        a.n
                    );
                }
            }
            Outcome::WrongAnswer(text) => {
                report.wrong += 1;
                println!("[{transport}] command {} got another's answer: {text}", a.n);
            }
            Outcome::ToolError(e) => {
                let entry = report.errors.entry(error_kind(e)).or_default();
                entry.0 += 1;
                entry.1 += usize::from(ran > 0);
            }
            Outcome::Failed(e) => {
                let entry = report.errors.entry(error_kind(e)).or_default();
                entry.0 += 1;
                entry.1 += usize::from(ran > 0);
            }
            Outcome::TimedOut => {
                report.lost += 1;
                let entry = report
                    .errors
                    .entry("timed out: the browser never answered".into())
                    .or_default();
                entry.0 += 1;
                entry.1 += usize::from(ran > 0);
            }
        }
        report.sent += 1;
    }
    report.unknown_runs = runs.keys().filter(|n| !sent_ns.contains(n)).count();
    drop(fixtures);
    browser.close().await?;
    Ok(report)
}

fn print_report(r: &Report) {
    println!("\n== {} ==", r.transport);
    println!(
        "sent {} (accepted by the server) in {:.0} s, answered {}, errors {}, refused before reaching a browser {}",
        r.sent,
        r.elapsed.as_secs_f64(),
        r.answered,
        r.errors.values().map(|e| e.0).sum::<usize>(),
        r.refused.values().sum::<usize>()
    );
    for (kind, (n, ran)) in &r.errors {
        println!("  error x{n} (ran in the page: {ran}): {kind}");
    }
    for (why, n) in &r.refused {
        println!("  refused x{n}: {why}");
    }
    println!(
        "ran twice {}, answered but not run once {}, refused yet ran {}, wrong answers {}, lost (no answer) {}, ran without being sent {}",
        r.ran_twice, r.answered_not_run, r.refused_but_ran, r.wrong, r.lost, r.unknown_runs
    );
    println!(
        "page counter {} = runs recorded {} ({})",
        r.page_count,
        r.page_runs,
        if r.page_count == r.page_runs {
            "consistent"
        } else {
            "MISMATCH"
        }
    );
    let secs = |v: &[Duration]| {
        v.iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "server restarts {}: browser back after (s) {}",
        r.restarts.len(),
        secs(&r.restarts)
    );
    println!(
        "worker stops {}: a new worker answered after (s) {}",
        r.stops.len(),
        secs(&r.stops)
    );
    println!(
        "{:<22} {:>7} {:>9} {:>10} {:>10} {:>11} {:>11}",
        "memory (after a GC)", "at", "worker", "heap used", "heap total", "wasm", "server RSS"
    );
    for m in &r.memory {
        println!(
            "{:<22} {:>7} {:>9} {:>8.2}MB {:>8.2}MB {:>9.2}MB {:>9.1}MB",
            m.label,
            m.at,
            m.worker,
            mb(m.heap_used),
            mb(m.heap_total),
            mb(m.wasm),
            m.server_rss_kb as f64 / 1024.0
        );
    }
    if r.unfinished {
        println!("UNFINISHED: the time limit (SOAK_MINUTES) was reached");
    }
}

#[tokio::main]
async fn main() {
    browser_operator_e2e::init();
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!(
        "soak: {} commands per transport ({}), {} in flight over {} tabs, server restarted every {}, worker stopped {} times",
        settings.commands,
        settings.transports.join(", "),
        settings.concurrency,
        settings.tabs,
        (settings.commands / 10).max(1),
        WORKER_STOP_AT.len()
    );
    let mut reports = Vec::new();
    let mut failed = false;
    for transport in settings.transports.clone() {
        match soak(&transport, &settings).await {
            Ok(r) => {
                print_report(&r);
                failed |= r.violations() > 0;
                reports.push(r);
            }
            Err(e) => {
                println!("\n== {transport} ==\nthe soak could not run: {e}");
                failed = true;
            }
        }
    }
    println!("\n== summary ==");
    println!(
        "{:<16} {:>7} {:>8} {:>7} {:>8} {:>6} {:>5} {:>9} {:>9} {:>11}",
        "transport",
        "sent",
        "answered",
        "errors",
        "refused",
        "twice",
        "lost",
        "restarts",
        "stops",
        "violations"
    );
    for r in &reports {
        println!(
            "{:<16} {:>7} {:>8} {:>7} {:>8} {:>6} {:>5} {:>9} {:>9} {:>11}",
            r.transport,
            r.sent,
            r.answered,
            r.errors.values().map(|e| e.0).sum::<usize>(),
            r.refused.values().sum::<usize>(),
            r.ran_twice,
            r.lost,
            r.restarts.len(),
            r.stops.len(),
            r.violations()
        );
    }
    if failed {
        println!("FAILED: see above");
        std::process::exit(1);
    }
    println!("OK: every command got exactly one answer, none ran twice");
}
