//! Sentinel mode against real servers (`support/redis_sentinel.rs`: one master, one replica,
//! three sentinels): the store finds the master through the sentinels, logs in there with the
//! URL's user and password, selects the URL's database, and replays the golden vectors with no
//! mismatch; killing the master (SIGKILL) under load, every call answers within
//! its timeout (by the fail policy while no master answers), and the store follows the
//! promoted replica by itself. The run prints what `docs/redis.md` reports (recovery time and
//! admissions lost to asynchronous replication).

#[path = "support/failover.rs"]
mod failover;
#[path = "support/redis_sentinel.rs"]
mod redis_sentinel;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use redis_sentinel::{SERVICE, SentinelSetup};
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
