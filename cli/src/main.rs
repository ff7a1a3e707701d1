//! The `throttlekit` command: `conformance` replays vectors files; `demo` (the default) runs
//! the algorithms side by side on bursty traffic and draws the result; `serve` runs the rate
//! limit service (the `throttlekit-serve` crate: Envoy's gRPC API and envoyproxy/ratelimit's
//! config).

use std::process::ExitCode;
use std::sync::Arc;

use throttlekit::conformance::{self, Report};
use throttlekit::{MemoryStore, Store};

mod demo;

/// jemalloc, not glibc's malloc: `serve` allocates and frees dozens of small buffers and boxed
/// futures per request, and jemalloc's thread caches take ~10% off its CPU per request on Redis
/// at 64 streams (docs/serve.md, "Where the time goes").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Makes a fresh store for each suite.
type StoreFactory = Box<dyn FnMut() -> throttlekit::Result<Arc<dyn Store>>>;

const USAGE: &str = "usage:
  throttlekit demo [--out FILE.svg]
  throttlekit serve --config PATH [--grpc-addr A] [--http-addr A] [--store ...] (serve --help for all)
  throttlekit conformance [--store memory|redis|redis-cluster|redis-sentinel|sqlite|postgres] [--redis-url URL[,URL...]]
                          [--redis-service-name NAME] [--redis-tls-ca FILE] [--redis-tls-cert FILE]
                          [--redis-tls-key FILE] [--redis-scripting auto|functions|eval]
                          [--sqlite-path FILE] [--postgres-url URL] FILE...

  --redis-url takes one URL (redis, the default redis://127.0.0.1:6379), seed nodes
  (redis-cluster) or sentinels (redis-sentinel, with --redis-service-name); rediss:// for TLS.
  --sqlite-path names the SQLite file (created if missing; its table is emptied before each suite).
  --postgres-url (postgres, a build with the `postgres` feature) takes a libpq-style URL.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("demo") => demo::run(args.get(1..).unwrap_or_default()),
        Some("conformance") => conformance_cmd(&args[1..]),
        Some("serve") => throttlekit_serve::run(&args[1..]).map(|()| true),
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
    let mut redis = RedisArgs::default();
    let mut sqlite_path: Option<String> = None;
    let mut postgres_url = None;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--store" => store = value(a)?,
            "--redis-url" => redis.url = Some(value(a)?),
            "--redis-service-name" => redis.service_name = Some(value(a)?),
            "--redis-tls-ca" => redis.tls_ca = Some(value(a)?),
            "--redis-tls-cert" => redis.tls_cert = Some(value(a)?),
            "--redis-tls-key" => redis.tls_key = Some(value(a)?),
            "--redis-scripting" => redis.scripting = Some(value(a)?),
            "--sqlite-path" => sqlite_path = Some(value(a)?),
            "--postgres-url" => postgres_url = Some(value(a)?),
            f if f.starts_with("--") => return Err(format!("unknown option {f}\n{USAGE}")),
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        return Err(format!("no vectors file given\n{USAGE}"));
    }
    let mut new_store: StoreFactory = match store.as_str() {
        "memory" => Box::new(|| Ok(Arc::new(MemoryStore::new()) as Arc<dyn Store>)),
        "redis" | "redis-cluster" | "redis-sentinel" => redis_factory(&store, &redis)?,
        "sqlite" => sqlite_factory(sqlite_path.as_deref().ok_or("--store sqlite needs --sqlite-path FILE")?)?,
        "postgres" => postgres_factory(postgres_url.as_deref().ok_or("--store postgres needs --postgres-url URL")?)?,
        other => {
            return Err(format!(
                "unknown store {other:?} (memory, redis, redis-cluster, redis-sentinel, sqlite or postgres)"
            ));
        }
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

/// The `--redis-*` flags, as given.
#[derive(Default)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
struct RedisArgs {
    url: Option<String>,
    service_name: Option<String>,
    tls_ca: Option<String>,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    scripting: Option<String>,
}

#[cfg(feature = "redis")]
fn redis_factory(store: &str, a: &RedisArgs) -> Result<StoreFactory, String> {
    use throttlekit::redis::{RedisMode, RedisOptions, Scripting};
    let mut options = match &a.url {
        Some(url) => RedisOptions::from_urls(url),
        None => RedisOptions::default(),
    };
    options.mode = match store {
        "redis-cluster" => RedisMode::Cluster,
        "redis-sentinel" => RedisMode::Sentinel,
        _ => RedisMode::Standalone,
    };
    options.service_name = a.service_name.clone();
    options.tls_ca_file = a.tls_ca.as_ref().map(Into::into);
    options.tls_cert_file = a.tls_cert.as_ref().map(Into::into);
    options.tls_key_file = a.tls_key.as_ref().map(Into::into);
    if let Some(s) = &a.scripting {
        options.scripting = Scripting::parse(s).map_err(|e| e.to_string())?;
    }
    // Deterministic replay (expiry on the vectors' clock), one key namespace per suite.
    let factory = throttlekit::redis::conformance_stores_with(options).map_err(|e| e.to_string())?;
    Ok(Box::new(factory))
}

#[cfg(feature = "sqlite")]
fn sqlite_factory(path: &str) -> Result<StoreFactory, String> {
    Ok(Box::new(throttlekit::store::sqlite::conformance_stores(path.as_ref()).map_err(|e| e.to_string())?))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_factory(_path: &str) -> Result<StoreFactory, String> {
    Err("this build has no sqlite support (build with the `sqlite` feature)".into())
}

#[cfg(feature = "postgres")]
fn postgres_factory(url: &str) -> Result<StoreFactory, String> {
    // One key namespace per suite, its rows deleted with its store.
    let factory = throttlekit::postgres::conformance_stores(url).map_err(|e| e.to_string())?;
    Ok(Box::new(factory))
}

#[cfg(not(feature = "postgres"))]
fn postgres_factory(_url: &str) -> Result<StoreFactory, String> {
    Err("this build has no postgres support (build with the `postgres` feature)".into())
}

#[cfg(not(feature = "redis"))]
fn redis_factory(_store: &str, _args: &RedisArgs) -> Result<StoreFactory, String> {
    Err("this build has no redis support (build with the `redis` feature)".into())
}
