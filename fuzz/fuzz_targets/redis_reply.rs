//! The Redis reply decoder behind the transport API: any bytes handed to `finish` (as the
//! reply of a check, peek, forecast, multi check, shaper reservation or reset) give a decision
//! that keeps its invariants, a fail-policy fallback, or `store_unavailable`; never a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use throttlekit::multi::Dimension;
use throttlekit::redis::transport::{self, Op, Ticket};
use throttlekit::store::Now;
use throttlekit::{ErrorCode, FailPolicy, Limiter, MemoryStore, MultiLimiter, Rule, Shaper, Strategy};
use throttlekit::LeakyBucketOptions;

fn strategy(selector: u8) -> Strategy {
    match selector % 6 {
        0 => Strategy::gcra(10, 1000, Some(5)),
        1 => Strategy::token_bucket(5, 2.0),
        2 => Strategy::fixed_window(10, 1000),
        3 => Strategy::sliding_window(10, 1000, Some(4)),
        4 => Strategy::sliding_window_log(10, 1000),
        _ => Strategy::from_json(r#"{"kind":"quota","options":{"limit":100,"resetCadence":"calendar-day"}}"#),
    }
    .expect("valid")
}

fn sane(d: &throttlekit::Decision) {
    assert!(0 <= d.remaining && d.remaining <= d.limit, "{d:?}");
    assert_eq!(d.allowed, d.retry_after_ms == 0, "{d:?}");
}

fn only_store_errors(e: &throttlekit::Error) {
    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, reply)) = data.split_first() else { return };
    let policy = [FailPolicy::Raise, FailPolicy::FailOpen, FailPolicy::FailClosed][(selector as usize / 6) % 3];
    // A one-shard store: the calls never reach it, and a default one costs 128 shards a run.
    let store = Arc::new(MemoryStore::with_max_keys(64).expect("valid"));
    let l = Limiter::builder(strategy(selector)).store(store.clone()).prefix("p").fail_policy(policy).build();
    let _ = transport::is_noscript(reply);
    for op in [Op::Check, Op::Peek, Op::Forecast] {
        let call = l.prepare_at(op, "key", 1, Now::At(1_700_000_000_000)).expect("valid");
        let _ = call.evalsha();
        match l.finish(&call, Ok(reply)) {
            Ok(d) => sane(&d),
            Err(e) => only_store_errors(&e),
        }
        match l.finish_ticket(call.ticket(), Ok(reply)) {
            Ok(d) => sane(&d),
            Err(e) => only_store_errors(&e),
        }
    }
    // The tickets a transport keeps instead of the call: the server's clock (six integers),
    // and a count-mode check (the window's count) of any cost, on any strategy.
    let cost = 1 + u64::from(selector % 7);
    for ticket in [Ticket::new(Op::Check, Now::Server, None), Ticket::new(Op::Check, Now::At(1_700_000_000_000), Some(cost))] {
        match l.finish_ticket(ticket, Ok(reply)) {
            Ok(d) => sane(&d),
            Err(e) => only_store_errors(&e),
        }
    }
    if let Err(e) = transport::finish_del(Ok(reply)) {
        only_store_errors(&e);
    }
    let rule = if selector & 1 == 0 { Rule::All } else { Rule::Any };
    let m = MultiLimiter::new(rule, vec![Dimension::new("a", strategy(selector)), Dimension::new("b", strategy(selector / 2))])
        .expect("valid")
        .with_store(store.clone());
    let call = m.prepare(&["x", "y"], 1).expect("valid");
    match m.finish(&call, Ok(reply)) {
        Ok(md) => sane(&md.decision),
        Err(e) => only_store_errors(&e),
    }
    let s = Shaper::new(&LeakyBucketOptions { rate_per_sec: 10.0, max_queue_ms: 1000.0 }).expect("valid").with_store(store);
    let call = s.prepare("k", 1).expect("valid");
    match s.finish(&call, Ok(reply)) {
        Ok(r) => assert!(r.delay_ms >= 0, "{r:?}"),
        Err(e) => assert!(matches!(e.code(), ErrorCode::StoreUnavailable | ErrorCode::QueueFull), "{e}"),
    }
});
