//! Decisions per second on a `SqliteStore` (docs/sqlite.md's numbers):
//!
//!   cargo run --release -p throttlekit --features sqlite --example sqlite_bench
//!
//! One process checking sequentially (one hot key, then 10,000 keys; `synchronous` normal and
//! full), then 1, 2 and 4 processes at once on the same file (this binary run again as
//! children), each checking as fast as it can.

use std::sync::Arc;
use std::time::Instant;

use throttlekit::store::sqlite::{SqliteOptions, SqliteStore, Synchronous};
use throttlekit::{Limiter, Strategy};

const CALLS: u64 = 20_000;

fn limiter(path: &str, synchronous: Synchronous) -> Limiter {
    let store = SqliteStore::with_options(SqliteOptions { synchronous, ..SqliteOptions::new(path) }).expect("open");
    Limiter::builder(Strategy::gcra(1_000_000_000, 1000, None).unwrap()).store(Arc::new(store)).build()
}

/// `calls` checks spread over `keys` keys; decisions per second.
fn run(l: &Limiter, calls: u64, keys: u64) -> f64 {
    let names: Vec<String> = (0..keys).map(|k| format!("user:{k}")).collect();
    let start = Instant::now();
    for i in 0..calls {
        l.check_sync(&names[(i % keys) as usize], 1).expect("check");
    }
    calls as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        let l = limiter(&args[2], Synchronous::Normal);
        println!("{}", run(&l, CALLS, 1000));
        return;
    }
    let dir = std::env::temp_dir().join(format!("tk-sqlite-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.db").to_string_lossy().into_owned();
    for (name, sync) in [("normal", Synchronous::Normal), ("full", Synchronous::Full)] {
        let l = limiter(&path, sync);
        run(&l, 2000, 1);
        let calls = if sync == Synchronous::Full { CALLS / 10 } else { CALLS };
        println!("sequential, synchronous={name}, 1 key:       {:>9.0} decisions/s", run(&l, calls, 1));
        println!("sequential, synchronous={name}, 10000 keys:   {:>9.0} decisions/s", run(&l, calls, 10_000));
    }
    // The async methods: the transaction inline in the task (what `SqliteStore` does) against
    // the same call moved to tokio's blocking pool and back.
    let l = Arc::new(limiter(&path, Synchronous::Normal));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    rt.block_on(async {
        // Each twice, alternating, so neither has the file's warm-up to itself.
        for _ in 0..2 {
            let start = Instant::now();
            for i in 0..CALLS {
                l.check(&format!("a:{}", i % 1000), 1).await.expect("check");
            }
            let inline = CALLS as f64 / start.elapsed().as_secs_f64();
            let start = Instant::now();
            for i in 0..CALLS {
                let l = l.clone();
                let key = format!("a:{}", i % 1000);
                tokio::task::spawn_blocking(move || l.check_sync(&key, 1)).await.unwrap().expect("check");
            }
            let pool = CALLS as f64 / start.elapsed().as_secs_f64();
            println!("async, inline / on the blocking pool:      {inline:>9.0} / {pool:.0} decisions/s");
        }
    });
    let exe = std::env::current_exe().unwrap();
    for procs in [1, 2, 4] {
        let start = Instant::now();
        let children: Vec<_> = (0..procs)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args(["child", &path])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            assert!(c.wait_with_output().unwrap().status.success());
        }
        let total = (procs * CALLS) as f64 / start.elapsed().as_secs_f64();
        println!("{procs} process(es) at once, 1000 keys:           {total:>9.0} decisions/s (all together)");
    }
    std::fs::remove_dir_all(&dir).ok();
}
