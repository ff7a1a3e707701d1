//! Records `conformance-vectors/recorded-timelines.json`: seeded random timelines for every
//! strategy, the shaper and multi, with the expectations the Rust engine produces.
//!
//! Expectations our own code produced prove something only because an independent path
//! reproduces them: the Lua scripts replay this file on a real Redis (tests/redis.sh), and every
//! binding replays it through its own public API. Run:
//! `cargo run -p throttlekit --example record_vectors > conformance-vectors/recorded-timelines.json`

use std::sync::Arc;

use serde_json::{Value, json};
use throttlekit::conformance::{self, Got};
use throttlekit::{MemoryStore, Store};

/// xorshift64*: a tiny deterministic generator, so the file is reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn specs() -> Vec<(&'static str, Value)> {
    vec![
        ("gcra", json!({"kind": "gcra", "options": {"limit": 7, "periodMs": 1000, "burst": 3}})),
        ("gcra-fractional", json!({"kind": "gcra", "options": {"limit": 3, "periodMs": 1000}})),
        ("tokenBucket", json!({"kind": "tokenBucket", "options": {"capacity": 5, "refillPerSec": 3}})),
        ("fixedWindow", json!({"kind": "fixedWindow", "options": {"limit": 4, "windowMs": 700}})),
        ("slidingWindow", json!({"kind": "slidingWindow", "options": {"limit": 6, "windowMs": 1000, "buckets": 3}})),
        ("slidingWindow-default", json!({"kind": "slidingWindow", "options": {"limit": 9, "windowMs": 999}})),
        ("slidingWindowLog", json!({"kind": "slidingWindowLog", "options": {"limit": 4, "windowMs": 800}})),
        (
            "quota-day",
            json!({"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-day", "offsetMinutes": 330}}),
        ),
        (
            "quota-week",
            json!({"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-week", "weekStartsOn": 3}}),
        ),
        (
            "quota-month",
            json!({"kind": "quota", "options": {"limit": 5, "resetCadence": "calendar-month", "offsetMinutes": -840}}),
        ),
        (
            "quota-fixed",
            json!({"kind": "quota", "options": {"limit": 3, "resetCadence": "fixed", "periodMs": 900, "anchor": 123}}),
        ),
        (
            "quota-rolling",
            json!({"kind": "quota", "options": {"limit": 5, "resetCadence": "rolling", "periodMs": 1200, "buckets": 4}}),
        ),
    ]
}

/// A timeline: mostly forward steps (some zero, some exactly a window), a few backward jumps,
/// long idle gaps that let state expire, costs up to limit + 2.
fn timeline(rng: &mut Rng, start: i64, ops: usize, kinds: &[&str]) -> Vec<Value> {
    let mut now = start;
    (0..ops)
        .map(|_| {
            now += match rng.below(20) {
                0 => -(rng.below(900) as i64),
                1 => 5_000 + rng.below(100_000) as i64,
                2 => 1000,
                3..=7 => 0,
                _ => rng.below(400) as i64,
            };
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let cost = if rng.below(6) == 0 { 1 + rng.below(8) } else { 1 };
            let mut op = json!({"now": now});
            if kind != "check" && kind != "reserve" {
                op["op"] = json!(kind);
            }
            if cost != 1 && kind != "peek" && kind != "reset" {
                op["cost"] = json!(cost);
            }
            op
        })
        .collect()
}

fn record(suite: &mut Value) {
    let parsed: conformance::Suite = serde_json::from_value(suite.clone()).expect("valid suite");
    let gots = conformance::run_suite(&parsed, Arc::new(MemoryStore::new()) as Arc<dyn Store>).expect("valid limiter");
    for (op, got) in suite["ops"].as_array_mut().expect("ops").iter_mut().zip(gots) {
        match got {
            Got::Decision(d, binding) => {
                let mut e = json!({"allowed": d.allowed, "limit": d.limit, "remaining": d.remaining,
                                   "resetAt": d.reset_at, "retryAfterMs": d.retry_after_ms});
                if let Some(b) = binding {
                    e["binding"] = json!(b);
                }
                op["expect"] = e;
            }
            Got::Reservation(r) => op["expect"] = json!({"accepted": r.accepted, "delayMs": r.delay_ms}),
            Got::Done => {}
            Got::Error(code, _) => op["expectError"] = json!(code.as_str()),
        }
    }
}

fn main() {
    let mut rng = Rng(0x5eed_7e57_0000_0001);
    let mut suites = Vec::new();
    for (name, spec) in specs() {
        for (n, start) in [(0, 1_000i64), (1, 1_763_769_600_123), (2, 1_735_689_599_500)] {
            let mut suite = json!({
                "id": format!("recorded/{name}/{n}"),
                "comment": "Random timeline recorded from the Rust engine; reproduced independently by the Lua path.",
                "strategy": spec, "key": "k",
                "ops": timeline(&mut rng, start, 60, &["check", "check", "check", "check", "peek", "forecast", "reset"]),
            });
            record(&mut suite);
            suites.push(suite);
        }
    }
    for n in 0..3 {
        let mut suite = json!({
            "primitive": "shaper", "id": format!("recorded/shaper/{n}"),
            "comment": "Random timeline recorded from the Rust engine; reproduced independently by the Lua path.",
            "shaper": {"ratePerSec": 7, "maxQueueMs": 600}, "key": "k",
            "ops": timeline(&mut rng, 1_763_769_600_000, 60, &["reserve", "reserve", "reserve", "reset"]),
        });
        record(&mut suite);
        suites.push(suite);
    }
    let all = specs();
    for (n, rule) in ["all", "any", "all", "any"].iter().enumerate() {
        let dims: Vec<Value> = (0..3)
            .map(|d| {
                let (_, spec) = &all[(n * 3 + d * 5) % all.len()];
                json!({"name": format!("d{d}"), "strategy": spec, "costMultiplier": 1 + (d as u64 + n as u64) % 2})
            })
            .collect();
        let mut suite = json!({
            "primitive": "multi", "rule": rule, "id": format!("recorded/multi-{rule}/{n}"),
            "comment": "Random multi timeline recorded from the Rust engine; reproduced independently by the Lua path.",
            "dimensions": dims, "keys": ["ip", "user", "route"],
            "ops": timeline(&mut rng, 1_763_769_600_000, 60, &["check", "check", "check", "reset"]),
        });
        record(&mut suite);
        suites.push(suite);
    }
    let doc = json!({
        "description": "Seeded random timelines (core/examples/record_vectors.rs) with expectations recorded from the Rust engine. They prove something because the Lua scripts on a real Redis and every binding's runner reproduce them.",
        "suites": suites,
    });
    println!("{}", serde_json::to_string_pretty(&doc).expect("serializable"));
}
