//! A virtual X display (Xvfb) for tests that need a real, headful browser window (what a person
//! runs: window-manager sizes, Chrome's debugging bar), beside the headless ones.

use crate::{Error, Result};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `Xvfb :N`; dropping it stops the server.
pub struct VirtualDisplay {
    child: Child,
    name: String,
}

impl VirtualDisplay {
    /// Starts Xvfb on the first free display from :90 (screen 1920x1200, 24-bit) and waits
    /// until it accepts connections. `./build.sh setup` installs it.
    pub fn start() -> Result<VirtualDisplay> {
        let first = 90 + (std::process::id() % 400);
        let mut last_error = String::new();
        for n in first..first + 40 {
            if Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                || Path::new(&format!("/tmp/.X{n}-lock")).exists()
            {
                continue;
            }
            let mut command = Command::new("Xvfb");
            #[cfg(target_os = "linux")]
            {
                use std::os::unix::process::CommandExt;
                // Gone with the test process, even when it is killed.
                // SAFETY: prctl is async-signal-safe; nothing else runs here.
                unsafe {
                    command.pre_exec(|| {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        Ok(())
                    });
                }
            }
            let mut child = match command
                .args([
                    &format!(":{n}"),
                    "-screen",
                    "0",
                    "1920x1200x24",
                    "-nolisten",
                    "tcp",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(c) => c,
                Err(e) => {
                    return Err(Error::new(format!(
                        "starting Xvfb: {e} (install it with ./build.sh setup, Debian package xvfb)"
                    )))
                }
            };
            let socket = format!("/tmp/.X11-unix/X{n}");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last_error = format!("Xvfb :{n} exited ({status})");
                    break;
                }
                if Path::new(&socket).exists() {
                    return Ok(VirtualDisplay {
                        child,
                        name: format!(":{n}"),
                    });
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = format!("Xvfb :{n} did not open {socket} within 10 s");
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(Error::new(format!(
            "no virtual display could start: {last_error}"
        )))
    }

    /// The `DISPLAY` value, e.g. `:93`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for VirtualDisplay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
