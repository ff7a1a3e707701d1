//! Redis down, slow, restarted, or with its script cache flushed: every call answers within its
//! timeout, errors are `store_unavailable` carrying the cause, each fail policy does what it
//! says, and the store recovers by itself.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;
#[path = "support/signal.rs"]
mod signal;
#[path = "support/trickle.rs"]
mod trickle;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use redis_store::{connect, options};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::store::Now;
use throttlekit::{Dimension, ErrorCode, FailPolicy, Limiter, MultiLimiter, Rule, Store, Strategy};
use trickle::trickling_proxy;

const TIMEOUT_MS: u64 = 300;

fn limiter(store: &Arc<RedisStore>, policy: FailPolicy) -> Limiter {
    Limiter::builder(Strategy::gcra(1_000_000, 1000, None).unwrap())
        .store(store.clone())
        .fail_policy(policy)
        .prefix("faults")
        .build()
}

/// Calls must come back within the timeout plus scheduling slack.
fn bounded<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(TIMEOUT_MS * 3 + 500), "{what} took {took:?}");
    out
}

/// Whether `l` answers a check again within about a second (50 tries 20 ms apart), once the
/// fault that silenced its server is gone.
fn answers_within_a_second(l: &Limiter) -> bool {
    (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        l.check_sync("k", 1).is_ok()
    })
}

#[test]
fn a_dead_server_gives_store_unavailable_with_the_cause_and_each_policy_applies() {
    let mut server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    assert!(limiter(&store, FailPolicy::Raise).check_sync("k", 1).unwrap().allowed);
    server.stop();

    let err = bounded("raise", || limiter(&store, FailPolicy::Raise).check_sync("k", 1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().len() > "store unavailable: ".len(), "no cause in {err}");

    let open = bounded("fail_open", || limiter(&store, FailPolicy::FailOpen).check_sync("k", 1)).unwrap();
    assert!(open.allowed && open.fallback);

    let closed = bounded("fail_closed", || limiter(&store, FailPolicy::FailClosed).check_sync("k", 1)).unwrap();
    assert!(!closed.allowed && closed.fallback && closed.retry_after_ms >= 1);

    // The async path and the multi path follow the same policies.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let d = rt.block_on(limiter(&store, FailPolicy::FailOpen).check("k", 1)).unwrap();
    assert!(d.allowed && d.fallback);
    let multi = MultiLimiter::new(Rule::All, vec![Dimension::new("a", Strategy::fixed_window(5, 1000).unwrap())])
        .unwrap()
        .with_store(store.clone())
        .with_fail_policy(FailPolicy::FailClosed);
    let m = bounded("multi", || multi.check_sync(&["x"], 1)).unwrap();
    assert!(!m.decision.allowed && m.decision.fallback);
    let e = rt.block_on(store.apply(
        "k",
        Now::At(1),
        throttlekit::store::Transform::Peek { strategy: &Strategy::gcra(1, 1000, None).unwrap() },
    ));
    assert_eq!(e.unwrap_err().code(), ErrorCode::StoreUnavailable);
}

#[test]
fn killing_the_server_mid_load_then_restarting_it_recovers_without_intervention() {
    let mut server = RedisServer::start();
    let port = server.port;
    let store = connect(server.url(), TIMEOUT_MS);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let l = limiter(&store, FailPolicy::Raise);
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut ok, mut unavailable, mut slowest) = (0, 0, Duration::ZERO);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let start = Instant::now();
                    match l.check_sync(&format!("w{i}"), 1) {
                        Ok(_) => ok += 1,
                        Err(e) => {
                            assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}");
                            unavailable += 1;
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                    slowest = slowest.max(start.elapsed());
                }
                (ok, unavailable, slowest)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    server.stop(); // SIGKILL mid-load
    std::thread::sleep(Duration::from_millis(500));
    let server = RedisServer::start_on(port);
    std::thread::sleep(Duration::from_millis(300));
    let recovered = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        limiter(&store, FailPolicy::Raise).check_sync("after", 1).is_ok()
    });
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        let (ok, unavailable, slowest) = w.join().unwrap();
        assert!(ok > 0 && unavailable > 0, "ok {ok}, unavailable {unavailable}");
        assert!(slowest < Duration::from_millis(TIMEOUT_MS * 3 + 500), "a call took {slowest:?}");
    }
    assert!(recovered, "the store did not reconnect after the restart");
    drop(server);
}

#[test]
fn a_script_flush_mid_load_never_reaches_the_caller() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    for i in 0..2000 {
        if i % 100 == 50 {
            redis_server::raw_command(server.port, "SCRIPT FLUSH").unwrap();
        }
        l.check_sync("flush", 1).unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    // Concurrent callers across a flush, async this time.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let l = Arc::new(l);
        let tasks: Vec<_> = (0..50)
            .map(|i| {
                let l = l.clone();
                tokio::spawn(async move {
                    for _ in 0..40 {
                        l.check(&format!("a{i}"), 1).await.unwrap();
                    }
                })
            })
            .collect();
        redis_server::raw_command(server.port, "SCRIPT FLUSH").unwrap();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn a_server_that_stops_answering_times_out_instead_of_hanging() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    l.check_sync("k", 1).unwrap();
    server.signal("STOP");
    for _ in 0..3 {
        let err = bounded("a call to a stopped server", || l.check_sync("k", 1)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StoreUnavailable);
        assert!(err.message().contains("timed out"), "{err}");
    }
    let closed = limiter(&store, FailPolicy::FailClosed);
    assert!(bounded("fail closed", || closed.check_sync("k", 1)).unwrap().fallback);
    server.signal("CONT");
    // Once it answers again, so does the store.
    assert!(answers_within_a_second(&l), "no answer after SIGCONT");
}

#[test]
fn a_slow_script_times_out_and_is_not_replayed() {
    // The server sleeps this long, far past the timeout: a call queued behind the sleep can only
    // answer by its own timer, and one that waited for the server instead would take this long.
    const SLEEP_SECS: u32 = 2;
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = Limiter::builder(Strategy::fixed_window(1000, 3_600_000).unwrap()).store(store.clone()).build();
    let now = 1_800_000_000_000;
    l.check_sync_at("once", 1, now).unwrap();
    // DEBUG SLEEP blocks the server (block_server returns once it is in the sleep); the check
    // queued behind it times out.
    let sleeper = redis_server::block_server(server.port, SLEEP_SECS);
    let start = Instant::now();
    let err = l.check_sync_at("once", 1, now).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("timed out"), "{err}");
    assert!(took < Duration::from_secs(SLEEP_SECS.into()), "the call waited {took:?}, for the server's sleep");
    sleeper.join().unwrap().expect("DEBUG SLEEP");
    // The server's own count: the timed-out call reached Redis (its bytes were read before the
    // sleep ended, ahead of this later call's) and counted once; it was never sent a second time.
    let d = l.check_sync_at("once", 1, now).unwrap();
    assert_eq!(d.remaining, 1000 - 3, "the timed-out call counted {} times", 1000 - 2 - d.remaining);
}

#[test]
fn connecting_to_nothing_fails_fast_with_store_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let options = options(format!("redis://127.0.0.1:{port}"), TIMEOUT_MS);
    let err = bounded("connect", || RedisStore::connect_blocking(options)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    let bad = RedisOptions { urls: vec!["not a url".into()], ..RedisOptions::default() };
    assert_eq!(RedisStore::connect_blocking(bad).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn a_failed_async_connect_inside_a_runtime_is_an_error_not_a_panic() {
    // The store's own runtime is dropped inside the caller's async context when connecting
    // fails; that must shut it down in the background instead of panicking.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let options = options(format!("redis://127.0.0.1:{port}"), TIMEOUT_MS);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let err = rt.block_on(RedisStore::connect(options)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
}

#[test]
fn a_closed_store_refuses_calls() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(l.close()).unwrap();
    assert_eq!(l.check_sync("k", 1).unwrap_err().code(), ErrorCode::StoreUnavailable);
}

/// Connections the store holds on the server at `port`: every client but this `CLIENT LIST`'s
/// own, replicas (`flags=S`) and sentinels (`name=sentinel-...`).
pub fn store_connections(port: u16) -> usize {
    redis_server::cli(port, &["client", "list"]).map_or(0, |list| {
        list.lines()
            .filter(|l| !l.contains("cmd=client") && !l.contains("flags=S") && !l.contains("name=sentinel"))
            .count()
    })
}

#[test]
fn close_releases_every_connection_at_once() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    // Every path: blocking (sync), a bound runtime's own, and the shared connection (the
    // direct async path's and the hop path's: reset runs there).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(l.check_sync("k", 1).unwrap().allowed);
    assert!(rt.block_on(l.check("k", 1)).unwrap().allowed);
    rt.block_on(async {
        redis_store::bind(&store).await;
        assert!(l.check("k", 1).await.unwrap().allowed);
    });
    l.reset_sync("k").unwrap();
    assert!(store_connections(server.port) >= 3, "one connection per path");
    rt.block_on(store.close()).unwrap();
    // The bound connection's driver task lives on `rt`: it ends on that runtime's next turn.
    let deadline = Instant::now() + Duration::from_secs(2);
    while store_connections(server.port) > 0 {
        assert!(Instant::now() < deadline, "{} connections left after close", store_connections(server.port));
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
    }
    assert_eq!(l.check_sync("k", 1).unwrap_err().code(), ErrorCode::StoreUnavailable);
}

/// A server that accepts connections but never answers (SIGSTOP, a silent host), seen through
/// the fault proxy's black hole: every call, sync or async, fails within its own timeout. The
/// blocking path used to wait `timeout_ms` for the new connection's handshake and `timeout_ms`
/// again for the call (about twice the timeout): a call shares one deadline now.
#[test]
fn a_server_that_accepts_but_never_answers_fails_each_call_within_its_timeout() {
    silent_server_case("");
}

/// The same with a RESP3 URL: the blocking path used to keep the crate's handshake for it
/// (`HELLO 3` pipelined with `CLIENT SETINFO`, each reply waiting a whole timeout), so a call
/// on a new connection took about twice the timeout; it logs in itself now, within the call's
/// deadline, as for RESP2.
#[test]
fn a_resp3_url_on_a_server_that_never_answers_fails_each_call_within_its_timeout() {
    silent_server_case("/?protocol=resp3");
}

/// What the RESP3 login sends works: a password (`HELLO 3 AUTH default pw`) and a database
/// (`SELECT 3`), on the blocking path and the async one (both the store's own connections).
#[test]
fn a_resp3_url_logs_in_and_selects_its_database_on_every_path() {
    let server = RedisServer::start();
    // Set after the start: the helper's readiness check speaks without a password.
    redis_server::cli(server.port, &["config", "set", "requirepass", "pw"]).expect("CONFIG SET");
    let store = connect(format!("redis://:pw@127.0.0.1:{}/3?protocol=resp3", server.port), 5000);
    // Keys that live an hour: `limiter`'s GCRA keys expire 1 ms after each call, and Redis's
    // active expiry (every 100 ms) could remove them before DBSIZE counts them.
    let l = Limiter::builder(Strategy::fixed_window(1_000_000, 3_600_000).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix("faults")
        .build();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    assert!(l.check_sync("sync", 1).unwrap().allowed);
    assert!(rt.block_on(l.check("async", 1)).unwrap().allowed);
    let keys = redis_server::cli(server.port, &["-a", "pw", "--no-auth-warning", "-n", "3", "dbsize"]).unwrap();
    assert_eq!(keys.trim(), "2", "both calls' keys are in database 3");
    let hellos = redis_server::cli(server.port, &["-a", "pw", "--no-auth-warning", "info", "commandstats"]).unwrap();
    assert!(hellos.contains("cmdstat_hello:"), "the connections said HELLO: {hellos}");
}

/// On a RESP3 connection the server may send pushes no call asked for: here invalidation
/// messages, once the store's shared connection turns client-side caching on (`CLIENT TRACKING
/// ON BCAST`: every key written, by anyone, is pushed to it). The pushes are dropped, never read
/// as a reply: every raw command on that connection gets its own answer, and the limiter's calls
/// on the other connections keep deciding.
#[test]
fn a_resp3_connection_drops_pushes_it_did_not_ask_for() {
    let server = RedisServer::start();
    let store = connect(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port), 5000);
    let raw = |args: &[&str]| store.command_blocking(args).unwrap();
    assert_eq!(raw(&["CLIENT", "TRACKING", "ON", "BCAST"]), throttlekit::redis::Value::Okay);
    let l = limiter(&store, FailPolicy::Raise);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for i in 0..20 {
        let key = format!("pushed:{i}");
        assert_eq!(raw(&["SET", &key, &i.to_string()]), throttlekit::redis::Value::Okay);
        assert!(l.check_sync(&key, 1).unwrap().allowed);
        assert!(rt.block_on(l.check(&key, 1)).unwrap().allowed);
        assert_eq!(raw(&["GET", &key]), throttlekit::redis::Value::BulkString(i.to_string().into_bytes()), "call {i}");
        assert_eq!(raw(&["PING"]), throttlekit::redis::Value::SimpleString("PONG".into()), "call {i}");
    }
    // The pushes were sent: a connection of the store tracks keys.
    let clients = redis_server::cli(server.port, &["client", "list"]).unwrap();
    let tracking =
        clients.lines().any(|c| c.split(' ').any(|f| f.strip_prefix("flags=").is_some_and(|v| v.contains('t'))));
    assert!(tracking, "{clients}");
}

fn silent_server_case(url_tail: &str) {
    use throttlekit_faultproxy::{Fault, FaultProxy, Rule};
    // The old behaviour took two whole timeouts (the handshake's, then the call's), each ended by
    // a timer, which never fires early: a call is held to less than that, so the bound fails it
    // however the machine runs, and leaves a call that shares one deadline a whole timeout for
    // scheduling delays (up to 650 ms past a 1 s timeout seen at load 15).
    const SILENT_TIMEOUT_MS: u64 = 1000;
    const BOUND_MS: u64 = 2 * SILENT_TIMEOUT_MS;
    let server = RedisServer::start();
    let proxy = FaultProxy::start(format!("127.0.0.1:{}", server.port).parse().unwrap()).expect("the proxy");
    let store = connect(format!("redis://{}{url_tail}", proxy.addr()), SILENT_TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for _ in 0..3 {
        l.check_sync("k", 1).unwrap();
        rt.block_on(l.check("k", 1)).unwrap();
    }
    // Every connection closed; new ones accepted and never answered.
    proxy.set(vec![Rule::new(Fault::BlackHole).connections()]);
    proxy.kill_connections();
    let mut worst = Duration::ZERO;
    for sync in [true, false, true, true, false, true] {
        let start = Instant::now();
        let out = if sync { l.check_sync("k", 1) } else { rt.block_on(l.check("k", 1)) };
        let took = start.elapsed();
        worst = worst.max(took);
        assert_eq!(out.unwrap_err().code(), ErrorCode::StoreUnavailable);
        assert!(took < Duration::from_millis(BOUND_MS), "sync={sync}: a call took {took:?}");
    }
    eprintln!("silent server{url_tail}: worst call {worst:?} (timeout {SILENT_TIMEOUT_MS} ms)");
    // Answering again: so does the store.
    proxy.clear();
    proxy.kill_connections();
    assert!(answers_within_a_second(&l), "no answer once the proxy forwards again");
}

/// `close()` stops the store's runtime (its thread and descriptors) at once, or, while async calls
/// are in flight, when the last one ends: such a call awaits a timer of that runtime, which
/// tokio would answer with a panic once the runtime is gone. Here a call waits on a delayed
/// script when the store is closed: it still answers (`store_unavailable` at its timeout, or its
/// reply), and every later call, sync or async, fails as closed.
#[test]
fn close_while_an_async_call_waits_lets_that_call_answer() {
    use throttlekit_faultproxy::{Fault, FaultProxy, Rule};
    let server = RedisServer::start();
    let proxy = FaultProxy::start(format!("127.0.0.1:{}", server.port).parse().unwrap()).expect("the proxy");
    let store = connect(format!("redis://{}", proxy.addr()), TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // The call below waits on this runtime's own connection, which close() cannot end from
    // here (its driver task lives on `rt`), so its timer is what answers it: the case that
    // panicked when close() stopped the store's runtime at once.
    rt.block_on(async {
        redis_store::bind(&store).await;
        assert!(l.check("k", 1).await.unwrap().allowed);
    });
    proxy.set(vec![Rule::new(Fault::Delay(Duration::from_millis(TIMEOUT_MS * 3))).scripts()]);
    let before = proxy.stats().faults;
    std::thread::scope(|s| {
        let waiting = s.spawn(|| rt.block_on(l.check("k", 1)));
        let deadline = Instant::now() + Duration::from_secs(5);
        while proxy.stats().faults == before {
            assert!(Instant::now() < deadline, "the call never reached the proxy");
            std::thread::sleep(Duration::from_millis(2));
        }
        let other = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        other.block_on(store.close()).unwrap();
        let out = waiting.join().expect("the call in flight at close() panicked");
        assert_eq!(out.unwrap_err().code(), ErrorCode::StoreUnavailable);
    });
    proxy.clear();
    assert_eq!(rt.block_on(l.check("k", 1)).unwrap_err().code(), ErrorCode::StoreUnavailable);
    assert_eq!(l.check_sync("k", 1).unwrap_err().code(), ErrorCode::StoreUnavailable);
    assert_eq!(rt.block_on(l.reset("k")).unwrap_err().code(), ErrorCode::StoreUnavailable);
}

/// A signal handled on the caller's thread while a blocking call waits for its reply (Go sends
/// its preemption signal to the thread of a cgo call) must not fail the call. A `recv` bounded by
/// `SO_RCVTIMEO` is never restarted after a handler, even with `SA_RESTART`, so without the
/// store holding signals for the call this answered `store_unavailable: Interrupted system call`.
/// The handler still runs, during the call: the store's own connection reads again after it
/// (`core/src/redis/wire.rs`), on every URL.
#[test]
fn a_signal_handled_on_the_callers_thread_mid_call_does_not_fail_the_call() {
    let server = RedisServer::start();
    let store = connect(server.url(), 3000);
    let l = limiter(&store, FailPolicy::Raise);
    assert!(l.check_sync("signal", 1).unwrap().allowed); // the script loaded, a connection pooled
    signal::install();
    let caller = signal::this_thread();
    let pid = server.pid().to_string();
    server.signal("STOP");
    let nudger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        signal::send(caller); // the test's thread, alive until it joins this one
        std::thread::sleep(Duration::from_millis(200));
        std::process::Command::new("kill").args(["-CONT", &pid]).status().expect("kill -CONT");
    });
    let answered = l.check_sync("signal", 1);
    nudger.join().unwrap();
    assert!(answered.is_ok(), "the call failed: {:?}", answered.err());
    assert!(signal::handled(), "the signal was lost, not held");
}

/// The blocking path reads replies on its own connection (`core/src/redis/wire.rs`): a reply
/// split over many reads is read whole and decoded as when it comes in one piece, a pooled
/// connection's next reply starts where the last ended, and the `NOSCRIPT` fallback (an error
/// frame, then the `EVAL` reply) works there too.
#[test]
fn replies_that_arrive_a_byte_at_a_time_are_read_whole_on_the_blocking_path() {
    let server = RedisServer::start();
    let store = connect(format!("redis://127.0.0.1:{}", trickling_proxy(server.port)), 5000);
    let l = Limiter::builder(Strategy::fixed_window(5, 3_600_000).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix("trickle")
        .build();
    let now = 1_800_000_000_000;
    for expected in (0..5).rev() {
        let d = l.check_sync_at("k", 1, now).unwrap();
        assert!(d.allowed && d.remaining == expected, "{d:?}");
    }
    let denied = l.check_sync_at("k", 1, now).unwrap();
    assert!(!denied.allowed && denied.retry_after_ms > 0, "{denied:?}");
    redis_server::cli(server.port, &["script", "flush"]).expect("SCRIPT FLUSH");
    let after_flush = l.check_sync_at("other", 2, now).unwrap();
    assert!(after_flush.allowed && after_flush.remaining == 3, "{after_flush:?}");
    assert_eq!(l.check_sync_at("other", 1, now).unwrap().remaining, 2);
}

/// Signals handled on the caller's thread every 20 ms while a blocking call waits on a stopped
/// server: each interrupted read is read again, but only for what is left of the timeout, so
/// the call still fails within it (a read restarted with its whole timeout each time would
/// never end).
#[test]
fn a_storm_of_signals_mid_call_does_not_stretch_the_call_past_its_timeout() {
    // Long enough that the storm's thread, however loaded the machine, runs during the call (with
    // 300 ms it was not scheduled once in the call on a loaded machine: no signal, none handled).
    const STORM_TIMEOUT_MS: u64 = 1000;
    let server = RedisServer::start();
    let store = connect(server.url(), STORM_TIMEOUT_MS);
    let l = limiter(&store, FailPolicy::Raise);
    l.check_sync("storm", 1).unwrap();
    signal::install();
    let caller = signal::this_thread();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    server.signal("STOP");
    let storm = {
        let stop = stop.clone();
        // At most 2 s of signals: a read that restarted its whole timeout after each would then
        // end the call at about 3 s, failing the bound below instead of hanging the test.
        let began = Instant::now();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && began.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(20));
                signal::send(caller); // the test's thread, alive until it joins this one
            }
        })
    };
    let start = Instant::now();
    let out = l.check_sync("storm", 1);
    let took = start.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    storm.join().unwrap();
    server.signal("CONT");
    let err = out.unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("timed out"), "{err}");
    // A read restarted with its whole timeout would end the call when the storm ends (2 s) plus
    // the timeout, past twice the timeout: that bound fails it, and leaves a whole timeout for
    // scheduling delays.
    assert!(took < Duration::from_millis(2 * STORM_TIMEOUT_MS), "the call took {took:?}");
    assert!(signal::handled());
    assert!(answers_within_a_second(&l), "no answer after SIGCONT");
}
