//! [`RedisOptions`]: how to reach Redis. One set of names, which every binding spells in its own
//! idiom (`docs/redis.md` has the table). Everything is checked here, once, before any socket
//! opens: a bad combination is `config_invalid` naming the option, never a surprise at the first
//! call (and never a silent downgrade, such as TLS options ignored on a plaintext URL).

use std::path::PathBuf;

use crate::error::{Error, Result};

/// How the servers behind [`RedisOptions::urls`] are organised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RedisMode {
    /// One server (`urls` holds exactly one URL).
    #[default]
    Standalone,
    /// A Redis Cluster: `urls` are seed nodes (any one that answers is enough); the store
    /// discovers the rest, routes every call by its key's slot and follows `MOVED`/`ASK`.
    Cluster,
    /// Sentinel: `urls` are sentinels; the store asks them for the master of
    /// [`RedisOptions::service_name`] and asks again when that master stops answering.
    Sentinel,
}

impl RedisMode {
    /// Parses `standalone`, `cluster` or `sentinel`.
    pub fn parse(s: &str) -> Result<RedisMode> {
        match s {
            "standalone" => Ok(RedisMode::Standalone),
            "cluster" => Ok(RedisMode::Cluster),
            "sentinel" => Ok(RedisMode::Sentinel),
            other => {
                Err(Error::config("redis.mode", &format!("must be standalone, cluster or sentinel, got {other:?}")))
            }
        }
    }

    /// The option's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RedisMode::Standalone => "standalone",
            RedisMode::Cluster => "cluster",
            RedisMode::Sentinel => "sentinel",
        }
    }
}

/// How the Lua in `lua/` reaches the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scripting {
    /// Functions when the server has them (Redis >= 7 and `FUNCTION LOAD` allowed), else
    /// scripts.
    #[default]
    Auto,
    /// `FUNCTION LOAD` once, then `FCALL`; connecting fails if the server refuses functions.
    Functions,
    /// `EVALSHA`, and `EVAL` only on `NOSCRIPT`.
    Eval,
}

impl Scripting {
    /// Parses `auto`, `functions` or `eval`.
    pub fn parse(s: &str) -> Result<Scripting> {
        match s {
            "auto" => Ok(Scripting::Auto),
            "functions" => Ok(Scripting::Functions),
            "eval" => Ok(Scripting::Eval),
            other => Err(Error::config("redis.scripting", &format!("must be auto, functions or eval, got {other:?}"))),
        }
    }

    /// The option's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Scripting::Auto => "auto",
            Scripting::Functions => "functions",
            Scripting::Eval => "eval",
        }
    }
}

/// How to reach Redis and how to behave. Build it with struct update syntax over
/// [`RedisOptions::default`] (or [`RedisOptions::from_urls`]); [`RedisOptions::validate`] runs
/// when the store connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// One or more URLs: `redis://[user:password@]host:port[/db]`, `rediss://...` for TLS, or
    /// `redis+unix:///path` (standalone only). Standalone takes exactly one; cluster takes seed
    /// nodes; sentinel takes sentinels (their user and password, if any, are also the
    /// master's). All URLs use the same scheme. Default `["redis://127.0.0.1:6379"]`.
    pub urls: Vec<String>,
    /// Standalone, cluster or sentinel. Default standalone.
    pub mode: RedisMode,
    /// The Sentinel service (the name in `sentinel monitor NAME ...`); required in sentinel
    /// mode and refused in the others.
    pub service_name: Option<String>,
    /// PEM file of the CA certificates to trust instead of the system's roots (`rediss://`
    /// only). The server's certificate and its host name are always verified.
    pub tls_ca_file: Option<PathBuf>,
    /// PEM client certificate for mutual TLS; needs [`RedisOptions::tls_key_file`].
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of [`RedisOptions::tls_cert_file`].
    pub tls_key_file: Option<PathBuf>,
    /// Functions or scripts. Default auto.
    pub scripting: Scripting,
    /// Longest wait for any one call (connecting included), in ms; past it the call fails with
    /// `store_unavailable`. Default 1000.
    pub timeout_ms: u64,
    /// Expire keys on the caller's clock instead of Redis's (conformance replay and tests only:
    /// it serialises every call and costs extra commands).
    pub deterministic_replay: bool,
    /// Make each charge durable before admitting it: this many replicas must acknowledge the
    /// call's writes (`WAIT`, pipelined after the script in the same round trip), else the
    /// call is `store_unavailable` and the fail policy decides. 0 (the default) turns it off.
    /// Bounds what a failover can lose; costs a replica's round trip per call
    /// (`docs/redis.md`).
    pub durable_replicas: u32,
    /// How long the server waits for those replicas, in ms: at least 1, and less than
    /// `timeout_ms` so the call still answers in time. Default 100.
    pub durable_timeout_ms: u64,
    /// Sentinel mode: the password the sentinels require (`requirepass` in sentinel.conf), sent
    /// to the sentinels only (the URLs' credentials are the master's). Default none.
    pub sentinel_password: Option<String>,
    /// Sentinel mode: the ACL user for [`RedisOptions::sentinel_password`] (default: none, the
    /// sentinels' default user).
    pub sentinel_username: Option<String>,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            urls: vec!["redis://127.0.0.1:6379".to_string()],
            mode: RedisMode::Standalone,
            service_name: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            scripting: Scripting::Auto,
            timeout_ms: 1000,
            deterministic_replay: false,
            durable_replicas: 0,
            durable_timeout_ms: 100,
            sentinel_password: None,
            sentinel_username: None,
        }
    }
}

/// Validated options: what the connecting code needs, already parsed.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub mode: RedisMode,
    pub urls: Vec<String>,
    pub nodes: Vec<super::connect::Endpoint>,
    /// `Some` for `rediss://` URLs (possibly with no files: system roots, no client cert): the
    /// store's own connections' rustls configuration ([`super::tls`]).
    pub tls: Option<super::tls::TlsConfig>,
    pub service_name: Option<String>,
    /// `Some` when [`RedisOptions::durable_replicas`] is set.
    pub durable: Option<super::engine::Durable>,
    /// The sentinels' own user and password (sentinel mode).
    pub sentinel_auth: Option<(Option<String>, String)>,
}

impl RedisOptions {
    /// Options for `urls`: one URL, or several separated by commas (how the CLI and the
    /// bindings' string forms spell a list of seeds or sentinels), everything else default.
    pub fn from_urls(urls: &str) -> RedisOptions {
        RedisOptions { urls: split_urls(urls), ..RedisOptions::default() }
    }

    /// Checks every option and their combination without connecting (the files named by the
    /// TLS options are read). `config_invalid` names the offending option.
    pub fn validate(&self) -> Result<()> {
        self.plan().map(|_| ())
    }

    pub(crate) fn plan(&self) -> Result<Plan> {
        if self.urls.is_empty() {
            return Err(Error::config("redis.urls", "needs at least one URL"));
        }
        if self.mode == RedisMode::Standalone && self.urls.len() > 1 {
            return Err(Error::config(
                "redis.urls",
                &format!(
                    "has {} URLs, but standalone mode takes exactly one (set mode to cluster for seed nodes, or sentinel for sentinels)",
                    self.urls.len()
                ),
            ));
        }
        let mut nodes = Vec::with_capacity(self.urls.len());
        let mut schemes = Vec::with_capacity(self.urls.len());
        for url in &self.urls {
            let (scheme, info) = parse_url(url)?;
            if scheme == "redis+unix" && self.mode != RedisMode::Standalone {
                return Err(Error::config("redis.urls", "a unix socket URL works in standalone mode only"));
            }
            if self.mode == RedisMode::Cluster && info.db != 0 {
                return Err(Error::config(
                    "redis.urls",
                    &format!("{} selects a database, but a cluster has only db 0", redact(url)),
                ));
            }
            schemes.push(scheme);
            nodes.push(info);
        }
        if schemes.iter().any(|s| *s != schemes[0]) {
            return Err(Error::config(
                "redis.urls",
                "mixes schemes: every URL must be redis:// or every one rediss://",
            ));
        }
        let tls = schemes[0] == "rediss";
        match (self.mode, &self.service_name) {
            (RedisMode::Sentinel, None) => {
                return Err(Error::config(
                    "redis.service_name",
                    "is required in sentinel mode (the name sentinels monitor)",
                ));
            }
            (RedisMode::Sentinel, Some(name)) if name.is_empty() => {
                return Err(Error::config("redis.service_name", "must not be empty"));
            }
            (RedisMode::Standalone | RedisMode::Cluster, Some(_)) => {
                return Err(Error::config("redis.service_name", "is for sentinel mode only"));
            }
            _ => {}
        }
        let any_tls_file = self.tls_ca_file.is_some() || self.tls_cert_file.is_some() || self.tls_key_file.is_some();
        if any_tls_file && !tls {
            return Err(Error::config(
                "redis.tls_ca_file",
                "and the other tls_* options need rediss:// URLs (they would be ignored on a plaintext connection)",
            ));
        }
        let files = if tls {
            let ca = self.tls_ca_file.as_ref().map(|p| read_pem(p, "redis.tls_ca_file", "CERTIFICATE")).transpose()?;
            let client = match (&self.tls_cert_file, &self.tls_key_file) {
                (Some(c), Some(k)) => Some((
                    read_pem(c, "redis.tls_cert_file", "CERTIFICATE")?,
                    read_pem(k, "redis.tls_key_file", "PRIVATE KEY")?,
                )),
                (None, None) => None,
                (Some(_), None) => return Err(Error::config("redis.tls_key_file", "is required with tls_cert_file")),
                (None, Some(_)) => return Err(Error::config("redis.tls_cert_file", "is required with tls_key_file")),
            };
            Some(super::tls::TlsConfig::new(
                ca.as_deref(),
                client.as_ref().map(|(cert, key)| (cert.as_slice(), key.as_slice())),
            )?)
        } else {
            None
        };
        let durable = match self.durable_replicas {
            0 => None,
            _ if self.deterministic_replay => {
                return Err(Error::config(
                    "redis.durable_replicas",
                    "does not combine with deterministic_replay (a test mode that sends its own commands)",
                ));
            }
            n if n > 64 => {
                return Err(Error::config("redis.durable_replicas", &format!("must be at most 64, got {n}")));
            }
            n if self.durable_timeout_ms == 0 || self.durable_timeout_ms >= self.timeout_ms.max(1) => {
                return Err(Error::config(
                    "redis.durable_timeout_ms",
                    &format!(
                        "must be at least 1 and less than timeout_ms ({}) with durable_replicas = {n}, got {}",
                        self.timeout_ms, self.durable_timeout_ms
                    ),
                ));
            }
            n => Some(super::engine::Durable { replicas: n, timeout_ms: self.durable_timeout_ms }),
        };
        let sentinel_auth = match (&self.sentinel_username, &self.sentinel_password) {
            (None, None) => None,
            _ if self.mode != RedisMode::Sentinel => {
                return Err(Error::config("redis.sentinel_password", "is for sentinel mode only"));
            }
            (Some(_), None) => {
                return Err(Error::config("redis.sentinel_password", "is required with sentinel_username"));
            }
            (user, Some(password)) => Some((user.clone(), password.clone())),
        };
        Ok(Plan {
            sentinel_auth,
            durable,
            mode: self.mode,
            urls: self.urls.clone(),
            nodes,
            tls: files,
            service_name: self.service_name.clone(),
        })
    }
}

/// Splits a comma-separated list of URLs, trimming blanks and dropping empty items.
pub fn split_urls(urls: &str) -> Vec<String> {
    urls.split(',').map(str::trim).filter(|u| !u.is_empty()).map(str::to_string).collect()
}

/// `url` with its password replaced by `***`, for error messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..s + 3], &userinfo[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

fn parse_url(url: &str) -> Result<(&'static str, super::connect::Endpoint)> {
    let scheme = match url.split_once("://").map(|(s, _)| s) {
        Some("redis") => "redis",
        Some("rediss") => "rediss",
        Some("redis+unix" | "unix") => "redis+unix",
        _ => {
            return Err(Error::config(
                "redis.urls",
                &format!("{:?} is not a valid Redis URL (redis://, rediss:// or redis+unix://)", redact(url)),
            ));
        }
    };
    if url.contains('#') {
        // redis-rs read `#insecure` as "skip certificate verification": never offered.
        return Err(Error::config(
            "redis.urls",
            &format!("{:?} has a fragment; certificate verification cannot be turned off", redact(url)),
        ));
    }
    let endpoint = super::connect::Endpoint::parse(url)
        .map_err(|e| Error::config("redis.urls", &format!("{:?} is not a valid Redis URL: {e}", redact(url))))?;
    Ok((scheme, endpoint))
}

/// `path`'s PEM ([`crate::tls_roots::read_pem`]), its problems `option`'s.
fn read_pem(path: &std::path::Path, option: &str, label: &str) -> Result<Vec<u8>> {
    crate::tls_roots::read_pem(path, label, |why| Error::config(option, &format!("is {}, {why}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(o: RedisOptions, field: &str) {
        let e = o.validate().expect_err("must be refused");
        assert_eq!(e.code(), crate::ErrorCode::ConfigInvalid, "{e}");
        assert!(e.message().starts_with(field), "{e} should name {field}");
    }

    #[test]
    fn defaults_and_lists_validate() {
        RedisOptions::default().validate().unwrap();
        let o = RedisOptions { mode: RedisMode::Cluster, ..RedisOptions::from_urls("redis://a:1, redis://b:2,") };
        assert_eq!(o.urls, ["redis://a:1", "redis://b:2"]);
        o.validate().unwrap();
        let o = RedisOptions {
            mode: RedisMode::Sentinel,
            service_name: Some("main".into()),
            ..RedisOptions::from_urls("redis://u:p@s1:26379,redis://u:p@s2:26379")
        };
        o.validate().unwrap();
        RedisOptions::from_urls("rediss://h:6380").validate().unwrap();
        RedisOptions::from_urls("redis+unix:///tmp/r.sock").validate().unwrap();
    }

    #[test]
    fn bad_combinations_are_config_invalid() {
        invalid(RedisOptions { urls: vec![], ..RedisOptions::default() }, "redis.urls");
        invalid(RedisOptions::from_urls("redis://a:1,redis://b:2"), "redis.urls");
        invalid(RedisOptions::from_urls("http://a:1"), "redis.urls");
        invalid(RedisOptions::from_urls("rediss://a:1/#insecure"), "redis.urls");
        invalid(
            RedisOptions { mode: RedisMode::Cluster, ..RedisOptions::from_urls("redis://a:1,rediss://b:2") },
            "redis.urls",
        );
        invalid(RedisOptions { mode: RedisMode::Cluster, ..RedisOptions::from_urls("redis://a:1/3") }, "redis.urls");
        invalid(
            RedisOptions { mode: RedisMode::Cluster, ..RedisOptions::from_urls("redis+unix:///tmp/s") },
            "redis.urls",
        );
        invalid(RedisOptions { mode: RedisMode::Sentinel, ..RedisOptions::default() }, "redis.service_name");
        invalid(RedisOptions { service_name: Some("m".into()), ..RedisOptions::default() }, "redis.service_name");
        invalid(
            RedisOptions { tls_ca_file: Some("/nonexistent".into()), ..RedisOptions::default() },
            "redis.tls_ca_file",
        );
        invalid(
            RedisOptions { tls_ca_file: Some("/nonexistent".into()), ..RedisOptions::from_urls("rediss://h:1") },
            "redis.tls_ca_file",
        );
        invalid(
            RedisOptions { tls_cert_file: Some("/x".into()), ..RedisOptions::from_urls("rediss://h:1") },
            "redis.tls_key_file",
        );
        invalid(
            RedisOptions { tls_key_file: Some("/x".into()), ..RedisOptions::from_urls("rediss://h:1") },
            "redis.tls_cert_file",
        );
        let not_pem = std::env::temp_dir().join(format!("tk-not-pem-{}", std::process::id()));
        std::fs::write(&not_pem, "hello").unwrap();
        invalid(
            RedisOptions { tls_ca_file: Some(not_pem.clone()), ..RedisOptions::from_urls("rediss://h:1") },
            "redis.tls_ca_file",
        );
        std::fs::remove_file(not_pem).unwrap();
        let durable = |replicas, timeout| RedisOptions {
            durable_replicas: replicas,
            durable_timeout_ms: timeout,
            timeout_ms: 500,
            ..RedisOptions::default()
        };
        durable(1, 100).validate().unwrap();
        durable(0, 0).validate().unwrap();
        invalid(durable(1, 0), "redis.durable_timeout_ms");
        invalid(durable(1, 500), "redis.durable_timeout_ms");
        invalid(durable(65, 100), "redis.durable_replicas");
        invalid(RedisOptions { deterministic_replay: true, ..durable(1, 100) }, "redis.durable_replicas");
        invalid(
            RedisOptions { sentinel_password: Some("p".into()), ..RedisOptions::default() },
            "redis.sentinel_password",
        );
        let sentinel = RedisOptions {
            mode: RedisMode::Sentinel,
            service_name: Some("m".into()),
            sentinel_username: Some("u".into()),
            ..RedisOptions::default()
        };
        invalid(sentinel.clone(), "redis.sentinel_password");
        RedisOptions { sentinel_password: Some("p".into()), ..sentinel }.validate().unwrap();
    }

    #[test]
    fn names_parse_and_round_trip() {
        for m in [RedisMode::Standalone, RedisMode::Cluster, RedisMode::Sentinel] {
            assert_eq!(RedisMode::parse(m.as_str()).unwrap(), m);
        }
        for s in [Scripting::Auto, Scripting::Functions, Scripting::Eval] {
            assert_eq!(Scripting::parse(s.as_str()).unwrap(), s);
        }
        assert_eq!(RedisMode::parse("Cluster").unwrap_err().code(), crate::ErrorCode::ConfigInvalid);
        assert_eq!(Scripting::parse("lua").unwrap_err().code(), crate::ErrorCode::ConfigInvalid);
    }

    #[test]
    fn errors_never_print_passwords() {
        assert_eq!(redact("redis://u:secret@h:1"), "redis://u:***@h:1");
        let e = RedisOptions::from_urls("redis://u:secret@h:1,redis://u:secret@h:2").validate().unwrap_err();
        assert!(!e.message().contains("secret"), "{e}");
    }

    /// The store's own URL parser against redis-rs's (the one the store used before), on every
    /// URL form the suites and the docs use: the same node, credentials, database and protocol,
    /// and the same URLs refused.
    #[test]
    fn urls_parse_as_redis_rs_parses_them() {
        use super::super::connect::Endpoint;
        use redis::{ConnectionAddr, IntoConnectionInfo};
        let theirs = |url: &str| {
            let info = url.into_connection_info().ok()?;
            let r = info.redis_settings();
            let (host, port, path, tls) = match info.addr() {
                ConnectionAddr::Tcp(h, p) => (h.clone(), *p, None, false),
                ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port, None, true),
                ConnectionAddr::Unix(p) => (String::new(), 0, Some(p.to_string_lossy().into_owned()), false),
                _ => unreachable!(),
            };
            Some(Endpoint {
                host,
                port,
                path,
                tls,
                db: r.db(),
                username: r.username().map(str::to_string),
                password: r.password().map(str::to_string),
                resp3: r.protocol().supports_resp3(),
            })
        };
        let corpus = [
            "redis://127.0.0.1:6379",
            "redis://127.0.0.1",
            "redis://localhost:6390/",
            "redis://127.0.0.1:6379/2",
            "redis://h:1/15?protocol=resp3",
            "redis://h:1/?protocol=3",
            "redis://h:1/?protocol=resp2",
            "redis://user:pw@127.0.0.1:6379",
            "redis://:pw@127.0.0.1:6379/2?protocol=resp3",
            "redis://user@h:1",
            "redis://us%40er:p%3Aw%2F%20x@h:1/1",
            "redis://:%C3%A9t%C3%A9@h:1",
            "redis://[::1]:6379/3",
            "redis://[2001:db8::1]",
            "rediss://localhost",
            "rediss://u:p@localhost:6380/4?protocol=resp3",
            "redis+unix:///tmp/r.sock",
            "redis+unix:///tmp/r.sock?db=3",
            "redis+unix:///tmp/r.sock?db=1&user=u&pass=p%20w&protocol=resp3",
            "unix:///var/run/redis/redis.sock",
            "unix:///tmp/a%20b.sock?db=2",
            // Refused by both.
            "redis://h:1/x",
            "redis+unix:///tmp/r.sock?db=x",
            "redis://h:1/?protocol=4",
            "redis://0.0.0.0:6379",
            "redis://[::]:6379",
            "redis://",
            "redis://h:99999",
            "redis://:%FF@h:1",
        ];
        for url in corpus {
            assert_eq!(Endpoint::parse(url).ok(), theirs(url), "{url}");
        }
        let parsed = Endpoint::parse("rediss://u:p@h:6380/4").unwrap();
        assert_eq!(parsed.at("n2", 7001), Endpoint { host: "n2".into(), port: 7001, ..parsed });
    }
}
