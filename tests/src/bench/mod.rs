//! The pieces of `./build.sh bench` (the `bench` binary): statistics over samples, a kept-alive
//! HTTP client for the command API, the release server as a child process, a stub extension, a delaying TCP proxy
//! (injected backend latency), a Playwright MCP client over stdio, and the report
//! (`docs/BENCHMARKS.md` and its SVG chart).

pub mod http;
pub mod playwright;
pub mod proxy;
pub mod report;
pub mod server;
pub mod stub;

use std::time::Duration;

/// Milliseconds, as the report shows them.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median and 90th percentile of a set of samples (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub p90: f64,
    pub n: usize,
}

impl Stat {
    /// Over `samples` (any order); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Stat> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |p: usize| v[((v.len() - 1) * p + 50) / 100];
        Some(Stat {
            median: rank(50),
            p90: rank(90),
            n: v.len(),
        })
    }

    /// Over rates (higher is better): the "p90" is the rate 90 % of the samples reached (the
    /// 10th percentile), so that it is the bad side like a latency's p90.
    pub fn of_rates(samples: &[f64]) -> Option<Stat> {
        let mut s = Stat::of(samples)?;
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        s.p90 = v[((v.len() - 1) * 10 + 50) / 100];
        Some(s)
    }
}

/// The order of `arms` in round `round`: rotated by one each round, so that every arm runs
/// first, second, … equally often (no arm always follows the same one or warms the caches for
/// the next).
pub fn rotation(round: usize, arms: usize) -> impl Iterator<Item = usize> {
    (0..arms).map(move |k| (round + k) % arms)
}

/// `BENCH_ROUNDS` (rounds of the quick latency measures; the slower sections take a fraction of
/// it), else `default`.
pub fn rounds_setting(default: usize) -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(default)
}

/// `rounds * fraction`, at least `min`.
pub fn scaled(rounds: usize, fraction: f64, min: usize) -> usize {
    ((rounds as f64 * fraction).round() as usize).max(min)
}

/// Sections of the run, in order; `BENCH_ONLY` (comma-separated) picks some.
pub const SECTIONS: [&str; 8] = [
    "latency",
    "screenshot",
    "tree",
    "text",
    "codemode",
    "wasm",
    "throughput",
    "fleet",
];

/// The sections `BENCH_ONLY` names (all when unset); an unknown name is an error that lists them.
pub fn sections_setting() -> Result<Vec<&'static str>, String> {
    let Ok(only) = std::env::var("BENCH_ONLY") else {
        return Ok(SECTIONS.to_vec());
    };
    if only.trim().is_empty() {
        return Ok(SECTIONS.to_vec());
    }
    let mut chosen = Vec::new();
    for name in only.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match SECTIONS.iter().find(|s| **s == name) {
            Some(s) => chosen.push(*s),
            None => {
                return Err(format!(
                    "BENCH_ONLY: unknown section {name:?}; sections: {}",
                    SECTIONS.join(", ")
                ))
            }
        }
    }
    Ok(SECTIONS
        .iter()
        .copied()
        .filter(|s| chosen.contains(s))
        .collect())
}

/// The width and height of a PNG or JPEG image, from its header.
pub fn image_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() >= 24 {
        let w = u32::from_be_bytes(bytes[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(bytes[20..24].try_into().ok()?);
        return Some((w, h));
    }
    if !bytes.starts_with(&[0xff, 0xd8]) {
        return None;
    }
    // JPEG: walk the segments to the first start-of-frame.
    let mut i = 2;
    while i + 9 < bytes.len() {
        if bytes[i] != 0xff {
            return None;
        }
        let marker = bytes[i + 1];
        if marker == 0xff {
            i += 1;
            continue;
        }
        let len = u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
        let is_sof = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if is_sof {
            let h = u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]) as u32;
            let w = u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]) as u32;
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_take_the_nearest_rank() {
        let s = Stat::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.median, s.n), (3.0, 5));
        assert_eq!(s.p90, 5.0);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Stat::of(&ten).unwrap();
        assert_eq!((s.median, s.p90), (6.0, 9.0));
        let r = Stat::of_rates(&ten).unwrap();
        assert_eq!(r.p90, 2.0);
        assert!(Stat::of(&[]).is_none());
    }

    #[test]
    fn rotation_puts_every_arm_first_once() {
        let firsts: Vec<usize> = (0..3).map(|r| rotation(r, 3).next().unwrap()).collect();
        assert_eq!(firsts, vec![0, 1, 2]);
        assert_eq!(rotation(1, 3).collect::<Vec<_>>(), vec![1, 2, 0]);
    }

    #[test]
    fn image_sizes_from_headers() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&780u32.to_be_bytes());
        png.extend_from_slice(&437u32.to_be_bytes());
        assert_eq!(image_size(&png), Some((780, 437)));
        // SOI, an APP0 segment of 4 bytes, SOF0 with height 437 and width 780.
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01,
            0xb5, 0x03, 0x0c, 0x03, 0x00, 0x00,
        ];
        assert_eq!(image_size(&jpeg), Some((780, 437)));
        assert_eq!(image_size(b"GIF89a"), None);
    }
}
