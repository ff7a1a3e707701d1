//! At most once on one Redis server, proven through the fault proxy: for every fault (one script
//! call in five delayed past the timeout, stalled, cut mid-request, executed with its reply lost,
//! reset, or black-holed), every call answers within its timeout plus 100 ms, the server never
//! executes more scripts than calls were made, and the server admits exactly the limit — the
//! admissions the client saw plus those whose reply was lost — never one more.

#[path = "../../../core/tests/support/redis_server.rs"]
mod redis_server;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use redis_server::{RedisServer, cli, field};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{ErrorCode, FailPolicy, Limiter, Strategy};
use throttlekit_faultproxy::{Fault, FaultProxy, Rule};

const TIMEOUT_MS: u64 = 250;
const SLACK_MS: u64 = 100;
const LIMIT: u64 = 60;
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

/// This process's scheduling stalls: a thread that sleeps 10 ms at a time records each wake-up
/// that came late, as (from, to, how late). A call's bound is its timeout + 100 ms plus the
/// stalls that overlap it, all of them (a call hit by two stalls took both), or its own wait
/// for a CPU if that is more: a machine too loaded to run the test on time is told apart from
/// a client that waits too long, which on a quiet machine meets tenths of a ms of stalls.
/// (tests/faults/stalls.py does the same for the other languages' drivers.)
struct Meter {
    events: Mutex<Vec<(Instant, Instant, Duration)>>,
    wakes: AtomicU64,
}

fn meter() -> &'static Meter {
    static METER: OnceLock<Meter> = OnceLock::new();
    METER.get_or_init(|| {
        std::thread::spawn(|| {
            loop {
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(10));
                let woke = Instant::now();
                let late = woke.duration_since(t).saturating_sub(Duration::from_millis(10));
                let m = meter();
                if !late.is_zero() {
                    m.events.lock().unwrap().push((woke - late, woke, late));
                }
                m.wakes.fetch_add(1, Ordering::Relaxed);
            }
        });
        Meter { events: Mutex::new(Vec::new()), wakes: AtomicU64::new(0) }
    })
}

impl Meter {
    /// The stalls that overlap [from, to]. It first waits (at most 2 s) for two more wake-ups,
    /// so a stall still going on (the meter not yet awake to record it) is in.
    fn within(&self, from: Instant, to: Instant) -> Duration {
        let wakes = self.wakes.load(Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.wakes.load(Ordering::Relaxed) < wakes + 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let events = self.events.lock().unwrap();
        events.iter().filter(|(f, t, _)| *f <= to && *t >= from).map(|(_, _, late)| *late).sum()
    }
}

/// How long the calling thread has waited, runnable, for a CPU (Linux schedstat's run_delay).
fn runqueue() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()))
        .map_or(Duration::ZERO, Duration::from_nanos)
}

#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    allowed: u64,
    denied: u64,
    errors: u64,
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
        let bound = Duration::from_millis(TIMEOUT_MS + SLACK_MS);
        if took > bound {
            let stalls = meter().within(start, end);
            assert!(
                took <= bound + stalls.max(waited),
                "a call took {took:?} (bound {bound:?} + stalls within it: {stalls:?} measured beside it, \
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
                None
            }
        }
    }
}

fn prove(name: &str, rule: Rule) {
    meter();
    let server = RedisServer::start();
    let upstream: SocketAddr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let proxy = FaultProxy::start(upstream).unwrap();
    let options = RedisOptions {
        urls: vec![format!("redis://{}", proxy.addr())],
        timeout_ms: TIMEOUT_MS,
        ..RedisOptions::default()
    };
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect through the proxy"));
    let limiter = Limiter::builder(Strategy::gcra(LIMIT, 1_000_000_000, None).unwrap())
        .store(store)
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
