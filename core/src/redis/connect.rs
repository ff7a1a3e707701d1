//! Where the store's own connections to one node go and how they log in ([`Endpoint`], parsed
//! from a URL; [`Dial`], ready to connect).

use super::engine::resp;
use super::socket::Target;
use super::tls::TlsConfig;

/// Where a store connects and how it logs in ([`super::RedisStore::endpoint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or address (TCP and TLS); empty for a Unix socket.
    pub host: String,
    /// Port (TCP and TLS); 0 for a Unix socket.
    pub port: u16,
    /// Unix socket path (`redis+unix://`), else `None`.
    pub path: Option<String>,
    /// Whether to speak TLS (`rediss://`).
    pub tls: bool,
    /// Database to `SELECT` (0: none needed).
    pub db: i64,
    /// `AUTH` user name, if any.
    pub username: Option<String>,
    /// `AUTH` password, if any.
    pub password: Option<String>,
    /// Whether to speak RESP3 (`?protocol=resp3`): the login is then `HELLO 3`.
    pub resp3: bool,
}

impl Endpoint {
    /// Parses a Redis URL: `redis://` or `rediss://` (TLS) with `[user][:password@]host[:port]`
    /// (port 6379 by default, credentials percent-decoded) and the database as the path
    /// (`/2`); or `redis+unix://` / `unix://` and a socket path, with `?db=`, `?user=` and
    /// `?pass=`. `?protocol=resp3` (or `3`) asks for RESP3, `resp2` or `2` for RESP2. The
    /// answer names what is wrong; the store's options add the URL ([`super::RedisOptions`]).
    pub fn parse(url: &str) -> std::result::Result<Endpoint, String> {
        let u = url::Url::parse(url).map_err(|e| e.to_string())?;
        let query = |name: &str| u.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        let resp3 = match query("protocol").as_deref() {
            None | Some("2" | "resp2") => false,
            Some("3" | "resp3") => true,
            Some(other) => return Err(format!("invalid protocol version {other:?}")),
        };
        let db = |text: Option<&str>| text.map_or(Ok(0), |t| t.parse().map_err(|_| "invalid database number"));
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|d| d.into_owned())
                .map_err(|_| "credentials that are not valid UTF-8".to_string())
        };
        match u.scheme() {
            "redis" | "rediss" => {
                let host = match u.host() {
                    Some(url::Host::Domain(d)) => d.to_string(),
                    Some(url::Host::Ipv4(a)) => a.to_string(),
                    Some(url::Host::Ipv6(a)) => a.to_string(),
                    None => return Err("missing hostname".into()),
                };
                if host == "0.0.0.0" || host == "::" {
                    return Err("cannot connect to a wildcard address (0.0.0.0 or ::)".into());
                }
                Ok(Endpoint {
                    host,
                    port: u.port().unwrap_or(6379),
                    path: None,
                    tls: u.scheme() == "rediss",
                    db: db(Some(u.path().trim_matches('/')).filter(|p| !p.is_empty()))?,
                    username: Some(u.username()).filter(|n| !n.is_empty()).map(decode).transpose()?,
                    password: u.password().map(decode).transpose()?,
                    resp3,
                })
            }
            "redis+unix" | "unix" => Ok(Endpoint {
                host: String::new(),
                port: 0,
                path: Some(u.to_file_path().map_err(|()| "missing path")?.to_string_lossy().into_owned()),
                tls: false,
                db: db(query("db").as_deref())?,
                username: query("user"),
                password: query("pass"),
                resp3,
            }),
            other => Err(format!("{other}:// is no Redis scheme")),
        }
    }

    /// The node at `host:port`, reached as this one is (TLS, credentials, database and
    /// protocol): a cluster node a `CLUSTER SLOTS` or a redirect names, a Sentinel master.
    pub fn at(&self, host: &str, port: u16) -> Endpoint {
        Endpoint { host: host.to_string(), port, path: None, ..self.clone() }
    }

    /// The commands to send first on a new connection, RESP-encoded, in order, one reply each;
    /// an error reply refuses the connection. In RESP2 `AUTH` (with credentials) and `SELECT`
    /// (a database other than 0); in RESP3 `HELLO 3 [AUTH user password]` (the default user when
    /// the URL names none) and `SELECT`, as the store's own connections log in.
    pub fn handshake(&self) -> Vec<Vec<u8>> {
        let command = resp::command;
        let mut out = Vec::new();
        match (&self.username, &self.password, self.resp3) {
            (user, Some(p), true) => {
                let user = user.as_deref().unwrap_or("default");
                out.push(command(&[b"HELLO", b"3", b"AUTH", user.as_bytes(), p.as_bytes()]));
            }
            (_, None, true) => out.push(command(&[b"HELLO", b"3"])),
            (Some(u), Some(p), false) => out.push(command(&[b"AUTH", u.as_bytes(), p.as_bytes()])),
            (None, Some(p), false) => out.push(command(&[b"AUTH", p.as_bytes()])),
            _ => {}
        }
        if self.db != 0 {
            out.push(command(&[b"SELECT", self.db.to_string().as_bytes()]));
        }
        out
    }
}

/// Where the store's own connections to one node go and how they log in, so that connecting
/// and the call share one deadline: each login command is sent alone and its reply read within
/// the time left (a server that accepts connections but never answers costs a call its
/// `timeout_ms`, not a timeout per login reply). The login is what a binding's own transport
/// sends ([`Endpoint::handshake`]: `HELLO 3` for a URL that asks for RESP3, `AUTH` and `SELECT`
/// as the URL says).
pub(crate) struct Dial {
    handshake: Vec<Vec<u8>>,
    /// Plain TCP, TLS or a Unix socket; `None` for a `rediss://` URL without the store's TLS
    /// configuration (the store always has one: [`super::options`]).
    target: Option<Target>,
}

impl Dial {
    /// For `endpoint`'s node, with its credentials, database and protocol, and `tls` for a
    /// `rediss://` URL.
    pub(crate) fn of(endpoint: &Endpoint, tls: Option<&TlsConfig>) -> Dial {
        let mut handshake = endpoint.handshake();
        let target = Target::of(endpoint, tls);
        // A TLS login is never empty: under TLS 1.3 a server that refuses the client's
        // certificate (mutual TLS) says so only after the client's side of the handshake is
        // done, so a connection is known good only once something was answered on it; a
        // refusal then fails the connect, not the first call.
        if handshake.is_empty() && matches!(target, Some(Target::Tls(..))) {
            handshake.push(b"*1\r\n$4\r\nPING\r\n".to_vec());
        }
        Dial { handshake, target }
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

    fn endpoint(username: Option<&str>, password: Option<&str>, db: i64, resp3: bool) -> Endpoint {
        Endpoint {
            host: "h".into(),
            port: 1,
            path: None,
            tls: false,
            db,
            username: username.map(Into::into),
            password: password.map(Into::into),
            resp3,
        }
    }

    #[test]
    fn the_login_is_auth_and_select_in_resp2_and_hello_3_in_resp3() {
        let text =
            |e: Endpoint| e.handshake().iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>();
        assert!(text(endpoint(None, None, 0, false)).is_empty());
        assert_eq!(
            text(endpoint(None, Some("pw"), 2, false)),
            ["*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n"]
        );
        assert_eq!(text(endpoint(None, None, 0, true)), ["*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"]);
        assert_eq!(
            text(endpoint(None, Some("pw"), 0, true)),
            ["*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$2\r\npw\r\n"]
        );
        assert_eq!(text(endpoint(Some("u"), Some("pw"), 1, true)).len(), 2);
    }

    fn own(url: &str) -> Option<Target> {
        Dial::of(&Endpoint::parse(url).unwrap(), None).own().ok().map(|(target, _)| target.clone())
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
