//! `SqliteStore` against the memory store, and across processes sharing one file:
//! - the random dual-path timelines (every strategy, quota cadence, multi `all`/`any`, the
//!   shaper, backward clock jumps) give the memory store's decision stream byte for byte;
//! - a property test: random operation sequences (checks, peeks, forecasts, resets, leases,
//!   multi checks and multi leases with repeated keys) give memory's replies;
//! - separate OS processes on one key admit exactly the limit, for a new key and an existing one;
//! - multi applies over overlapping keys in different orders, from several processes: no
//!   deadlock, no partial charge.
//!
//! Child processes are this test binary run again with `--exact child_process_sqlite` and the
//! `TK_SQLITE_*` variables (the test does nothing without them).
#![cfg(feature = "sqlite")]

#[path = "support/timelines.rs"]
mod timelines;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::Strategy as _;
use throttlekit::store::sqlite::{SqliteOptions, SqliteStore};
use throttlekit::store::{DimensionCall, DimensionLease, Now, Transform};
use throttlekit::{Limiter, MemoryStore, Rule, Store, Strategy};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tk-sqlite-it-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A store for replays: expiry follows only the replayed clock (see `SqliteOptions::sweep`).
fn replay_store(path: &Path) -> Arc<dyn Store> {
    Arc::new(SqliteStore::with_options(SqliteOptions { sweep: false, ..SqliteOptions::new(path) }).unwrap())
}

const TIMELINES: u64 = 3000;

#[test]
fn memory_and_sqlite_decide_byte_for_byte_alike_on_generated_timelines() {
    let dir = TempDir::new("dual");
    let sqlite = replay_store(&dir.0.join("t.db"));
    // Two threads on one store: the connection's lock and the file's lock are both exercised.
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let sqlite = sqlite.clone();
            std::thread::spawn(move || {
                let mut ops = 0;
                for seed in (w..TIMELINES).step_by(2) {
                    let memory = timelines::run_timeline(seed, Arc::new(MemoryStore::new()));
                    let on_sqlite = timelines::run_timeline(seed, sqlite.clone());
                    ops += timelines::assert_same(seed, &memory, &on_sqlite, "sqlite");
                }
                ops
            })
        })
        .collect();
    let ops: usize = workers.into_iter().map(|w| w.join().expect("a worker panicked")).sum();
    assert!(ops > 50_000, "only {ops} ops compared");
}

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    Check(usize, u64),
    Peek(usize),
    Forecast(usize, u64),
    Reset(usize),
    Lease(usize, u64, u64),
    Multi(Rule, Vec<usize>, u64),
    MultiLease(Rule, Vec<usize>, u64, u64),
}

fn op() -> impl proptest::strategy::Strategy<Value = (i64, Op)> {
    let key = 0usize..3;
    let dt = prop_oneof![4 => 0i64..400, 1 => -700i64..0, 1 => 0i64..20_000];
    let op = prop_oneof![
        5 => (key.clone(), 1u64..5).prop_map(|(k, c)| Op::Check(k, c)),
        1 => key.clone().prop_map(Op::Peek),
        1 => (key.clone(), 1u64..5).prop_map(|(k, c)| Op::Forecast(k, c)),
        1 => key.clone().prop_map(Op::Reset),
        1 => (key.clone(), 1u64..3, 0u64..6).prop_map(|(k, c, extra)| Op::Lease(k, c, extra)),
        2 => (any::<bool>(), prop::collection::vec(key, 1..4), 1u64..4)
            .prop_map(|(all, keys, c)| Op::Multi(if all { Rule::All } else { Rule::Any }, keys, c)),
        1 => (any::<bool>(), prop::collection::vec(0usize..3, 1..4), 1u64..3, 0u64..5)
            .prop_map(|(all, keys, c, extra)| Op::MultiLease(if all { Rule::All } else { Rule::Any }, keys, c, extra)),
    ];
    (dt, op)
}

/// The replies of `ops` on `store`, each strategy of `strategies` on its own keys.
fn replies(store: &dyn Store, strategies: &[Strategy], ops: &[(i64, Op)]) -> Vec<String> {
    let mut now = 1_700_000_000_000i64;
    let mut out = Vec::new();
    for (dt, op) in ops {
        now += dt;
        for (n, s) in strategies.iter().enumerate() {
            let key = |k: &usize| format!("s{n}:k{k}");
            let reply = match op {
                Op::Check(k, cost) => {
                    format!(
                        "{:?}",
                        store.apply_sync(&key(k), Now::At(now), Transform::Check { strategy: s, cost: *cost })
                    )
                }
                Op::Peek(k) => {
                    format!("{:?}", store.apply_sync(&key(k), Now::At(now), Transform::Peek { strategy: s }))
                }
                Op::Forecast(k, cost) => {
                    format!(
                        "{:?}",
                        store.apply_sync(&key(k), Now::At(now), Transform::Forecast { strategy: s, cost: *cost })
                    )
                }
                Op::Reset(k) => format!("{:?}", store.reset_sync(&key(k))),
                Op::Lease(k, cost, extra) => {
                    let t = Transform::Lease { strategy: s, cost: *cost, want: cost + extra, lifetime_ms: 0 };
                    format!("{:?}", store.apply_sync(&key(k), Now::At(now), t))
                }
                Op::Multi(rule, ks, cost) => {
                    let keys: Vec<String> = ks.iter().map(key).collect();
                    let dims: Vec<DimensionCall<'_>> =
                        keys.iter().map(|k| DimensionCall { key: k, strategy: s, cost: *cost }).collect();
                    format!("{:?}", store.apply_multi_sync(*rule, &dims, Now::At(now)))
                }
                Op::MultiLease(rule, ks, cost, extra) => {
                    let keys: Vec<String> = ks.iter().map(key).collect();
                    let dims: Vec<DimensionCall<'_>> =
                        keys.iter().map(|k| DimensionCall { key: k, strategy: s, cost: *cost }).collect();
                    let leases = vec![DimensionLease { want: cost + extra, lifetime_ms: 0 }; dims.len()];
                    format!("{:?}", store.apply_multi_lease_sync(*rule, &dims, &leases, Now::At(now)))
                }
            };
            out.push(format!("{now} {op:?} {reply}"));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random operation sequences give the memory store's replies, for every strategy at once.
    #[test]
    fn random_operations_give_the_memory_stores_replies(ops in prop::collection::vec(op(), 1..60), limit in 1u64..6, period in 1u64..3000) {
        let strategies = [
            Strategy::gcra(limit, period, Some(2)).unwrap(),
            Strategy::token_bucket(limit, 1000.0 / period as f64).unwrap(),
            Strategy::fixed_window(limit, period).unwrap(),
            Strategy::sliding_window(limit, period, Some(3)).unwrap(),
            Strategy::sliding_window_log(limit, period).unwrap(),
        ];
        let dir = TempDir::new("prop");
        let sqlite = replay_store(&dir.0.join("p.db"));
        let want = replies(&MemoryStore::new(), &strategies, &ops);
        let got = replies(&*sqlite, &strategies, &ops);
        for (w, g) in want.iter().zip(&got) {
            prop_assert_eq!(w, g);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Several processes on one file.

const PROCESSES: usize = 4;
const LIMIT: u64 = 40;
const CALLS: usize = 30;
const NOW: i64 = 1_700_000_000_000;

fn strategy() -> Strategy {
    Strategy::fixed_window(LIMIT, 3_600_000).unwrap()
}

fn spawn_child(path: &Path, mode: &str, id: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_process_sqlite", "--nocapture", "--test-threads", "1"])
        .env("TK_SQLITE_PATH", path)
        .env("TK_SQLITE_MODE", mode)
        .env("TK_SQLITE_ID", id.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Each child's `RESULT=` line, waiting at most a minute for all (a deadlock fails the test).
fn results(children: Vec<Child>) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    children
        .into_iter()
        .map(|mut c| {
            while c.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    c.kill().ok();
                    panic!("a child process did not finish within a minute (deadlock?)");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "child failed: {out:?}");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.lines()
                .find_map(|l| l.split_once("RESULT=").map(|x| x.1.trim().to_string()))
                .unwrap_or_else(|| panic!("no result in {text}"))
        })
        .collect()
}

#[test]
fn separate_processes_admit_exactly_the_limit_on_a_new_and_an_existing_key() {
    for existing in [false, true] {
        let dir = TempDir::new("procs");
        let path = dir.0.join("k.db");
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let l = Limiter::builder(strategy()).store(store.clone()).build();
        let already = if existing { 7 } else { 0 };
        if existing {
            assert!(l.check_sync_at("hot", already, NOW).unwrap().allowed);
        }
        let children = (0..PROCESSES).map(|i| spawn_child(&path, "single", i)).collect();
        let admitted: u64 = results(children).iter().map(|r| r.parse::<u64>().unwrap()).sum();
        assert_eq!(admitted, LIMIT - already, "existing key: {existing}");
        assert_eq!(l.peek_sync_at("hot", NOW).unwrap().remaining, 0);
    }
}

/// The key orders of the multi test: every pattern holds `x`, so `x` binds.
const PATTERNS: [&[&str]; 3] = [&["x", "y"], &["y", "x"], &["z", "y", "x"]];

#[test]
fn multi_applies_in_different_key_orders_from_several_processes_never_deadlock_or_charge_partly() {
    let dir = TempDir::new("multi");
    let path = dir.0.join("m.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let children = (0..PROCESSES).map(|i| spawn_child(&path, "multi", i)).collect();
    // Per pattern, the requests admitted.
    let mut per = [0u64; 3];
    for r in results(children) {
        for (i, n) in r.split(',').enumerate() {
            per[i] += n.parse::<u64>().unwrap();
        }
    }
    assert_eq!(per.iter().sum::<u64>(), LIMIT, "{per:?}");
    let used = |k: &str| {
        let d =
            store.apply_sync(k, Now::At(NOW), Transform::Peek { strategy: &strategy() }).unwrap().decision().unwrap();
        LIMIT - d.remaining as u64
    };
    // Every key carries exactly the admitted requests that name it: no partial charge.
    assert_eq!(used("x"), per[0] + per[1] + per[2]);
    assert_eq!(used("y"), per[0] + per[1] + per[2]);
    assert_eq!(used("z"), per[2]);
}

/// The child side of the process tests: does nothing unless the parent set the variables.
#[test]
fn child_process_sqlite() {
    let (Ok(path), Ok(mode), Ok(id)) =
        (std::env::var("TK_SQLITE_PATH"), std::env::var("TK_SQLITE_MODE"), std::env::var("TK_SQLITE_ID"))
    else {
        return;
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let s = strategy();
    if mode == "single" {
        let l = Limiter::builder(s).store(store).build();
        let admitted = (0..CALLS).filter(|_| l.check_sync_at("hot", 1, NOW).unwrap().allowed).count();
        println!("RESULT={admitted}");
        return;
    }
    let id: usize = id.parse().unwrap();
    let mut per = [0u64; 3];
    for call in 0..CALLS {
        let p = (id + call) % PATTERNS.len();
        let dims: Vec<DimensionCall<'_>> =
            PATTERNS[p].iter().map(|k| DimensionCall { key: k, strategy: &s, cost: 1 }).collect();
        if store.apply_multi_sync(Rule::All, &dims, Now::At(NOW)).unwrap().allowed {
            per[p] += 1;
        }
    }
    println!("RESULT={},{},{}", per[0], per[1], per[2]);
}
