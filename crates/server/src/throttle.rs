//! The throttle on failed authentications: how many each peer (and all peers together) may
//! fail at once in a window, and how long each answer is held past that. Held in `AppState`;
//! `guard::auth_failed` applies it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed authentication attempts answered at once, per peer address and for all peers
/// together, in each [`THROTTLE_WINDOW`]; past that, every failure is answered only after the
/// throttle's delay. A right token is never delayed nor refused, so a guesser sharing the real
/// browser's address (on loopback every local program does) cannot lock it out.
pub const FREE_FAILURES_PER_PEER: u32 = 10;
pub const FREE_FAILURES_TOTAL: u32 = 30;
pub const THROTTLE_WINDOW: Duration = Duration::from_secs(60);
/// How long a throttled failure waits for its answer (401 / close 4001) by default.
pub const DEFAULT_FAILURE_DELAY: Duration = Duration::from_secs(1);
/// Peers remembered at most; past that the window starts again for everyone.
const MAX_PEERS: usize = 4096;

/// Counts failed authentication attempts and says how long to hold each answer.
#[derive(Debug)]
pub struct AuthThrottle {
    delay: Duration,
    state: Mutex<ThrottleState>,
}

#[derive(Debug)]
struct ThrottleState {
    window_start: Instant,
    total: u32,
    peers: HashMap<IpAddr, u32>,
    /// The window's first throttled failure was logged (one line per window, not a flood).
    logged: bool,
}

/// What to do with one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Hold the answer this long.
    pub delay: Duration,
    /// This is the window's first throttled failure: say so in the log (later ones are not
    /// logged one by one).
    pub announce: bool,
    /// Log this failure on its own line (not throttled).
    pub log: bool,
}

impl AuthThrottle {
    pub fn new(delay: Duration) -> Self {
        AuthThrottle {
            delay,
            state: Mutex::new(ThrottleState {
                window_start: Instant::now(),
                total: 0,
                peers: HashMap::new(),
                logged: false,
            }),
        }
    }

    /// How long a throttled failure waits for its answer.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Records a failed attempt from `peer`.
    pub fn failed(&self, peer: IpAddr) -> Failure {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.window_start.elapsed() >= THROTTLE_WINDOW || s.peers.len() >= MAX_PEERS {
            s.window_start = Instant::now();
            s.total = 0;
            s.peers.clear();
            s.logged = false;
        }
        s.total = s.total.saturating_add(1);
        let total = s.total;
        let mine = s.peers.entry(peer).or_insert(0);
        *mine = mine.saturating_add(1);
        let throttled = *mine > FREE_FAILURES_PER_PEER || total > FREE_FAILURES_TOTAL;
        if !throttled {
            return Failure {
                delay: Duration::ZERO,
                announce: false,
                log: true,
            };
        }
        let announce = !s.logged;
        s.logged = true;
        Failure {
            delay: self.delay,
            announce,
            log: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_throttled_per_peer_and_in_all() {
        let t = AuthThrottle::new(Duration::from_millis(500));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..FREE_FAILURES_PER_PEER {
            assert_eq!(t.failed(a).delay, Duration::ZERO);
        }
        let first = t.failed(a);
        assert_eq!(first.delay, Duration::from_millis(500));
        assert!(first.announce && !first.log);
        assert!(!t.failed(a).announce, "announced once per window");
        // Other peers keep their own allowance until the total runs out.
        let mut free = 0;
        for i in 0..100u8 {
            let peer = IpAddr::from([10, 0, 1, i]);
            if t.failed(peer).delay.is_zero() {
                free += 1;
            }
        }
        assert_eq!(free, FREE_FAILURES_TOTAL - FREE_FAILURES_PER_PEER - 2);
    }
}
