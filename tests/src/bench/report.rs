//! What one run of `./build.sh bench` found: rows of measures, each beside its baseline from the
//! same run and its goal, written as `BENCHMARKS.md` and as an SVG chart of every goal (each
//! measure as a fraction of its limit, so that measures of different units share one axis).

use super::Stat;
use std::fmt::Write as _;

/// The unit of a row's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ms,
    Chars,
    /// Bytes, shown in KB of 1,000 bytes (as `./build.sh build` and the README count).
    Bytes,
    PerSecond,
}

/// A goal, against the row's baseline or an absolute limit (in the row's unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// ours ≤ factor × baseline.
    TimesBaseline(f64),
    /// ours ≤ baseline + this many milliseconds.
    PlusMs(f64),
    /// ours ≤ the limit.
    AtMost(f64),
    /// ours ≥ the limit.
    AtLeast(f64),
    /// baseline ≥ factor × ours: ours is that many times faster.
    FasterBy(f64),
    /// ours within ± this fraction of the baseline.
    Within(f64),
}

#[derive(Debug, Clone)]
pub struct Row {
    /// The goal's number in the issue (1–7).
    pub goal_no: u8,
    pub measure: String,
    pub unit: Unit,
    pub ours: Stat,
    pub baseline: Option<(String, Stat)>,
    pub goal: Option<Goal>,
    pub note: String,
}

/// How a row stands against its goal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// The limit in the row's unit (for `Within`: the allowed fraction).
    pub limit: f64,
    pub pass: bool,
    /// The measure as a fraction of what the goal allows: ≤ 1 passes.
    pub load: f64,
}

impl Row {
    pub fn new(goal_no: u8, measure: impl Into<String>, unit: Unit, ours: Stat) -> Row {
        Row {
            goal_no,
            measure: measure.into(),
            unit,
            ours,
            baseline: None,
            goal: None,
            note: String::new(),
        }
    }

    pub fn baseline(mut self, label: impl Into<String>, stat: Stat) -> Row {
        self.baseline = Some((label.into(), stat));
        self
    }

    pub fn goal(mut self, goal: Goal) -> Row {
        self.goal = Some(goal);
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Row {
        self.note = note.into();
        self
    }

    /// ours ÷ baseline (medians).
    pub fn ratio(&self) -> Option<f64> {
        let (_, b) = self.baseline.as_ref()?;
        (b.median != 0.0).then(|| self.ours.median / b.median)
    }

    pub fn verdict(&self) -> Option<Verdict> {
        let goal = self.goal?;
        let ours = self.ours.median;
        let base = self.baseline.as_ref().map(|(_, s)| s.median);
        let v = |limit: f64, pass: bool, load: f64| Some(Verdict { limit, pass, load });
        match goal {
            Goal::TimesBaseline(f) => {
                let limit = f * base?;
                v(limit, ours <= limit, ours / limit)
            }
            Goal::PlusMs(x) => {
                let limit = base? + x;
                v(limit, ours <= limit, ours / limit)
            }
            Goal::AtMost(limit) => v(limit, ours <= limit, ours / limit),
            Goal::AtLeast(limit) => v(limit, ours >= limit, limit / ours.max(f64::MIN_POSITIVE)),
            Goal::FasterBy(f) => {
                let limit = base? / f;
                v(limit, ours <= limit, ours / limit)
            }
            Goal::Within(fraction) => {
                let drift = (ours / base? - 1.0).abs();
                v(fraction, drift <= fraction, drift / fraction)
            }
        }
    }

    /// The goal in words.
    pub fn goal_text(&self) -> String {
        match self.goal {
            None => "—".into(),
            Some(Goal::TimesBaseline(f)) => format!("≤ {f}× baseline"),
            Some(Goal::PlusMs(x)) => format!("≤ baseline + {x} ms"),
            Some(Goal::AtMost(x)) => format!("≤ {}", value(self.unit, x)),
            Some(Goal::AtLeast(x)) => format!("≥ {}", value(self.unit, x)),
            Some(Goal::FasterBy(f)) => format!("≥ {f}× faster than baseline"),
            Some(Goal::Within(f)) => format!("within ±{:.0} % of baseline", f * 100.0),
        }
    }

    fn limit_text(&self) -> String {
        match (self.goal, self.verdict(), self.ratio()) {
            (Some(Goal::Within(_)), Some(v), Some(r)) => {
                format!(
                    "±{:.0} % (drift {:+.1} %)",
                    v.limit * 100.0,
                    (r - 1.0) * 100.0
                )
            }
            (_, Some(v), _) => value(self.unit, v.limit),
            _ => "—".into(),
        }
    }
}

/// A number in its unit, rounded for reading.
pub fn value(unit: Unit, x: f64) -> String {
    match unit {
        Unit::Ms => {
            if x < 10.0 {
                format!("{x:.2} ms")
            } else if x < 100.0 {
                format!("{x:.1} ms")
            } else {
                format!("{} ms", thousands(x.round() as u64))
            }
        }
        Unit::Chars => format!("{} chars", thousands(x.round() as u64)),
        Unit::Bytes => format!("{:.1} KB", x / 1000.0),
        Unit::PerSecond => format!("{}/s", thousands(x.round() as u64)),
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn stat_text(unit: Unit, s: &Stat) -> String {
    if s.n <= 1 || s.median == s.p90 {
        value(unit, s.median)
    } else {
        format!("{} · p90 {}", value(unit, s.median), value(unit, s.p90))
    }
}

/// The machine and versions of the run.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    pub date: String,
    pub commit: String,
    pub cpu: String,
    pub cores: usize,
    pub load_before: String,
    pub load_after: String,
    pub chromium: String,
    pub rustc: String,
    pub playwright_mcp: String,
    pub command: String,
    pub seconds: f64,
}

/// `BENCHMARKS.md`.
pub fn markdown(rows: &[Row], machine: &Machine, svg_name: &str, method: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "Produced by `{}` (the `bench` binary, `tests/src/bin/bench.rs`): every number below and \
         the chart come from one run, each measure beside its baseline measured in the same run, \
         alternating between them round by round after a warm-up. Medians and 90th percentiles \
         (p90); the ratio is ours ÷ the baseline's median; the verdict compares the median with \
         the goal of issue 14.\n",
        machine.command
    );
    let _ = writeln!(
        md,
        "![Each goal's measure as a fraction of its limit]({svg_name})\n"
    );
    let _ = writeln!(md, "## Machine and versions\n");
    let _ = writeln!(md, "| | |\n|---|---|");
    for (k, v) in [
        ("date (UTC)", machine.date.clone()),
        ("commit", machine.commit.clone()),
        ("CPU", format!("{} ({} cores)", machine.cpu, machine.cores)),
        (
            "load average (1, 5, 15 min)",
            format!(
                "{} at the start, {} at the end",
                machine.load_before, machine.load_after
            ),
        ),
        ("Chromium", machine.chromium.clone()),
        ("rustc", machine.rustc.clone()),
        ("Playwright MCP", machine.playwright_mcp.clone()),
        ("run time", format!("{:.0} s", machine.seconds)),
    ] {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    let passed = rows
        .iter()
        .filter_map(Row::verdict)
        .filter(|v| v.pass)
        .count();
    let goals = rows.iter().filter(|r| r.goal.is_some()).count();
    let _ = writeln!(md, "\n## Goals: {passed} of {goals} met\n");
    let _ = writeln!(
        md,
        "| goal | measure | ours (median · p90) | baseline in the same run (median · p90) | ratio | goal | limit | verdict |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for row in rows.iter().filter(|r| r.goal.is_some()) {
        write_row(&mut md, row);
    }
    let _ = writeln!(
        md,
        "\n## Other measures of the run (no goal of their own)\n"
    );
    let _ = writeln!(
        md,
        "| goal | measure | ours (median · p90) | baseline in the same run (median · p90) | ratio | goal | limit | verdict |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for row in rows.iter().filter(|r| r.goal.is_none()) {
        write_row(&mut md, row);
    }
    let notes: Vec<&Row> = rows.iter().filter(|r| !r.note.is_empty()).collect();
    if !notes.is_empty() {
        let _ = writeln!(md, "\n## Notes on the rows\n");
        for row in notes {
            let _ = writeln!(md, "- **{}** ({}): {}", row.measure, row.goal_no, row.note);
        }
    }
    let _ = writeln!(md, "\n## How it measures\n\n{method}");
    md
}

fn write_row(md: &mut String, row: &Row) {
    let baseline = row.baseline.as_ref().map_or("—".to_string(), |(label, s)| {
        format!("{label}: {}", stat_text(row.unit, s))
    });
    let ratio = row.ratio().map_or("—".into(), |r| format!("{r:.2}×"));
    let verdict = match row.verdict() {
        None => "—".to_string(),
        Some(v) if v.pass => "**PASS**".into(),
        Some(_) => "**MISS**".into(),
    };
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        row.goal_no,
        row.measure,
        stat_text(row.unit, &row.ours),
        baseline,
        ratio,
        row.goal_text(),
        row.limit_text(),
        verdict
    );
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart: one bar per goal, the measure as a fraction of its limit (the dashed line at 1 is
/// the goal; green bars meet it, red ones miss it), with the numbers beside each bar.
pub fn svg(rows: &[Row], machine: &Machine) -> String {
    let rows: Vec<(&Row, Verdict)> = rows
        .iter()
        .filter_map(|r| r.verdict().map(|v| (r, v)))
        .collect();
    const LEFT: f64 = 450.0;
    const BAR: f64 = 330.0;
    const MAX_LOAD: f64 = 3.0;
    const ROW_H: f64 = 24.0;
    const TOP: f64 = 64.0;
    let width = LEFT + BAR + 330.0;
    let height = TOP + ROW_H * rows.len() as f64 + 48.0;
    let x_of = |load: f64| LEFT + BAR * load.min(MAX_LOAD) / MAX_LOAD;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(
        s,
        r##"<rect width="100%" height="100%" fill="#ffffff"/>
<text x="12" y="22" font-size="15" font-weight="bold">Browser Operator: each goal of issue 14, measured beside its baseline in one run</text>
<text x="12" y="42" fill="#555">{} · {} · {} cores · load {} · Chromium {} · bar: the measure ÷ what the goal allows</text>"##,
        xml(&machine.date),
        xml(&machine.commit),
        machine.cores,
        xml(&machine.load_before),
        xml(&machine.chromium)
    );
    for tick in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
        let x = x_of(tick);
        let (stroke, dash) = if tick == 1.0 {
            ("#333333", r#" stroke-dasharray="4 3""#)
        } else {
            ("#e0e0e0", "")
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{stroke}"{dash}/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text>"##,
            TOP - 8.0,
            TOP + ROW_H * rows.len() as f64,
            TOP + ROW_H * rows.len() as f64 + 16.0,
            if tick == 1.0 {
                "1 = goal".to_string()
            } else {
                format!("{tick}")
            }
        );
    }
    for (i, (row, v)) in rows.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let colour = if v.pass { "#2e7d32" } else { "#c62828" };
        let w = (x_of(v.load) - LEFT).max(1.0);
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}. {}</text>"##,
            LEFT - 8.0,
            y + 15.0,
            row.goal_no,
            xml(&row.measure)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{colour}"/>"##,
            y + 4.0,
            ROW_H - 8.0
        );
        if v.load > MAX_LOAD {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#ffffff" text-anchor="end">»</text>"##,
                LEFT + BAR - 3.0,
                y + 15.0
            );
        }
        let ours = value(row.unit, row.ours.median);
        let detail = match row.goal {
            Some(Goal::Within(_)) => format!("{} ({})", ours, row.limit_text()),
            Some(Goal::FasterBy(f)) => format!(
                "{:.1}× faster (goal {f}×)",
                row.ratio().map_or(0.0, |r| 1.0 / r)
            ),
            _ => format!("{ours} (limit {})", value(row.unit, v.limit)),
        };
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="{colour}">{} {}</text>"##,
            LEFT + BAR + 10.0,
            y + 15.0,
            if v.pass { "PASS" } else { "MISS" },
            xml(&detail)
        );
    }
    let _ = writeln!(s, "</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(x: f64) -> Stat {
        Stat {
            median: x,
            p90: x,
            n: 1,
        }
    }

    #[test]
    fn verdicts_against_each_kind_of_goal() {
        let r = Row::new(1, "js", Unit::Ms, one(5.0))
            .baseline("floor", one(3.0))
            .goal(Goal::TimesBaseline(1.3));
        let v = r.verdict().unwrap();
        assert!(!v.pass && (v.limit - 3.9).abs() < 1e-9);
        let r = Row::new(1, "err", Unit::Ms, one(1.8))
            .baseline("floor", one(1.4))
            .goal(Goal::PlusMs(0.5));
        assert!(r.verdict().unwrap().pass);
        let r = Row::new(7, "rate", Unit::PerSecond, one(1000.0)).goal(Goal::AtLeast(2000.0));
        let v = r.verdict().unwrap();
        assert!(!v.pass && v.load == 2.0);
        let r = Row::new(5, "script", Unit::Ms, one(100.0))
            .baseline("separate", one(1100.0))
            .goal(Goal::FasterBy(10.0));
        assert!(r.verdict().unwrap().pass);
        let r = Row::new(7, "heap", Unit::Bytes, one(1.15e6))
            .baseline("start", one(1e6))
            .goal(Goal::Within(0.1));
        assert!(!r.verdict().unwrap().pass);
        assert!(Row::new(3, "x", Unit::Chars, one(1.0)).verdict().is_none());
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(value(Unit::Ms, 9.314), "9.31 ms");
        assert_eq!(value(Unit::Ms, 1173.2), "1,173 ms");
        assert_eq!(value(Unit::Chars, 543000.0), "543,000 chars");
        assert_eq!(value(Unit::Bytes, 373704.0), "373.7 KB");
        assert_eq!(value(Unit::PerSecond, 2140.4), "2,140/s");
    }

    #[test]
    fn the_chart_has_a_bar_per_goal_and_escapes_text() {
        let rows = vec![
            Row::new(3, "find <10k>", Unit::Ms, one(47.0)).goal(Goal::AtMost(20.0)),
            Row::new(3, "no goal", Unit::Ms, one(1.0)),
        ];
        let svg = svg(&rows, &Machine::default());
        assert_eq!(svg.matches("<rect").count(), 2, "background and one bar");
        assert!(svg.contains("find &lt;10k&gt;") && svg.contains("MISS"));
    }
}
