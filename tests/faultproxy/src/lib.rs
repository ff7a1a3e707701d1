//! A loopback TCP proxy that sits between a Redis (or Postgres) client and its server and injects faults, so a
//! test can prove what the client does when the network misbehaves: that every call still
//! answers within its timeout, and that nothing is executed twice.
//!
//! It understands just enough RESP to count requests and replies, which is what lets it fault
//! one exact command ("one script call in five") rather than a byte offset. Faults:
//!
//! | fault | on a selected command | on a selected connection |
//! |---|---|---|
//! | [`Fault::Delay`] | the request waits `d` before it is forwarded; replies keep flowing | every request waits `d` |
//! | [`Fault::Stall`] | nothing moves either way for `d`, then the connection resumes | the same, from its first request |
//! | [`Fault::DropRequest`] | the first `n` bytes of the request reach the server, then both sides are closed | on its first request |
//! | [`Fault::DropReply`] | the server executes the command, its reply is discarded, both sides are closed | on its first request |
//! | [`Fault::Reset`] | the client gets a TCP RST, the request is never forwarded | RST as soon as it is accepted |
//! | [`Fault::BlackHole`] | from this request on nothing is forwarded and nothing closes | accepted, never answered |
//!
//! A [`Rule`] selects commands (all, script calls, or named ones) or new connections, one in
//! `every`, at most `times` times; rules are replaced at run time with [`FaultProxy::set`].
//! [`FaultProxy::partition`] holds every connection's traffic (new ones too) until lifted, and
//! [`FaultProxy::kill_connections`] closes every live connection, like `CLIENT KILL`.
//!
//! A replication link (a connection that sends `SYNC` or `PSYNC`, as a cluster replica does when
//! it reaches its master at the announced, proxied address) is copied byte for byte from then on:
//! no rule, partition or kill applies to it.
//!
//! The binary (`src/main.rs`) exposes the same through a one-line text protocol ([`control`]) so
//! the Python, Node and Go tests drive it too.

mod conn;
pub mod control;
pub mod pg;
pub mod resp;
pub mod stalls;

use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

/// What happens to a selected command or connection (see the table in the crate docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    Delay(Duration),
    Stall(Duration),
    DropRequest(usize),
    DropReply,
    Reset,
    BlackHole,
}

/// Which commands a rule counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Commands {
    All,
    /// `FCALL`, `FCALL_RO`, `EVALSHA`, `EVALSHA_RO`, `EVAL`, `EVAL_RO`.
    Scripts,
    /// Upper-case command names.
    Named(Vec<String>),
}

impl Commands {
    fn matches(&self, name: &str) -> bool {
        match self {
            Commands::All => true,
            Commands::Scripts => resp::is_script(name),
            Commands::Named(names) => names.iter().any(|n| n == name),
        }
    }
}

/// What a rule selects: commands (counted across every connection of the proxy) or new connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    Commands(Commands),
    Connections,
}

/// The wire protocol a proxy frames: RESP (Redis), or Postgres's (`pg`: a request is every
/// message up to a `Sync`, named `PARSE`, `BIND` or `QUERY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp,
    Postgres,
}

/// A fault and what it applies to: the `every`-th, `2·every`-th, ... selected item, at most
/// `times` times (unbounded when `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub fault: Fault,
    pub select: Select,
    pub every: u64,
    pub times: Option<u64>,
}

impl Rule {
    /// `fault` on every command, for ever.
    pub fn new(fault: Fault) -> Rule {
        Rule { fault, select: Select::Commands(Commands::All), every: 1, times: None }
    }
    /// Only script and function calls count.
    pub fn scripts(mut self) -> Rule {
        self.select = Select::Commands(Commands::Scripts);
        self
    }
    /// Only the named commands count.
    pub fn commands(mut self, names: &[&str]) -> Rule {
        self.select = Select::Commands(Commands::Named(names.iter().map(|n| n.to_ascii_uppercase()).collect()));
        self
    }
    /// New connections are selected instead of commands.
    pub fn connections(mut self) -> Rule {
        self.select = Select::Connections;
        self
    }
    /// One in `n` (`n` ≥ 1).
    pub fn every(mut self, n: u64) -> Rule {
        self.every = n.max(1);
        self
    }
    /// At most `n` injections.
    pub fn times(mut self, n: u64) -> Rule {
        self.times = Some(n);
        self
    }
}

/// Counters since the proxy started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted.
    pub connections: u64,
    /// Connections open now.
    pub live: u64,
    /// Requests seen from clients (forwarded or not).
    pub commands: u64,
    /// Script and function calls forwarded whole to the server.
    pub scripts: u64,
    /// Faults injected.
    pub faults: u64,
    /// Times a connection task went back to waiting for its next event (bytes, a timer, a
    /// control change): a few per request. A stalled or partitioned connection waits once until
    /// that ends, so a count that grows while traffic is held is a task spinning.
    pub wakeups: u64,
}

struct Armed {
    rule: Rule,
    seen: u64,
    fired: u64,
}

impl Armed {
    fn fire(&mut self) -> Option<Fault> {
        self.seen += 1;
        let spent = self.rule.times.is_some_and(|t| self.fired >= t);
        if spent || !self.seen.is_multiple_of(self.rule.every) {
            return None;
        }
        self.fired += 1;
        Some(self.rule.fault.clone())
    }
}

/// State shared by the control side and every connection task.
pub(crate) struct Shared {
    rules: Mutex<Vec<Armed>>,
    connections: AtomicU64,
    live: AtomicU64,
    commands: AtomicU64,
    scripts: AtomicU64,
    faults: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    partition: watch::Sender<bool>,
    kill: watch::Sender<u64>,
}

impl Shared {
    /// The fault for a command named `name`, if a rule selects it. Every matching rule counts
    /// the command; the first one that fires wins.
    pub(crate) fn on_command(&self, name: &str) -> Option<Fault> {
        self.commands.fetch_add(1, Ordering::Relaxed);
        let mut rules = self.rules.lock().unwrap();
        let mut chosen = None;
        for armed in rules.iter_mut() {
            if let Select::Commands(c) = &armed.rule.select
                && c.matches(name)
                && let Some(f) = armed.fire()
                && chosen.is_none()
            {
                chosen = Some(f);
            }
        }
        if chosen.is_some() {
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        chosen
    }

    /// The fault for a connection just accepted, if a rule selects it.
    pub(crate) fn on_connection(&self) -> Option<Fault> {
        self.connections.fetch_add(1, Ordering::Relaxed);
        let mut rules = self.rules.lock().unwrap();
        let mut chosen = None;
        for armed in rules.iter_mut() {
            if armed.rule.select == Select::Connections
                && let Some(f) = armed.fire()
                && chosen.is_none()
            {
                chosen = Some(f);
            }
        }
        if chosen.is_some() {
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        chosen
    }

    pub(crate) fn script_forwarded(&self) {
        self.scripts.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running proxy: one listener per route, all sharing one set of rules. Dropping it closes
/// the listeners and every connection.
pub struct FaultProxy {
    shared: Arc<Shared>,
    routes: Vec<(SocketAddr, SocketAddr)>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// A proxy on a free loopback port in front of `upstream`.
    pub fn start(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        FaultProxy::start_routes(&[("127.0.0.1:0".parse().unwrap(), upstream)])
    }

    /// One listener per `(listen, upstream)` pair (port 0 picks a free port). A cluster node
    /// started with `--cluster-announce-port` set to its route's listen port makes the whole
    /// cluster reachable through the proxy only.
    pub fn start_routes(routes: &[(SocketAddr, SocketAddr)]) -> std::io::Result<FaultProxy> {
        FaultProxy::start_framing(routes, Protocol::Resp)
    }

    /// A proxy on a free loopback port in front of a Postgres server: rules select statements
    /// by the first message of their request (`BIND` for a prepared statement's execution).
    pub fn start_postgres(upstream: SocketAddr) -> std::io::Result<FaultProxy> {
        FaultProxy::start_framing(&[("127.0.0.1:0".parse().unwrap(), upstream)], Protocol::Postgres)
    }

    fn start_framing(routes: &[(SocketAddr, SocketAddr)], protocol: Protocol) -> std::io::Result<FaultProxy> {
        let mut listeners = Vec::new();
        let mut bound = Vec::new();
        for &(listen, upstream) in routes {
            let l = StdListener::bind(listen)?;
            l.set_nonblocking(true)?;
            bound.push((l.local_addr()?, upstream));
            listeners.push((l, upstream));
        }
        let shared = Arc::new(Shared {
            rules: Mutex::new(Vec::new()),
            connections: AtomicU64::new(0),
            live: AtomicU64::new(0),
            commands: AtomicU64::new(0),
            scripts: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            partition: watch::channel(false).0,
            kill: watch::channel(0).0,
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let task_shared = shared.clone();
        let thread = std::thread::Builder::new().name("faultproxy".into()).spawn(move || {
            runtime.block_on(async move {
                for (l, upstream) in listeners {
                    let listener = match tokio::net::TcpListener::from_std(l) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("faultproxy: listener: {e}");
                            continue;
                        }
                    };
                    tokio::spawn(conn::accept_loop(listener, upstream, task_shared.clone(), protocol));
                }
                let _ = stop_rx.await;
            });
            // Dropping the runtime here cancels every connection task, which closes its sockets.
        })?;
        Ok(FaultProxy { shared, routes: bound, stop: Some(stop_tx), thread: Some(thread) })
    }

    /// The address clients connect to (the first route's).
    pub fn addr(&self) -> SocketAddr {
        self.routes[0].0
    }

    /// Every `(listen, upstream)` route, in the order given.
    pub fn routes(&self) -> &[(SocketAddr, SocketAddr)] {
        &self.routes
    }

    /// Replaces every rule (their counters start again).
    pub fn set(&self, rules: Vec<Rule>) {
        *self.shared.rules.lock().unwrap() = rules.into_iter().map(|rule| Armed { rule, seen: 0, fired: 0 }).collect();
    }

    /// Adds one rule after the existing ones.
    pub fn add(&self, rule: Rule) {
        self.shared.rules.lock().unwrap().push(Armed { rule, seen: 0, fired: 0 });
    }

    /// Removes every rule and lifts a partition: traffic flows normally again (connections
    /// already black-holed or closed stay so).
    pub fn clear(&self) {
        self.set(Vec::new());
        self.partition(false);
    }

    /// While on, no connection forwards anything in either direction (bytes wait in the
    /// proxy, as in a network partition) and new connections are accepted but not answered.
    pub fn partition(&self, on: bool) {
        self.shared.partition.send_replace(on);
    }

    /// Closes every live connection (both sides), as `CLIENT KILL` would.
    pub fn kill_connections(&self) {
        self.shared.kill.send_modify(|generation| *generation += 1);
    }

    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            connections: s.connections.load(Ordering::Relaxed),
            live: s.live.load(Ordering::Relaxed),
            commands: s.commands.load(Ordering::Relaxed),
            scripts: s.scripts.load(Ordering::Relaxed),
            faults: s.faults.load(Ordering::Relaxed),
            wakeups: s.wakeups.load(Ordering::Relaxed),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
