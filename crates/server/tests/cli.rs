//! The built `browser-operator` binary: `call` against no server, with bad arguments, and
//! against a server with no browser; `token`.

mod common;

use browser_operator_server::{RunningServer, ServerConfig};
use common::{binary, free_port, temp_dir, text};
use std::path::Path;
use std::process::Output;

fn run(args: &[&str], config: &Path, token: Option<&str>) -> Output {
    let mut cmd = binary(args, config);
    if let Some(t) = token {
        cmd.env("BROWSER_OPERATOR_TOKEN", t);
    }
    cmd.output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

#[test]
fn call_without_a_server_says_so_and_exits_2() {
    let dir = temp_dir("noserver");
    let port = free_port();
    let out = run(
        &["call", "tabs_context_mcp", "--port", &port.to_string()],
        &dir,
        Some("t"),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "Cannot reach the Browser Operator server at http://127.0.0.1:{port}: is `browser-operator serve` running?"
        )),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn call_with_invalid_json_args_exits_2_without_sending() {
    let dir = temp_dir("badjson");
    // No server listens and no token exists: the args error comes first.
    let out = run(
        &[
            "call",
            "navigate",
            "{url: x}",
            "--port",
            &free_port().to_string(),
        ],
        &dir,
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not valid JSON"), "{}", stderr(&out));
    assert!(!dir.exists(), "nothing else happened");
    let out = run(&["call", "navigate", "[1]"], &dir, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("JSON object"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_with_no_browser_connected_exits_2_with_the_503_message() {
    let dir = temp_dir("nobrowser");
    let server = RunningServer::start(ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "cli-token",
    ))
    .await
    .unwrap();
    let url = format!("http://{}", server.addr());
    let (ok, unauthorized) = tokio::task::spawn_blocking(move || {
        let ok = run(
            &["call", "tabs_context_mcp", "{}", "--url", &url],
            &dir,
            Some("cli-token"),
        );
        let unauthorized = run(
            &[
                "call",
                "tabs_context_mcp",
                "--url",
                &url,
                "--token",
                "wrong",
            ],
            &dir,
            Some("cli-token"),
        );
        (ok, unauthorized)
    })
    .await
    .unwrap();
    assert_eq!(ok.status.code(), Some(2), "{}", stderr(&ok));
    assert!(
        stderr(&ok).contains("No browser is connected. Load the extension, paste the token into its Options page and click Save & connect."),
        "{}",
        stderr(&ok)
    );
    assert_eq!(unauthorized.status.code(), Some(2));
    assert!(
        stderr(&unauthorized).contains("401"),
        "{}",
        stderr(&unauthorized)
    );
    server.shutdown().await;
}

#[test]
fn token_command_creates_and_prints_the_token_file() {
    let dir = temp_dir("token");
    let out = run(&["token"], &dir, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stored = std::fs::read_to_string(dir.join("token")).unwrap();
    assert_eq!(stored.trim().len(), 64);
    assert!(stdout.contains(&dir.join("token").display().to_string()));
    assert!(stdout.contains(stored.trim()));
    let again = run(&["token"], &dir, None);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}
