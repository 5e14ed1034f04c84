//! Benchmark of client-defined tools, each number beside its baseline from the same run:
//! - a 20-call workflow on the todo fixture as one code-mode command, against 20 separate
//!   btcp_call commands (real server, WebSocket, headless Chromium);
//! - the sandbox's start: the first script after the worker started (cold) and later ones
//!   (warm), against btcp_interfaces (the same page round trip without the sandbox);
//! - the wasm sizes and compile times in Chromium: the worker and the sandbox module (loaded on
//!   the first script), against a worker built without client-defined tools when
//!   BENCH_BASE_WASM names one.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_btcp`

use browser_operator_e2e::{built_worker_wasm, Backend, FixtureServer, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ROUNDS: usize = 7;
const CALLS: usize = 20;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn gzip_len(path: &Path) -> Option<usize> {
    let out = std::process::Command::new("gzip")
        .args(["-9c"])
        .arg(path)
        .output()
        .ok()?;
    Some(out.stdout.len())
}

async fn timed(backend: &Backend, tool: &str, args: Value) -> Result<f64> {
    let start = Instant::now();
    backend.text(tool, args).await?;
    Ok(ms(start.elapsed()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("todo.html")).await?;

    // Sandbox start: the very first script in this worker is the cold start.
    let trivial = json!({"tabId": tab, "script": "return 1"});
    let cold = timed(&backend, "btcp_run_script", trivial.clone()).await?;
    let mut warm = Vec::new();
    let mut interfaces = Vec::new();
    for _ in 0..ROUNDS {
        warm.push(timed(&backend, "btcp_run_script", trivial.clone()).await?);
        interfaces.push(timed(&backend, "btcp_interfaces", json!({"tabId": tab})).await?);
    }

    // The workflow: 20 page calls, one by one as commands, or in one script.
    let sequential_script = format!(
        "for (let i = 0; i < {CALLS}; i++) await todo.add({{text: 'script ' + i}}); return {CALLS};"
    );
    let parallel_script = format!(
        "await Promise.all(Array.from({{length: {CALLS}}}, (_, i) => todo.add({{text: 'all ' + i}}))); return {CALLS};"
    );
    let (mut separate, mut one, mut one_parallel) = (Vec::new(), Vec::new(), Vec::new());
    // Time the sequential script spent inside its tool calls (from its own trace).
    let mut in_calls = Vec::new();
    for round in 0..ROUNDS {
        let start = Instant::now();
        for i in 0..CALLS {
            backend
                .text(
                    "btcp_call",
                    json!({"tabId": tab, "namespace": "todo", "method": "add", "args": {"text": format!("command {round}.{i}")}}),
                )
                .await?;
        }
        separate.push(ms(start.elapsed()));
        let start = Instant::now();
        let report: Value = serde_json::from_str(
            &backend
                .text(
                    "btcp_run_script",
                    json!({"tabId": tab, "script": sequential_script}),
                )
                .await?,
        )?;
        one.push(ms(start.elapsed()));
        in_calls.push(
            report["calls"]
                .as_array()
                .map_or(0.0, |c| c.iter().filter_map(|c| c["ms"].as_f64()).sum()),
        );
        one_parallel.push(
            timed(
                &backend,
                "btcp_run_script",
                json!({"tabId": tab, "script": parallel_script}),
            )
            .await?,
        );
    }
    let in_calls_copy = in_calls.clone();
    let count = backend
        .js(tab, "document.querySelectorAll('#items li').length")
        .await?;
    assert_eq!(count, (ROUNDS * CALLS * 3).to_string(), "every call landed");

    // Where a page call's time goes: the method alone in the page, btcp.__invoke in the page,
    // and a javascript_tool round trip (one Runtime.evaluate) as the floor of a command.
    let (mut method_only, mut invoke_only, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS * 3 {
        let t = backend
            .js(tab, "(() => { const t = performance.now(); todoApi.add({text: 'p'}); return performance.now() - t; })()")
            .await?;
        method_only.push(t.parse::<f64>().unwrap_or(f64::NAN));
        let t = backend
            .js(tab, "(async () => { const t = performance.now(); await btcp.__invoke('todo', 'add', '{\"text\":\"q\"}', 15000); return performance.now() - t; })()")
            .await?;
        invoke_only.push(t.parse::<f64>().unwrap_or(f64::NAN));
        floor.push(
            timed(
                &backend,
                "javascript_tool",
                json!({"tabId": tab, "text": "1+1"}),
            )
            .await?,
        );
    }

    // Size and compile time of the worker's wasm, with and without the sandbox.
    let ours = built_worker_wasm();
    let sandbox_wasm = ours
        .with_file_name("sandbox")
        .join("browser_operator_sandbox_bg.wasm");
    let base = std::env::var_os("BENCH_BASE_WASM").map(PathBuf::from);
    let dir = std::env::temp_dir().join(format!("bench-btcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(&ours, dir.join("with.wasm"))?;
    std::fs::copy(&sandbox_wasm, dir.join("sandbox.wasm"))?;
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>bench</title>",
    )?;
    if let Some(b) = &base {
        std::fs::copy(b, dir.join("without.wasm"))?;
    }
    let wasm_server = FixtureServer::start_in(dir.clone());
    let page = browser.open_page(&wasm_server.url("index.html")).await?;
    let compile = |name: &'static str| {
        let page = &page;
        async move {
            let mut times = Vec::new();
            for _ in 0..ROUNDS {
                let t = page
                    .eval(&format!(
                        "(async () => {{ const b = await (await fetch('{name}', {{cache: 'no-store'}})).arrayBuffer(); const t0 = performance.now(); await WebAssembly.compile(b); return performance.now() - t0; }})()"
                    ))
                    .await?;
                times.push(t.as_f64().unwrap_or(f64::NAN));
            }
            Result::Ok(median(times))
        }
    };
    let compile_with = compile("with.wasm").await?;
    let compile_sandbox = compile("sandbox.wasm").await?;
    let compile_without = match base {
        Some(_) => Some(compile("without.wasm").await?),
        None => None,
    };
    let _ = std::fs::remove_dir_all(&dir);

    let size = |p: &Path| -> String {
        let raw = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        format!(
            "{:.0} KB raw, {:.0} KB gzip",
            raw as f64 / 1024.0,
            gzip_len(p).unwrap_or(0) as f64 / 1024.0
        )
    };
    println!("Client-defined tools benchmark ({ROUNDS} rounds, medians; headless Chromium, real server over WebSocket)\n");
    println!("{:<58} {:>12} {:>12}", "", "measured", "baseline");
    println!(
        "{:<58} {:>9.1} ms {:>9.1} ms",
        format!("{CALLS} page calls: one code-mode script, sequential awaits"),
        median(one.clone()),
        median(separate.clone())
    );
    println!(
        "{:<58} {:>9.1} ms {:>9.1} ms",
        format!("{CALLS} page calls: one code-mode script, Promise.all"),
        median(one_parallel),
        median(separate.clone())
    );
    println!(
        "{:<58} {:>9.1} ms",
        "  of which inside the 20 calls (the script's trace)",
        median(in_calls.clone())
    );
    println!(
        "{:<58} {:>12} {:>12}",
        "  (baseline: the same calls as separate btcp_call commands)", "", ""
    );
    println!(
        "{:<58} {:>9.2} ms",
        "  one page call inside the script (trace, mean)",
        median(in_calls_copy) / CALLS as f64
    );
    println!(
        "{:<58} {:>9.2} ms",
        "  todo.add alone in the page (performance.now)",
        median(method_only)
    );
    println!(
        "{:<58} {:>9.2} ms",
        "  btcp.__invoke('todo', 'add') in the page",
        median(invoke_only)
    );
    println!(
        "{:<58} {:>9.2} ms",
        "  javascript_tool \"1+1\" round trip (a command's floor)",
        median(floor)
    );
    println!(
        "{:<58} {:>9.1} ms {:>9.1} ms",
        "script `return 1`, cold (first in the worker)",
        cold,
        median(interfaces.clone())
    );
    println!(
        "{:<58} {:>9.1} ms {:>9.1} ms",
        "script `return 1`, warm",
        median(warm),
        median(interfaces)
    );
    println!(
        "{:<58} {:>12} {:>12}",
        "  (baseline: btcp_interfaces, the same page round trip)", "", ""
    );
    let base_compile = compile_without.map_or("n/a".into(), |c| format!("{c:.1} ms"));
    println!(
        "{:<58} {:>9.1} ms {:>12}",
        "WebAssembly.compile of the worker (at every worker start)", compile_with, base_compile
    );
    println!(
        "{:<58} {:>9.1} ms {:>12}",
        "WebAssembly.compile of the sandbox (at the first script)", compile_sandbox, ""
    );
    println!(
        "{:<58} {:>12} {:>12}",
        "  (baseline: the worker before client-defined tools)", "", ""
    );
    println!(
        "\nworker wasm:                              {}",
        size(&ours)
    );
    println!(
        "sandbox wasm (loaded on first use):       {}",
        size(&sandbox_wasm)
    );
    match std::env::var_os("BENCH_BASE_WASM") {
        Some(b) => println!(
            "worker before client-defined tools:       {}",
            size(Path::new(&b))
        ),
        None => println!("worker before client-defined tools:       n/a (set BENCH_BASE_WASM)"),
    }
    Ok(())
}
