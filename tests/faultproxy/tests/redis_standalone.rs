//! At most once on one Redis server, proven through the fault proxy: for every fault (one script
//! call in five delayed past the timeout, stalled, cut mid-request, executed with its reply lost,
//! reset, or black-holed), every call answers within its timeout plus 100 ms, the server never
//! executes more scripts than calls were made, and the server admits exactly the limit — the
//! admissions the client saw plus those whose reply was lost — never one more.
//!
//! "Exactly the limit" holds only where the algorithm's arithmetic is exact: GCRA sums its
//! emission interval `T = period / limit` once per admission in `f64` (docs/semantics.md pins
//! that order), and with `T` a fraction of a millisecond (60 per 10^9 ms) sixty additions land a
//! few ten-thousandths of a ms past `tau`, so a 60th admission in the same millisecond as the
//! first is denied. The wall clock (a ticker thread's millisecond) stood still for a whole run
//! when that thread was starved on a loaded machine: 59 admitted, the assertion failed, no call
//! lost. So `T` is a whole number of ms and the limiter's clock a [`ManualClock`] that never
//! moves: the server's count depends on the calls alone.

#[path = "../../../core/tests/support/redis_server.rs"]
mod redis_server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_server::{RedisServer, cli, field};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{ErrorCode, FailPolicy, Limiter, ManualClock, Strategy};
use throttlekit_faultproxy::stalls::{self, runqueue};
use throttlekit_faultproxy::{Fault, FaultProxy, Rule};

const TIMEOUT_MS: u64 = 250;
const SLACK_MS: u64 = 100;
const LIMIT: u64 = 60;
/// A whole number of ms per admission (10^6: no admission is earned back during a run), so the
/// limiter's arithmetic is exact and admits exactly `LIMIT` at one instant (module docs).
const PERIOD_MS: u64 = LIMIT * 1_000_000;
/// The instant every call is made at.
const NOW_MS: i64 = 1_700_000_000_000;
/// Calls made while the fault is on: fewer than the limit, so every one the server executes is
/// an admission.
const FAULT_CALLS: u64 = 40;

/// Script and function executions the server counted (calls that ran, not those refused with
/// `NOSCRIPT` or an error before running).
pub fn executions(port: u16) -> u64 {
    let stats = cli(port, &["info", "commandstats"]).unwrap_or_default();
    ["fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro"]
        .iter()
        .map(|cmd| {
            let line = field(&stats, &format!("cmdstat_{cmd}")).unwrap_or_default();
            let get = |k: &str| -> u64 {
                line.split(',').find_map(|kv| kv.strip_prefix(k).and_then(|n| n.parse().ok())).unwrap_or(0)
            };
            get("calls=") - get("failed_calls=") - get("rejected_calls=")
        })
        .sum()
}

#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    allowed: u64,
    denied: u64,
    errors: u64,
    /// Which calls failed, and why (in a failed assertion's `{t:?}`: an error the faults do
    /// not explain is told apart from theirs).
    why: Vec<String>,
    worst_ms: u128,
}

impl Tally {
    fn call(&mut self, limiter: &Limiter, key: &str) -> Option<bool> {
        let (start, waited) = (Instant::now(), runqueue());
        let out = limiter.check_sync(key, 1);
        let end = Instant::now();
        let waited = runqueue().saturating_sub(waited);
        let took = end - start;
        self.calls += 1;
        self.worst_ms = self.worst_ms.max(took.as_millis());
        // The bound adds the stalls that can have held the call: those that overlap it, or its
        // own wait for a CPU if that is more (`stalls`): a machine too loaded to run the test on
        // time is told apart from a client that waits too long, which on a quiet machine meets
        // tenths of a ms of stalls.
        let bound = Duration::from_millis(TIMEOUT_MS + SLACK_MS);
        if took > bound {
            let held = stalls::within(start, end);
            assert!(
                took <= bound + held.max(waited),
                "a call took {took:?} (bound {bound:?} + stalls within it: {held:?} measured beside it, \
                 {waited:?} waiting for a CPU): {out:?}"
            );
        }
        match out {
            Ok(d) if d.allowed => {
                self.allowed += 1;
                Some(true)
            }
            Ok(_) => {
                self.denied += 1;
                Some(false)
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
                self.errors += 1;
                self.why.push(format!("call {}: {e}", self.calls));
                None
            }
        }
    }
}

fn prove(name: &str, rule: Rule) {
    stalls::start();
    let server = RedisServer::start();
    let upstream: SocketAddr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let proxy = FaultProxy::start(upstream).unwrap();
    let options = RedisOptions {
        urls: vec![format!("redis://{}", proxy.addr())],
        timeout_ms: TIMEOUT_MS,
        ..RedisOptions::default()
    };
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect through the proxy"));
    let limiter = Limiter::builder(Strategy::gcra(LIMIT, PERIOD_MS, None).unwrap())
        .store(store)
        .clock(Arc::new(ManualClock::new(NOW_MS)))
        .fail_policy(FailPolicy::Raise)
        .prefix(name)
        .build();
    let before = executions(server.port);
    let mut t = Tally::default();

    proxy.set(vec![rule]);
    for _ in 0..FAULT_CALLS {
        t.call(&limiter, "k");
    }
    let faults = proxy.stats().faults;
    assert!(faults >= 1, "{name}: no fault was injected");
    proxy.clear();
    // A black-holed connection stays open and silent; nothing on the client side can tell it
    // from a slow server, so recovery starts when the connection is closed (as TCP keepalive or
    // a CLIENT KILL would): the proxy closes the held connections here for every fault alike.
    proxy.kill_connections();

    // No fault now: call until the first denial (a few errors while the store reconnects).
    let mut denied_at = None;
    for _ in 0..LIMIT * 2 {
        if t.call(&limiter, "k") == Some(false) {
            denied_at = Some(t.calls);
            break;
        }
    }
    assert!(denied_at.is_some(), "{name}: never denied: {t:?}");
    // Everything sent has executed or been discarded by now: the calls after the fault went on
    // the same or a later connection and were answered.
    let executed = executions(server.port) - before;
    eprintln!(
        "fault={name} calls={} allowed={} denied={} errors={} faults={faults} executions={executed} worst_ms={}",
        t.calls, t.allowed, t.denied, t.errors, t.worst_ms
    );
    assert!(executed <= t.calls, "{name}: {executed} executions for {} calls", t.calls);
    assert!(t.allowed <= LIMIT, "{name}: {} admitted over a limit of {LIMIT}", t.allowed);
    // Every execution but the denials admitted one: exactly the limit, never one more.
    assert_eq!(
        executed - t.denied,
        LIMIT,
        "{name}: the server admitted {} (limit {LIMIT}); {t:?}",
        executed - t.denied
    );
}

fn late() -> Duration {
    Duration::from_millis(TIMEOUT_MS + 200)
}

#[test]
fn delay_past_the_timeout() {
    prove("delay", Rule::new(Fault::Delay(late())).scripts().every(5));
}

#[test]
fn stall_past_the_timeout() {
    prove("stall", Rule::new(Fault::Stall(late())).scripts().every(5));
}

#[test]
fn request_cut_after_20_bytes() {
    prove("drop_request", Rule::new(Fault::DropRequest(20)).scripts().every(5));
}

#[test]
fn reply_lost_after_execution() {
    prove("drop_reply", Rule::new(Fault::DropReply).scripts().every(5));
}

#[test]
fn connection_reset() {
    prove("reset", Rule::new(Fault::Reset).scripts().every(5));
}

#[test]
fn black_hole() {
    prove("blackhole", Rule::new(Fault::BlackHole).scripts().every(5));
}
