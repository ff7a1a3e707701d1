//! Sentinel discovery: the master of a service, asked of each sentinel in turn. The router
//! ([`super::cluster`]) asks at connect and again when the master stops answering (a connection
//! that fails or cannot be made, a demoted master's `READONLY`), at most once per refresh gap,
//! and moves every call and connection to the master named; the sentinels are reached over the
//! store's own async connection ([`Pipelined`], plain TCP or TLS), without the URL's
//! credentials (those are the master's).

use std::time::Duration;

use super::connect::Dial;
use super::connect::Endpoint;
use super::engine::resp;
use super::engine::value::{Args, Value};
use super::pipelined::Pipelined;
use super::tls::TlsConfig;
use crate::error::{Error, Result};

/// Asks each sentinel in turn for the master's address (logging in with `auth`, the
/// sentinels' own credentials, if given); the first answer wins.
pub(crate) async fn lookup(
    sentinels: &[Endpoint],
    service: &str,
    tls: Option<&TlsConfig>,
    auth: Option<&(Option<String>, String)>,
    timeout: Duration,
) -> Result<(String, u16)> {
    let mut causes = Vec::new();
    for sentinel in sentinels {
        let (username, password) = match auth {
            Some((user, password)) => (user.clone(), Some(password.clone())),
            None => (None, None),
        };
        let plain = Endpoint { username, password, db: 0, ..sentinel.clone() };
        let name = format!("{}://{}:{}", if plain.tls { "rediss" } else { "redis" }, plain.host, plain.port);
        let ask = async {
            let conn = Pipelined::open(&Dial::of(&plain, tls), timeout).await.map_err(Error::store)?;
            let mut command = Args::new();
            command.arg("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(service);
            let frame = conn.frame(&command).await.map_err(Error::store)?;
            if let Some((code, detail)) = resp::error(&frame) {
                return Err(Error::store(format!("{code} {detail}")));
            }
            let text = |v: &Value| match v {
                Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
                Value::SimpleString(s) => Some(s.clone()),
                _ => None,
            };
            match resp::value(&frame) {
                Some(Value::Nil) => Err(Error::store(format!("it monitors no service named {service:?}"))),
                Some(Value::Array(a)) if a.len() == 2 => {
                    match (text(&a[0]), text(&a[1]).and_then(|p| p.parse::<u16>().ok())) {
                        (Some(host), Some(port)) => Ok((host, port)),
                        _ => Err(Error::store(format!("an unreadable master address: {a:?}"))),
                    }
                }
                other => Err(Error::store(format!("an unreadable master address: {other:?}"))),
            }
        };
        match super::engine::within(timeout, ask).await {
            Ok(addr) => return Ok(addr),
            Err(e) => causes.push(format!("{name}: {}", e.message())),
        }
    }
    Err(Error::store(format!("no sentinel named the master of {service:?} ({})", causes.join("; "))))
}
