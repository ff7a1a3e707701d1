//! The bound path: `RedisStore::bind_current_runtime`, or the first call awaited on a runtime,
//! gives a runtime its own connection, driven on that runtime. It keeps every guarantee of the
//! other paths: bounded by the timeout, EVAL only after NOSCRIPT, a timed-out call never sent
//! again, reconnection after a restart, calls from other executors unaffected, no panic on drop;
//! and a runtime that shuts down leaves no binding behind.
#![cfg(feature = "redis")]

#[path = "support/executor.rs"]
mod executor;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;
#[path = "support/trickle.rs"]
mod trickle;

use executor::block_on;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use redis_store::{connect, connect_with, times_out_while_stopped};
use throttlekit::redis::{RedisOptions, RedisStore, Scripting};
use throttlekit::store::Now;
use throttlekit::{ErrorCode, FailPolicy, Limiter, Strategy};

const TIMEOUT_MS: u64 = 300;
const NOW: i64 = 1_800_000_000_000;

fn counter(store: &Arc<RedisStore>) -> Limiter {
    Limiter::builder(Strategy::fixed_window(1_000_000, 3_600_000).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix("bound")
        .build()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// What a test here starts from: a server, a plain store on it, a counter on that store, and a
/// runtime not bound yet. Taken apart with `let Setup { server, store, l, rt } = ...`, so each
/// test's body names them as locals, dropped in the reverse order: the runtime first, the
/// server last. A test that does not use the server binds it as `_server` (not `..`, which
/// would drop it, stopping the server, right there).
struct Setup {
    server: RedisServer,
    store: Arc<RedisStore>,
    l: Limiter,
    rt: tokio::runtime::Runtime,
}

impl Setup {
    /// On a current-thread runtime.
    fn new() -> Setup {
        Setup::on(current_thread())
    }

    /// On `rt`.
    fn on(rt: tokio::runtime::Runtime) -> Setup {
        Setup::with(rt, |options| options)
    }

    /// On `rt`, with the store's options as `options` makes them from the plain ones.
    fn with(rt: tokio::runtime::Runtime, options: impl FnOnce(RedisOptions) -> RedisOptions) -> Setup {
        let server = RedisServer::start();
        let store = connect_with(options(redis_store::options(server.url(), TIMEOUT_MS)));
        let l = counter(&store);
        Setup { server, store, l, rt }
    }

    /// With the runtime bound and its own connection up.
    fn bound(self) -> Setup {
        bind(&self.store, &self.rt);
        self
    }
}

/// Binds `rt` and waits (driving it) until its own connection is up.
fn bind(store: &RedisStore, rt: &tokio::runtime::Runtime) {
    rt.block_on(redis_store::bind(store));
}

fn remaining(l: &Limiter) -> i64 {
    l.peek_sync_at("k", NOW).unwrap().remaining
}

#[test]
fn bound_calls_count_once_and_answer_script_flushes_with_eval() {
    let Setup { server, store, l, rt } = Setup::new();
    assert!(!rt.block_on(async { store.bound_connection_ready() }));
    bind(&store, &rt);
    rt.block_on(async {
        for i in 0..500 {
            if i % 50 == 25 {
                redis_server::raw_command(server.port, "SCRIPT FLUSH").unwrap();
            }
            l.check_at("k", 1, Now::At(NOW)).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        assert!(store.bound_connection_ready());
    });
    // Each call counted exactly once: NOSCRIPT runs nothing, the EVAL runs once.
    assert_eq!(remaining(&l), 1_000_000 - 500);
    // Binding again is harmless.
    bind(&store, &rt);
}

#[test]
fn bound_calls_to_a_stopped_server_time_out_then_recover() {
    let Setup { server, store, l, rt } = Setup::new().bound();
    rt.block_on(async {
        l.check_at("k", 1, Now::At(NOW)).await.unwrap();
        times_out_while_stopped(&server, TIMEOUT_MS, || l.check_at("k", 1, Now::At(NOW))).await;
        // The timed-out calls retired the runtime's connection; the first call that answered (on
        // the store's) made it again, in the background.
        redis_store::bind(&store).await;
    });
}

#[test]
fn a_timed_out_bound_call_is_not_sent_again() {
    let Setup { server, store, l, rt } = Setup::new().bound();
    rt.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    let port = server.port;
    let sleeper = redis_server::block_server(port, 1);
    let err = rt.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    assert!(err.message().contains("timed out"), "{err}");
    let _ = sleeper.join();
    std::thread::sleep(Duration::from_millis(100));
    // The late reply was discarded with the connection the call timed out on; the next call
    // answers (on the store's connection), and the runtime's own comes back.
    let d = rt.block_on(l.peek_at("k", Now::At(NOW))).unwrap();
    assert_eq!(d.remaining, 1_000_000 - 2);
    bind(&store, &rt);
}

#[test]
fn bound_calls_reconnect_after_a_restart() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let Setup { mut server, store, l, rt } = Setup::on(rt).bound();
    let port = server.port;
    rt.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    server.stop();
    for _ in 0..3 {
        let start = Instant::now();
        let err = rt.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
        assert!(start.elapsed() < Duration::from_millis(TIMEOUT_MS * 3 + 500));
    }
    let server = RedisServer::start_on(port);
    let recovered = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        rt.block_on(l.check_at("after", 1, Now::At(NOW))).is_ok()
    });
    assert!(recovered, "the store did not reconnect after the restart");
    // The runtime's own connection comes back too.
    let rebound = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        rt.block_on(async { l.check_at("after", 1, Now::At(NOW)).await.is_ok() && store.bound_connection_ready() })
    });
    assert!(rebound, "the bound connection did not come back");
    drop(server);
}

#[test]
fn calls_from_other_executors_still_work_while_a_runtime_is_bound() {
    // Nothing here waits for a timeout: a bound of 30 s, not the file's 300 ms, so that a call
    // that a loaded machine holds a while (a release build beside it) still gets its answer.
    let Setup { server: _server, store, l, rt: bound } =
        Setup::with(current_thread(), |plain| RedisOptions { timeout_ms: 30_000, ..plain }).bound();
    let l = Arc::new(l);
    bound.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    // Another tokio runtime, unbound (its calls take the store's connections).
    store.bind_runtimes(false);
    let other = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    other.block_on(async {
        assert!(!store.bound_connection_ready());
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let l = l.clone();
                tokio::spawn(async move {
                    for _ in 0..25 {
                        l.check_at("k", 1, Now::At(NOW)).await.unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    // An executor that is not tokio, and plain threads.
    for _ in 0..50 {
        block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    }
    l.check_sync_at("k", 1, NOW).unwrap();
    // A runtime without a timer (the store's timer bounds its calls).
    let no_timer = tokio::runtime::Builder::new_current_thread().build().unwrap();
    no_timer.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    assert_eq!(remaining(&l), 1_000_000 - (1 + 200 + 50 + 1 + 1));
    // Dropping the bound runtime leaves everyone else served.
    drop(bound);
    block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
    other.block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
}

#[test]
fn a_runtime_without_io_or_timers_is_not_bound() {
    let Setup { server: _server, store, l, .. } = Setup::new();
    // Bound explicitly, then by their first call: the connect fails there (once), and every
    // call is answered through the store's connections.
    for explicit in [true, false] {
        for rt in [
            tokio::runtime::Builder::new_current_thread().build().unwrap(),
            tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap(),
        ] {
            rt.block_on(async {
                if explicit {
                    store.bind_current_runtime().unwrap();
                }
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                    l.check_at("k", 1, Now::At(NOW)).await.unwrap();
                }
                assert!(!store.bound_connection_ready());
            });
        }
    }
    assert_eq!(remaining(&l), 1_000_000 - 80);
    assert!(store.bind_current_runtime().is_err(), "outside a runtime");
}

#[test]
fn the_first_call_on_a_runtime_binds_it_and_each_call_counts_once() {
    let Setup { server: _server, store, l, rt } = Setup::new();
    let calls = rt.block_on(async {
        assert!(!store.bound_connection_ready());
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut calls = 0;
        // The first calls take the store's connection while the runtime's own comes up.
        while !store.bound_connection_ready() {
            assert!(Instant::now() < deadline, "the runtime was never bound");
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            calls += 1;
        }
        for _ in 0..100 {
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
        }
        assert!(store.bound_connection_ready());
        calls + 100
    });
    assert_eq!(remaining(&l), 1_000_000 - calls);
    assert_eq!(store.bound_runtimes(), 1);
    // Turned off, a new runtime stays on the store's connections; the bound one stays bound.
    store.bind_runtimes(false);
    let other = current_thread();
    other.block_on(async {
        for _ in 0..20 {
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            tokio::task::yield_now().await;
        }
        assert!(!store.bound_connection_ready());
    });
    assert!(rt.block_on(async { store.bound_connection_ready() }));
    assert_eq!(store.bound_runtimes(), 1);
}

#[test]
fn runtimes_that_shut_down_leave_no_binding_and_no_connection_behind() {
    let Setup { server, store, l, .. } = Setup::new();
    let clients = || {
        let info = redis_server::raw_command(server.port, "INFO clients").unwrap();
        let line = info.lines().find(|l| l.starts_with("connected_clients:")).unwrap().to_string();
        line["connected_clients:".len()..].trim().parse::<usize>().unwrap()
    };
    let before = clients();
    for i in 0..20 {
        let rt = if i % 2 == 0 {
            current_thread()
        } else {
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
        };
        rt.block_on(async {
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while !store.bound_connection_ready() {
                assert!(Instant::now() < deadline, "the runtime was never bound");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
        });
        assert_eq!(store.bound_runtimes(), 1, "runtime {i}: its binding outlived it, or it was not bound");
        drop(rt);
        assert_eq!(store.bound_runtimes(), 0, "runtime {i}: its binding outlived it");
    }
    // Their connections are closed (the server notices within a moment).
    let deadline = Instant::now() + Duration::from_secs(5);
    while clients() > before {
        assert!(Instant::now() < deadline, "{} connections left open, {before} before", clients());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(remaining(&l), 1_000_000 - 40);
}

#[test]
fn a_runtime_entered_but_not_driven_costs_one_timeout_then_takes_the_stores_connections() {
    let Setup { server: _server, store, l, rt } = Setup::new();
    rt.block_on(async {
        l.check_at("k", 1, Now::At(NOW)).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !store.bound_connection_ready() {
            assert!(Instant::now() < deadline, "the runtime was never bound");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    {
        // Entered, but polled by another executor while nobody runs the runtime: its
        // connection's driver never runs, so the call times out (bounded: the store's timer)...
        let _entered = rt.enter();
        let start = Instant::now();
        let err = block_on(l.check_at("k", 1, Now::At(NOW))).unwrap_err();
        assert!(err.message().contains("timed out"), "{err}");
        assert!(start.elapsed() >= Duration::from_millis(TIMEOUT_MS));
        // ...and retires that connection: the next calls take the store's.
        for _ in 0..10 {
            block_on(l.check_at("k", 1, Now::At(NOW))).unwrap();
        }
    }
    // Driven again, the runtime gets its own connection back.
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !store.bound_connection_ready() {
            assert!(Instant::now() < deadline, "the runtime was never bound again");
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
}

#[test]
fn binding_does_nothing_in_replay_mode() {
    let Setup { server: _server, store, l, rt } =
        Setup::with(current_thread(), |plain| RedisOptions { deterministic_replay: true, ..plain });
    rt.block_on(async {
        store.bind_current_runtime().unwrap();
        for _ in 0..10 {
            l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            tokio::task::yield_now().await;
        }
        assert!(!store.bound_connection_ready());
    });
    assert_eq!(remaining(&l), 1_000_000 - 10);
    store.clear_replayed_blocking().unwrap();
}

#[test]
fn dropping_a_bound_store_anywhere_does_not_panic() {
    let server = RedisServer::start();
    // Inside the bound runtime, right after binding (the connect may still be pending).
    current_thread().block_on(async {
        let store = connect(server.url(), TIMEOUT_MS);
        store.bind_current_runtime().unwrap();
        drop(store);
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    // Inside the bound runtime, after calls on the bound connection.
    let rt = current_thread();
    let s = connect(server.url(), TIMEOUT_MS);
    bind(&s, &rt);
    rt.block_on(async move {
        let l = counter(&s);
        l.check_at("k", 1, Now::At(NOW)).await.unwrap();
        drop(l);
        drop(s);
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    // In a task of a multi-threaded bound runtime; then the runtime itself.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let s = connect(server.url(), TIMEOUT_MS);
    bind(&s, &rt);
    rt.block_on(async move {
        counter(&s).check_at("k", 1, Now::At(NOW)).await.unwrap();
        tokio::spawn(async move { drop(s) }).await.unwrap();
    });
    drop(rt);
    // The bound runtime dropped first, then the store on a plain thread.
    let rt = current_thread();
    let s = connect(server.url(), TIMEOUT_MS);
    bind(&s, &rt);
    drop(rt);
    counter(&s).check_sync_at("k", 1, NOW).unwrap();
    block_on(counter(&s).check_at("k", 1, Now::At(NOW))).unwrap();
    drop(s);
}

// The store's own connection (`core/src/redis/pipelined.rs`), which a bound runtime gets on a
// plain-TCP RESP2 URL: replies read whole however they arrive, matched to calls in order, a late
// reply never taken for a later call's.

/// The remaining count `l` reports for `key` after charging `cost`, on the current runtime.
async fn charge(l: &Limiter, key: &str, cost: u64) -> i64 {
    l.check_at(key, cost, Now::At(NOW)).await.unwrap_or_else(|e| panic!("{key}: {e}")).remaining
}

/// `SCRIPT FLUSH` or `FUNCTION FLUSH`, whichever makes `scripting`'s next call take its fallback
/// (`NOSCRIPT` then `EVAL`; a missing function then `FUNCTION LOAD` and `FCALL`, pipelined).
fn flush(port: u16, scripting: Scripting) {
    let args: &[&str] = if scripting == Scripting::Eval { &["script", "flush"] } else { &["function", "flush"] };
    redis_server::cli(port, args).expect("flush");
}

/// The command a fallback runs, as `INFO commandstats` names it.
fn fallback(scripting: Scripting) -> &'static str {
    if scripting == Scripting::Eval { "eval" } else { "function|load" }
}

/// A store on `port` running its scripts as `scripting` says.
fn store_on(port: u16, scripting: Scripting) -> Arc<RedisStore> {
    connect_with(RedisOptions { scripting, ..redis_store::options(format!("redis://127.0.0.1:{port}"), 5000) })
}

#[test]
fn bound_replies_that_arrive_a_byte_at_a_time_are_read_whole() {
    let server = RedisServer::start();
    let proxy = trickle::trickling_proxy(server.port);
    for scripting in [Scripting::Eval, Scripting::Functions] {
        let store = store_on(proxy, scripting);
        let l = Limiter::builder(Strategy::fixed_window(5, 3_600_000).unwrap())
            .store(store.clone())
            .fail_policy(FailPolicy::Raise)
            .prefix(if scripting == Scripting::Eval { "trickle-eval" } else { "trickle-fcall" })
            .build();
        let rt = current_thread();
        bind(&store, &rt);
        rt.block_on(async {
            for expected in (0..5).rev() {
                assert_eq!(charge(&l, "k", 1).await, expected);
            }
            let denied = l.check_at("k", 1, Now::At(NOW)).await.unwrap();
            assert!(!denied.allowed && denied.retry_after_ms > 0, "{denied:?}");
            // The fallback: an error frame read in pieces, then its commands' replies.
            let before = redis_server::calls(server.port, fallback(scripting));
            flush(server.port, scripting);
            assert_eq!(charge(&l, "other", 2).await, 3);
            assert_eq!(redis_server::calls(server.port, fallback(scripting)), before + 1);
            assert_eq!(charge(&l, "other", 1).await, 2);
            assert!(store.bound_connection_ready());
        });
    }
}

/// Many calls in flight at once on the bound runtime's connection, each on its own key with a
/// cost of its own, so that every reply differs: each call gets the decision the memory store
/// makes for it (a six-integer GCRA reply, and a fixed window's count reply on keys charged
/// beforehand by different amounts), directly and through a proxy that splits every reply into
/// bytes, on `EVALSHA` and on `FCALL`, with a flush before one round (the fallbacks, `EVAL` or
/// `FUNCTION LOAD` and `FCALL`, in the same queue).
#[test]
fn concurrent_bound_calls_each_get_their_own_reply() {
    let server = RedisServer::start();
    // Periods long enough that no key expires mid-test (its TTL follows the caller's `now`).
    let strategies =
        [Strategy::gcra(1000, 3_600_000_000, None).unwrap(), Strategy::fixed_window(1000, 3_600_000).unwrap()];
    let ports = [server.port, trickle::trickling_proxy(server.port)];
    for (port, strategy, scripting) in ports.into_iter().flat_map(|port| {
        strategies.iter().flat_map(move |s| [Scripting::Eval, Scripting::Functions].map(|sc| (port, s.clone(), sc)))
    }) {
        let store = store_on(port, scripting);
        let build = |store: Option<&Arc<RedisStore>>| {
            let b = Limiter::builder(strategy.clone()).fail_policy(FailPolicy::Raise).prefix("fifo");
            Arc::new(match store {
                Some(s) => b.store(s.clone()).build(),
                None => b.build(),
            })
        };
        // Keys charged beforehand straight on the server (the proxy's pace is for the calls).
        let direct = store_on(server.port, scripting);
        let (l, memory, setup) = (build(Some(&store)), build(None), build(Some(&direct)));
        // Fewer calls through the proxy, which hands back about one reply per 5 ms.
        let n = if port == server.port { 100 } else { 30 };
        let rt = current_thread();
        bind(&store, &rt);
        rt.block_on(async {
            for round in 0..3u64 {
                let key = |i: u64| format!("p{port}-{scripting:?}-{round}-{i}");
                for i in 0..n {
                    let (k, before) = (key(i), i % 13);
                    if before > 0 {
                        assert_eq!(
                            setup.check_sync_at(&k, before, NOW).unwrap(),
                            memory.check_sync_at(&k, before, NOW).unwrap()
                        );
                    }
                }
                let fallbacks = redis_server::calls(server.port, fallback(scripting));
                if round == 1 {
                    flush(server.port, scripting);
                }
                let calls: Vec<_> = (0..n)
                    .map(|i| {
                        let (l, k) = (l.clone(), key(i));
                        tokio::spawn(async move { l.check_at(&k, i % 7 + 1, Now::At(NOW)).await })
                    })
                    .collect();
                for (i, call) in (0..n).zip(calls) {
                    let d = call.await.unwrap().unwrap_or_else(|e| panic!("call {i}: {e}"));
                    let expected = memory.check_sync_at(&key(i), i % 7 + 1, NOW).unwrap();
                    assert_eq!(d, expected, "call {i} of round {round} on port {port}, {scripting:?}");
                }
                // The flush sent every call in flight down its fallback, and only that round's.
                let ran = redis_server::calls(server.port, fallback(scripting)) - fallbacks;
                assert!(if round == 1 { ran > 0 } else { ran == 0 }, "{ran} fallbacks in round {round}");
            }
            assert!(store.bound_connection_ready());
        });
    }
}

/// A call that times out on the bound connection: its reply, when it comes, is never taken for
/// a later call's (bound by `bind_current_runtime`, the connection stays and reads the late
/// reply past; bound by a call, it is retired, the store's connections serve, and a new one
/// comes up).
#[test]
fn a_late_reply_is_never_taken_for_a_later_calls() {
    for explicit in [true, false] {
        let Setup { server, store, l, rt } = Setup::new();
        rt.block_on(async {
            if explicit {
                redis_store::bind(&store).await;
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while !store.bound_connection_ready() {
                assert!(Instant::now() < deadline, "the runtime was never bound");
                charge(&l, "warm", 1).await;
            }
        });
        let sleeper = redis_server::block_server(server.port, 1);
        let err = rt.block_on(l.check_at("late", 7, Now::At(NOW))).unwrap_err();
        assert!(err.message().contains("timed out"), "{err}");
        let _ = sleeper.join();
        rt.block_on(async {
            let mut fresh = false;
            for i in 0..200 {
                assert_eq!(charge(&l, "next", 1).await, 1_000_000 - i - 1, "explicit: {explicit}");
                fresh |= store.bound_connection_ready();
                if fresh && i >= 20 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(fresh, "the bound connection did not come back (explicit: {explicit})");
        });
        // The timed-out call ran once, when the server woke.
        assert_eq!(l.peek_sync_at("late", NOW).unwrap().remaining, 1_000_000 - 7);
    }
}
