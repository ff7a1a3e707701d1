//! A cluster failover under load (3 masters + 3 replicas, `support/redis_cluster.rs`): one
//! master is killed (SIGKILL) while a thread checks keys spread over every slot range; every
//! call answers within its timeout (by the fail policy while the dead master's slots have no
//! master), and once the replica is promoted the store's slot map follows by itself. The run
//! prints what `docs/redis.md` reports (recovery time and admissions lost to asynchronous
//! replication).
#![cfg(feature = "redis")]

#[path = "support/failover.rs"]
mod failover;
#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::Arc;
use std::time::Duration;

use redis_cluster::RedisCluster;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};

const TIMEOUT_MS: u64 = 500;

#[test]
fn killing_a_master_under_load_recovers_by_itself() {
    let mut cluster = RedisCluster::start(3, 1);
    let options = RedisOptions {
        urls: cluster.urls(),
        mode: RedisMode::Cluster,
        timeout_ms: TIMEOUT_MS,
        ..RedisOptions::default()
    };
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect"));
    let masters = cluster.master_ports();
    assert_eq!(masters.len(), 3);
    let victim = cluster.nodes.iter().position(|n| n.port == masters[0]).unwrap();
    let pid = cluster.nodes[victim].pid();
    let report = failover::run(store, 4, 30, Duration::from_millis(500), Duration::from_secs(60), || {
        let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().expect("kill");
        assert!(status.success());
    });
    eprintln!("cluster failover: {report:?}");
    cluster.nodes[victim].stop();
    assert_eq!(cluster.master_ports().len(), 3, "a replica took the dead master's place");
    assert!(report.failed > 0, "the kill was noticed");
    assert!(
        report.max_call_ms <= (TIMEOUT_MS + 1000) as u128,
        "a call took {} ms with a {TIMEOUT_MS} ms timeout",
        report.max_call_ms
    );
}

#[test]
fn the_measurement_counts_writes_the_server_lost() {
    // The failover harness itself, on one server whose "failover" deletes two keys: exactly
    // the admissions those keys had counted are lost, and the harness must say so.
    let server = redis_server::RedisServer::start();
    let options = RedisOptions { urls: vec![server.url()], timeout_ms: TIMEOUT_MS, ..RedisOptions::default() };
    let store = Arc::new(RedisStore::connect_blocking(options).expect("connect"));
    let port = server.port;
    let deleted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = deleted.clone();
    let report = failover::run(store, 2, 5, Duration::from_millis(300), Duration::from_secs(30), move || {
        // Each key's count (the fixed window's hash field `c`), read and deleted atomically.
        let take = "local c = redis.call('HGET', KEYS[1], 'c'); redis.call('DEL', KEYS[1]); return c";
        for key in ["failover:t0k1", "failover:t1k3"] {
            let v = redis_server::cli(port, &["eval", take, "1", key]).expect("EVAL");
            seen.fetch_add(v.trim().parse::<u64>().expect("a counter"), std::sync::atomic::Ordering::Relaxed);
        }
    });
    let lost = deleted.load(std::sync::atomic::Ordering::Relaxed);
    assert!(lost > 0, "the keys had counted nothing before the kill");
    assert_eq!(report.failed, 0);
    assert_eq!(report.lost_admissions, lost, "{report:?}");
}
