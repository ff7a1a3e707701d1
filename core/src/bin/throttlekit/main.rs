//! The `throttlekit` command: `conformance` replays vectors files; `demo` (the default) runs
//! the algorithms side by side on bursty traffic and draws the result.

use std::process::ExitCode;
use std::sync::Arc;

use throttlekit::conformance::{self, Report};
use throttlekit::{MemoryStore, Store};

mod demo;

/// Makes a fresh store for each suite.
type StoreFactory = Box<dyn FnMut() -> throttlekit::Result<Arc<dyn Store>>>;

const USAGE: &str = "usage:
  throttlekit demo [--out FILE.svg]
  throttlekit conformance [--store memory|redis] [--redis-url URL] FILE...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("demo") => demo::run(args.get(1..).unwrap_or_default()),
        Some("conformance") => conformance_cmd(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(true)
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("throttlekit: {e}");
            ExitCode::from(2)
        }
    }
}

fn conformance_cmd(args: &[String]) -> Result<bool, String> {
    let mut store = "memory".to_string();
    let mut redis_url = "redis://127.0.0.1:6379".to_string();
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--store" => store = it.next().ok_or("--store needs a value")?.clone(),
            "--redis-url" => redis_url = it.next().ok_or("--redis-url needs a value")?.clone(),
            f if f.starts_with("--") => return Err(format!("unknown option {f}\n{USAGE}")),
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        return Err(format!("no vectors file given\n{USAGE}"));
    }
    let mut new_store: StoreFactory = match store.as_str() {
        "memory" => Box::new(|| Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>)),
        "redis" => redis_factory(&redis_url)?,
        other => return Err(format!("unknown store {other:?} (memory or redis)")),
    };
    let mut total = Report::default();
    for f in &files {
        let report = conformance::replay_path(std::path::Path::new(f), &mut *new_store).map_err(|e| e.to_string())?;
        for line in &report.failures {
            println!("FAIL {f}: {line}");
        }
        println!("{f}: {}", report.summary());
        total.merge(report);
    }
    println!("{}", total.summary());
    Ok(total.failed == 0)
}

#[cfg(feature = "redis")]
fn redis_factory(url: &str) -> Result<StoreFactory, String> {
    // Deterministic replay (expiry on the vectors' clock), one key namespace per suite.
    let factory = throttlekit::redis::conformance_stores(url).map_err(|e| e.to_string())?;
    Ok(Box::new(factory))
}

#[cfg(not(feature = "redis"))]
fn redis_factory(_url: &str) -> Result<StoreFactory, String> {
    Err("this build has no redis support (build with the `redis` feature)".into())
}
