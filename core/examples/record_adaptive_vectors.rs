//! Records `conformance-vectors/adaptive/timelines.json`: acquire/release timelines for every
//! adaptive algorithm, the API's edge cases and its bad input, with the state core produces after
//! each event.
//!
//! Expectations our own code produced prove something once another path reproduces them: every
//! binding replays this file through its own public API (`throttlekit conformance` for Rust).
//! Run: `cargo run -p throttlekit --example record_adaptive_vectors >
//! conformance-vectors/adaptive/timelines.json` (`make vectors`).

use serde_json::{Value, json};
use throttlekit::concurrency::vectors::{self, AdaptiveVectorFile, Case, Event, FORMAT, Op};
use throttlekit::concurrency::{Outcome, Permit};

/// xorshift64*: deterministic without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn ev(op: Op, permit: &str) -> Event {
    Event {
        op,
        permit: Some(permit.to_string()),
        partition: None,
        outcome: None,
        rtt_us: None,
        us: None,
        expect: None,
        expect_error: None,
    }
}

fn acquire(permit: &str) -> Event {
    ev(Op::Acquire, permit)
}

fn acquire_in(permit: &str, partition: &str) -> Event {
    Event { partition: Some(partition.to_string()), ..ev(Op::Acquire, permit) }
}

fn release(permit: &str, outcome: &str, rtt_us: Option<i64>) -> Event {
    Event { outcome: Some(outcome.to_string()), rtt_us, ..ev(Op::Release, permit) }
}

fn advance(us: u64) -> Event {
    Event { permit: None, us: Some(us), ..ev(Op::Advance, "") }
}

fn case(id: &str, comment: &str, config: Value, events: Vec<Event>) -> Case {
    Case { id: id.to_string(), comment: comment.to_string(), config, expect_error: None, events }
}

fn basics() -> Case {
    let events = vec![
        acquire("a"),
        acquire("b"),
        acquire("c"),
        release("a", "success", Some(1000)),
        release("a", "dropped", Some(1000)),
        Event { op: Op::Drop, ..ev(Op::Drop, "b") },
        acquire("d"),
        advance(2500),
        release("d", "success", Some(-1)),
        release("d", "timeout", None),
        release("d", "success", None),
        acquire("e"),
        acquire("f"),
        acquire("g"),
        release("e", "ignore", None),
    ];
    case(
        "basics-fixed",
        "fixed limit 2: c is refused with 2 in flight; a second release of a does nothing (released: false); \
         dropping b frees its slot (a leak); a negative rttUs and an unknown outcome are config_invalid and leave d held; \
         d's round trip comes from the virtual clock",
        json!({"algorithm": "fixed", "initialLimit": 2}),
        events,
    )
}

fn partitions() -> Case {
    let mut events: Vec<Event> = (0..10).map(|i| acquire_in(&format!("b{i}"), "batch")).collect();
    events.push(acquire_in("b10", "batch"));
    events.push(acquire_in("l0", "live"));
    for i in 0..8 {
        events.push(release(&format!("b{i}"), "success", Some(1000)));
        events.push(acquire_in(&format!("bx{i}"), "batch"));
        events.push(acquire_in(&format!("l{}", i + 1), "live"));
    }
    events.push(Event { partition: Some("other".into()), ..acquire("x") });
    case(
        "partitions-live-80-batch-20",
        "fixed limit 10: batch alone borrows the whole limit; once live has asked, every slot batch frees goes to \
         live (batch is over its 2) until live holds its 8; an unknown partition is config_invalid",
        json!({"algorithm": "fixed", "initialLimit": 10, "partitions": [{"name": "live", "percent": 80}, {"name": "batch", "percent": 20}]}),
        events,
    )
}

fn errors() -> Vec<Case> {
    let bad = [
        ("zero-limit", json!({"initialLimit": 0})),
        ("negative-limit", json!({"algorithm": "aimd", "minLimit": -5})),
        ("percentages-over-100", json!({"partitions": [{"name": "a", "percent": 60}, {"name": "b", "percent": 50}]})),
        ("negative-percent", json!({"partitions": [{"name": "a", "percent": -1}]})),
        ("unknown-field", json!({"limit": 10})),
        ("option-of-another-algorithm", json!({"algorithm": "vegas", "backoff": 0.5})),
    ];
    bad.into_iter()
        .map(|(id, config)| {
            case(&format!("error-{id}"), "bad input is config_invalid, naming the field", config, vec![])
        })
        .collect()
}

/// A service of `capacity` concurrent requests at a 10 ms round trip, behind the limiter: each
/// tick up to 3 requests arrive and the oldest permits finish with a round trip that grows with
/// the queue beyond capacity (and jitter); phases of overload, of every request timing out, and
/// of light load.
fn timeline(algorithm: &str, seed: u64) -> Case {
    let config = json!({"algorithm": algorithm, "windowMinSamples": 10});
    let mut c = case(
        &format!("timeline-{algorithm}"),
        "a service of 12 concurrent requests at 10 ms: 100 ticks of overload (3 arrivals, 2 completions a tick, \
         the round trip growing with the queue, 1 in 25 dropped), 40 ticks of every request timing out at 5 s \
         (dropped), then 40 of light load; windows of 10 samples so the limit moves often",
        config,
        vec![],
    );
    // The limiter runs while the timeline is written, so only granted permits are released.
    let (limiter, _clock) = vectors::build(&c).expect("valid config");
    let mut rng = Rng(seed);
    let mut held: std::collections::VecDeque<(String, Permit)> = std::collections::VecDeque::new();
    let mut next = 0u32;
    let capacity = 12.0;
    for tick in 0..180 {
        let (arrivals, timeouts) = match tick {
            0..100 => (3, false),
            100..140 => (3, true),
            _ => (1, false),
        };
        for _ in 0..arrivals {
            let name = format!("p{next}");
            next += 1;
            c.events.push(acquire(&name));
            if let Some(p) = limiter.try_acquire(None).expect("no partition").permit() {
                held.push_back((name, p));
            }
        }
        let finishing = if arrivals == 1 { held.len() } else { 2.min(held.len()) };
        let inflight = held.len() as f64;
        for _ in 0..finishing {
            let (name, mut permit) = held.pop_front().expect("held");
            let queueing = ((inflight - capacity) / capacity).max(0.0);
            let rtt = (10_000.0 * (1.0 + queueing) * (0.8 + 0.4 * rng.below(1000) as f64 / 1000.0)) as i64;
            let rtt = if timeouts { 5_000_000 } else { rtt };
            let outcome = if timeouts || rng.below(25) == 0 { "dropped" } else { "success" };
            permit.release_with_rtt_ns(Outcome::parse(outcome).expect("known"), rtt * 1000).expect("valid");
            c.events.push(release(&name, outcome, Some(rtt)));
        }
    }
    c
}

fn main() {
    let mut cases = vec![basics(), partitions()];
    cases.extend(errors());
    for (i, algorithm) in ["fixed", "aimd", "vegas", "gradient2"].iter().enumerate() {
        cases.push(timeline(algorithm, 0x5eed + i as u64));
    }
    for c in &mut cases {
        vectors::record(c);
    }
    let file = AdaptiveVectorFile {
        format: FORMAT.to_string(),
        comment: "Adaptive concurrency timelines recorded from core (make vectors); every binding replays them. \
                  Events are acquire / release / drop / advance; expect is the state after the event."
            .to_string(),
        cases,
    };
    // One event per line: readable diffs when a rule changes.
    let mut out = String::new();
    out.push_str(&format!(
        "{{\n  \"format\": {},\n  \"comment\": {},\n  \"cases\": [\n",
        json!(file.format),
        json!(file.comment)
    ));
    for (i, c) in file.cases.iter().enumerate() {
        out.push_str(&format!(
            "    {{\n      \"id\": {},\n      \"comment\": {},\n      \"config\": {},\n",
            json!(c.id),
            json!(c.comment),
            c.config
        ));
        if let Some(e) = &c.expect_error {
            out.push_str(&format!("      \"expectError\": {},\n", json!(e)));
        }
        out.push_str("      \"events\": [");
        for (j, e) in c.events.iter().enumerate() {
            let sep = if j == 0 { "\n" } else { ",\n" };
            out.push_str(&format!("{sep}        {}", serde_json::to_string(e).expect("serializable")));
        }
        out.push_str(if c.events.is_empty() { "]\n" } else { "\n      ]\n" });
        out.push_str(if i + 1 == file.cases.len() { "    }\n" } else { "    },\n" });
    }
    out.push_str("  ]\n}");
    let parsed = vectors::parse(&out).expect("the recorder writes a valid file");
    assert_eq!(vectors::replay(&parsed).failed, 0, "a recorded file replays");
    println!("{out}");
}
