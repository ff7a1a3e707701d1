//! A cluster failover under load (3 masters + 3 replicas, `support/redis_cluster.rs`): one
//! master is killed (SIGKILL) while a thread checks keys spread over every slot range; every
//! call answers within its timeout (by the fail policy while the dead master's slots have no
//! master), and once the replica is promoted the store's slot map follows by itself. The run
//! prints what `docs/redis.md` reports (recovery time and admissions lost to asynchronous
//! replication).

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
    let report = failover::run(store, 30, Duration::from_millis(500), Duration::from_secs(60), move || {
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
