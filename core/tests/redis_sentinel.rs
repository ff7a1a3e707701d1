//! Sentinel mode against real servers (`support/redis_sentinel.rs`: one master, one replica,
//! three sentinels): the store finds the master through the sentinels, logs in there with the
//! URL's user and password, selects the URL's database, and replays the golden vectors with no
//! mismatch; killing the master (SIGKILL) under load, every call answers within
//! its timeout (by the fail policy while no master answers), and the store follows the
//! promoted replica by itself. The run prints what `docs/redis.md` reports (recovery time and
//! admissions lost to asynchronous replication).
//!
//! Also: sentinels, master and replica over TLS only (`rediss://` sentinel URLs, the CA from
//! `tls_ca_file`, the master reached on its TLS port); and sentinels that require a password of
//! their own (`sentinel_password`), refused without it with the sentinels' answer as the cause.
#![cfg(feature = "redis")]

#[path = "support/failover.rs"]
mod failover;
#[path = "support/redis_sentinel.rs"]
mod redis_sentinel;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_tls.rs"]
mod redis_tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use redis_sentinel::{SERVICE, SentinelConf, SentinelSetup};
use throttlekit::conformance;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};

const TIMEOUT_MS: u64 = 500;

/// The master and the replica know user `tk`; the store logs in as `tk` on the master and uses
/// database 2, all from the sentinel URLs (the sentinels themselves are reached without them).
fn server_args() -> Vec<String> {
    ["--user", "tk", "on", ">pw", "~*", "+@all"].map(String::from).to_vec()
}

fn options(setup: &SentinelSetup) -> RedisOptions {
    let urls = setup.sentinels.iter().map(|s| format!("redis://tk:pw@127.0.0.1:{}/2", s.port)).collect();
    RedisOptions {
        urls,
        mode: RedisMode::Sentinel,
        service_name: Some(SERVICE.to_string()),
        timeout_ms: TIMEOUT_MS,
        ..RedisOptions::default()
    }
}

#[test]
fn the_store_finds_the_master_through_the_sentinels_and_follows_a_failover() {
    let mut setup = SentinelSetup::start_with(&server_args());
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors/upstream-golden-1.5.2.json");
    {
        let mut stores = throttlekit::redis::conformance_stores_with(options(&setup)).expect("connect");
        let report = conformance::replay_path(&golden, &mut stores).expect("the golden file");
        assert_eq!((report.passed, report.failed), (54, 0), "{:?}", report.failures);
    }
    let store = Arc::new(RedisStore::connect_blocking(options(&setup)).expect("connect through the sentinels"));
    assert!(store.is_routed());
    // The replay's keys are gone (it cleans up); a check lands in db 2 of the master, as `tk`.
    let l =
        throttlekit::Limiter::builder(throttlekit::Strategy::gcra(5, 1000, None).unwrap()).store(store.clone()).build();
    assert!(l.check_sync("where", 1).unwrap().allowed);
    let in_db2 = redis_server::cli(setup.master.port, &["-n", "2", "dbsize"]).unwrap();
    assert_eq!(in_db2.trim(), "1", "the key is in db 2 of the master");
    l.reset_sync("where").unwrap();
    let old = setup.master.port;
    let pid = setup.master.pid();
    let report = failover::run(store, 4, 20, Duration::from_millis(500), Duration::from_secs(60), || {
        let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().expect("kill");
        assert!(status.success());
    });
    eprintln!("sentinel failover: {report:?}");
    setup.master.stop();
    assert_ne!(setup.master_port(), Some(old), "the sentinels promoted the replica");
    assert!(report.failed > 0, "the kill was noticed");
    assert!(
        report.max_call_ms <= (TIMEOUT_MS + 1000) as u128,
        "a call took {} ms with a {TIMEOUT_MS} ms timeout",
        report.max_call_ms
    );
}

/// One check through the sentinels with `options`: admitted, and the key is on the master.
fn one_check_lands_on_the_master(setup: &SentinelSetup, options: RedisOptions, db: &str) {
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect through the sentinels"));
    assert!(store.is_routed());
    // 5 a minute: the key lives 12 s, so `dbsize` still finds it on a loaded machine (at 5 a
    // second it lived 200 ms, and a slow `redis-cli` start found it expired).
    let l = throttlekit::Limiter::builder(throttlekit::Strategy::gcra(5, 60_000, None).unwrap())
        .store(store.clone())
        .fail_policy(throttlekit::FailPolicy::Raise)
        .build();
    assert!(l.check_sync("where", 1).unwrap().allowed);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(rt.block_on(l.check("where", 1)).unwrap().allowed);
    let keys = redis_server::cli(setup.master.port, &["-n", db, "dbsize"]).unwrap();
    assert_eq!(keys.trim(), "1", "the key is on the master");
    // close() releases the store's connections to the master at once; `rt`'s own (it was bound
    // by its call) on that runtime's next turn, where its driver task lives.
    let port = setup.master.port;
    assert!(store_connections(port) >= 1);
    rt.block_on(throttlekit::store::Store::close(&*store)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while store_connections(port) > 0 {
        assert!(std::time::Instant::now() < deadline, "{} connections left after close", store_connections(port));
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
    }
}

/// Connections the store holds on the master at `port`: every client but this `CLIENT LIST`'s
/// own, the replica (`flags=S`) and the sentinels (`name=sentinel-...`).
fn store_connections(port: u16) -> usize {
    redis_server::cli(port, &["client", "list"]).map_or(0, |list| {
        list.lines()
            .filter(|l| !l.contains("cmd=client") && !l.contains("flags=S") && !l.contains("name=sentinel"))
            .count()
    })
}

#[test]
fn sentinels_over_tls_name_the_master_and_the_store_reaches_it_over_tls() {
    let pki = redis_tls::Pki::generate();
    let p = |f: &str| pki.path(f).to_str().unwrap().to_string();
    let mut server_args = pki.server_args(false);
    server_args.extend(["--tls-replication", "yes"].map(String::from));
    let conf = SentinelConf {
        lines: vec![
            "tls-port {tls_port}".to_string(),
            format!("tls-cert-file {}", p("server.crt")),
            format!("tls-key-file {}", p("server.key")),
            format!("tls-ca-cert-file {}", p("ca.crt")),
            "tls-auth-clients no".to_string(),
            "tls-replication yes".to_string(),
        ],
        tls: true,
        ..SentinelConf::default()
    };
    let setup = SentinelSetup::start_configured(&server_args, &conf);
    let urls: Vec<String> =
        setup.sentinels.iter().map(|s| format!("rediss://127.0.0.1:{}", s.tls_port.unwrap())).collect();
    let options = RedisOptions {
        urls: urls.clone(),
        mode: RedisMode::Sentinel,
        service_name: Some(SERVICE.to_string()),
        tls_ca_file: Some(pki.path("ca.crt")),
        timeout_ms: 2000,
        ..RedisOptions::default()
    };
    one_check_lands_on_the_master(&setup, options.clone(), "0");
    // The sentinels' certificates are verified too: an unrelated CA is refused.
    let e = RedisStore::connect_blocking(RedisOptions { tls_ca_file: Some(pki.path("other-ca.crt")), ..options })
        .unwrap_err();
    assert_eq!(e.code(), throttlekit::ErrorCode::StoreUnavailable, "{e}");
    assert!(e.message().contains("no sentinel named the master"), "{e}");
}

#[test]
fn passworded_sentinels_need_sentinel_password_and_the_master_keeps_the_urls_credentials() {
    let conf = SentinelConf {
        lines: vec!["requirepass spw".to_string(), "sentinel sentinel-pass spw".to_string()],
        cli_auth: ["-a", "spw", "--no-auth-warning"].map(String::from).to_vec(),
        ..SentinelConf::default()
    };
    let setup = SentinelSetup::start_configured(&server_args(), &conf);
    let without = options(&setup);
    let e = RedisStore::connect_blocking(without.clone()).unwrap_err();
    assert_eq!(e.code(), throttlekit::ErrorCode::StoreUnavailable, "{e}");
    assert!(e.message().contains("NOAUTH") || e.message().contains("uthentication"), "{e}");
    assert!(!e.message().contains("spw") && !e.message().contains(":pw@"), "no password in {e}");
    let wrong = RedisOptions { sentinel_password: Some("nope".into()), ..without.clone() };
    assert!(RedisStore::connect_blocking(wrong).is_err());
    let with = RedisOptions { sentinel_password: Some("spw".into()), ..without };
    one_check_lands_on_the_master(&setup, with.clone(), "2");
    // A RESP3 URL: the store's own connections say `HELLO 3 AUTH tk pw` to the master.
    let resp3 = RedisOptions { urls: with.urls.iter().map(|u| format!("{u}?protocol=resp3")).collect(), ..with };
    one_check_lands_on_the_master(&setup, resp3, "2");
}

/// Script and function runs the server on `port` counted (`calls` less `failed_calls`).
fn executions(port: u16) -> u64 {
    let stats = redis_server::cli(port, &["info", "commandstats"]).unwrap_or_default();
    ["fcall", "evalsha", "eval"]
        .iter()
        .map(|cmd| {
            let line = redis_server::field(&stats, &format!("cmdstat_{cmd}")).unwrap_or_default();
            let get = |k: &str| -> u64 {
                line.split(',').find_map(|kv| kv.strip_prefix(k).and_then(|n| n.parse().ok())).unwrap_or(0)
            };
            get("calls=") - get("failed_calls=")
        })
        .sum()
}

/// The call timeout of [`behind_a_proxy`]'s store: long enough that no call times out for load
/// alone (the lost-reply test counts every execution as an admission or a fault, so a call that
/// timed out on a loaded machine after its script ran would break the count), and short enough
/// that the black-holed call below costs little.
const PROXY_TIMEOUT_MS: u64 = 1500;

/// Sentinels that know the master by a fault proxy's address (so that is where the store goes),
/// and a raising fixed-window limiter on a [`PROXY_TIMEOUT_MS`] store found through them.
fn behind_a_proxy() -> (SentinelSetup, throttlekit_faultproxy::FaultProxy, throttlekit::Limiter) {
    let mut proxy = None;
    let setup = SentinelSetup::start_monitoring(&[], &SentinelConf::default(), |port| {
        let p =
            throttlekit_faultproxy::FaultProxy::start(format!("127.0.0.1:{port}").parse().unwrap()).expect("the proxy");
        let listen = p.addr().port();
        proxy = Some(p);
        listen
    });
    let options = RedisOptions {
        urls: setup.urls(),
        mode: RedisMode::Sentinel,
        service_name: Some(SERVICE.to_string()),
        timeout_ms: PROXY_TIMEOUT_MS,
        ..RedisOptions::default()
    };
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect"));
    let l = throttlekit::Limiter::builder(throttlekit::Strategy::fixed_window(1_000_000, 3_600_000).unwrap())
        .store(store)
        .fail_policy(throttlekit::FailPolicy::Raise)
        .build();
    (setup, proxy.unwrap(), l)
}

#[test]
fn a_reply_lost_after_the_master_ran_the_call_is_never_charged_twice() {
    use throttlekit_faultproxy::{Fault, Rule};
    let (setup, proxy, l) = behind_a_proxy();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for sync in [true, false] {
        let check = |i: u64| {
            let key = format!("k{}", i % 10);
            let start = std::time::Instant::now();
            let out = if sync { l.check_sync(&key, 1) } else { rt.block_on(l.check(&key, 1)) };
            // A lost reply closes the connection (no wait); a hang would reach the timeout. One
            // second past it is what no scheduling delay plausibly takes.
            let bound = Duration::from_millis(PROXY_TIMEOUT_MS + 1000);
            assert!(start.elapsed() < bound, "a call took {:?}", start.elapsed());
            out
        };
        for i in 0..20 {
            check(i).expect("warm");
        }
        let (before, faults) = (executions(setup.master.port), proxy.stats().faults);
        proxy.set(vec![Rule::new(Fault::DropReply).scripts().every(5)]);
        let (mut allowed, mut errors) = (0u64, 0u64);
        for i in 0..100 {
            match check(i) {
                Ok(d) => allowed += u64::from(d.allowed),
                Err(e) => {
                    assert_eq!(e.code(), throttlekit::ErrorCode::StoreUnavailable, "{e}");
                    errors += 1;
                }
            }
        }
        proxy.clear();
        let (executed, faults) = (executions(setup.master.port) - before, proxy.stats().faults - faults);
        eprintln!(
            "sentinel drop_reply sync={sync}: allowed={allowed} errors={errors} faults={faults} executions={executed}"
        );
        assert!(faults >= 10, "only {faults} faults");
        assert!(executed <= 100, "{executed} executions for 100 calls");
        // Every admission ran once, every lost reply ran once, nothing else ran.
        assert_eq!(executed, allowed + faults, "sync={sync}");
        assert!(errors >= faults);
    }
}

/// One script call black-holed on the master's connection (the master went silent for it):
/// that call times out, and the connection it was sent on is dropped, so the next calls
/// reconnect and answer, sync and async. The connection used to be kept, and every later call
/// timed out on it until something else closed it.
#[test]
fn a_connection_whose_call_timed_out_is_dropped_and_the_next_calls_answer() {
    use throttlekit_faultproxy::{Fault, Rule};
    let (_setup, proxy, l) = behind_a_proxy();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    for sync in [true, false] {
        let check = |key: &str| if sync { l.check_sync(key, 1) } else { rt.block_on(l.check(key, 1)) };
        for i in 0..5 {
            check(&format!("w{i}")).expect("warm");
        }
        proxy.set(vec![Rule::new(Fault::BlackHole).scripts().times(1)]);
        let lost = check("lost").unwrap_err();
        assert_eq!(lost.code(), throttlekit::ErrorCode::StoreUnavailable, "{lost}");
        assert_eq!(proxy.stats().faults, if sync { 1 } else { 2 }, "the fault fired once per round");
        // Nothing closes the silent connection from outside: the store must let go of it.
        let errors = (0..12).filter(|i| check(&format!("after{i}")).is_err()).count();
        eprintln!("sentinel blackhole recovery sync={sync}: {errors} of 12 calls failed after one timed-out call");
        assert!(errors <= 1, "sync={sync}: {errors} of 12 calls failed after one timed-out call");
        proxy.clear();
    }
}
