//! Opening the connection that matches [`RedisOptions::mode`](super::RedisOptions): one node,
//! a cluster, or the master that sentinels name. [`Conn`] hides which: every command that is
//! not a script call on a fast path (the hop path, deterministic replay, `reset`, loading the
//! function library, raw commands) goes through it, so routing by slot, following
//! `MOVED`/`ASK` and following a failover happen in one place. Every connection is the store's
//! own: one node's or a Sentinel master's ([`Follower`]), or each master's of a cluster
//! ([`super::cluster::Router`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use redis::{Cmd, Value};

use super::cluster::{Router, key_slot};
use super::options::{Plan, RedisMode, redact};
use super::sentinel::Follower;
use super::socket::Target;
use super::tls::TlsConfig;
use crate::error::{Error, Result};

/// The store's shared async connection, whatever the topology. Cheap to clone (a handle onto
/// the Sentinel master's connection, or onto the router of one node or a cluster).
#[derive(Clone)]
pub(crate) enum Conn {
    /// The master of a Sentinel service, looked up again when it stops answering.
    Single(Follower),
    /// One node or every master of a cluster, through the router's commands
    /// ([`Router::command`]): `reset`'s `DEL`, loading functions on every master, deterministic
    /// replay, raw commands. Script calls take [`Router::run`]; neither sends anything again
    /// once it may have reached a server.
    Routed(Arc<Router>),
}

impl Conn {
    /// The Sentinel master's connection, for the hop path's script calls (the others take the
    /// router).
    pub(crate) fn single(&mut self) -> Result<&mut Follower> {
        match self {
            Conn::Single(f) => Ok(f),
            Conn::Routed(_) => Err(Error::store("this store's script calls go through its router")),
        }
    }

    /// `round` (commands whose keys all lie in `key`'s slot), pipelined: on the one node, or on
    /// a cluster on the slot's master (a `MOVED` followed by the whole round, as
    /// [`Router::command`] says). Each command's reply, server errors as [`Value::ServerError`].
    pub(crate) async fn round(&mut self, key: &[u8], round: &[Cmd]) -> Result<Vec<Value>> {
        let frames = match self {
            Conn::Single(f) => f.round(round).await.map_err(Error::store)?,
            Conn::Routed(router) => router.command(key_slot(key), round).await?,
        };
        values(frames)
    }

    /// One command: on the one node, or on a cluster on the master of `key`'s slot.
    pub(crate) async fn keyed(&mut self, key: &[u8], cmd: &Cmd) -> Result<Value> {
        let mut replies = self.round(key, std::slice::from_ref(cmd)).await?;
        replies.pop().ok_or_else(|| Error::store("no reply"))
    }

    /// A raw command (tests and tools): on a cluster, to the master of its first argument's
    /// slot (the key of most keyed commands; a keyless command reaches one master).
    pub(crate) async fn raw(&mut self, cmd: &Cmd) -> Result<Value> {
        let first = match cmd.args_iter().nth(1) {
            Some(redis::Arg::Simple(b)) => b,
            _ => &b""[..],
        };
        self.keyed(first, cmd).await
    }

    /// Deletes `keys`: one `DEL` on one node; on a cluster one per slot, each on its master.
    pub(crate) async fn delete(&mut self, keys: Vec<String>) -> Result<()> {
        if !matches!(self, Conn::Routed(router) if router.is_cluster()) {
            return self.keyed(b"", redis::cmd("DEL").arg(keys)).await.map(drop);
        }
        let mut by_slot: BTreeMap<u16, Vec<String>> = BTreeMap::new();
        for k in keys {
            by_slot.entry(key_slot(k.as_bytes())).or_default().push(k);
        }
        for keys in by_slot.into_values() {
            if let Value::ServerError(e) = self.keyed(keys[0].as_bytes(), redis::cmd("DEL").arg(&keys)).await? {
                return Err(Error::store(e.to_string()));
            }
        }
        Ok(())
    }

    /// `cmd` (keyless and idempotent: `FUNCTION LOAD REPLACE`) on the one node, or on every
    /// master of a cluster: the first error a master answered, else the first reply.
    pub(crate) async fn everywhere(&mut self, cmd: &Cmd) -> Result<Value> {
        let Conn::Routed(router) = self else { return self.keyed(b"", cmd).await };
        let replies = values(router.on_every_master(cmd).await?)?;
        let error = replies.iter().position(|v| matches!(v, Value::ServerError(_)));
        replies.into_iter().nth(error.unwrap_or(0)).ok_or_else(|| Error::store("the cluster has no master"))
    }
}

/// Reply frames read as redis-rs values (server errors as [`Value::ServerError`]).
fn values(frames: Vec<Vec<u8>>) -> Result<Vec<Value>> {
    frames.iter().map(|f| redis::parse_redis_value(f).map_err(Error::store)).collect()
}

/// What connecting produced.
pub(crate) struct Connected {
    pub conn: Conn,
    /// The node the standalone fast paths (blocking, direct, bound, a binding's own transport)
    /// talk to: the server itself in standalone mode; the master found at
    /// connect time in sentinel mode, and the first seed in cluster mode, where those fast
    /// paths are off (see [`Connected::routed`]).
    pub info: redis::ConnectionInfo,
    /// Cluster and sentinel: every call goes through [`Conn`], which knows where the key lives
    /// now; the standalone fast paths, bound to one address, are not used.
    pub routed: bool,
    /// Cluster: the store's own routing for script calls ([`super::cluster`]).
    pub router: Option<Arc<Router>>,
}

/// Connects within `timeout` as `plan` says.
pub(crate) async fn connect(plan: &Plan, timeout: Duration) -> Result<Connected> {
    if plan.tls.is_some() {
        super::tls::install_crypto_provider();
    }
    match plan.mode {
        RedisMode::Standalone | RedisMode::Cluster => {
            let router = Router::connect(plan, timeout).await?;
            let info = plan.nodes[0].clone();
            let routed = router.is_cluster();
            Ok(Connected { conn: Conn::Routed(router.clone()), info, routed, router: Some(router) })
        }
        RedisMode::Sentinel => {
            let (follower, info) = Follower::connect(plan, timeout).await?;
            Ok(Connected { conn: Conn::Single(follower), info, routed: true, router: None })
        }
    }
}

/// The options' URLs, passwords hidden, for error messages.
pub(crate) fn describe(plan: &Plan) -> String {
    plan.urls.iter().map(|u| redact(u)).collect::<Vec<_>>().join(",")
}

/// Where the store's own connections to one node go and how they log in, so that connecting
/// and the call share one deadline: each login command is sent alone and its reply read within
/// the time left (the redis crate pipelined its handshake, `CLIENT SETINFO` twice, then `AUTH`
/// or `HELLO 3`, `SELECT`, and read every reply with a whole timeout of its own: on a server that
/// accepts connections but never answers a blocking call took about twice `timeout_ms`). The
/// login is what a binding's own transport sends ([`super::transport::Endpoint::handshake`]:
/// `HELLO 3` for a URL that asks for RESP3, `AUTH` and `SELECT` as the URL says).
pub(crate) struct Blocking {
    handshake: Vec<Vec<u8>>,
    /// Plain TCP, TLS or a Unix socket; `None` for a `rediss://` URL without the store's TLS
    /// configuration (the store always has one: [`super::options`]).
    target: Option<Target>,
}

impl Blocking {
    /// For `info`'s node, with its credentials, database and protocol, and `tls` for a
    /// `rediss://` URL.
    pub(crate) fn of(info: &redis::ConnectionInfo, tls: Option<&TlsConfig>) -> Blocking {
        let mut handshake = super::transport::Endpoint::of(info).handshake();
        let target = Target::of(info.addr(), tls);
        // A TLS login is never empty: under TLS 1.3 a server that refuses the client's
        // certificate (mutual TLS) says so only after the client's side of the handshake is
        // done, so a connection is known good only once something was answered on it; a
        // refusal then fails the connect, not the first call.
        if handshake.is_empty() && matches!(target, Some(Target::Tls(..))) {
            handshake.push(b"*1\r\n$4\r\nPING\r\n".to_vec());
        }
        Blocking { handshake, target }
    }

    /// Where the store's own connections go and their login: the blocking ones
    /// ([`super::wire::Pool`]) and the async ones ([`super::pipelined::Pipelined::open`]).
    pub(crate) fn own(&self) -> std::result::Result<(&Target, &[Vec<u8>]), &'static str> {
        self.target
            .as_ref()
            .map(|target| (target, self.handshake.as_slice()))
            .ok_or("a rediss:// URL needs the store's TLS configuration")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(url: &str) -> Option<Target> {
        Blocking::of(&redis::IntoConnectionInfo::into_connection_info(url).unwrap(), None)
            .own()
            .ok()
            .map(|(target, _)| target.clone())
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
