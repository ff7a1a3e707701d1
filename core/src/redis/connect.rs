//! Opening the store's router as [`RedisOptions::mode`](super::RedisOptions) says (one node, a
//! cluster, or the master that sentinels name: [`Router`]), and where the store's own
//! connections to one node go and how they log in ([`Blocking`]).

use std::sync::Arc;
use std::time::Duration;

use super::cluster::Router;
use super::options::{Plan, redact};
use super::socket::Target;
use super::tls::TlsConfig;
use super::transport::Endpoint;
use crate::error::Result;

/// Connects within `timeout` as `plan` says ([`Router::connect`]).
pub(crate) async fn connect(plan: &Plan, timeout: Duration) -> Result<Arc<Router>> {
    if plan.tls.is_some() {
        super::tls::install_crypto_provider();
    }
    Router::connect(plan, timeout).await
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
    /// For `endpoint`'s node, with its credentials, database and protocol, and `tls` for a
    /// `rediss://` URL.
    pub(crate) fn of(endpoint: &Endpoint, tls: Option<&TlsConfig>) -> Blocking {
        let mut handshake = endpoint.handshake();
        let target = Target::of(endpoint, tls);
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
        Blocking::of(&Endpoint::parse(url).unwrap(), None).own().ok().map(|(target, _)| target.clone())
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
