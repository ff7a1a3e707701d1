//! Every conformance-vectors file replays on a real Redis, in deterministic-replay mode (expiry
//! on the vectors' clock), with zero mismatches — backward jumps and expiry included — exactly
//! as it does on the memory store.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/vectors.rs"]
mod vectors;

use std::sync::Arc;

use throttlekit::conformance;
use throttlekit::{MemoryStore, Store};

#[test]
fn every_vectors_file_replays_on_redis_with_no_mismatch() {
    let server = redis_server::RedisServer::start();
    let mut stores = throttlekit::redis::conformance_stores(&server.url()).expect("connect");
    let mut total_ops = 0;
    for file in vectors::files() {
        let report = conformance::replay_path(&file, &mut stores).expect("a readable vectors file");
        assert!(
            report.failed == 0,
            "{}: {} on Redis\n{}",
            file.display(),
            report.summary(),
            report.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        // The same file on memory passes the same number of ops: nothing was skipped on Redis.
        let memory = conformance::replay_path(&file, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>))
            .expect("a readable vectors file");
        assert_eq!(memory.passed, report.passed, "{}", file.display());
        total_ops += report.passed;
    }
    assert!(total_ops > 100, "only {total_ops} ops replayed");
}

#[test]
fn the_conformance_stores_leave_no_key_behind() {
    let server = redis_server::RedisServer::start();
    let mut stores = throttlekit::redis::conformance_stores(&server.url()).expect("connect");
    for file in vectors::files() {
        conformance::replay_path(&file, &mut stores).expect("a readable vectors file");
    }
    drop(stores);
    let reply = redis_server::raw_command(server.port, "DBSIZE").expect("DBSIZE");
    assert_eq!(reply.trim(), ":0", "keys left behind after the conformance run");
}
