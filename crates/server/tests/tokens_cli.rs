//! The built binary's `token issue|list|revoke` and `mcp`'s refusal of a port held by something
//! that is not a Browser Operator server.

mod common;

use common::{binary, free_port, temp_dir, text};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Output;

fn run(args: &[&str], config: &Path) -> Output {
    binary(args, config)
        .env("BROWSER_OPERATOR_TOKEN", "main-token")
        .output()
        .expect("binary runs")
}

#[test]
fn issue_list_and_revoke_per_target_tokens() {
    let dir = temp_dir("issue");
    let out = run(&["token", "issue", "laptop"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("{name} in {stdout}"))
    };
    let (id, secret) = (field("Token id"), field("Token  "));
    assert_eq!(field("Target"), "laptop");
    assert_eq!(secret.len(), 64);

    let list = run(&["token", "list"], &dir);
    let listed = text(&list.stdout);
    assert!(
        listed.contains(&id) && listed.contains("laptop"),
        "{listed}"
    );
    assert!(!listed.contains(&secret), "list must not show secrets");

    let bad = run(&["token", "issue", "two words"], &dir);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("Invalid target"),
        "{}",
        text(&bad.stderr)
    );

    let port = free_port().to_string();
    let revoked = run(&["token", "revoke", &id, "--port", &port], &dir);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let said = text(&revoked.stdout);
    assert!(
        said.contains(&format!("Revoked {id} (target 'laptop')")),
        "{said}"
    );
    assert!(said.contains("No server answered"), "{said}");
    assert!(text(&run(&["token", "list"], &dir).stdout).contains("No per-target tokens"));

    let again = run(&["token", "revoke", &id, "--port", &port], &dir);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("No token has the id or target"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn mcp_refuses_a_port_held_by_another_program() {
    let dir = temp_dir("mcpport");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let other = std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
            );
        }
    });
    let out = run(&["mcp", "--port", &port.to_string()], &dir);
    other.join().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "Port {port} is in use, and not by a Browser Operator server that accepts this token"
        )),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "stdout is for MCP only");
}
