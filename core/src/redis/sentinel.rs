//! Sentinel discovery: the master of a service, asked of each sentinel in turn. The router
//! ([`super::cluster`]) asks at connect and again when the master stops answering (a connection
//! that fails or cannot be made, a demoted master's `READONLY`), at most once per refresh gap,
//! and moves every call and connection to the master named; the sentinels are reached over the
//! store's own async connection ([`Pipelined`], plain TCP or TLS), without the URL's
//! credentials (those are the master's).

use std::time::Duration;

use redis::IntoConnectionInfo;

use super::connect::Blocking;
use super::pipelined::Pipelined;
use super::socket::Target;
use super::tls::TlsConfig;
use crate::error::{Error, Result};

/// Where the store's own connection to `info`'s node goes, and its login.
fn own(info: &redis::ConnectionInfo, tls: Option<&TlsConfig>) -> Result<(Target, Vec<Vec<u8>>)> {
    Blocking::of(info, tls)
        .own()
        .map(|(target, login)| (target.clone(), login.to_vec()))
        .map_err(|what| Error::config("redis.urls", what))
}

/// Asks each sentinel in turn for the master's address (logging in with `auth`, the
/// sentinels' own credentials, if given); the first answer wins.
pub(crate) async fn lookup(
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
