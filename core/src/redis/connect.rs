//! Opening the connection that matches [`RedisOptions::mode`](super::RedisOptions): one node,
//! a cluster, or the master that sentinels name. [`Conn`] hides which: every path that is not
//! the standalone fast path (the hop path, deterministic replay, `reset`, raw commands) sends
//! through it, so routing by slot, following `MOVED`/`ASK` and following a failover happen in
//! one place. Every URL, `?protocol=resp3` included, takes the store's own connections to one
//! node or a Sentinel master; the cluster client is redis-rs's.

use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
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
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
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
            let conn = Conn::Single(Follower::fixed(&client, plan.tls.as_ref(), timeout, &describe(plan)).await?);
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

/// Where the store's own connections to one node go and how they log in, so that connecting
/// and the call share one deadline: each login command is sent alone and its reply read within
/// the time left (the redis crate pipelined its handshake, `CLIENT SETINFO` twice, then `AUTH`
/// or `HELLO 3`, `SELECT`, and read every reply with a whole timeout of its own: on a server that
/// accepts connections but never answers a blocking call took about twice `timeout_ms`). The
/// login is what a binding's own transport sends ([`super::transport::Endpoint::handshake`]),
/// or, for a URL that asks for RESP3 (`?protocol=resp3`), `HELLO 3` (with `AUTH` when the URL has
/// credentials) and `SELECT`.
pub(crate) struct Blocking {
    handshake: Vec<Vec<u8>>,
    /// Plain TCP, TLS or a Unix socket; `None` for a `rediss://` URL without the store's TLS
    /// configuration (the store always has one: [`super::options`]).
    target: Option<Target>,
}

impl Blocking {
    /// For `client`'s node, with its credentials, database and protocol, and `tls` for a
    /// `rediss://` URL.
    pub(crate) fn of(client: &redis::Client, tls: Option<&TlsFiles>) -> Blocking {
        let info = client.get_connection_info();
        let settings = info.redis_settings();
        let handshake = if settings.protocol().supports_resp3() {
            resp3_handshake(settings)
        } else {
            super::transport::Endpoint::of(info).handshake()
        };
        Blocking { handshake, target: Target::of(info.addr(), tls.map(|t| &t.config)) }
    }

    /// Where the store's own connections go and their login: the blocking ones
    /// ([`Blocking::connect_sync`]) and the async ones ([`super::pipelined::Pipelined::open`]).
    pub(crate) fn own(&self) -> std::result::Result<(&Target, &[Vec<u8>]), &'static str> {
        self.target
            .as_ref()
            .map(|target| (target, self.handshake.as_slice()))
            .ok_or("a rediss:// URL needs the store's TLS configuration")
    }

    /// A blocking connection ([`super::wire::Wire`]), logged in, by `deadline`; its socket
    /// timeouts are left at the time left, for the call that follows.
    pub(crate) fn connect_sync(&self, deadline: Instant) -> redis::RedisResult<super::wire::Wire> {
        let (target, login) = self.own().map_err(|what| super::wire::io(std::io::ErrorKind::InvalidInput, what))?;
        super::wire::Wire::connect(target, login, deadline)
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
        Blocking::of(&redis::Client::open(url).unwrap(), None).own().ok().map(|(target, _)| target.clone())
    }

    #[test]
    fn the_stores_own_connections_take_tcp_and_unix_sockets_in_either_protocol() {
        assert_eq!(own("redis://127.0.0.1:6390/"), Some(Target::Tcp("127.0.0.1".into(), 6390)));
        #[cfg(unix)]
        assert_eq!(own("redis+unix:///tmp/r.sock"), Some(Target::Unix("/tmp/r.sock".into())));
        assert_eq!(own("redis://127.0.0.1:6390/?protocol=resp3"), Some(Target::Tcp("127.0.0.1".into(), 6390)));
        // A `rediss://` URL without the store's TLS configuration has no target.
        assert_eq!(own("rediss://127.0.0.1:6390/"), None);
    }
}
