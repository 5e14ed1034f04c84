//! The `browser-operator` command line: argument parsing and the `serve`, `call` and `token`
//! subcommands, each a thin layer over the library.

use crate::call::{self, Call};
use crate::config::{ServerConfig, DEFAULT_PORT};
use crate::main_token::{self, Token, TokenSource};
use crate::mcp::{Backend, BrowserTools, Forward};
use crate::server::RunningServer;
use crate::target_tokens::TokenStore;
use clap::{Args, Parser, Subcommand};
use protocol::Outcome;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

/// Drive your own browser from any program or AI agent through the Browser Operator extension.
#[derive(Debug, Parser)]
#[command(name = "browser-operator", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server the extension connects to, with the command API.
    Serve(ServeArgs),
    /// Run one tool in the connected browser and print its result.
    Call(CallArgs),
    /// Print the token file's path and the token (creating it if needed); issue, list and
    /// revoke per-target tokens.
    Token(TokenArgs),
    /// Be an MCP server on stdin/stdout (what Claude Desktop, Cursor and Claude Code launch).
    /// Runs the relay the extension connects to on --port, or, when a Browser Operator server
    /// already listens there, forwards every call to it.
    Mcp(ServeArgs),
    /// Make a connected browser stop: it drops its token and stays disconnected until its
    /// user connects again (close 4001, `event: disconnect` or 401, by transport).
    Disconnect(DisconnectArgs),
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub action: Option<TokenAction>,
    /// The fleet whose tokens to manage (as `serve --redis`); without it, tokens.json.
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// How a server joins a fleet (many instances sharing tokens and browsers through Redis), or
/// where `token` finds the fleet's tokens. See docs/DEPLOY.md.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// Join a fleet through this Redis: redis://[:PASSWORD@]HOST:PORT[/DB], or rediss://…
    /// for TLS.
    #[arg(
        long,
        env = "BROWSER_OPERATOR_REDIS",
        value_name = "URL",
        global = true,
        hide_env_values = true
    )]
    pub redis: Option<String>,
    /// A PEM file of the certificate authority that signed Redis's TLS certificate (a private
    /// CA), instead of the system's roots (rediss:// only).
    #[arg(
        long,
        env = "BROWSER_OPERATOR_REDIS_CA",
        value_name = "FILE",
        global = true
    )]
    pub redis_ca: Option<std::path::PathBuf>,
    /// Prefix of every Redis key and channel, so several products can share one Redis.
    #[arg(long, env = "BROWSER_OPERATOR_REDIS_PREFIX", default_value = crate::fleet::keys::DEFAULT_PREFIX, global = true)]
    pub redis_prefix: String,
    /// This instance's name in the fleet (default: its port and a random suffix).
    #[arg(long, value_name = "NAME", global = true)]
    pub instance: Option<String>,
    /// Seconds a browser's presence and an instance's heartbeat last in Redis unless the
    /// instance refreshes them (every third of it): how long a dead instance's browsers stay
    /// listed.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_ttl, global = true)]
    pub presence_ttl: Duration,
}

impl FleetArgs {
    /// The fleet these arguments name, if any.
    pub fn config(&self) -> Option<crate::fleet::FleetConfig> {
        let url = self.redis.as_ref().filter(|u| !u.trim().is_empty())?;
        let mut config = crate::fleet::FleetConfig::new(url.trim());
        config.ca_file = self.redis_ca.clone();
        config.prefix = self.redis_prefix.clone();
        config.instance = self.instance.clone();
        config.presence_ttl = self.presence_ttl;
        Some(config)
    }
}

fn parse_ttl(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(1.0..=3600.0).contains(&secs) {
        return Err("the presence TTL must be 1 to 3600 seconds".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Issue a new token that lets one browser connect as TARGET (printed once).
    Issue {
        /// The target a browser using this token connects as.
        target: String,
    },
    /// List the per-target tokens (ids and targets, never the secrets).
    List,
    /// Revoke a per-target token by id (or every token of a target), and disconnect the
    /// browser using it from the server running on --port.
    Revoke {
        /// A token id from `token list`, or a target.
        which: String,
        /// Port of the running server to tell (on 127.0.0.1).
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
    },
}

#[derive(Debug, Args)]
pub struct DisconnectArgs {
    /// Which browser, when several are connected.
    #[arg(long)]
    pub target: Option<String>,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The server's URL (instead of --port), e.g. http://127.0.0.1:8787.
    #[arg(long)]
    pub url: Option<String>,
    /// Token instead of $BROWSER_OPERATOR_TOKEN or the token file.
    #[arg(long)]
    pub token: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (keep it on loopback unless you know why not).
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_host)]
    pub host: IpAddr,
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Token instead of $BROWSER_OPERATOR_TOKEN or the token file.
    #[arg(long)]
    pub token: Option<String>,
    /// Give every MCP client session its own tab group in the browser (a client can also ask
    /// for one itself: the experimental capability "browserOperator/ownTabGroup").
    #[arg(long)]
    pub group_per_session: bool,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name, e.g. tabs_context_mcp.
    pub tool: String,
    /// The tool's arguments as a JSON object, e.g. '{"tabId": 1}'.
    pub args: Option<String>,
    /// An id for this command, so that running the same call again (after a timeout or a
    /// lost answer) runs it at most once: the browser answers a repeated id with its result.
    #[arg(long)]
    pub id: Option<String>,
    /// Port of the server on 127.0.0.1.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// The server's URL (instead of --port), e.g. http://127.0.0.1:8787.
    #[arg(long)]
    pub url: Option<String>,
    /// Which browser to use when several are connected.
    #[arg(long)]
    pub target: Option<String>,
    /// Seconds to wait for the browser (default: the server's, 60 s; at most 600).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Print the result JSON as received instead of its text.
    #[arg(long)]
    pub json: bool,
    /// Token instead of $BROWSER_OPERATOR_TOKEN or the token file.
    #[arg(long)]
    pub token: Option<String>,
}

fn parse_host(s: &str) -> Result<IpAddr, String> {
    if s.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    s.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("'{s}' is not an IP address (e.g. 127.0.0.1 or ::1)"))
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 600.0) {
        return Err("the timeout must be more than 0 and at most 600 seconds".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Call(args) => run_call(args),
        Command::Token(TokenArgs {
            action: None,
            fleet,
        }) if fleet.config().is_none() => show_token(),
        Command::Token(TokenArgs {
            action: None,
            ..
        }) => fail(
            2,
            "`token` without an action shows the main token file; with --redis, say issue, list or revoke",
        ),
        Command::Token(TokenArgs {
            action: Some(action),
            fleet,
        }) => manage_tokens(action, fleet),
        Command::Mcp(args) => mcp(args),
        Command::Disconnect(args) => disconnect(args),
    }
}

fn disconnect(args: DisconnectArgs) -> ExitCode {
    let token = match main_token::resolve(args.token.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(2, e),
    };
    let url = format!(
        "{}/disconnect",
        call::base_url(args.url.as_deref(), args.port)
    );
    let body = match &args.target {
        Some(t) => serde_json::json!({ "target": t }),
        None => serde_json::json!({}),
    };
    let answer = ureq::post(&url)
        .config()
        .http_status_as_error(false)
        .build()
        .header("Authorization", format!("Bearer {}", token.value))
        .send_json(&body);
    match answer {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if status == 200 {
                let targets: Vec<&str> = v["targets"]
                    .as_array()
                    .map(|t| t.iter().filter_map(serde_json::Value::as_str).collect())
                    .unwrap_or_default();
                println!("Disconnected browser '{}'.", targets.join("', '"));
                ExitCode::SUCCESS
            } else {
                fail(1, v["error"].as_str().unwrap_or(&text))
            }
        }
        Err(e) => fail(2, format!("cannot reach {url}: {e}")),
    }
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("browser-operator: {message}");
    ExitCode::from(code)
}

/// What `serve` and `mcp` share: the token (flag, environment or the token file), the server's
/// config (address, token, the per-target token store), the async runtime they run on
/// ([`Setup::run`]), and the relay and its listeners ([`Setup::listen`]).
struct Setup {
    token: Token,
    config: ServerConfig,
}

impl Setup {
    /// Resolves the token and the config from `args` and runs `body` with them on a new
    /// multi-threaded runtime; what cannot be set up fails with exit code 1.
    fn run<F: Future<Output = ExitCode>>(
        args: &ServeArgs,
        body: impl FnOnce(Setup) -> F,
    ) -> ExitCode {
        let token = match main_token::resolve(args.token.as_deref()) {
            Ok(t) => t,
            Err(e) => return fail(1, e),
        };
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => return fail(1, format!("cannot start the async runtime: {e}")),
        };
        let mut config =
            ServerConfig::new(SocketAddr::new(args.host, args.port), token.value.clone());
        config.tokens = TokenStore::from_env();
        config.group_per_session = args.group_per_session;
        config.fleet = args.fleet.config();
        runtime.block_on(body(Setup { token, config }))
    }

    /// Starts the relay and its listeners on the configured address.
    async fn listen(&self) -> io::Result<RunningServer> {
        RunningServer::start(self.config.clone()).await
    }

    /// The failure of [`Setup::listen`] for any reason but a port in use.
    fn cannot_listen(&self, e: io::Error) -> ExitCode {
        fail(1, format!("Cannot listen on {}: {e}", self.config.addr))
    }

    /// Logs where the token was written, when it was created just now.
    fn note_created_token(&self) {
        if let TokenSource::Created(path) = &self.token.source {
            crate::log::line(format_args!("created a new token in {}", path.display()));
        }
    }
}

/// Warns on stderr when the server listens on `addr` off loopback.
fn warn_if_exposed(addr: SocketAddr) {
    if !addr.ip().is_loopback() {
        crate::log::line(format_args!(
            "warning: listening on {addr}, which is not a loopback address: anyone who can reach it and has the token can drive this browser"
        ));
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    Setup::run(&args, |setup| async move {
        let server = match setup.listen().await {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                return fail(
                    1,
                    format!("Cannot listen on {}: the port is in use (is another `browser-operator serve` running? Use --port to pick another).", setup.config.addr),
                )
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput || e.kind() == io::ErrorKind::PermissionDenied => {
                return fail(1, e)
            }
            Err(e) => return setup.cannot_listen(e),
        };
        let addr = server.addr();
        let try_port = if addr.port() == DEFAULT_PORT {
            String::new()
        } else {
            format!(" --port {}", addr.port())
        };
        println!(
            "Browser Operator server listening on {addr}\n\
             \n\
             Paste into the extension's Options page:\n\
             \x20 Transport   WebSocket\n\
             \x20 Server URL  ws://{addr}/ws\n\
             \x20 Token       {token}\n\
             \n\
             Try it:  browser-operator call tabs_context_mcp '{{\"createIfEmpty\": true}}'{try_port}",
            token = setup.token.value,
        );
        setup.note_created_token();
        warn_if_exposed(addr);
        wait_for_stop_signal().await;
        crate::log::line(format_args!("shutting down"));
        server.shutdown().await;
        ExitCode::SUCCESS
    })
}

/// Ctrl-C, or SIGTERM on Unix.
async fn wait_for_stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// `browser-operator mcp`: MCP on stdio. stdout carries only MCP messages; logs go to stderr.
fn mcp(args: ServeArgs) -> ExitCode {
    Setup::run(&args, |setup| async move {
        let addr = setup.config.addr;
        let (server, backend) = match setup.listen().await {
            Ok(server) => {
                crate::log::line(format_args!(
                    "MCP on stdio; the extension connects to ws://{}/ws (HTTP MCP at http://{}/mcp)",
                    server.addr(),
                    server.addr()
                ));
                warn_if_exposed(server.addr());
                let backend = Backend::Relay(std::sync::Arc::clone(server.relay()));
                (Some(server), backend)
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                let url = format!("http://{addr}");
                let (probe_url, probe_token) = (url.clone(), setup.token.value.clone());
                let probe =
                    tokio::task::spawn_blocking(move || call::status(&probe_url, &probe_token))
                        .await;
                match probe {
                    Ok(Ok(_)) => {
                        crate::log::line(format_args!(
                            "MCP on stdio; a Browser Operator server already listens on {addr}: forwarding calls to it"
                        ));
                        let forward = Forward::new(setup.config.clone(), RunningServer::start_own);
                        (None, Backend::Forward(std::sync::Arc::new(forward)))
                    }
                    Ok(Err(e)) => {
                        return fail(1, format!("Port {} is in use, and not by a Browser Operator server that accepts this token ({e}). Use --port to pick another.", addr.port()))
                    }
                    Err(e) => return fail(1, format!("cannot probe {url}: {e}")),
                }
            }
            Err(e) => return setup.cannot_listen(e),
        };
        setup.note_created_token();
        let tools = BrowserTools::new(backend.clone(), setup.config.command_timeout)
            .with_group_per_session(setup.config.group_per_session);
        let code = tokio::select! {
            r = crate::mcp::serve_stdio(tools) => match r {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(1, e),
            },
            () = wait_for_stop_signal() => ExitCode::SUCCESS,
        };
        if let Some(server) = server {
            server.shutdown().await;
        }
        if let Backend::Forward(forward) = backend {
            forward.shutdown().await;
        }
        code
    })
}

/// `token issue|list|revoke`: in tokens.json, or the fleet's in Redis.
fn manage_tokens(action: TokenAction, fleet: FleetArgs) -> ExitCode {
    let fleet = fleet.config();
    let store = match &fleet {
        Some(config) => match config.token_store() {
            Ok(store) => store,
            Err(e) => return fail(1, e),
        },
        None => TokenStore::from_env(),
    };
    let Some(path) = store.location() else {
        return fail(1, main_token::TokenError::NoConfigDir);
    };
    match action {
        TokenAction::Issue { target } => match store.issue(&target) {
            Ok(t) => {
                println!("Token id    {}", t.id);
                println!("Target      {}", t.target);
                println!("Token       {}", t.token);
                eprintln!("Paste the token and the target into the extension's Options page. It is stored in {path}; revoke it with `browser-operator token revoke {}`.", t.id);
                ExitCode::SUCCESS
            }
            Err(e) => fail(1, e),
        },
        TokenAction::List => match store.list() {
            Ok(tokens) if tokens.is_empty() => {
                println!("No per-target tokens (issue one with `browser-operator token issue <target>`).");
                ExitCode::SUCCESS
            }
            Ok(tokens) => {
                println!("{:<14}{:<30}CREATED (unix ms)", "ID", "TARGET");
                for t in tokens {
                    let via = if t.paired { "  (paired via /pair)" } else { "" };
                    println!("{:<14}{:<30}{}{via}", t.id, t.target, t.created);
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(1, e),
        },
        TokenAction::Revoke { which, port } => {
            let gone = match store.revoke(&which) {
                Ok(g) => g,
                Err(e) => return fail(1, e),
            };
            if fleet.is_some() {
                for t in gone {
                    println!("Revoked {} (target '{}'). Every instance of the fleet refuses it now and disconnects the browser using it.", t.id, t.target);
                }
                return ExitCode::SUCCESS;
            }
            let main = main_token::resolve(None).ok();
            for t in gone {
                println!("Revoked {} (target '{}').", t.id, t.target);
                let told = main.as_ref().map(|main| {
                    call::disconnect(
                        &format!("http://127.0.0.1:{port}"),
                        &main.value,
                        serde_json::json!({"tokenId": t.id, "reason": "token revoked"}),
                    )
                });
                match told {
                    Some(Ok(v)) => println!(
                        "The server on port {port} closed {} live connection(s) using it.",
                        v["disconnected"].as_u64().unwrap_or(0)
                    ),
                    _ => println!("No server answered on port {port}; a server started later refuses the token."),
                }
            }
            ExitCode::SUCCESS
        }
    }
}

fn run_call(args: CallArgs) -> ExitCode {
    // Check everything local before sending anything.
    let tool_args = match args.args.as_deref().map(call::parse_args).transpose() {
        Ok(a) => a.unwrap_or_default(),
        Err(e) => return fail(2, e),
    };
    let token = match main_token::resolve(args.token.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(2, e),
    };
    let request = Call {
        url: call::base_url(args.url.as_deref(), args.port),
        token: token.value,
        tool: args.tool,
        args: tool_args,
        target: args.target,
        timeout: args.timeout,
        agent: None,
        id: args.id,
    };
    let answer = match call::call(&request) {
        Ok(a) => a,
        Err(e) => return fail(2, e),
    };
    if args.json {
        println!("{}", answer.raw);
        return match answer.result.outcome {
            Outcome::Result { .. } => ExitCode::SUCCESS,
            Outcome::Error { .. } => ExitCode::from(1),
        };
    }
    match answer.result.outcome {
        Outcome::Result { result } => {
            let text = call::render(&result);
            if !text.is_empty() {
                println!("{text}");
            }
            ExitCode::SUCCESS
        }
        Outcome::Error { error } => {
            eprintln!("{error}");
            ExitCode::from(1)
        }
    }
}

fn show_token() -> ExitCode {
    let path = match main_token::token_file() {
        Ok(p) => p,
        Err(e) => return fail(1, e),
    };
    let token = match main_token::load_or_create(&path) {
        Ok(t) => t,
        Err(e) => return fail(1, e),
    };
    println!("Token file  {}", path.display());
    println!("Token       {}", token.value);
    if std::env::var_os(main_token::TOKEN_ENV).is_some_and(|v| !v.is_empty()) {
        eprintln!(
            "Note: {} is set, so `serve` and `call` use it instead of this file.",
            main_token::TOKEN_ENV
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_call() {
        let cli = Cli::try_parse_from([
            "browser-operator",
            "call",
            "navigate",
            r#"{"url":"x"}"#,
            "--timeout",
            "1.5",
            "--json",
        ])
        .unwrap();
        let Command::Call(c) = cli.command else {
            panic!("not call")
        };
        assert_eq!(c.tool, "navigate");
        assert_eq!(c.timeout, Some(Duration::from_millis(1500)));
        assert!(c.json);
        assert_eq!(c.port, DEFAULT_PORT);
        assert!(Cli::try_parse_from(["browser-operator", "call", "t", "--timeout", "0"]).is_err());
    }

    #[test]
    fn hosts() {
        assert_eq!(parse_host("localhost").unwrap(), Ipv4Addr::LOCALHOST);
        assert_eq!(parse_host("[::1]").unwrap().to_string(), "::1");
        assert!(parse_host("example.com").is_err());
    }
}
