//! Opening the connection that matches [`RedisOptions::mode`](super::RedisOptions): one node,
//! a cluster, or the master that sentinels name. [`Conn`] hides which: every path that is not
//! the standalone fast path (the hop path, deterministic replay, `reset`, raw commands) sends
//! through it, so routing by slot, following `MOVED`/`ASK` and following a failover happen in
//! one place.

use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use super::options::{Plan, RedisMode, TlsFiles, redact};
use super::sentinel::Follower;
use super::socket::Target;
use crate::error::{Error, Result};

/// The store's shared async connection, whatever the topology. Cheap to clone (each variant is
/// a handle onto one multiplexed connection, or one per node).
#[derive(Clone)]
pub(crate) enum Conn {
    /// One node over `?protocol=resp3`: redis-rs's, reconnecting itself in the background.
    Resp3(ConnectionManager),
    /// One node (the store's own connection, connecting again after a failure), or the master
    /// of a Sentinel service, looked up again when it stops answering.
    Single(Follower),
    /// Every master of a cluster, through the redis crate's cluster client: for the commands
    /// that are not script calls (`reset`'s idempotent `DEL`, loading functions on every master,
    /// deterministic replay, raw commands). Script calls never take it: they take
    /// [`super::cluster::Router`], which never resends a call that may have reached a server.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Resp3(c) => c.req_packed_command(cmd),
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Resp3(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Resp3(c) => c.get_db(),
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// What connecting produced.
pub(crate) struct Connected {
    pub conn: Conn,
    /// A client for the node the standalone fast paths (blocking, direct, bound, a binding's
    /// own transport) talk to: the server itself in standalone mode; the master found at
    /// connect time in sentinel mode, and the first seed in cluster mode, where those fast
    /// paths are off (see [`Connected::routed`]).
    pub client: redis::Client,
    /// Cluster and sentinel: every call goes through [`Conn`], which knows where the key lives
    /// now; the standalone fast paths, bound to one address, are not used.
    pub routed: bool,
    /// Cluster: the store's own routing for script calls ([`super::cluster`]).
    pub router: Option<std::sync::Arc<super::cluster::Router>>,
}

/// Connects within `timeout` as `plan` says.
pub(crate) async fn connect(plan: &Plan, timeout: Duration) -> Result<Connected> {
    if plan.tls.is_some() {
        super::tls::install_crypto_provider();
    }
    match plan.mode {
        RedisMode::Standalone => {
            let client = client_for(plan.nodes[0].clone(), plan.tls.as_ref())?;
            let conn = if client.get_connection_info().redis_settings().protocol().supports_resp3() {
                Conn::Resp3(manager(client.clone(), timeout, &describe(plan)).await?)
            } else {
                Conn::Single(Follower::fixed(&client, plan.tls.as_ref(), timeout, &describe(plan)).await?)
            };
            Ok(Connected { conn, client, routed: false, router: None })
        }
        RedisMode::Cluster => {
            let mut builder = redis::cluster::ClusterClientBuilder::new(plan.nodes.clone())
                .connection_timeout(timeout)
                .response_timeout(timeout);
            if let Some(tls) = plan.tls.as_ref() {
                builder = builder.certs(tls.certificates());
            }
            let cluster = builder.build().map_err(|e| Error::config("redis.urls", &format!("{e}")))?;
            let conn = tokio::time::timeout(timeout, cluster.get_async_connection())
                .await
                .map_err(|_| {
                    Error::store(format!("connecting to {} timed out after {} ms", describe(plan), timeout.as_millis()))
                })?
                .map_err(|e| Error::store(format!("cannot connect to {}: {e}", describe(plan))))?;
            let client = client_for(plan.nodes[0].clone(), plan.tls.as_ref())?;
            let router = super::cluster::Router::connect(plan, timeout).await?;
            Ok(Connected { conn: Conn::Cluster(conn), client, routed: true, router: Some(router) })
        }
        RedisMode::Sentinel => {
            let (follower, client) = Follower::connect(plan, timeout).await?;
            Ok(Connected { conn: Conn::Single(follower), client, routed: true, router: None })
        }
    }
}

/// The options' URLs, passwords hidden, for error messages.
pub(crate) fn describe(plan: &Plan) -> String {
    plan.urls.iter().map(|u| redact(u)).collect::<Vec<_>>().join(",")
}

/// A client for one node, with the options' TLS material when the URL is `rediss://`.
pub(crate) fn client_for(info: redis::ConnectionInfo, tls: Option<&TlsFiles>) -> Result<redis::Client> {
    let client = match tls {
        Some(files) => redis::Client::build_with_tls(info, files.certificates()),
        None => redis::Client::open(info),
    };
    client.map_err(|e| Error::config("redis.urls", &format!("cannot build a client: {e}")))
}

/// A self-reconnecting connection to `client`'s node, connected within `timeout`.
pub(crate) async fn manager(client: redis::Client, timeout: Duration, what: &str) -> Result<ConnectionManager> {
    tokio::time::timeout(timeout, ConnectionManager::new_with_config(client, manager_config(timeout)))
        .await
        .map_err(|_| Error::store(format!("connecting to {what} timed out after {} ms", timeout.as_millis())))?
        .map_err(|e| Error::store(format!("cannot connect to {what}: {e}")))
}

fn manager_config(timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout))
        // Reconnection happens in the background, one quick attempt per failed call, so a
        // call while Redis is down fails fast instead of waiting out a backoff schedule.
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(10))
        .set_max_delay(Duration::from_millis(100))
}

/// How the blocking paths connect to one node, so that connecting and the call share one
/// deadline.
///
/// Why not [`redis::Client::get_connection_with_timeout`] alone: the redis crate sends its
/// handshake (`CLIENT SETINFO` twice, then `AUTH` or `HELLO 3`, `SELECT`) as one pipeline and
/// reads every reply with the socket's read timeout, each read waiting a whole timeout of its
/// own; on a server that accepts connections but never answers (SIGSTOP, a silent host) a
/// blocking call took about twice `timeout_ms`. Here the socket connects with no handshake of
/// the crate's (`CLIENT SETINFO` skipped, no credentials, database or protocol switch), and the
/// store logs in itself, one command at a time, each read bounded by the time left: the
/// commands a binding's own transport sends ([`super::transport::Endpoint::handshake`]), or,
/// for a URL that asks for RESP3 (`?protocol=resp3`), `HELLO 3` (with `AUTH` when the URL has
/// credentials) and `SELECT`, what the crate would have sent.
pub(crate) struct Blocking {
    bare: redis::Client,
    handshake: Vec<Vec<u8>>,
    /// Plain TCP, TLS or a Unix socket, speaking RESP2: where [`super::wire::Wire`] connects.
    wire: Option<Target>,
}

impl Blocking {
    /// For `client`'s node, with its credentials, database and protocol, and `tls` for a
    /// `rediss://` URL.
    pub(crate) fn of(client: &redis::Client, tls: Option<&TlsFiles>) -> Blocking {
        let info = client.get_connection_info();
        let settings = info.redis_settings();
        let resp3 = settings.protocol().supports_resp3();
        let handshake =
            if resp3 { resp3_handshake(settings) } else { super::transport::Endpoint::of(info).handshake() };
        let wire = if resp3 { None } else { Target::of(info.addr(), tls.map(|t| &t.config)) };
        // The bare client speaks RESP2 to the crate (so the crate sends no `HELLO`); after our
        // `HELLO 3` the server answers in RESP3, which the crate's parser reads either way
        // (pushes are skipped by the readers: `wire::SyncConn::drive`).
        let bare_settings = redis::RedisConnectionInfo::default().set_skip_set_lib_name();
        match redis::Client::open(info.clone().set_redis_settings(bare_settings)) {
            Ok(bare) => Blocking { bare, handshake, wire },
            Err(_) => Blocking { bare: client.clone(), handshake: Vec::new(), wire: None },
        }
    }

    /// A connection, logged in, by `deadline`; its socket timeouts are left at the time left, for
    /// the call that follows.
    pub(crate) fn connect(&self, deadline: Instant) -> redis::RedisResult<redis::Connection> {
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connecting took the whole timeout",
                )))
            } else {
                Ok(left)
            }
        };
        let mut conn = self.bare.get_connection_with_timeout(left()?)?;
        for command in &self.handshake {
            let l = left()?;
            conn.set_read_timeout(Some(l))?;
            conn.set_write_timeout(Some(l))?;
            if let Value::ServerError(e) = redis::ConnectionLike::req_packed_command(&mut conn, command)? {
                return Err(e.into());
            }
        }
        let l = left()?;
        conn.set_read_timeout(Some(l))?;
        conn.set_write_timeout(Some(l))?;
        Ok(conn)
    }
}

impl Blocking {
    /// Whether [`Blocking::connect_sync`] makes the store's own connections (which need no
    /// signals held: [`super::wire::Wire::frame`]).
    pub(crate) fn is_wire(&self) -> bool {
        self.wire.is_some()
    }

    /// Where the store's own connections go (TCP, TLS or a Unix socket, RESP2), and their
    /// login: also a bound runtime's async connection ([`super::pipelined::Pipelined`]).
    pub(crate) fn own(&self) -> Option<(&Target, &[Vec<u8>])> {
        self.wire.as_ref().map(|target| (target, self.handshake.as_slice()))
    }

    /// [`Blocking::connect`] for the sync paths (one node, or each master of a cluster): the
    /// store's own [`super::wire::Wire`] where it applies (TCP, TLS or a Unix socket, RESP2),
    /// else redis-rs's connection.
    pub(crate) fn connect_sync(&self, deadline: Instant) -> redis::RedisResult<super::wire::SyncConn> {
        match &self.wire {
            Some(target) => {
                super::wire::Wire::connect(target, &self.handshake, deadline).map(super::wire::SyncConn::Wire)
            }
            None => self.connect(deadline).map(super::wire::SyncConn::Crate),
        }
    }
}

/// The RESP3 login, one command each: `HELLO 3 [AUTH user password]` (the crate's own
/// spelling: the default user when the URL names none), then `SELECT` for a database other
/// than 0.
fn resp3_handshake(settings: &redis::RedisConnectionInfo) -> Vec<Vec<u8>> {
    let mut hello = redis::cmd("HELLO");
    hello.arg(3);
    if let Some(password) = settings.password() {
        hello.arg("AUTH").arg(settings.username().unwrap_or("default")).arg(password);
    }
    let mut out = vec![hello.get_packed_command()];
    if settings.db() != 0 {
        out.push(redis::cmd("SELECT").arg(settings.db()).get_packed_command());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(url: &str) -> Option<Target> {
        Blocking::of(&redis::Client::open(url).unwrap(), None).own().map(|(target, _)| target.clone())
    }

    #[test]
    fn the_stores_own_connections_take_tcp_and_unix_sockets_speaking_resp2() {
        assert_eq!(own("redis://127.0.0.1:6390/"), Some(Target::Tcp("127.0.0.1".into(), 6390)));
        #[cfg(unix)]
        assert_eq!(own("redis+unix:///tmp/r.sock"), Some(Target::Unix("/tmp/r.sock".into())));
        assert_eq!(own("redis://127.0.0.1:6390/?protocol=resp3"), None);
        // A `rediss://` URL without the store's TLS configuration has no target.
        assert_eq!(own("rediss://127.0.0.1:6390/"), None);
    }
}
