//! The `browser-operator` command line, built inside the test crate so e2e tests can spawn it
//! (`CARGO_BIN_EXE_browser-operator-cli`): the same code as the server crate's binary.

fn main() -> std::process::ExitCode {
    browser_operator_server::cli::main()
}
