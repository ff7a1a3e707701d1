//! `throttlekit serve`: flags, the store, both listeners, hot reload and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use throttlekit::http::{Family, HeaderOptions};
use throttlekit::{MemoryStore, Store};

use crate::clock::WallClock;
use crate::config::Config;
use crate::decide::{Decider, FailMode, RequestLimits};
use crate::grpc::Rls;
use crate::http::{Http, router};
use crate::log;
use crate::rls_server::RlsServer;
use crate::state::State;
use crate::workers::{self, Binder, Services};

/// The usage text.
pub const USAGE: &str = "usage: throttlekit serve --config PATH [options]

  --config PATH            a YAML file or a directory of them (envoyproxy/ratelimit's format)
  --grpc-addr HOST:PORT    gRPC listener (default 0.0.0.0:8081)
  --http-addr HOST:PORT    HTTP listener: /json, /healthcheck, /metrics, /api (default 0.0.0.0:8080)
  --store memory|redis|redis-cluster|redis-sentinel|postgres   (default memory)
  --redis-url URL[,URL...] one URL, cluster seeds or sentinels; rediss:// for TLS; user:pass@ for ACL
  --redis-service-name NAME  --redis-tls-ca FILE  --redis-tls-cert FILE  --redis-tls-key FILE
  --redis-scripting auto|functions|eval   --redis-timeout-ms MS (default 500)
  --postgres-url URL       postgres://user:password@host:port/db (--store postgres; docs/postgres.md)
  --postgres-timeout-ms MS (default 500)
  --prefix P               key prefix (default tk)
  --headers draft-10|draft-7|draft-6|legacy|none   response_headers_to_add (default none)
  --fail-policy unavailable|allow|deny   when the store cannot answer (default unavailable)
  --shadow-mode            decide and count, but answer OK
  --count-rejected         charge the limits that admit even when another refuses (their counting)
  --timeout-ms MS          longest time to a decision (default 1000; a shorter grpc-timeout wins)
  --reload-interval-ms MS  config poll interval (default 1000; 0 disables hot reload)
  --max-descriptors N --max-entries N --max-value-bytes N --max-request-bytes N
  --drain-ms MS            after SIGTERM, answer in-flight calls for up to MS (default 5000)
  --grpc-threads N         gRPC threads, each serving its own connections (default: one per core)";

/// Parsed flags.
#[derive(Clone, Debug)]
pub struct Options {
    config: PathBuf,
    grpc_addr: SocketAddr,
    http_addr: SocketAddr,
    store: String,
    redis_urls: Option<String>,
    redis_service_name: Option<String>,
    redis_tls: [Option<String>; 3],
    redis_scripting: Option<String>,
    redis_timeout_ms: u64,
    postgres_url: Option<String>,
    postgres_timeout_ms: u64,
    prefix: String,
    headers: Option<Family>,
    fail: FailMode,
    shadow: bool,
    count_rejected: bool,
    timeout_ms: u64,
    reload_ms: u64,
    limits: RequestLimits,
    max_request_bytes: usize,
    drain_ms: u64,
    grpc_threads: usize,
}

impl Options {
    /// Parses the flags after `serve`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            config: PathBuf::new(),
            grpc_addr: "0.0.0.0:8081".parse().map_err(|_| "addr")?,
            http_addr: "0.0.0.0:8080".parse().map_err(|_| "addr")?,
            store: "memory".into(),
            redis_urls: None,
            redis_service_name: None,
            redis_tls: [None, None, None],
            redis_scripting: None,
            redis_timeout_ms: 500,
            postgres_url: None,
            postgres_timeout_ms: 500,
            prefix: "tk".into(),
            headers: None,
            fail: FailMode::Unavailable,
            shadow: false,
            count_rejected: false,
            timeout_ms: 1000,
            reload_ms: 1000,
            limits: RequestLimits::default(),
            max_request_bytes: 1 << 20,
            drain_ms: 5000,
            grpc_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let mut config = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            let num = |v: String| v.parse::<u64>().map_err(|_| format!("{a} needs a non-negative integer, not {v:?}"));
            match a.as_str() {
                "--config" => config = Some(PathBuf::from(value()?)),
                "--grpc-addr" => o.grpc_addr = value()?.parse().map_err(|e| format!("--grpc-addr: {e}"))?,
                "--http-addr" => o.http_addr = value()?.parse().map_err(|e| format!("--http-addr: {e}"))?,
                "--store" => o.store = value()?,
                "--redis-url" => o.redis_urls = Some(value()?),
                "--redis-service-name" => o.redis_service_name = Some(value()?),
                "--redis-tls-ca" => o.redis_tls[0] = Some(value()?),
                "--redis-tls-cert" => o.redis_tls[1] = Some(value()?),
                "--redis-tls-key" => o.redis_tls[2] = Some(value()?),
                "--redis-scripting" => o.redis_scripting = Some(value()?),
                "--redis-timeout-ms" => o.redis_timeout_ms = num(value()?)?,
                "--postgres-url" => o.postgres_url = Some(value()?),
                "--postgres-timeout-ms" => o.postgres_timeout_ms = num(value()?)?,
                "--prefix" => o.prefix = value()?,
                "--headers" => {
                    let v = value()?;
                    o.headers = if v == "none" {
                        None
                    } else {
                        Some(Family::parse(&v).map_err(|e| format!("--headers: {}", e.message()))?)
                    };
                }
                "--fail-policy" => {
                    let v = value()?;
                    o.fail = FailMode::parse(&v)
                        .ok_or(format!("--fail-policy must be unavailable, allow or deny, not {v:?}"))?;
                }
                "--shadow-mode" => o.shadow = true,
                "--count-rejected" => o.count_rejected = true,
                "--timeout-ms" => o.timeout_ms = num(value()?)?.max(1),
                "--reload-interval-ms" => o.reload_ms = num(value()?)?,
                "--max-descriptors" => o.limits.max_descriptors = num(value()?)? as usize,
                "--max-entries" => o.limits.max_entries = num(value()?)? as usize,
                "--max-value-bytes" => o.limits.max_value_bytes = num(value()?)? as usize,
                "--max-request-bytes" => o.max_request_bytes = num(value()?)? as usize,
                "--drain-ms" => o.drain_ms = num(value()?)?,
                "--grpc-threads" => o.grpc_threads = (num(value()?)? as usize).clamp(1, 256),
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown option {other:?}\n{USAGE}")),
            }
        }
        o.config = config.ok_or(format!("--config is required\n{USAGE}"))?;
        Ok(o)
    }
}

/// The store, and for standalone Redis what binds it to each gRPC thread's runtime.
async fn store(o: &Options) -> Result<(Arc<dyn Store>, Option<Binder>), String> {
    match o.store.as_str() {
        "memory" => Ok((Arc::new(MemoryStore::new()), None)),
        "redis" | "redis-cluster" | "redis-sentinel" => redis_store(o).await,
        "postgres" => postgres_store(o).await.map(|s| (s, None)),
        other => Err(format!("unknown store {other:?} (memory, redis, redis-cluster, redis-sentinel or postgres)")),
    }
}

/// The Postgres store at `--postgres-url` (its calls run on the store's own runtime: nothing to
/// bind per gRPC thread).
#[cfg(feature = "postgres")]
async fn postgres_store(o: &Options) -> Result<Arc<dyn Store>, String> {
    use throttlekit::postgres::{PostgresOptions, PostgresStore};
    let url = o.postgres_url.clone().ok_or("--store postgres needs --postgres-url URL")?;
    let options = PostgresOptions {
        timeout: std::time::Duration::from_millis(o.postgres_timeout_ms),
        ..PostgresOptions::new(url)
    };
    // `connect_blocking` on a blocking thread: a failed connect drops the store's own runtime,
    // which tokio forbids inside an async context.
    let store = tokio::task::spawn_blocking(move || PostgresStore::connect_blocking(options))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn postgres_store(_o: &Options) -> Result<Arc<dyn Store>, String> {
    Err("this build has no postgres support (build with the `postgres` feature)".into())
}

#[cfg(feature = "redis")]
async fn redis_store(o: &Options) -> Result<(Arc<dyn Store>, Option<Binder>), String> {
    use throttlekit::redis::{RedisMode, RedisOptions, RedisStore, Scripting};
    let mut r = match &o.redis_urls {
        Some(u) => RedisOptions::from_urls(u),
        None => RedisOptions::default(),
    };
    r.mode = match o.store.as_str() {
        "redis-cluster" => RedisMode::Cluster,
        "redis-sentinel" => RedisMode::Sentinel,
        _ => RedisMode::Standalone,
    };
    r.service_name = o.redis_service_name.clone();
    r.tls_ca_file = o.redis_tls[0].as_ref().map(Into::into);
    r.tls_cert_file = o.redis_tls[1].as_ref().map(Into::into);
    r.tls_key_file = o.redis_tls[2].as_ref().map(Into::into);
    r.timeout_ms = o.redis_timeout_ms;
    if let Some(s) = &o.redis_scripting {
        r.scripting = Scripting::parse(s).map_err(|e| e.to_string())?;
    }
    let store = Arc::new(RedisStore::connect(r).await.map_err(|e| e.to_string())?);
    // One node: each gRPC thread is bound up front, so its connection is ready for the first
    // request. A cluster binds a thread's runtime at its first call instead (core gives it its
    // own connection to every master then), and Sentinel's calls follow the master through the
    // store's own connection.
    let bind: Option<Binder> = (o.store == "redis").then(|| {
        let s = store.clone();
        Arc::new(move || {
            if let Err(e) = s.bind_current_runtime() {
                log::warn(
                    "redis: a gRPC thread keeps the store's shared connection",
                    &[("error", json!(e.to_string()))],
                );
            }
        }) as Binder
    });
    Ok((store, bind))
}

#[cfg(not(feature = "redis"))]
async fn redis_store(_o: &Options) -> Result<(Arc<dyn Store>, Option<Binder>), String> {
    Err("this build has no redis support (build with the `redis` feature)".into())
}

/// Runs `throttlekit serve` with the flags after `serve` until SIGTERM or SIGINT.
pub fn run(args: &[String]) -> Result<(), String> {
    let o = Options::parse(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(serve(o))
}

async fn serve(o: Options) -> Result<(), String> {
    let config = Config::load(&o.config).map_err(|e| e.to_string())?;
    let (store, bind) = store(&o).await?;
    let decider = Decider {
        store: store.clone(),
        clock: Arc::new(WallClock),
        prefix: o.prefix.clone(),
        fail: o.fail,
        shadow_global: o.shadow,
        count_rejected: o.count_rejected,
        headers: o.headers.map(|family| HeaderOptions { family, ..HeaderOptions::default() }),
        limits: o.limits,
    };
    let (domains, limits) = (config.domains.len(), config.limit_count());
    let state = Arc::new(State::new(config, decider, o.config.clone(), Duration::from_millis(o.timeout_ms)));

    let grpc_listeners =
        workers::listeners(o.grpc_addr, o.grpc_threads).map_err(|e| format!("--grpc-addr {}: {e}", o.grpc_addr))?;
    let http_listener =
        tokio::net::TcpListener::bind(o.http_addr).await.map_err(|e| format!("--http-addr {}: {e}", o.http_addr))?;
    let grpc_addr = grpc_listeners[0].local_addr().map_err(|e| e.to_string())?;
    let http_addr = http_listener.local_addr().map_err(|e| e.to_string())?;

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<RlsServer<Rls>>().await;
    let rls = RlsServer::new(Rls { state: state.clone() }).max_decoding_message_size(o.max_request_bytes);

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let services = Services {
        routes: tonic::service::Routes::new(health_service).add_service(rls),
        timeout: Duration::from_millis(o.timeout_ms.saturating_add(o.drain_ms)),
        bind,
    };
    let threads = grpc_listeners.len();
    let mut grpc_done = workers::start(grpc_listeners, services, stop_rx.clone())?;
    let draining = Arc::new(AtomicBool::new(false));
    let app = router(Http { state: state.clone(), draining: draining.clone() }, o.max_request_bytes);
    let http = axum::serve(http_listener, app).with_graceful_shutdown(stopped(stop_rx.clone()));

    if o.reload_ms > 0 {
        tokio::spawn(crate::reload::watch(state.clone(), Duration::from_millis(o.reload_ms)));
    }
    log::info(
        "listening",
        &[
            ("grpc", json!(grpc_addr.to_string())),
            ("grpc_threads", json!(threads)),
            ("http", json!(http_addr.to_string())),
            ("store", json!(o.store)),
            ("domains", json!(domains)),
            ("limits", json!(limits)),
        ],
    );

    let grpc_task = tokio::spawn(async move {
        for _ in 0..threads {
            if let Some(Err(e)) = grpc_done.recv().await {
                log::error("a gRPC thread stopped", &[("error", json!(e))]);
            }
        }
    });
    let http_task = tokio::spawn(async move { http.await });
    shutdown_signal().await;
    log::info("shutting down: answering in-flight calls", &[("drain_ms", json!(o.drain_ms))]);
    draining.store(true, Ordering::Relaxed);
    health.set_not_serving::<RlsServer<Rls>>().await;
    let _ = stop_tx.send(true);
    let drain = Duration::from_millis(o.drain_ms);
    let both = async {
        let _ = grpc_task.await;
        let _ = http_task.await;
    };
    if tokio::time::timeout(drain, both).await.is_err() {
        log::warn("drain period over; closing remaining connections", &[]);
    }
    let _ = store.close().await;
    log::info("stopped", &[]);
    Ok(())
}

/// The gRPC server's transport settings, shared with the bench's empty service so that the
/// floor it measures is this server's.
pub fn grpc_server_builder() -> tonic::transport::Server {
    tonic::transport::Server::builder()
}

/// The gRPC listener as the stream tonic serves. tonic's own `tcp_nodelay` applies only to the
/// listeners it binds itself, so each accepted socket has Nagle turned off here: a response is
/// a few small HTTP/2 frames that must not wait for the peer's delayed ACK.
pub fn grpc_incoming(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt;
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|s| {
        let s = s?;
        let _ = s.set_nodelay(true);
        Ok(s)
    })
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
