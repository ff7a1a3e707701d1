//! A native driver of the REST protocol for the tests (the REST path against a real Redis
//! behind `tests/restfront/`): a blocking HTTP/1.1 client over a `TcpStream` (plain `http://`;
//! no TLS, no dependency), and [`RestStore`], a [`Store`] on it, built on the same public
//! prepared calls ([`RestCall`]) as the WebAssembly build's driver, JavaScript's `fetch`.
//!
//! Every request is bounded by the store's `timeout_ms` (connect, write and read); a request
//! that fails or times out after it was written is never sent again ([`RestCall::fail`]).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use throttlekit::redis::prepared::PreparedCall;
use throttlekit::redis::rest::limiter::RestCall;
use throttlekit::redis::rest::{
    self, HEX_ENCODING, Locking, Next, ReplayBook, Request, headers, timed_out, transport_error,
};
use throttlekit::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};
use throttlekit::{Error, Result};

/// Where and how a [`RestStore`] (or [`Client`]) reaches the REST server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestOptions {
    /// `http://host:port` (a path after it is kept as the base of every request).
    pub url: String,
    /// The Bearer token.
    pub token: String,
    /// Bound on each request, connect to last byte, in ms.
    pub timeout_ms: u64,
    /// Which script variant to send.
    pub locking: Locking,
}

impl RestOptions {
    /// `url` and `token`, a 1000 ms timeout, the plain scripts.
    pub fn new(url: &str, token: &str) -> RestOptions {
        RestOptions { url: url.to_string(), token: token.to_string(), timeout_ms: 1000, locking: Locking::Global }
    }
}

/// A blocking HTTP/1.1 client for one REST server: one connection per request
/// (`Connection: close`), so a late reply is never read as another request's.
#[derive(Clone, Debug)]
pub struct Client {
    host: String,
    port: u16,
    base: String,
    token: String,
    timeout: Duration,
}

/// An HTTP reply: status and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl Client {
    /// A client for `options` (`config_invalid` for a URL that is not `http://host[:port][/base]`).
    pub fn new(options: &RestOptions) -> Result<Client> {
        let rest = options
            .url
            .strip_prefix("http://")
            .ok_or_else(|| Error::config("rest.url", "must start with http:// (this client speaks no TLS)"))?;
        let (authority, base) = rest.split_once('/').map_or((rest, ""), |(a, b)| (a, b));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| Error::config("rest.url", "has a bad port"))?),
            None => (authority, 80),
        };
        if host.is_empty() {
            return Err(Error::config("rest.url", "has no host"));
        }
        Ok(Client {
            host: host.to_string(),
            port,
            base: if base.trim_end_matches('/').is_empty() {
                String::new()
            } else {
                format!("/{}", base.trim_end_matches('/'))
            },
            token: options.token.clone(),
            timeout: Duration::from_millis(options.timeout_ms.max(1)),
        })
    }

    /// `POST`s `request` with `extra` headers; `Err` is a failure or timeout (`store_unavailable`).
    pub fn post(&self, request: &Request, extra: &[(&str, &str)]) -> Result<HttpReply> {
        let deadline = Instant::now() + self.timeout;
        let ms = self.timeout.as_millis() as u64;
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| transport_error(&format!("cannot resolve {}: {e}", self.host)))?
            .next()
            .ok_or_else(|| transport_error(&format!("{} has no address", self.host)))?;
        let mut stream = TcpStream::connect_timeout(&addr, self.timeout)
            .map_err(|e| transport_error(&format!("cannot connect to {addr}: {e}")))?;
        let left = |now: Instant| deadline.checked_duration_since(now).filter(|d| !d.is_zero());
        let mut head = format!(
            "POST {}{} HTTP/1.1\r\nHost: {}:{}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.base,
            request.path,
            self.host,
            self.port,
            request.body.len()
        );
        for (k, v) in headers(&self.token) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let io = |e: std::io::Error| {
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                timed_out(ms)
            } else {
                transport_error(&format!("the REST request failed: {e}"))
            }
        };
        stream.set_write_timeout(left(Instant::now()).or(Some(Duration::from_millis(1)))).map_err(io)?;
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(request.body.as_bytes())).map_err(io)?;
        let mut reader = BufReader::new(stream);
        let read_line = |reader: &mut BufReader<TcpStream>| -> Result<String> {
            let d = left(Instant::now()).ok_or_else(|| timed_out(ms))?;
            reader.get_ref().set_read_timeout(Some(d)).map_err(io)?;
            let mut line = String::new();
            if reader.read_line(&mut line).map_err(io)? == 0 {
                return Err(transport_error("the REST server closed the connection before replying"));
            }
            Ok(line)
        };
        let status_line = read_line(&mut reader)?;
        let status = status_line
            .strip_prefix("HTTP/1.")
            .and_then(|s| s.get(2..5))
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| transport_error(&format!("not an HTTP reply: {status_line:?}")))?;
        let mut length: Option<usize> = None;
        loop {
            let line = read_line(&mut reader)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().ok();
            }
        }
        let mut body = Vec::new();
        let d = left(Instant::now()).ok_or_else(|| timed_out(ms))?;
        reader.get_ref().set_read_timeout(Some(d)).map_err(io)?;
        match length {
            Some(n) => {
                body.resize(n, 0);
                read_exact_by(&mut reader, &mut body, deadline, ms)?;
            }
            None => {
                reader.read_to_end(&mut body).map_err(io)?;
            }
        }
        Ok(HttpReply { status, body })
    }

    /// Sends `call`'s requests until every call in it is over, each path into `paths`; a failed
    /// request ends the calls still in flight.
    pub fn run(&self, mut call: RestCall, paths: &mut Vec<&'static str>) -> RestCall {
        loop {
            let request = call.request();
            paths.push(request.path);
            let extra: &[(&str, &str)] = if request.hex { &[HEX_ENCODING] } else { &[] };
            let next = match self.post(&request, extra) {
                Ok(reply) => call.feed(reply.status, &reply.body),
                Err(e) => call.fail(e),
            };
            if next == Next::Done {
                return call;
            }
        }
    }
}

/// Reads `buf` whole before `deadline` (the read timeout is set per read).
fn read_exact_by(reader: &mut BufReader<TcpStream>, buf: &mut [u8], deadline: Instant, ms: u64) -> Result<()> {
    let mut at = 0;
    while at < buf.len() {
        let d =
            deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).ok_or_else(|| timed_out(ms))?;
        reader.get_ref().set_read_timeout(Some(d)).map_err(|e| transport_error(&e.to_string()))?;
        match reader.read(&mut buf[at..]) {
            Ok(0) => return Err(transport_error("the REST server closed the connection mid-reply")),
            Ok(n) => at += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(timed_out(ms));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(transport_error(&format!("the REST request failed: {e}"))),
        }
    }
    Ok(())
}

/// A [`Store`] on a REST Redis: every apply is one script call over [`Client`] (`EVALSHA`,
/// then `EVAL` once after `NOSCRIPT`), decoded by the engine as on RESP. Its sync methods
/// block the calling thread for at most `timeout_ms` per request; its async ones do the same
/// inside the future.
pub struct RestStore {
    client: Client,
    locking: Locking,
    /// Conformance runs: every key as `ns:key`.
    ns: Option<String>,
    replay: Option<ReplayBook>,
}

impl std::fmt::Debug for RestStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestStore").field("host", &self.client.host).field("port", &self.client.port).finish()
    }
}

impl RestStore {
    /// A store for `options` (no request is made until the first call).
    pub fn new(options: &RestOptions) -> Result<RestStore> {
        Ok(RestStore { client: Client::new(options)?, locking: options.locking, ns: None, replay: None })
    }

    /// The store's client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn key<'k>(&self, key: &'k str) -> std::borrow::Cow<'k, str> {
        match &self.ns {
            Some(ns) => format!("{ns}:{key}").into(),
            None => key.into(),
        }
    }

    fn single(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        self.run(PreparedCall::single(&self.key(key), now, transform)).into_reply()
    }

    fn multi(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        let keys: Vec<_> = dims.iter().map(|d| self.key(d.key)).collect();
        let dims: Vec<DimensionCall<'_>> =
            dims.iter().zip(&keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect();
        self.run(PreparedCall::multi(rule, &dims, now)).into_multi_reply()
    }

    fn run(&self, call: PreparedCall) -> RestCall {
        let mut call = RestCall::of(vec![call], self.locking);
        if let Some(book) = &self.replay {
            call = call.replayed(book);
        }
        self.client.run(call, &mut Vec::new())
    }

    fn del(&self, key: &str) -> Result<()> {
        let reply = self.client.post(&rest::del(&self.key(key)), &[])?;
        rest::finish_del(reply.status, &reply.body)
    }
}

impl Store for RestStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move { self.single(key, now, transform) })
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        self.single(key, now, transform)
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        Box::pin(async move { self.multi(rule, dims, now) })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        self.multi(rule, dims, now)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.reset_sync(key) })
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        if let Some(book) = &self.replay {
            book.forget(&self.key(key));
        }
        self.del(key)
    }

    fn is_sync(&self) -> bool {
        true
    }
}

/// A factory of fresh deterministic-replay REST stores (expiry on the caller's clock, as
/// `throttlekit::redis::conformance_stores` does on RESP), each in its own key namespace: what
/// a conformance run on the REST path replays every vectors file on.
pub fn conformance_stores(options: RestOptions) -> Result<impl FnMut() -> Result<std::sync::Arc<dyn Store>>> {
    let run = format!(
        "throttlekit-rest-conformance:{}-{}",
        std::process::id(),
        throttlekit::Clock::now_ms(&throttlekit::SystemClock)
    );
    let mut n = 0u64;
    Ok(move || {
        n += 1;
        Ok(std::sync::Arc::new(RestStore {
            client: Client::new(&options)?,
            locking: options.locking,
            ns: Some(format!("{run}:{n}")),
            replay: Some(Default::default()),
        }) as std::sync::Arc<dyn Store>)
    })
}

/// A conformance store deletes the keys it wrote (their full names, namespace included).
impl Drop for RestStore {
    fn drop(&mut self) {
        if let Some(book) = &self.replay {
            let keys = book.take_keys();
            let ns = self.ns.take();
            for k in keys {
                let _ = self.del(&k);
            }
            self.ns = ns;
        }
    }
}
