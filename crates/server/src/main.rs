//! The `browser-operator` binary; everything lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    browser_operator_server::cli::main()
}
