//! A small time-bounded random driver for the fuzz tests (stable Rust, no sanitizers): a seeded
//! generator of bytes, strings and JSON, mutations of seed inputs, and [`run`], which feeds one
//! target for `FUZZ_SECONDS` (default: a quick pass) and reports how many inputs it tried.
//!
//! `FUZZ_SEED` replays a run: the inputs are a function of the seed alone (the time bound only
//! decides how many are tried), and a failing run prints its seed.

use serde_json::{Map, Number, Value};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Seconds each target runs when `FUZZ_SECONDS` is unset: a quick pass in `cargo test`.
pub const QUICK_SECONDS: f64 = 0.5;

/// xorshift64*: fast, and good enough to wander through inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Random bytes, often short, sometimes long.
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.len(max);
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    /// A length up to `max`, small ones more likely.
    pub fn len(&mut self, max: usize) -> usize {
        match self.below(4) {
            0 => self.below(4.min(max + 1)),
            1 => self.below(16.min(max + 1)),
            2 => self.below(256.min(max + 1)),
            _ => self.below(max + 1),
        }
    }

    /// A string mixing ASCII, JSON and URL punctuation, control characters and non-ASCII.
    pub fn string(&mut self, max: usize) -> String {
        const PIECES: &[&str] = &[
            "a",
            "Z",
            "0",
            "9",
            " ",
            "\"",
            "\\",
            "/",
            ":",
            "?",
            "#",
            "@",
            "%",
            "&",
            "=",
            "{",
            "}",
            "[",
            "]",
            ",",
            ".",
            "-",
            "_",
            "$",
            "\n",
            "\r",
            "\t",
            "\0",
            "\u{7f}",
            "é",
            "€",
            "😀",
            "\u{fffd}",
            "\u{202e}",
            "\u{feff}",
            "ws://",
            "http://",
            "https://",
            "127.0.0.1",
            "localhost",
            "[::1]",
            "..",
            "__proto__",
            "constructor",
            "null",
            "true",
            "1e309",
            "-0",
            "{target}",
            "data:",
            "javascript:",
            "file:///",
            "%00",
            "\\u0000",
            "\\ud800",
        ];
        let n = self.len(max);
        let mut s = String::new();
        while s.len() < n {
            if self.one_in(3) {
                s.push(char::from_u32(self.below(0x11_0000) as u32).unwrap_or('x'));
            } else {
                let piece: &str = PIECES[self.below(PIECES.len())];
                s.push_str(piece);
            }
        }
        s
    }

    /// A JSON number: integers at the edges, floats, negative zero.
    pub fn number(&mut self) -> Value {
        let edges: &[i64] = &[
            0,
            1,
            -1,
            2,
            100,
            255,
            256,
            65_535,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ];
        match self.below(5) {
            0 => Value::from(*self.pick(edges)),
            1 => Value::from(self.next_u64()),
            2 => Value::from(self.next_u64() as i64 % 2000 - 1000),
            3 => Number::from_f64(f64::from_bits(self.next_u64()))
                .map_or(Value::from(0.5), Value::Number),
            _ => Value::from((self.below(2001) as f64 - 1000.0) / 8.0),
        }
    }

    /// A JSON value nesting at most `depth` levels.
    pub fn json(&mut self, depth: usize) -> Value {
        let kinds = if depth == 0 { 4 } else { 6 };
        match self.below(kinds) {
            0 => Value::Null,
            1 => Value::Bool(self.one_in(2)),
            2 => self.number(),
            3 => Value::String(self.string(40)),
            4 => Value::Array((0..self.len(6)).map(|_| self.json(depth - 1)).collect()),
            _ => Value::Object(self.object(depth - 1, &[])),
        }
    }

    /// A JSON object; keys are drawn from `keys` half of the time.
    pub fn object(&mut self, depth: usize, keys: &[&str]) -> Map<String, Value> {
        let mut m = Map::new();
        for _ in 0..self.len(6) {
            let key = if !keys.is_empty() && self.one_in(2) {
                self.pick(keys).to_string()
            } else {
                self.string(12)
            };
            m.insert(key, self.json(depth));
        }
        m
    }

    /// `v` with one random change somewhere inside: a value replaced, a key added or removed.
    pub fn mutate_json(&mut self, v: &mut Value, depth: usize) {
        match v {
            Value::Object(m) if !m.is_empty() && !self.one_in(4) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                let k = self.pick(&keys).clone();
                match self.below(4) {
                    0 => {
                        m.remove(&k);
                    }
                    1 => {
                        m.insert(k, self.json(depth));
                    }
                    _ => {
                        if let Some(inner) = m.get_mut(&k) {
                            self.mutate_json(inner, depth);
                        }
                    }
                }
            }
            Value::Array(a) if !a.is_empty() && !self.one_in(4) => {
                let i = self.below(a.len());
                if self.one_in(3) {
                    a.remove(i);
                } else {
                    self.mutate_json(&mut a[i], depth);
                }
            }
            _ => *v = self.json(depth),
        }
    }

    /// `bytes` with a few random edits: bytes flipped, inserted, removed, slices repeated.
    pub fn mutate_bytes(&mut self, bytes: &mut Vec<u8>) {
        for _ in 0..1 + self.below(4) {
            let len = bytes.len();
            match self.below(5) {
                0 if len > 0 => {
                    let i = self.below(len);
                    bytes[i] ^= 1 << self.below(8);
                }
                1 => {
                    let i = self.below(len + 1);
                    let b = *self.pick(b"{}[]\":,\\\n\r 0aA\xff\xc3");
                    bytes.insert(i, b);
                }
                2 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(8));
                    bytes.drain(i..i + n);
                }
                3 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(16));
                    let piece = bytes[i..i + n].to_vec();
                    let at = self.below(bytes.len() + 1);
                    bytes.splice(at..at, piece);
                }
                _ => {
                    let i = self.below(len + 1);
                    bytes.truncate(i);
                }
            }
        }
    }
}

/// How long each target runs: `FUZZ_SECONDS`, else [`QUICK_SECONDS`].
pub fn budget() -> Duration {
    let secs = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(QUICK_SECONDS);
    Duration::from_secs_f64(secs)
}

/// The seed: `FUZZ_SEED`, else the clock.
pub fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// What one run of a target did.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    pub inputs: u64,
    pub seconds: f64,
}

struct Announce<'a> {
    name: &'a str,
    seed: u64,
    done: bool,
}

impl Drop for Announce<'_> {
    fn drop(&mut self) {
        if !self.done {
            eprintln!(
                "fuzz {}: FAILED; replay with FUZZ_SEED={}",
                self.name, self.seed
            );
        }
    }
}

/// Runs `case` with a fresh generator state per input until the budget is spent (at least
/// `min_inputs` times), and prints `fuzz NAME: N inputs in S s (R/s), seed X`.
pub fn run(name: &str, min_inputs: u64, mut case: impl FnMut(&mut Rng)) -> Report {
    let seed = seed();
    let mut guard = Announce {
        name,
        seed,
        done: false,
    };
    let budget = budget();
    let start = Instant::now();
    let mut rng = Rng::new(seed);
    let mut inputs = 0u64;
    while inputs < min_inputs || start.elapsed() < budget {
        case(&mut rng);
        inputs += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    guard.done = true;
    eprintln!(
        "fuzz {name}: {inputs} inputs in {seconds:.1} s ({:.0}/s), seed {seed}",
        inputs as f64 / seconds.max(1e-9)
    );
    Report { inputs, seconds }
}
