//! The gRPC door's threads: one single-threaded tokio runtime per thread, each with its own
//! listening socket on the same port (`SO_REUSEPORT`, so the kernel spreads connections over
//! them), each running the whole tonic server.
//!
//! Why not one multi-threaded runtime: hyper runs every HTTP/2 stream of a connection as a task
//! of its own, and a work-stealing runtime moves those tasks between its threads, so each call
//! of one Envoy connection paid cross-thread wake-ups (an `eventfd` write, a futex, a context
//! switch) between the connection's task and its streams' tasks. Measured under
//! `bench/serve/run.sh` (64 streams on one connection, memory store), serve's CPU time per call
//! fell from ~25 µs to ~14 µs on a single-threaded runtime. A thread per core keeps that and
//! still uses every core once Envoy opens its usual connection per worker. One connection is
//! served by one thread; that is the trade.
//!
//! On Redis each thread's runtime gets a connection of its own
//! ([`throttlekit::redis::RedisStore::bind_current_runtime`]): a call then writes and reads on
//! the thread that serves the request, without crossing to the store's private runtime.
//!
//! Each runtime also keeps one timer pending (`keep_timer_armed`), so that arming a request's
//! deadline does not write to the runtime's own `eventfd` on every request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Runs on each gRPC thread before it serves: binds the Redis store to the thread's runtime.
pub type Binder = Arc<dyn Fn() + Send + Sync>;

/// What every gRPC thread serves.
pub struct Services {
    /// The services (`RateLimitService`, `grpc.health.v1.Health`).
    pub routes: tonic::service::Routes,
    /// tonic's per-call timeout (a backstop over the decision's own deadline).
    pub timeout: Duration,
    /// Called once on each thread's runtime before serving.
    pub bind: Option<Binder>,
}

/// `n` listening sockets on `addr` sharing its port (the first picks it when `addr`'s is 0),
/// handed over as std sockets for each thread's runtime to adopt. Call inside a tokio runtime.
pub fn listeners(addr: SocketAddr, n: usize) -> std::io::Result<Vec<std::net::TcpListener>> {
    let mut out: Vec<std::net::TcpListener> = Vec::with_capacity(n);
    let mut at = addr;
    for _ in 0..n.max(1) {
        let socket = if at.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(true)?;
        socket.bind(at)?;
        let listener = socket.listen(1024)?;
        at = listener.local_addr()?;
        out.push(listener.into_std()?);
    }
    Ok(out)
}

/// Starts one thread per listener; each serves until `stop` turns true and its in-flight calls
/// are answered. The returned receiver yields once per thread that finished.
pub fn start(
    listeners: Vec<std::net::TcpListener>,
    services: Services,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::sync::mpsc::UnboundedReceiver<Result<(), String>>, String> {
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel();
    for (i, listener) in listeners.into_iter().enumerate() {
        let (routes, bind, timeout) = (services.routes.clone(), services.bind.clone(), services.timeout);
        let (mut stop, done) = (stop.clone(), done_tx.clone());
        std::thread::Builder::new()
            .name(format!("tk-grpc-{i}"))
            .spawn(move || {
                let result = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
                    .and_then(|rt| {
                        rt.block_on(async move {
                            if let Some(bind) = bind {
                                bind();
                            }
                            tokio::spawn(keep_timer_armed());
                            listener.set_nonblocking(true).map_err(|e| e.to_string())?;
                            let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
                            crate::server::grpc_server_builder()
                                .timeout(timeout)
                                .add_routes(routes)
                                .serve_with_incoming_shutdown(crate::server::grpc_incoming(listener), async move {
                                    let _ = stop.wait_for(|s| *s).await;
                                })
                                .await
                                .map_err(|e| e.to_string())
                        })
                    });
                let _ = done.send(result);
            })
            .map_err(|e| format!("cannot start a gRPC thread: {e}"))?;
    }
    Ok(done_rx)
}

/// How often [`keep_timer_armed`] wakes while requests arrive: below the deadlines requests
/// usually carry (Envoy's rate-limit filter sends `grpc-timeout: 20m` by default; serve's own is
/// 1000 ms).
const KEEPER_PERIOD: Duration = Duration::from_millis(10);

thread_local! {
    /// This gRPC thread's keeper: whether a request arrived since it last woke, and how to wake
    /// it when it sleeps without a timer (an idle thread).
    static KEEPER: Keeper = Keeper::default();
}

#[derive(Default)]
struct Keeper {
    busy: std::cell::Cell<bool>,
    idle: std::cell::Cell<bool>,
    wake: Arc<tokio::sync::Notify>,
}

/// Called by the gRPC door for each request: keeps this thread's timer armed while requests
/// arrive. A no-op on any thread that is not one of [`start`]'s.
pub fn note_request() {
    KEEPER.with(|k| {
        k.busy.set(true);
        if k.idle.replace(false) {
            // Same thread as the keeper: a local wake, no syscall.
            k.wake.notify_one();
        }
    });
}

/// Keeps a timer pending on the thread's runtime while requests arrive, so that arming a
/// request's deadline does not wake the runtime's own driver.
///
/// tokio's timer driver remembers, each time the thread parks or processes timers, when it
/// must wake next (`None` when no timer is pending), and a timer armed earlier than that (or
/// while it is `None`) writes to the runtime's `eventfd` so the driver re-parks with the new
/// time. On a thread whose requests finish between parks, every request's deadline (serve's
/// own and tonic's per-call timeout) found no timer pending: `strace` of serve on Redis at 64
/// streams counted ~1.3 `eventfd` writes per request, each also ending the next `epoll_wait`
/// early. With a timer pending a little ahead, a later deadline is inserted without waking
/// anything; a shorter one still wakes the driver, as it must. After a period without requests
/// the keeper waits for the next one without a timer, so an idle server does not wake every
/// period (a wake-up costs ~40 µs of CPU on the bench VM).
///
/// Two timers, staggered by a period, not one: when a lone keeper timer fired, the driver's
/// "next wake" was taken from what remained (the requests' deadlines, a second away, in a
/// coarser level of tokio's wheel) and was not reliably earlier than the deadlines armed next,
/// so until the thread parked again each new deadline wrote the `eventfd` once more
/// (`perf record -e syscalls:sys_enter_write` on serve, Redis, 64 streams: ~0.1 write per
/// request, 94% of them from a request's `Sleep::poll` → `reregister` → `Waker::wake`). With
/// the second timer still pending one period ahead when the first fires, the driver's next
/// wake stays a period away, and the fired timer is re-armed behind it.
async fn keep_timer_armed() {
    let wake = KEEPER.with(|k| k.wake.clone());
    loop {
        let now = tokio::time::Instant::now();
        let mut timers = [
            Box::pin(tokio::time::sleep_until(now + KEEPER_PERIOD)),
            Box::pin(tokio::time::sleep_until(now + 2 * KEEPER_PERIOD)),
        ];
        let mut first = 0;
        loop {
            timers[first].as_mut().await;
            // The other timer is now the earlier one; this one goes a period behind it.
            let behind = timers[1 - first].deadline() + KEEPER_PERIOD;
            timers[first].as_mut().reset(behind);
            first = 1 - first;
            if !KEEPER.with(|k| k.busy.replace(false)) {
                break;
            }
        }
        // Idle: no timer of ours pending until the next request.
        drop(timers);
        KEEPER.with(|k| k.idle.set(true));
        wake.notified().await;
    }
}
