//! The HTTP edge: core's rate-limit fields and client identity, for the middleware in
//! `throttlekit.asgi`, `throttlekit.fastapi` and `throttlekit.wsgi`.
//!
//! Nothing here formats a header, parses an address or does arithmetic: `ClientIdentity` wraps
//! `throttlekit::http::ClientIdentity`, and `HttpLimiter` runs a check and hands its result to
//! core's `HttpEdge`, which settles the outcome (fail policy, shadow mode, the status and problem
//! body) and renders the header lines. The check and the rendering happen in one native call
//! and at one clock reading, so the fields describe exactly the instant the decision was made
//! (two readings a millisecond apart could round `t` differently), and a request costs one
//! crossing into Rust instead of several.

use std::sync::Arc;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use throttlekit::http::{self, Action, ClientKeyOptions, ForwardedHeader, HeaderOptions, HttpEdge, LineSink, Outcome};
use throttlekit::store::Now;
use throttlekit::{Clock, FailPolicy};

use crate::aio::awaitable;
use crate::decision::{Decision, MultiDecision};
use crate::error::{self, IntoPyResult};
use crate::validate::{self, Cost, string, strings};

/// Which client a request counts against: the socket peer, or (behind trusted proxies) the
/// rightmost untrusted hop of the forwarding header; IPv6 grouped by `ipv6_prefix`.
#[pyclass(frozen, module = "throttlekit")]
pub struct ClientIdentity {
    inner: http::ClientIdentity,
    /// Without trusted proxies core never reads a header, so none is converted.
    reads_headers: bool,
    /// The one header name core reads, lower case.
    header: &'static str,
}

/// A header name or value as ASGI (`bytes`) or WSGI and most frameworks (`str`) give it.
/// Bytes are Latin-1, as HTTP/1.1 field values are.
fn text(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<String> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().iter().map(|&c| c as char).collect());
    }
    Ok(string(obj, arg)?.to_owned())
}

#[pymethods]
impl ClientIdentity {
    /// `trusted_proxies`: CIDRs or addresses whose `forwarded_header` (`"x-forwarded-for"` or
    /// `"forwarded"`) is believed; none by default, so the peer is the client.
    #[new]
    #[pyo3(signature = (*, trusted_proxies = None, ipv6_prefix = None, forwarded_header = None))]
    #[pyo3(text_signature = "(*, trusted_proxies=(), ipv6_prefix=64, forwarded_header='x-forwarded-for')")]
    fn new(
        trusted_proxies: Option<&Bound<'_, PyAny>>,
        ipv6_prefix: Option<&Bound<'_, PyAny>>,
        forwarded_header: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut options = ClientKeyOptions::default();
        if let Some(t) = trusted_proxies.filter(|t| !t.is_none()) {
            options.trusted_proxies = strings(t, "trusted_proxies")?;
        }
        if let Some(p) = ipv6_prefix.filter(|p| !p.is_none()) {
            // Out of 1..=128 is core's error; only the type is checked here.
            options.ipv6_prefix = u8::try_from(validate::count(p, "ipv6_prefix")?).unwrap_or(0);
        }
        if let Some(h) = forwarded_header.filter(|h| !h.is_none()) {
            options.forwarded_header = match string(h, "forwarded_header")? {
                "x-forwarded-for" => ForwardedHeader::XForwardedFor,
                "forwarded" => ForwardedHeader::Forwarded,
                _ => return Err(error::config("forwarded_header", "must be \"x-forwarded-for\" or \"forwarded\"")),
            };
        }
        let header = match options.forwarded_header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        };
        let inner = http::ClientIdentity::new(&options).py()?;
        Ok(ClientIdentity { inner, reads_headers: !options.trusted_proxies.is_empty(), header })
    }

    /// The key of the client behind `peer` (the socket address as text), given the request's
    /// headers as `(name, value)` pairs of `str` or `bytes`. A peer that is not an IP address is
    /// `config_invalid`: give the middleware a key function then.
    #[pyo3(signature = (peer, headers = None))]
    #[pyo3(text_signature = "(self, peer, headers=())")]
    fn key(&self, peer: &Bound<'_, PyAny>, headers: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        let peer = string(peer, "peer")?;
        let mut pairs: Vec<(String, String)> = Vec::new();
        if self.reads_headers
            && let Some(h) = headers.filter(|h| !h.is_none())
        {
            let iter = h.try_iter().map_err(|_| error::wrong_type("headers", "a list of (name, value)", h))?;
            for (i, item) in iter.enumerate() {
                let item = item?;
                let pair = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2);
                let Some(pair) = pair else {
                    return Err(error::wrong_type(&format!("headers[{i}]"), "a (name, value) pair", &item));
                };
                let name = text(&pair.get_item(0)?, "header name")?;
                // Only the configured header is read by core; skip converting the others.
                if name.trim().eq_ignore_ascii_case(self.header) {
                    pairs.push((name, text(&pair.get_item(1)?, "header value")?));
                }
            }
        }
        let refs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.inner.key_for_peer(peer, &refs).py()
    }
}

/// The limiter an `HttpLimiter` checks with.
enum Checker {
    Single(Arc<throttlekit::Limiter>),
    Multi(Arc<throttlekit::MultiLimiter>),
}

/// A check's result with everything the response needs, as core's HTTP edge decided it: the
/// decision, what the middleware does (`action`, `status`), the header lines and the body.
#[pyclass(frozen, get_all, module = "throttlekit")]
pub struct HttpDecision {
    /// Whether the request is admitted.
    pub allowed: bool,
    /// The `Decision`, or the `MultiDecision` of a multi limiter.
    pub decision: Py<PyAny>,
    /// The response header lines, in order: the rate-limit fields, then `Retry-After` on a denial.
    pub headers: Py<PyList>,
    /// When denied: core's RFC 9457 `application/problem+json` body (`quota-exceeded`).
    pub problem: Option<String>,
    /// What the middleware does: `"forward"`, `"shadow"` (denied, but forwarded in shadow
    /// mode; the hook is told) or `"deny"` (the hook is told, then 429).
    pub action: &'static str,
    /// The status the middleware answers with itself: 429 for `"deny"`, 0 when it forwards.
    pub status: u16,
    /// The body of that answer (`problem`'s bytes for `"deny"`, empty when it forwards).
    pub body: Py<PyBytes>,
}

#[pymethods]
impl HttpDecision {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "HttpDecision(allowed={}, action={:?}, headers={})",
            if self.allowed { "True" } else { "False" },
            self.action,
            self.headers.bind(py).repr()?
        ))
    }
}

/// One check's decision, before it becomes Python objects.
enum Checked {
    Single(throttlekit::Decision),
    Multi(throttlekit::MultiDecision),
}

/// Everything one check needs, owned, so the async path can move it to a tokio task.
struct Request {
    checker: Arc<Checker>,
    clock: Arc<dyn Clock>,
    edge: Arc<HttpEdge>,
    keys: Vec<String>,
    cost: u64,
}

/// A request's outcome and its header lines (core's).
struct Rendered {
    action: Action,
    checked: Checked,
    lines: Vec<(&'static str, String)>,
}

/// Core's lines as `(name, value)` pairs.
struct Pairs(Vec<(&'static str, String)>);

impl LineSink for Pairs {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.0.push((name, String::new()));
        // Cannot be empty: a line was just pushed.
        &mut self.0.last_mut().expect("a line was pushed").1
    }
}

impl Request {
    fn refs(&self) -> Vec<&str> {
        self.keys.iter().map(String::as_str).collect()
    }

    fn check_sync(&self, now: i64) -> throttlekit::Result<Checked> {
        match &*self.checker {
            Checker::Single(l) => l.check_sync_at(&self.keys[0], self.cost, now).map(Checked::Single),
            Checker::Multi(m) => m.check_sync_at(&self.refs(), self.cost, now).map(Checked::Multi),
        }
    }

    async fn check(&self, now: Now) -> throttlekit::Result<Checked> {
        match &*self.checker {
            Checker::Single(l) => l.check_at(&self.keys[0], self.cost, now).await.map(Checked::Single),
            Checker::Multi(m) => m.check_at(&self.refs(), self.cost, now).await.map(Checked::Multi),
        }
    }

    /// Core's outcome for the check's `result` at `now` (the fail policy and shadow mode
    /// applied) and its header lines. Nothing decided (the store did not answer and the policy
    /// raises) is the store's error, which `RateLimitOptions.failed` answers with core's 503.
    fn settle(&self, result: throttlekit::Result<Checked>, now: i64) -> throttlekit::Result<Rendered> {
        let raised = result.as_ref().err().cloned();
        let unavailable = || raised.clone().unwrap_or_else(|| throttlekit::Error::store("the store did not answer"));
        let refs = self.refs();
        let mut lines = Pairs(Vec::new());
        match &*self.checker {
            Checker::Single(l) => {
                let result = result.and_then(|c| match c {
                    Checked::Single(d) => Ok(d),
                    Checked::Multi(_) => Err(throttlekit::Error::config("limiter", "changed kind during a check")),
                });
                let o = self.edge.settle(l, result, now)?;
                let Some(d) = o.decision else { return Err(unavailable()) };
                self.edge.write_outcome_lines(l, refs[0], &o, &mut lines)?;
                Ok(Rendered { action: o.action, checked: Checked::Single(d), lines: lines.0 })
            }
            Checker::Multi(m) => {
                let result = result.and_then(|c| match c {
                    Checked::Multi(d) => Ok(d),
                    Checked::Single(_) => Err(throttlekit::Error::config("limiter", "changed kind during a check")),
                });
                let o = self.edge.settle_multi(m, result, now)?;
                self.edge.write_multi_outcome_lines(m, &refs, &o, &mut lines)?;
                let Some(d) = o.decision else { return Err(unavailable()) };
                Ok(Rendered { action: o.action, checked: Checked::Multi(d), lines: lines.0 })
            }
        }
    }
}

impl<'py> IntoPyObject<'py> for Rendered {
    type Target = HttpDecision;
    type Output = Bound<'py, HttpDecision>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, HttpDecision>> {
        let binding = match &self.checked {
            Checked::Single(d) => *d,
            Checked::Multi(m) => m.decision,
        };
        let outcome = Outcome { action: self.action, decision: Some(binding), now_ms: 0 };
        let body = outcome.body();
        let problem = (!binding.allowed).then(|| http::quota_exceeded_body(&binding));
        let decision = match self.checked {
            Checked::Single(d) => Decision::from(d).into_py_any(py)?,
            Checked::Multi(m) => MultiDecision::from(m).into_py_any(py)?,
        };
        let headers = PyList::empty(py);
        for (name, value) in self.lines {
            headers.append(PyTuple::new(py, [PyString::intern(py, name), PyString::new(py, &value)])?)?;
        }
        let action = match self.action {
            Action::Forward => "forward",
            Action::Shadow => "shadow",
            Action::Deny => "deny",
            Action::Unavailable => "unavailable",
        };
        Bound::new(
            py,
            HttpDecision {
                allowed: binding.allowed,
                decision,
                headers: headers.unbind(),
                problem,
                action,
                status: outcome.status(),
                body: PyBytes::new(py, body.unwrap_or_default().as_bytes()).unbind(),
            },
        )
    }
}

/// A limiter (or multi limiter) and core's HTTP edge: how to render its decisions as response
/// fields, the middleware's fail policy and shadow mode.
#[pyclass(frozen, module = "throttlekit")]
pub struct HttpLimiter {
    checker: Arc<Checker>,
    clock: Arc<dyn Clock>,
    edge: Arc<HttpEdge>,
    /// As given (`None`: the limiter's own, which raises like `"raise"`).
    fail_policy: Option<FailPolicy>,
    server_clock: bool,
    io: bool,
}

impl HttpLimiter {
    fn request(&self, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Request> {
        let keys = match &*self.checker {
            Checker::Single(_) => vec![string(key, "key")?.to_owned()],
            // One key for every dimension, as the Rust layer's default, or one per dimension.
            Checker::Multi(m) if key.is_instance_of::<PyString>() => {
                vec![string(key, "key")?.to_owned(); m.dimensions().len()]
            }
            Checker::Multi(_) => strings(key, "key")?,
        };
        Ok(Request {
            checker: self.checker.clone(),
            clock: self.clock.clone(),
            edge: self.edge.clone(),
            keys,
            cost: cost.0,
        })
    }
}

#[pymethods]
impl HttpLimiter {
    /// `limiter`: a `Limiter` or a `MultiLimiter`. `family`: `"draft-10"` (default), `"draft-7"`,
    /// `"draft-6"` or `"legacy"`. `policy_name` names a single limiter's policy (a multi
    /// limiter's are its dimensions' names). `partition_key_secret` adds draft-10's `pk`.
    /// `fail_policy` (`"fail_open"`, `"fail_closed"`, `"raise"`) decides when the store is
    /// unavailable and the limiter's own policy raised; `None` keeps the limiter's. `shadow`:
    /// a denied request's `action` is `"shadow"` (forward it) instead of `"deny"`.
    #[new]
    #[pyo3(signature = (limiter, *, family = None, policy_name = None, partition_key_secret = None, fail_policy = None, shadow = false))]
    #[pyo3(
        text_signature = "(limiter, *, family='draft-10', policy_name='default', partition_key_secret=None, fail_policy=None, shadow=False)"
    )]
    fn new(
        limiter: &Bound<'_, PyAny>,
        family: Option<&Bound<'_, PyAny>>,
        policy_name: Option<&Bound<'_, PyAny>>,
        partition_key_secret: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
        shadow: bool,
    ) -> PyResult<Self> {
        let (checker, clock, server_clock, io) = if let Ok(l) = limiter.cast::<crate::limiter::Limiter>() {
            let l = l.get();
            (Checker::Single(l.inner.clone()), l.inner.clock().clone(), l.server_clock, l.io)
        } else if let Ok(m) = limiter.cast::<crate::multi::MultiLimiter>() {
            let m = m.get();
            (Checker::Multi(m.inner.clone()), m.inner.clock().clone(), m.server_clock, m.io)
        } else {
            return Err(error::wrong_type("limiter", "a Limiter or a MultiLimiter", limiter));
        };
        let mut options = HeaderOptions::default();
        if let Some(f) = family.filter(|f| !f.is_none()) {
            options.family = http::Family::parse(string(f, "family")?).py()?;
        }
        if let Some(p) = policy_name.filter(|p| !p.is_none()) {
            options.policy_name = string(p, "policy_name")?.to_owned();
        }
        if let Some(s) = partition_key_secret.filter(|s| !s.is_none()) {
            options.partition_key_secret = Some(string(s, "partition_key_secret")?.to_owned());
        }
        let fail_policy = fail_policy.filter(|p| !p.is_none()).map(validate::fail_policy).transpose()?;
        let edge = HttpEdge::new(options, &ClientKeyOptions::default(), fail_policy.unwrap_or(FailPolicy::Raise))
            .py()?
            .with_shadow(shadow);
        Ok(HttpLimiter { checker: Arc::new(checker), clock, edge: Arc::new(edge), fail_policy, server_clock, io })
    }

    /// Checks one request (`key`: a str; for a multi limiter a str for every dimension or a list
    /// of one key per dimension) and renders the fields, blocking. For WSGI servers.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn check_sync<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        cost: Cost,
    ) -> PyResult<Bound<'py, HttpDecision>> {
        let request = self.request(key, cost)?;
        // As `Limiter.check_sync`: the blocking path decides at this host's clock reading.
        let run = move || {
            let now = request.clock.now_ms();
            let result = request.check_sync(now);
            request.settle(result, now)
        };
        let rendered = crate::store::blocking(py, self.io, run);
        rendered.py()?.into_pyobject(py)
    }

    /// Awaitable `check_sync`: on Redis one round trip that never blocks the event loop.
    ///
    /// A limiter on the store's clock (`server_clock`) is decided at Redis's `TIME`, and its
    /// fields are rendered at this host's clock reading after the reply; where the two clocks
    /// differ, the fields' seconds (`t`, `reset`) can differ by that much, rounded up.
    #[pyo3(signature = (key, cost = Cost(1)))]
    #[pyo3(text_signature = "(self, key, cost=1)")]
    fn check<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>, cost: Cost) -> PyResult<Bound<'py, PyAny>> {
        let request = self.request(key, cost)?;
        let server_clock = self.server_clock;
        awaitable(py, async move {
            let read = request.clock.now_ms();
            let at = if server_clock { Now::Server } else { Now::At(read) };
            let result = request.check(at).await;
            let now = if server_clock { request.clock.now_ms() } else { read };
            request.settle(result, now).py()
        })
    }

    /// The header family.
    #[getter]
    fn family(&self) -> &'static str {
        match self.edge.header_options().family {
            http::Family::Draft6 => "draft-6",
            http::Family::Draft7 => "draft-7",
            http::Family::Draft10 => "draft-10",
            http::Family::Legacy => "legacy",
        }
    }

    /// A single limiter's policy name.
    #[getter]
    fn policy_name(&self) -> &str {
        &self.edge.header_options().policy_name
    }

    /// The middleware's fail policy, or `None` for the limiter's own.
    #[getter]
    fn fail_policy(&self) -> Option<&'static str> {
        self.fail_policy.map(validate::fail_policy_name)
    }

    /// Whether shadow mode is on.
    #[getter]
    fn shadow(&self) -> bool {
        self.edge.shadow()
    }

    fn __repr__(&self) -> String {
        format!("HttpLimiter(family={:?}, policy_name={:?})", self.family(), self.policy_name())
    }
}

/// `throttlekit::http::json::headers_json`: a header vectors request (JSON text) to its lines
/// (JSON text). For the conformance runner.
#[pyfunction]
pub fn http_headers_json(request: &Bound<'_, PyAny>) -> PyResult<String> {
    http::json::headers_json(string(request, "request")?).py()
}

/// `throttlekit::http::json::client_key_json`: a client key vectors request (JSON text) to the
/// key. For the conformance runner.
#[pyfunction]
pub fn http_client_key_json(request: &Bound<'_, PyAny>) -> PyResult<String> {
    http::json::client_key_json(string(request, "request")?).py()
}

/// Core's RFC 9457 body for a limiter that could not decide (`temporary-reduced-capacity`, 503).
#[pyfunction]
pub fn http_unavailable_body() -> String {
    http::unavailable_body()
}

/// Core's answer to a request that could not be decided because of an error whose code is
/// `code`: `(503, body)` for `"store_unavailable"`, else `(500, body)`, the body
/// `application/problem+json` bytes.
#[pyfunction]
pub fn http_error_response(py: Python<'_>, code: &Bound<'_, PyAny>) -> PyResult<(u16, Py<PyBytes>)> {
    let (status, body) = http::error_response(string(code, "code")?);
    Ok((status, PyBytes::new(py, body.as_bytes()).unbind()))
}
