//! The child processes the harness starts (Chromium, and the bench's server and Playwright
//! MCP), set up so that none outlives the test or bench that started it.

use std::process::Command;

/// Which process group a child joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Its own, which it leads: killing that group (`kill(-pid)`) also ends the processes it
    /// starts (Chromium's zygote and renderers, the browser Playwright launches).
    Own,
    /// The harness's.
    Inherit,
}

/// Makes `command` start a child that the kernel kills (SIGKILL) when the thread that spawned it
/// exits (`PR_SET_PDEATHSIG`, Linux only), so a test or bench killed by a timeout leaves nothing
/// behind: keep the child on the thread or runtime that spawned it (not a `spawn_blocking`
/// thread). For a `tokio::process::Command`, pass its `as_std_mut()`.
pub fn tie_to_parent(command: &mut Command, group: Group) -> &mut Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if group == Group::Own {
            command.process_group(0);
        }
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        #[cfg(target_os = "linux")]
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = group;
    command
}
