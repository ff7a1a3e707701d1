//! The store's shared async connection to the master of a Sentinel service ([`Follower`]),
//! found by asking the sentinels and found again when it stops answering. Sentinels and the
//! master are both reached over the store's own
//! async connection ([`super::pipelined::Pipelined`], plain TCP or TLS; the master's in RESP3 on `?protocol=resp3`).
//!
//! Connecting asks each sentinel in turn `SENTINEL GET-MASTER-ADDR-BY-NAME service` until one
//! answers, then connects to that address with the URL's credentials, database and TLS
//! settings. Afterwards, a call that fails at the connection level (refused, reset, timed out)
//! or that the old master refuses with `READONLY` (it was demoted to a replica) fails as usual
//! (the fail policy decides; a call that may have counted is never resent), and starts one
//! background lookup; when the sentinels name a different address, the next calls go there.
//! A connection whose call failed at the connection level or timed out is dropped at once (its
//! late reply must never be read as another call's, and a master that went silent keeps it
//! silent): the next call connects again, within its own timeout, to whatever master the
//! sentinels name by then.
//! Sentinels are reached without the URL's credentials (they are the master's).

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use redis::{Cmd, IntoConnectionInfo};

use super::connect::Blocking;
use super::engine::{Exchange, Step, resp};
use super::held::{Held, Taken};
use super::options::{Plan, redact};
use super::pipelined::{Pipelined, feed};
use super::socket::Target;
use super::tls::TlsConfig;
use crate::error::{Error, Result};

/// The current master's connection, and how to find the next one. Clones share all of it.
#[derive(Clone)]
pub(crate) struct Follower {
    shared: Arc<Shared>,
}

struct Shared {
    /// The URLs as given (sentinel addresses; user, password and db for the master).
    urls: Vec<url::Url>,
    service: String,
    tls: Option<TlsConfig>,
    /// The sentinels' own user and password, if they require one.
    auth: Option<(Option<String>, String)>,
    timeout: Duration,
    /// Where the master is now.
    current: parking_lot::RwLock<Master>,
    /// Its connection: empty once a call on it failed or timed out, and the next call makes a
    /// new one.
    held: Held,
    /// Held while a call connects again, so that calls waiting for a connection share one.
    connecting: tokio::sync::Mutex<()>,
    /// A lookup is running: failures meanwhile do not start another.
    looking: std::sync::atomic::AtomicBool,
}

struct Master {
    addr: (String, u16),
    /// Where the store's own connection to it goes, and its login.
    target: Target,
    login: Vec<Vec<u8>>,
}

impl Master {
    /// `info`'s node, with its credentials, database and protocol, and a connection to it made
    /// within `timeout` (`what` names it in the errors).
    async fn connect(
        info: &redis::ConnectionInfo,
        tls: Option<&TlsConfig>,
        timeout: Duration,
        what: &str,
    ) -> Result<(Master, Pipelined)> {
        let (target, login) = own(info, tls)?;
        let addr = match &target {
            Target::Tcp(host, port) | Target::Tls(host, port, _) => (host.clone(), *port),
            #[cfg(unix)]
            Target::Unix(path) => (path.display().to_string(), 0),
        };
        let conn = tokio::time::timeout(timeout, Pipelined::connect(&target, &login, timeout))
            .await
            .map_err(|_| Error::store(format!("connecting to {what} timed out after {} ms", timeout.as_millis())))?
            .map_err(|e| Error::store(format!("cannot connect to {what}: {e}")))?;
        Ok((Master { addr, target, login }, conn))
    }

    /// The master at `addr` that the sentinels of `service` named, with `url`'s credentials
    /// and database, connected within `timeout`.
    async fn named(
        url: &url::Url,
        addr: &(String, u16),
        service: &str,
        tls: Option<&TlsConfig>,
        timeout: Duration,
    ) -> Result<(Master, Pipelined)> {
        let what = format!("the master of {service:?} at {}:{}", addr.0, addr.1);
        Master::connect(&node_info(url, addr)?, tls, timeout, &what).await
    }
}

/// Where the store's own connection to `info`'s node goes, and its login.
fn own(info: &redis::ConnectionInfo, tls: Option<&TlsConfig>) -> Result<(Target, Vec<Vec<u8>>)> {
    Blocking::of(info, tls)
        .own()
        .map(|(target, login)| (target.clone(), login.to_vec()))
        .map_err(|what| Error::config("redis.urls", what))
}

impl Follower {
    /// Finds the master and connects to it; also returns where that master is.
    pub async fn connect(plan: &Plan, timeout: Duration) -> Result<(Follower, redis::ConnectionInfo)> {
        let urls = plan
            .urls
            .iter()
            .map(|u| url::Url::parse(u).map_err(|e| Error::config("redis.urls", &format!("{:?}: {e}", redact(u)))))
            .collect::<Result<Vec<_>>>()?;
        let service = plan.service_name.clone().unwrap_or_default();
        let auth = plan.sentinel_auth.clone();
        let tls = plan.tls.as_ref();
        let addr = lookup(&urls, &service, tls, auth.as_ref(), timeout).await?;
        let master = Master::named(&urls[0], &addr, &service, tls, timeout).await?;
        let info = node_info(&urls[0], &addr)?;
        Ok((Follower::new(master, urls, service, tls, auth, timeout), info))
    }

    fn new(
        (master, conn): (Master, Pipelined),
        urls: Vec<url::Url>,
        service: String,
        tls: Option<&TlsConfig>,
        auth: Option<(Option<String>, String)>,
        timeout: Duration,
    ) -> Follower {
        let shared = Shared {
            urls,
            service,
            tls: tls.cloned(),
            auth,
            timeout,
            current: parking_lot::RwLock::new(master),
            held: Held::default(),
            connecting: tokio::sync::Mutex::new(()),
            looking: std::sync::atomic::AtomicBool::new(false),
        };
        shared.held.hold(conn);
        Follower { shared: Arc::new(shared) }
    }

    /// The current master's connection, if there is one.
    pub(crate) fn current(&self) -> Option<Taken> {
        self.shared.held.take()
    }

    /// The current master's connection; a new one (connected here, within the call's own
    /// timeout, which bounds the caller) if the last was dropped after a failure, and then a
    /// lookup too, in case the master failed because it is gone.
    async fn conn(&self) -> redis::RedisResult<Taken> {
        if let Some(taken) = self.current() {
            return Ok(taken);
        }
        let _connecting = self.shared.connecting.lock().await;
        if let Some(taken) = self.current() {
            return Ok(taken);
        }
        self.relocate();
        let (target, login) = {
            let current = self.shared.current.read();
            (current.target.clone(), current.login.clone())
        };
        let conn = Pipelined::connect(&target, &login, self.shared.timeout).await?;
        // A lookup may have switched the master meanwhile: its connection wins.
        if self.shared.current.read().target != target {
            return self
                .current()
                .ok_or_else(|| super::wire::io(ErrorKind::ConnectionReset, "the master moved meanwhile"));
        }
        Ok(self.shared.held.hold(conn))
    }

    /// Looks the master up again in the background, unless a lookup is running; switches the
    /// connection if the sentinels name another address.
    fn relocate(&self) {
        use std::sync::atomic::Ordering;
        if self.shared.urls.is_empty() || self.shared.looking.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let _ = shared.relocate().await;
            shared.looking.store(false, Ordering::Release);
        });
    }

    /// Runs `fut` (a request on the current master's connection); on a failure that says the
    /// master is gone or demoted, starts a lookup. The failure is returned as is.
    ///
    /// A call that fails at the connection level (the connection is then dead), times out, or
    /// is abandoned before it answers (the store's own deadline fired first), drops the
    /// connection it was sent on.
    async fn watch<T>(&self, taken: &Taken, fut: impl Future<Output = redis::RedisResult<T>>) -> redis::RedisResult<T> {
        let guard = taken.guard();
        let r = fut.await;
        // A server's error reply leaves the connection in step; any other failure does not.
        if !matches!(&r, Err(e) if e.code().is_none()) {
            guard.disarm();
        }
        if let Err(e) = &r
            && (e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_timeout()
                || e.code() == Some("READONLY"))
        {
            self.relocate();
        }
        r
    }
}

impl Shared {
    async fn relocate(&self) -> Result<()> {
        let addr = lookup(&self.urls, &self.service, self.tls.as_ref(), self.auth.as_ref(), self.timeout).await?;
        if self.current.read().addr == addr {
            return Ok(());
        }
        let (master, conn) =
            Master::named(&self.urls[0], &addr, &self.service, self.tls.as_ref(), self.timeout).await?;
        *self.current.write() = master;
        self.held.replace(conn);
        Ok(())
    }
}

/// Asks each sentinel in turn for the master's address (logging in with `auth`, the
/// sentinels' own credentials, if given); the first answer wins.
async fn lookup(
    urls: &[url::Url],
    service: &str,
    tls: Option<&TlsConfig>,
    auth: Option<&(Option<String>, String)>,
    timeout: Duration,
) -> Result<(String, u16)> {
    let mut causes = Vec::new();
    for url in urls {
        let mut plain = url.clone();
        let _ = plain.set_username("");
        let _ = plain.set_password(None);
        plain.set_path("");
        let ask = async {
            let mut info = plain.as_str().into_connection_info().map_err(Error::store)?;
            if let Some((user, password)) = auth {
                let mut settings = info.redis_settings().clone().set_password(password);
                if let Some(user) = user {
                    settings = settings.set_username(user);
                }
                info = info.set_redis_settings(settings);
            }
            let (target, login) = own(&info, tls)?;
            let conn = Pipelined::connect(&target, &login, timeout).await.map_err(Error::store)?;
            let frame = conn.frame(redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(service)).await;
            let reply = frame.and_then(|f| redis::parse_redis_value(&f)?.extract_error());
            let reply: Option<(String, u16)> =
                redis::from_redis_value(reply.map_err(Error::store)?).map_err(Error::store)?;
            reply.ok_or_else(|| Error::store(format!("it monitors no service named {service:?}")))
        };
        match tokio::time::timeout(timeout, ask).await {
            Ok(Ok(addr)) => return Ok(addr),
            Ok(Err(e)) => causes.push(format!("{}: {}", plain, e.message())),
            Err(_) => causes.push(format!("{plain}: no answer within {} ms", timeout.as_millis())),
        }
    }
    Err(Error::store(format!("no sentinel named the master of {service:?} ({})", causes.join("; "))))
}

/// The node at `addr`, with `url`'s scheme, credentials and database.
pub(crate) fn node_info(url: &url::Url, addr: &(String, u16)) -> Result<redis::ConnectionInfo> {
    let mut u = url.clone();
    u.set_host(Some(&addr.0)).map_err(|e| Error::store(format!("the sentinels named a bad host {:?}: {e}", addr.0)))?;
    let _ = u.set_port(Some(addr.1));
    u.as_str().into_connection_info().map_err(Error::store)
}

impl Follower {
    /// `x`'s current attempt on the master's connection ([`Pipelined::attempt`]); a reply that
    /// says `READONLY` (a demoted master answers scripts that write so) starts a lookup.
    pub(crate) async fn attempt(&self, x: &mut Exchange<'_>) -> redis::RedisResult<Step> {
        let taken = self.conn().await?;
        let bytes = self.watch(&taken, taken.conn.request(x.replies(), |out| x.write(out))).await?;
        if resp::frames(&bytes).any(|f| resp::error(f).is_some_and(|(code, _)| code == "READONLY")) {
            self.relocate();
        }
        feed(x, &bytes)
    }

    /// `round`'s reply frames on the master's connection ([`Pipelined::round`]).
    pub(crate) async fn round(&self, round: &[Cmd]) -> redis::RedisResult<Vec<Vec<u8>>> {
        let taken = self.conn().await?;
        self.watch(&taken, taken.conn.round(round)).await
    }
}
