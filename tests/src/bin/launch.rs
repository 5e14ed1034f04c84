//! `./build.sh run`'s browser: Chromium with the built extension, configured through its Options
//! page the way a user does, kept open until Ctrl-C.
//!
//! Usage: launch <server-url> <token> [profile-dir]

use browser_operator_e2e::{Browser, BrowserOptions};
use std::time::Duration;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(token)) = (args.first(), args.get(1)) else {
        eprintln!("usage: launch <server-url> <token> [profile-dir]");
        std::process::exit(2);
    };
    let headless =
        std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none();
    let options = BrowserOptions {
        headless,
        user_data_dir: args.get(2).map(Into::into),
        // A person's browser: scripts and uploads ask, as in a fresh install.
        ask_before_scripts: true,
        ..Default::default()
    };
    let browser = match Browser::launch(options).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("Could not start Chromium: {e}");
            std::process::exit(1);
        }
    };
    let connected = async {
        browser.configure_extension(url, token, None).await?;
        browser
            .wait_status("connected", Duration::from_secs(30))
            .await
    };
    match connected.await {
        Ok(status) => {
            let mode = if headless {
                "headless (no display found)"
            } else {
                "in a window"
            };
            println!("\nChromium is running {mode} with the extension: {status}");
            if let Ok(try_it) = std::env::var("TRY") {
                println!("Try:  {try_it}");
            }
            println!("Press Ctrl-C to stop the browser and the server.\n");
        }
        Err(e) => {
            eprintln!("The extension did not connect: {e}\n{}", browser.log_tail());
            std::process::exit(1);
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    let _ = browser.close().await;
}
