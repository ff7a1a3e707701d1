//! The demo: the same bursty traffic through every algorithm, side by side, on the in-memory
//! store and a manual clock. It prints a table and writes an SVG timeline, so the difference
//! is visible: the fixed window admits two limits across a boundary; GCRA paces.

use std::fmt::Write as _;
use std::sync::Arc;

use throttlekit::{Limiter, ManualClock, Strategy};

/// The traffic: a quiet trickle, then bursts straddling the window boundaries at 1 s and 3 s,
/// then a steady overload. Times in ms from the start.
fn arrivals() -> Vec<i64> {
    let mut t = Vec::new();
    t.extend((0..8).map(|i| 100 + i * 100)); // a trickle: 10/s
    t.extend((0..30).map(|i| 900 + i * 7)); // a burst across the 1 s boundary
    t.extend((0..30).map(|i| 2_900 + i * 7)); // and across 3 s
    t.extend((0..120).map(|i| 4_000 + i * 25)); // 40/s for 3 s
    t.sort_unstable();
    t
}

const DURATION_MS: i64 = 7_000;

struct Row {
    name: &'static str,
    allowed: Vec<bool>,
}

impl Row {
    fn admitted(&self) -> usize {
        self.allowed.iter().filter(|a| **a).count()
    }

    /// The most requests admitted within any 1000 ms span.
    fn max_per_second(&self, times: &[i64]) -> usize {
        let ok: Vec<i64> = times.iter().zip(&self.allowed).filter(|(_, a)| **a).map(|(t, _)| *t).collect();
        let mut best = 0;
        let mut lo = 0;
        for hi in 0..ok.len() {
            while ok[hi] - ok[lo] >= 1000 {
                lo += 1;
            }
            best = best.max(hi - lo + 1);
        }
        best
    }
}

fn strategies() -> Vec<(&'static str, Strategy)> {
    // Every strategy is configured for "10 per second".
    vec![
        ("gcra (burst 5)", Strategy::gcra(10, 1000, Some(5)).expect("valid")),
        ("token bucket (cap 5)", Strategy::token_bucket(5, 10.0).expect("valid")),
        ("fixed window", Strategy::fixed_window(10, 1000).expect("valid")),
        ("sliding window (10)", Strategy::sliding_window(10, 1000, Some(10)).expect("valid")),
        ("sliding log", Strategy::sliding_window_log(10, 1000).expect("valid")),
    ]
}

fn simulate() -> (Vec<i64>, Vec<Row>) {
    let times = arrivals();
    let start = 1_763_769_600_000; // an epoch-aligned instant, so windows fall on whole seconds
    let rows = strategies()
        .into_iter()
        .map(|(name, strategy)| {
            let clock = ManualClock::new(start);
            let limiter = Limiter::builder(strategy).clock(Arc::new(clock.clone())).build();
            let allowed = times
                .iter()
                .map(|t| {
                    clock.set(start + t);
                    limiter.check_sync("client", 1).map(|d| d.allowed).unwrap_or(false)
                })
                .collect();
            Row { name, allowed }
        })
        .collect();
    (times, rows)
}

fn svg(times: &[i64], rows: &[Row]) -> String {
    let (left, top, lane, width) = (190.0, 50.0, 70.0, 900.0);
    let x = |t: i64| left + t as f64 / DURATION_MS as f64 * width;
    let height = top + lane * rows.len() as f64 + 60.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="{left}" y="24" font-size="16" font-weight="bold">Same traffic, five algorithms, all set to 10 requests/second</text>
<text x="{left}" y="42" fill="#555">green: admitted, red: denied. Shaded: 1 s windows. Note the fixed window admitting 20 across the 1 s and 3 s boundaries.</text>
"##,
        w = left + width + 30.0
    );
    for sec in 0..=(DURATION_MS / 1000) {
        let xs = x(sec * 1000);
        if sec % 2 == 0 && sec < DURATION_MS / 1000 {
            let _ = writeln!(
                s,
                r##"<rect x="{xs}" y="{top}" width="{}" height="{}" fill="#f3f3f3"/>"##,
                x(1000) - left,
                lane * rows.len() as f64
            );
        }
        let _ = writeln!(
            s,
            r##"<text x="{xs}" y="{}" text-anchor="middle" fill="#555">{sec}s</text>"##,
            top + lane * rows.len() as f64 + 18.0
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = top + lane * i as f64;
        let _ = writeln!(s, r##"<text x="10" y="{}">{}</text>"##, y + lane / 2.0 - 4.0, row.name);
        let _ = writeln!(
            s,
            r##"<text x="10" y="{}" fill="#555">{} admitted, max {}/s</text>"##,
            y + lane / 2.0 + 12.0,
            row.admitted(),
            row.max_per_second(times)
        );
        for (t, ok) in times.iter().zip(&row.allowed) {
            let (colour, y0, y1) = if *ok {
                ("#1a9850", y + 8.0, y + lane / 2.0)
            } else {
                ("#d73027", y + lane / 2.0 + 2.0, y + lane - 8.0)
            };
            let _ = writeln!(
                s,
                r##"<line x1="{0:.1}" x2="{0:.1}" y1="{y0}" y2="{y1}" stroke="{colour}" stroke-width="1.5"/>"##,
                x(*t)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// `throttlekit demo [--out FILE.svg]`.
pub fn run(args: &[String]) -> Result<bool, String> {
    let mut out = "throttlekit-demo.svg".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = it.next().ok_or("--out needs a file name")?.clone(),
            other => return Err(format!("unknown demo option {other:?}")),
        }
    }
    let (times, rows) = simulate();
    println!("throttlekit demo: {} requests over {} s, every algorithm set to 10/s", times.len(), DURATION_MS / 1000);
    println!();
    println!("{:<22} {:>9} {:>7} {:>15}", "algorithm", "admitted", "denied", "max in any 1 s");
    for row in &rows {
        println!(
            "{:<22} {:>9} {:>7} {:>15}",
            row.name,
            row.admitted(),
            times.len() - row.admitted(),
            row.max_per_second(&times)
        );
    }
    println!();
    println!("The fixed window lets two full limits through across a boundary; the others hold the rate.");
    std::fs::write(&out, svg(&times, &rows)).map_err(|e| format!("could not write {out}: {e}"))?;
    println!("chart written to {out}");
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_window_doubles_at_a_boundary_and_the_others_do_not() {
        let (times, rows) = simulate();
        for row in &rows {
            let peak = row.max_per_second(&times);
            if row.name == "fixed window" {
                assert_eq!(peak, 20, "{}", row.name);
            } else {
                assert!(peak <= 15, "{}: {peak} in one second", row.name);
            }
        }
        let chart = svg(&times, &rows);
        assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
        assert_eq!(chart.matches("<line").count(), times.len() * rows.len());
    }
}
