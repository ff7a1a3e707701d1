//! Rendering the rate-limit response fields alone, no check: one decision of a single GCRA
//! limiter turned into its header lines, the per-request work every binding's middleware does
//! after the check (Node's Fastify/Express fast path, Go's `tkhttp`, Python, the JVM filter).
//!
//! - `for_each_line`: the lines handed to a closure (Node's joined string).
//! - `HttpEdge::write_lines`: `Name: value\n` into a reused buffer (the C ABI behind tkhttp).
//! - `rate_limit_headers`: the `Vec<(name, String)>` form (Python, the JVM, the tower layer).
//!
//! `draft-10` allowed and denied, and `draft-6`; `cargo bench -p throttlekit --bench http_fields`.
//! docs/bench-bindings.md records ns per render before and after the allocation-free writer.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use throttlekit::http::{Family, HeaderOptions, HttpEdge, LimitStatus, for_each_line, rate_limit_headers};
use throttlekit::{Decision, FailPolicy, Limiter, Strategy};

const NOW: i64 = 1_700_000_000_000;

fn decision(allowed: bool) -> Decision {
    Decision {
        allowed,
        limit: 100,
        remaining: if allowed { 57 } else { 0 },
        reset_at: NOW + 25_300,
        retry_after_ms: if allowed { 0 } else { 600 },
        fallback: false,
    }
}

fn bench(c: &mut Criterion) {
    let limiter = Limiter::builder(Strategy::gcra(100, 60_000, None).expect("valid")).build();
    let mut group = c.benchmark_group("http_fields");
    group.measurement_time(Duration::from_secs(3));
    for (label, family, allowed) in [
        ("draft-10 allowed", Family::Draft10, true),
        ("draft-10 denied", Family::Draft10, false),
        ("draft-6 allowed", Family::Draft6, true),
    ] {
        let options = HeaderOptions { family, ..HeaderOptions::default() };
        let d = decision(allowed);
        group.bench_function(format!("for_each_line/{label}"), |b| {
            b.iter(|| {
                let status = [LimitStatus::single(limiter.strategy(), black_box(d), Some("192.0.2.1"))];
                let mut n = 0;
                for_each_line(&status, &options, NOW, |name, value| n += name.len() + value.len()).expect("ok");
                n
            })
        });
        let edge = HttpEdge::new(options.clone(), &Default::default(), FailPolicy::Raise).expect("valid");
        let mut out = String::with_capacity(256);
        group.bench_function(format!("edge_write_lines/{label}"), |b| {
            b.iter(|| {
                out.clear();
                edge.write_lines(&limiter, "192.0.2.1", &black_box(d), NOW, &mut out).expect("ok");
                out.len()
            })
        });
        group.bench_function(format!("rate_limit_headers/{label}"), |b| {
            b.iter(|| {
                let status = [LimitStatus::single(limiter.strategy(), black_box(d), Some("192.0.2.1"))];
                rate_limit_headers(&status, &options, NOW).expect("ok").len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
