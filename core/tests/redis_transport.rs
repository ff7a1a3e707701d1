//! The API for a binding that brings its own transport (`throttlekit::redis::transport`): the
//! prepared bytes written on a plain socket, and the reply handed back, give exactly the
//! decisions of the `RedisStore` path, on a real redis-server; NOSCRIPT is answered by the retry
//! (`EVAL`); a transport error or time-out goes through the fail policy as on the store's path.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/resp_wire.rs"]
mod resp_wire;

use std::sync::Arc;

use redis_server::{RedisServer, raw_command};
use resp_wire::{Wire, first, retry, send};
use throttlekit::redis::transport::{self, Op};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::store::Now;
use throttlekit::{
    Decision, Dimension, ErrorCode, FailPolicy, Limiter, ManualClock, MultiLimiter, Rule, Shaper, Strategy,
};

fn store(url: String) -> Arc<RedisStore> {
    let options =
        RedisOptions { urls: vec![url], timeout_ms: 2000, deterministic_replay: false, ..RedisOptions::default() };
    Arc::new(RedisStore::connect_blocking(options).expect("connect"))
}

fn limiter(store: &Arc<RedisStore>, clock: &ManualClock, strategy: Strategy, prefix: &str, p: FailPolicy) -> Limiter {
    Limiter::builder(strategy).store(store.clone()).clock(Arc::new(clock.clone())).prefix(prefix).fail_policy(p).build()
}

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(5, 1000, Some(3)).unwrap(),
        Strategy::token_bucket(4, 2.0).unwrap(),
        Strategy::fixed_window(3, 1000).unwrap(),
        Strategy::sliding_window(3, 1000, None).unwrap(),
    ]
}

#[test]
fn prepared_bytes_and_replies_decide_as_the_store_path() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    for (i, strategy) in strategies().into_iter().enumerate() {
        let clock = ManualClock::new(1_700_000_000_000);
        let ours = limiter(&store, &clock, strategy.clone(), &format!("own:{i}"), FailPolicy::Raise);
        let theirs = limiter(&store, &clock, strategy.clone(), &format!("store:{i}"), FailPolicy::Raise);
        let memory = Limiter::builder(strategy).clock(Arc::new(clock.clone())).prefix("mem").build();
        let mut refused = 0;
        for step in 0..16 {
            let op = [Op::Check, Op::Check, Op::Peek, Op::Forecast][step % 4];
            let cost = 1 + (step % 3) as u64;
            let call = ours.prepare(op, "k", cost).unwrap();
            // A fixed window's check on the caller's clock goes in `count` mode (one integer back).
            let counted = i == 2 && op == Op::Check;
            assert_eq!(call.ticket().counted(), counted.then_some(cost), "strategy {i}, step {step}");
            let reply = send(&mut wire, &call);
            assert_eq!(reply[0] == b':', counted, "{}", String::from_utf8_lossy(&reply));
            // Half the steps through `finish_ticket`, which keeps only the call's ticket.
            let got = if step % 2 == 0 {
                ours.finish(&call, Ok(&reply)).unwrap()
            } else {
                let ticket = transport::Ticket::new(call.op(), call.ticket().now(), call.ticket().counted());
                ours.finish_ticket(ticket, Ok(&reply)).unwrap()
            };
            let (want, mem) = match op {
                Op::Check => (theirs.check_sync("k", cost), memory.check_sync("k", cost)),
                Op::Peek => (theirs.peek_sync("k"), memory.peek_sync("k")),
                Op::Forecast => (theirs.forecast_sync("k", cost), memory.forecast_sync("k", cost)),
            };
            assert_eq!(got, want.unwrap(), "strategy {i}, step {step} ({op:?})");
            assert_eq!(got, mem.unwrap(), "strategy {i}, step {step} ({op:?}): memory");
            refused += usize::from(op == Op::Check && !got.allowed);
            clock.advance(100).unwrap();
        }
        assert!(refused > 0, "strategy {i}: no refused check to compare");
        let many = ours.prepare_many(&["a", "b", "a"], 2).unwrap();
        let got: Vec<Decision> =
            many.iter().map(|c| ours.finish_ticket(c.ticket(), Ok(&send(&mut wire, c))).unwrap()).collect();
        assert_eq!(got, theirs.check_many_sync(&["a", "b", "a"], 2).unwrap(), "strategy {i}: many");
        assert_eq!(got, memory.check_many_sync(&["a", "b", "a"], 2).unwrap(), "strategy {i}: many, memory");
        // Reset on the wire forgets the key as the store's reset does.
        let reply = wire.roundtrip(&transport::del(&ours.full_key("a")));
        transport::finish_del(Ok(&reply)).unwrap();
        theirs.reset_sync("a").unwrap();
        let call = ours.prepare(Op::Peek, "a", 1).unwrap();
        assert_eq!(ours.finish(&call, Ok(&send(&mut wire, &call))).unwrap(), theirs.peek_sync("a").unwrap());
    }
}

#[test]
fn a_prepared_multi_check_decides_as_the_store_path() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    let clock = ManualClock::new(1_700_000_000_000);
    let multi = |prefix: &str| {
        let dims = vec![
            Dimension::new("ip", Strategy::gcra(3, 1000, None).unwrap()),
            Dimension::new("user", Strategy::fixed_window(4, 1000).unwrap()).cost_multiplier(2),
        ];
        MultiLimiter::new(Rule::All, dims)
            .unwrap()
            .with_store(store.clone())
            .with_clock(Arc::new(clock.clone()))
            .with_prefix(prefix)
    };
    let (ours, theirs) = (multi("own"), multi("store"));
    for step in 0..6 {
        let call = ours.prepare(&["1.2.3.4", "u"], 1).unwrap();
        let got = ours.finish(&call, Ok(&send(&mut wire, &call))).unwrap();
        assert_eq!(got, theirs.check_sync(&["1.2.3.4", "u"], 1).unwrap(), "step {step}");
        clock.advance(100).unwrap();
    }
    assert_eq!(ours.prepare(&["only one"], 1).unwrap_err().code(), ErrorCode::ConfigInvalid);
    let open = multi("own").with_fail_policy(FailPolicy::FailOpen);
    let call = open.prepare(&["1.2.3.4", "u"], 1).unwrap();
    let d = open.finish(&call, Err(transport::timed_out(200))).unwrap();
    assert!(d.decision.allowed && d.decision.fallback);
    assert_eq!(ours.full_keys(&["1.2.3.4", "u"]).unwrap().len(), 2);
}

/// Fixed windows only (serve's default): one dimension goes as fixed_window.lua's `count` mode,
/// two as multi.lua's count reply; both prepared for the wire (`EVALSHA`, read by the integer
/// reader) decide as the store's own path and as the memory store, allowed and refused.
#[test]
fn a_prepared_fixed_window_multi_decides_from_its_counts_as_the_store_path() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    let clock = ManualClock::new(1_700_000_000_000);
    for n in [1, 2] {
        let multi = |prefix: &str, store: Arc<dyn throttlekit::Store>| {
            let dims = [
                Dimension::new("user", Strategy::fixed_window(4, 1000).unwrap()),
                Dimension::new("ip", Strategy::fixed_window(3, 60_000).unwrap()).cost_multiplier(2),
            ];
            MultiLimiter::new(Rule::All, dims[..n].to_vec())
                .unwrap()
                .with_store(store)
                .with_clock(Arc::new(clock.clone()))
                .with_prefix(prefix)
        };
        let ours = multi(&format!("own{n}"), store.clone());
        let theirs = multi(&format!("store{n}"), store.clone());
        let memory = multi("mem", Arc::new(throttlekit::MemoryStore::new()));
        let keys = &["u", "1.2.3.4"][..n];
        let mut refused = 0;
        for step in 0..10 {
            let call = ours.prepare(keys, 1).unwrap();
            let got = ours.finish(&call, Ok(&send(&mut wire, &call))).unwrap();
            assert_eq!(got, theirs.check_sync(keys, 1).unwrap(), "{n} dimensions, step {step}");
            assert_eq!(got, memory.check_sync(keys, 1).unwrap(), "{n} dimensions, step {step}");
            refused += usize::from(!got.decision.allowed);
            clock.advance(150).unwrap();
        }
        assert!(refused > 0, "{n} dimensions: no refusal to compare");
    }
}

#[test]
fn a_prepared_reservation_decides_as_the_store_path() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    let clock = ManualClock::new(1_700_000_000_000);
    let spec = throttlekit::LeakyBucketOptions { rate_per_sec: 10.0, max_queue_ms: 250.0 };
    let shaper = |prefix: &str| {
        Shaper::new(&spec).unwrap().with_store(store.clone()).with_clock(Arc::new(clock.clone())).with_prefix(prefix)
    };
    let (ours, theirs) = (shaper("own"), shaper("store"));
    for step in 0..6 {
        let call = ours.prepare("q", 1).unwrap();
        let got = ours.finish(&call, Ok(&send(&mut wire, &call))).unwrap();
        assert_eq!(got, theirs.reserve_sync("q", 1).unwrap(), "step {step}");
        clock.advance(30).unwrap();
    }
    let reply = wire.roundtrip(&transport::del(&ours.full_key("q")));
    transport::finish_del(Ok(&reply)).unwrap();
    let call = ours.prepare("q", 1).unwrap();
    assert_eq!(ours.finish(&call, Ok(&send(&mut wire, &call))).unwrap().delay_ms, 0);
    // No fail policy: the transport's error is the caller's.
    assert_eq!(ours.finish(&call, Err(transport::timed_out(200))).unwrap_err().code(), ErrorCode::StoreUnavailable);
}

#[test]
fn noscript_is_answered_by_the_eval_form() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    let clock = ManualClock::new(1_000_000);
    // A minute's period: Redis expires the key on its own clock when the credits are back (here
    // a whole period after the checks), and with a second's, a loaded machine pausing a second
    // around the flush below lost the key before the peek.
    let l = limiter(&store, &clock, Strategy::gcra(2, 60_000, None).unwrap(), "noscript", FailPolicy::Raise);
    assert!(raw_command(server.port, "SCRIPT FLUSH").unwrap().starts_with("+OK"));
    let call = l.prepare(Op::Check, "k", 1).unwrap();
    let missed = wire.roundtrip(&first(&call, false));
    assert!(transport::is_missing(&missed), "{}", String::from_utf8_lossy(&missed));
    let d = l.finish(&call, Ok(&wire.roundtrip(&retry(&call, false)))).unwrap();
    assert!(d.allowed);
    assert_eq!(d.remaining, 1);
    // EVAL cached the script again: the next EVALSHA runs.
    let call = l.prepare(Op::Check, "k", 1).unwrap();
    assert_eq!(l.finish(&call, Ok(&wire.roundtrip(&first(&call, false)))).unwrap().remaining, 0);
    // What a new connection sends first loads every script: no NOSCRIPT after a flush.
    assert!(raw_command(server.port, "SCRIPT FLUSH").unwrap().starts_with("+OK"));
    for cmd in transport::preload_for(false) {
        assert_eq!(wire.roundtrip(&cmd)[0], b'$');
    }
    let call = l.prepare(Op::Peek, "k", 1).unwrap();
    let reply = wire.roundtrip(&first(&call, false));
    assert!(!transport::is_missing(&reply));
    assert_eq!(l.finish(&call, Ok(&reply)).unwrap().remaining, 0);
}

/// A fixed window's count-mode check by the transport rules: NOSCRIPT is answered by the EVAL
/// form of the same `count` call (and by `FUNCTION LOAD REPLACE` + `FCALL` on a store that runs
/// functions), whose one-integer reply decides as the store's path and the memory store; a
/// malformed count reply, or a reply of another shape, is `store_unavailable` through the fail
/// policy.
#[test]
fn a_fixed_window_count_check_survives_noscript_and_refuses_malformed_replies() {
    let server = RedisServer::start();
    let store = store(server.url());
    let mut wire = Wire::open(server.port);
    // A minute's window, the clock standing at its start: Redis expires the window's key on its
    // own clock at the window's end, and with a second's window five steps of a flush and four
    // round trips each on a loaded machine could outlast the key (a fresh count, admitted).
    let clock = ManualClock::new(1_700_000_040_000);
    let strategy = Strategy::fixed_window(3, 60_000).unwrap();
    let ours = limiter(&store, &clock, strategy.clone(), "cnt-own", FailPolicy::Raise);
    let theirs = limiter(&store, &clock, strategy.clone(), "cnt-store", FailPolicy::Raise);
    let memory = Limiter::builder(strategy.clone()).clock(Arc::new(clock.clone())).build();
    for step in 0..5 {
        assert!(raw_command(server.port, "SCRIPT FLUSH").unwrap().starts_with("+OK"));
        let call = ours.prepare(Op::Check, "k", 1).unwrap();
        let first = wire.roundtrip(&first(&call, false));
        assert!(transport::is_missing(&first), "{}", String::from_utf8_lossy(&first));
        assert!(String::from_utf8_lossy(&retry(&call, false)).contains("$5\r\ncount\r\n"));
        let reply = wire.roundtrip(&retry(&call, false));
        assert_eq!(reply[0], b':', "{}", String::from_utf8_lossy(&reply));
        let got = ours.finish_ticket(call.ticket(), Ok(&reply)).unwrap();
        assert_eq!(got, theirs.check_sync("k", 1).unwrap(), "step {step}");
        assert_eq!(got, memory.check_sync("k", 1).unwrap(), "step {step}: memory");
        assert_eq!(got.allowed, step < 3, "step {step}");
    }
    // A store that runs functions (`scripting: auto` on Redis >= 7, this store): a flushed
    // library is `ERR Function not found`, answered once by the retry (FUNCTION LOAD REPLACE,
    // then FCALL: two replies, the call's last). Redis < 7 has no functions to flush.
    if store.uses_functions() {
        assert!(raw_command(server.port, "FUNCTION FLUSH").unwrap().starts_with("+OK"));
        let call = ours.prepare(Op::Check, "f", 2).unwrap();
        let first = wire.roundtrip(&first(&call, true));
        assert!(transport::is_missing(&first), "{}", String::from_utf8_lossy(&first));
        assert!(String::from_utf8_lossy(&retry(&call, true)).contains("$5\r\ncount\r\n"));
        let replies =
            wire.frames(&retry(&call, true), transport::replies(true, transport::Hop::default().with_fallback()));
        let reply = replies.last().unwrap();
        assert_eq!(reply[0], b':', "{}", String::from_utf8_lossy(reply));
        let got = ours.finish_ticket(call.ticket(), Ok(reply)).unwrap();
        assert_eq!(got, theirs.check_sync("f", 2).unwrap());
        assert_eq!(got, memory.check_sync("f", 2).unwrap());
        assert_eq!((got.allowed, got.remaining), (true, 1));
    }
    // Malformed count replies: never a decision.
    let open = limiter(&store, &clock, strategy.clone(), "cnt-own", FailPolicy::FailOpen);
    let call = ours.prepare(Op::Check, "k", 1).unwrap();
    for bad in [
        &b":-1\r\n"[..],
        b":abc\r\n",
        b":99999999999999999999\r\n",
        b"+5\r\n",
        b"$1\r\n1\r\n",
        b"*6\r\n:1\r\n:3\r\n:2\r\n:1700000001000\r\n:0\r\n:1000\r\n",
        b"-ERR boom\r\n",
        b"",
    ] {
        let what = String::from_utf8_lossy(bad);
        assert_eq!(ours.finish(&call, Ok(bad)).unwrap_err().code(), ErrorCode::StoreUnavailable, "{what}");
        assert_eq!(
            ours.finish_ticket(call.ticket(), Ok(bad)).unwrap_err().code(),
            ErrorCode::StoreUnavailable,
            "{what}"
        );
        let d = open.finish_ticket(call.ticket(), Ok(bad)).unwrap();
        assert!(d.allowed && d.fallback, "{what}");
    }
    // The six-integer reply is read only by a ticket that counts nothing, and the reverse.
    let plain = transport::Ticket::new(call.op(), call.ticket().now(), None);
    assert_eq!(ours.finish_ticket(plain, Ok(b":0\r\n")).unwrap_err().code(), ErrorCode::StoreUnavailable);
    let d = ours.finish_ticket(call.ticket(), Ok(b":0\r\n")).unwrap();
    assert_eq!((d.allowed, d.remaining), (true, 2));
    // A time-out goes through the fail policy, as for any call.
    let err = ours.finish_ticket(call.ticket(), Err(transport::timed_out(300))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
}

#[test]
fn transport_errors_go_through_the_fail_policy() {
    let server = RedisServer::start();
    let store = store(server.url());
    let clock = ManualClock::new(5_000);
    let strategy = Strategy::gcra(10, 1000, None).unwrap();
    let raise = limiter(&store, &clock, strategy.clone(), "f", FailPolicy::Raise);
    let open = limiter(&store, &clock, strategy.clone(), "f", FailPolicy::FailOpen);
    let closed = limiter(&store, &clock, strategy, "f", FailPolicy::FailClosed);

    let call = raise.prepare(Op::Check, "k", 1).unwrap();
    let err = raise.finish(&call, Err(transport::timed_out(300))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("timed out"), "{err}");
    // A server error, or a malformed reply, is store_unavailable too.
    let err = raise.finish(&call, Ok(b"-ERR boom\r\n")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("boom"), "{err}");
    assert_eq!(raise.finish(&call, Ok(b":1\r\n")).unwrap_err().code(), ErrorCode::StoreUnavailable);

    let call = open.prepare(Op::Check, "k", 1).unwrap();
    let d = open.finish(&call, Err(transport::transport_error("connection refused"))).unwrap();
    assert!(d.allowed && d.fallback);
    let call = closed.prepare(Op::Check, "k", 1).unwrap();
    let d = closed.finish(&call, Err(transport::transport_error("connection refused"))).unwrap();
    assert!(!d.allowed && d.fallback);
    assert_eq!(d.reset_at, 5_000 + throttlekit::FAIL_CLOSED_RETRY_MS);
    assert_eq!(call.now(), Now::At(5_000));

    // Bad costs are refused before anything is prepared.
    assert_eq!(raise.prepare(Op::Check, "k", 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
    assert_eq!(raise.prepare_many(&["k"], 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn the_endpoint_is_the_urls_with_its_handshake() {
    let server = RedisServer::start();
    assert!(raw_command(server.port, "CONFIG SET requirepass s3cret").unwrap().starts_with("+OK"));
    let store = store(format!("redis://:s3cret@127.0.0.1:{}/2", server.port));
    let e = store.endpoint();
    assert_eq!((e.host.as_str(), e.port, e.path.as_deref(), e.tls, e.db), ("127.0.0.1", server.port, None, false, 2));
    assert_eq!(e.password.as_deref(), Some("s3cret"));
    let handshake = e.handshake();
    assert_eq!(handshake.len(), 2);
    let mut wire = Wire::open(server.port);
    for cmd in &handshake {
        assert_eq!(wire.roundtrip(cmd), b"+OK\r\n");
    }
    // The prepared call then lands in database 2, where the store's own calls land.
    let clock = ManualClock::new(1_000);
    let l = limiter(&store, &clock, Strategy::gcra(3, 1000, None).unwrap(), "db", FailPolicy::Raise);
    let call = l.prepare(Op::Check, "k", 1).unwrap();
    l.finish(&call, Ok(&send(&mut wire, &call))).unwrap();
    assert_eq!(l.peek_sync("k").unwrap().remaining, 2);
}

#[test]
fn a_resp3_endpoint_logs_in_with_hello_3_and_its_replies_decide_as_the_store_path() {
    let server = RedisServer::start();
    assert!(raw_command(server.port, "CONFIG SET requirepass s3cret").unwrap().starts_with("+OK"));
    let store = store(format!("redis://:s3cret@127.0.0.1:{}/2?protocol=resp3", server.port));
    let e = store.endpoint();
    assert!(e.resp3);
    let mut wire = Wire::open(server.port);
    // HELLO 3 with AUTH inside, then SELECT: a map, then +OK, each a reply `scan` calls a reply.
    let login = e.handshake();
    assert_eq!(login.len(), 2);
    let replies = wire.frames(&login.concat(), 2);
    assert_eq!(replies[0][0], b'%', "HELLO 3 answers a map");
    assert_eq!(replies[1], b"+OK\r\n");
    for r in &replies {
        assert!(!matches!(r[0], b'-' | b'!'), "not an error: {}", String::from_utf8_lossy(r));
    }
    // Calls and a miss over RESP3 decide as the store's own (RESP3) path does.
    let clock = ManualClock::new(1_000);
    let l = limiter(&store, &clock, Strategy::gcra(3, 1000, None).unwrap(), "r3", FailPolicy::Raise);
    let call = l.prepare(Op::Check, "k", 1).unwrap();
    assert_eq!(l.finish(&call, Ok(&send(&mut wire, &call))).unwrap().remaining, 2);
    assert_eq!(wire.frames(b"*2\r\n$6\r\nSCRIPT\r\n$5\r\nFLUSH\r\n", 1), [b"+OK\r\n"]);
    let call = l.prepare(Op::Check, "k", 1).unwrap();
    let missed = wire.frames(&first(&call, false), 1).remove(0);
    assert!(transport::is_missing(&missed), "{}", String::from_utf8_lossy(&missed));
    let reply = wire.frames(&retry(&call, false), 1).remove(0);
    assert_eq!(l.finish(&call, Ok(&reply)).unwrap().remaining, 1);
    assert_eq!(l.peek_sync("k").unwrap().remaining, 1);
}

#[test]
fn a_prepared_call_refuses_a_key_past_the_stores_limit_as_the_store_path_does() {
    let server = RedisServer::start();
    let store = store(server.url());
    let clock = ManualClock::new(1_700_000_000_000);
    let ours = limiter(&store, &clock, Strategy::gcra(5, 1000, None).unwrap(), "p", FailPolicy::Raise);
    // "p:" plus 254 bytes is the 256 the store allows; one byte more is refused, before any
    // bytes are prepared for the wire, exactly as `check_sync` refuses it.
    let longest = "k".repeat(254);
    assert!(ours.prepare(Op::Check, &longest, 1).is_ok());
    let over = "k".repeat(255);
    for op in [Op::Check, Op::Peek, Op::Forecast] {
        assert_eq!(ours.prepare(op, &over, 1).unwrap_err().code(), ErrorCode::ConfigInvalid, "{op:?}");
    }
    assert_eq!(ours.check_sync(&over, 1).unwrap_err().code(), ErrorCode::ConfigInvalid);
}
