//! The layer's options, and the one decision path every request takes.

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Method, Response, StatusCode, header};
use throttlekit::http::{
    Action, ClientKeyOptions, Decided, HeaderOptions, HttpEdge, Outcome, PROBLEM_CONTENT_TYPE, error_response,
};
use throttlekit::store::Now;
use throttlekit::{Decision, Error, FailPolicy, Limiter, MultiDecision, MultiLimiter, Result};

use crate::peer::peer_addr;

type KeyFn = dyn Fn(&Parts) -> Result<String> + Send + Sync;
type KeysFn = dyn Fn(&Parts) -> Result<Vec<String>> + Send + Sync;
type CostFn = dyn Fn(&Parts) -> u64 + Send + Sync;
type SkipFn = dyn Fn(&Parts) -> bool + Send + Sync;
type HookFn = dyn Fn(&LimitedEvent) + Send + Sync;
type DenyFn = dyn Fn(&Decision) -> Response<Bytes> + Send + Sync;

/// What the `on_limited` hook is told about each denied request (in shadow mode too).
#[derive(Clone, Debug)]
pub struct LimitedEvent {
    /// The key the request counted against (the first dimension's for a multi limiter).
    pub key: String,
    /// The decision (for a multi limiter, the binding dimension's).
    pub decision: Decision,
    /// The binding dimension's name, for a multi limiter.
    pub binding: Option<String>,
    /// True when shadow mode let the request through anyway.
    pub shadow: bool,
    /// The request's method.
    pub method: Method,
    /// The request's path.
    pub path: String,
}

#[derive(Clone)]
pub(crate) enum Limit {
    Single(Arc<Limiter>),
    Multi(Arc<MultiLimiter>),
}

/// Options shared by every clone of the service: core's [`HttpEdge`] (header options, client
/// identity, fail policy, shadow mode) settles each request; the rest is the user's own code.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) limit: Limit,
    pub(crate) edge: HttpEdge,
    key_fn: Option<Arc<KeyFn>>,
    keys_fn: Option<Arc<KeysFn>>,
    cost_fn: Option<Arc<CostFn>>,
    skip_fn: Option<Arc<SkipFn>>,
    on_limited: Option<Arc<HookFn>>,
    deny: Option<Arc<DenyFn>>,
}

/// A tower layer that rate-limits every request through a throttlekit limiter.
///
/// Defaults: the key is the client IP from the socket peer (no trusted proxies, IPv6 grouped
/// by /64), cost 1, nothing skipped, `draft-10` fields with policy name `default`, fail policy
/// `raise` (a store that cannot answer gives `503` with a problem body), shadow mode off, and
/// core's RFC 9457 body on a 429.
#[derive(Clone)]
pub struct RateLimitLayer {
    pub(crate) config: Arc<Config>,
}

impl RateLimitLayer {
    /// Limits with a single limiter.
    pub fn new(limiter: impl Into<Arc<Limiter>>) -> RateLimitLayer {
        RateLimitLayer::with_limit(Limit::Single(limiter.into()))
    }

    /// Limits with a multi limiter: every dimension gets the request's key, unless
    /// [`RateLimitLayer::keys_fn`] gives one key per dimension.
    pub fn multi(limiter: impl Into<Arc<MultiLimiter>>) -> RateLimitLayer {
        RateLimitLayer::with_limit(Limit::Multi(limiter.into()))
    }

    fn with_limit(limit: Limit) -> RateLimitLayer {
        // The default options are valid by construction.
        let edge = HttpEdge::new(HeaderOptions::default(), &ClientKeyOptions::default(), FailPolicy::Raise)
            .expect("the default HTTP options are valid");
        RateLimitLayer {
            config: Arc::new(Config {
                limit,
                edge,
                key_fn: None,
                keys_fn: None,
                cost_fn: None,
                skip_fn: None,
                on_limited: None,
                deny: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Config)) -> RateLimitLayer {
        // Copies the options only if this layer was cloned before (services built from the
        // clone keep the options they had).
        f(Arc::make_mut(&mut self.config));
        self
    }

    /// Which proxies' `X-Forwarded-For`/`Forwarded` to believe, and the IPv6 grouping, for the
    /// default key. Invalid options are `config_invalid`.
    pub fn client_key_options(self, options: &ClientKeyOptions) -> Result<RateLimitLayer> {
        let edge = self.config.edge.clone().with_client_key_options(options)?;
        Ok(self.edit(|c| c.edge = edge))
    }

    /// The header family, policy name and partition-key secret. Invalid options are
    /// `config_invalid`.
    pub fn header_options(self, options: HeaderOptions) -> Result<RateLimitLayer> {
        let edge = self.config.edge.clone().with_header_options(options)?;
        Ok(self.edit(|c| c.edge = edge))
    }

    /// Replaces the default key (the client IP). An error fails the request with a 500.
    pub fn key_fn(self, f: impl Fn(&Parts) -> Result<String> + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.key_fn = Some(Arc::new(f)))
    }

    /// For a multi limiter: one key per dimension, in declaration order.
    pub fn keys_fn(self, f: impl Fn(&Parts) -> Result<Vec<String>> + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.keys_fn = Some(Arc::new(f)))
    }

    /// The cost of a request (default 1).
    pub fn cost_fn(self, f: impl Fn(&Parts) -> u64 + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.cost_fn = Some(Arc::new(f)))
    }

    /// Requests for which this returns true are neither counted nor given headers.
    pub fn skip(self, f: impl Fn(&Parts) -> bool + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.skip_fn = Some(Arc::new(f)))
    }

    /// What to do when the limiter's store cannot answer: `FailOpen` forwards the request
    /// (no rate-limit fields), `FailClosed` denies it (429, `Retry-After: 1`), `Raise` (the
    /// default) answers 503 with a `temporary-reduced-capacity` problem body.
    pub fn fail_policy(self, policy: FailPolicy) -> RateLimitLayer {
        self.edit(|c| c.edge = c.edge.clone().with_fail_policy(policy))
    }

    /// Shadow mode: decide, send the fields, call the hook, but never block.
    pub fn shadow(self, on: bool) -> RateLimitLayer {
        self.edit(|c| c.edge = c.edge.clone().with_shadow(on))
    }

    /// Called for every denied request (also in shadow mode, with `shadow: true`).
    pub fn on_limited(self, f: impl Fn(&LimitedEvent) + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.on_limited = Some(Arc::new(f)))
    }

    /// Replaces the 429 response (status, headers, body); the rate-limit fields are added to it.
    pub fn deny_response(self, f: impl Fn(&Decision) -> Response<Bytes> + Send + Sync + 'static) -> RateLimitLayer {
        self.edit(|c| c.deny = Some(Arc::new(f)))
    }
}

/// What the layer decided for one request.
pub(crate) enum Verdict {
    /// Forward the request and add these header lines to the response.
    Forward(Vec<(&'static str, String)>),
    /// Answer with this response (a 429, 500 or 503) instead.
    Answer(Response<Bytes>),
}

fn problem(status: StatusCode, body: String) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_CONTENT_TYPE));
    response
}

/// Core's answer to a request it could not decide because of `err` (503 for an unavailable
/// store, 500 naming the code otherwise).
fn error(err: &Error) -> Response<Bytes> {
    let (status, body) = error_response(err.code().as_str());
    problem(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body)
}

/// A request's settled outcome, its header lines, and what the hook is told about it.
struct Settled<D> {
    outcome: Outcome<D>,
    lines: Vec<(&'static str, String)>,
    binding: Option<String>,
}

impl Config {
    pub(crate) fn skips(&self, parts: &Parts) -> bool {
        self.skip_fn.as_ref().is_some_and(|f| f(parts))
    }

    fn key(&self, parts: &Parts) -> Result<String> {
        if let Some(f) = &self.key_fn {
            return f(parts);
        }
        let peer = peer_addr(&parts.extensions).ok_or_else(|| {
            Error::config(
                "http.peer",
                "is unknown: serve with into_make_service_with_connect_info::<SocketAddr>(), insert a SocketAddr \
                 extension, or set a key function",
            )
        })?;
        // A value that is not text is kept (lossily), not dropped: a hop that does not parse
        // must stop the walk, as it does in every other language.
        let values: Vec<(&str, std::borrow::Cow<'_, str>)> =
            parts.headers.iter().map(|(n, v)| (n.as_str(), String::from_utf8_lossy(v.as_bytes()))).collect();
        let headers: Vec<(&str, &str)> = values.iter().map(|(n, v)| (*n, v.as_ref())).collect();
        Ok(self.edge.identity().key(peer.ip(), &headers))
    }

    /// Decides one request: the async check at one clock reading, settled by core's
    /// [`HttpEdge`] (fail policy, shadow mode, the header lines and the problem body); then the
    /// hook and the deny response, the user's own code.
    pub(crate) async fn decide(&self, parts: &Parts) -> Verdict {
        match self.try_decide(parts).await {
            Ok(verdict) => verdict,
            Err(e) => error(&e).into(),
        }
    }

    async fn try_decide(&self, parts: &Parts) -> Result<Verdict> {
        let cost = self.cost_fn.as_ref().map_or(1, |f| f(parts));
        let key = self.key(parts)?;
        match &self.limit {
            Limit::Single(limiter) => {
                let settled = self.settle_single(limiter, &key, cost).await?;
                Ok(self.respond(parts, key, settled))
            }
            Limit::Multi(multi) => {
                let settled = self.settle_multi(multi, &key, parts, cost).await?;
                Ok(self.respond(parts, key, settled))
            }
        }
    }

    async fn settle_single(&self, limiter: &Limiter, key: &str, cost: u64) -> Result<Settled<Decision>> {
        let now = limiter.clock().now_ms();
        let outcome = self.edge.settle(limiter, limiter.check_at(key, cost, Now::At(now)).await, now)?;
        let mut lines = Vec::with_capacity(4);
        self.edge.write_outcome_lines(limiter, key, &outcome, &mut lines)?;
        Ok(Settled { outcome, lines, binding: None })
    }

    async fn settle_multi(
        &self,
        multi: &MultiLimiter,
        key: &str,
        parts: &Parts,
        cost: u64,
    ) -> Result<Settled<MultiDecision>> {
        let keys = match &self.keys_fn {
            Some(f) => f(parts)?,
            None => vec![key.to_owned(); multi.dimensions().len()],
        };
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let now = multi.clock().now_ms();
        let outcome = self.edge.settle_multi(multi, multi.check_at(&refs, cost, Now::At(now)).await, now)?;
        let mut lines = Vec::with_capacity(4);
        self.edge.write_multi_outcome_lines(multi, &refs, &outcome, &mut lines)?;
        // A fail-policy fallback names no binding dimension: nothing decided one.
        let binding = outcome.decision.as_ref().filter(|d| !d.decision.fallback).map(|d| d.binding.clone());
        Ok(Settled { outcome, lines, binding })
    }

    /// The response for a settled request: forward with the lines, or core's 429 / 503 (or the
    /// user's deny response), after telling the hook about a denial.
    fn respond<D: Decided>(&self, parts: &Parts, key: String, settled: Settled<D>) -> Verdict {
        let Settled { outcome, lines, binding } = settled;
        if let (true, Some(hook), Some(decision)) =
            (outcome.action.limited(), &self.on_limited, outcome.request_decision())
        {
            hook(&LimitedEvent {
                key,
                decision: *decision,
                binding,
                shadow: outcome.action == Action::Shadow,
                method: parts.method.clone(),
                path: parts.uri.path().to_owned(),
            });
        }
        if outcome.action.forwards() {
            return Verdict::Forward(lines);
        }
        let mut response = match (&self.deny, outcome.action, outcome.request_decision()) {
            (Some(f), Action::Deny, Some(decision)) => f(decision),
            _ => {
                let status = StatusCode::from_u16(outcome.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                problem(status, outcome.body().unwrap_or_default())
            }
        };
        add_lines(response.headers_mut(), &lines);
        Verdict::Answer(response)
    }
}

impl From<Response<Bytes>> for Verdict {
    fn from(r: Response<Bytes>) -> Verdict {
        Verdict::Answer(r)
    }
}

/// Adds the lines to `headers`. Core's values are printable ASCII by construction, so the
/// conversion cannot fail; a line that somehow did would be dropped rather than panic.
pub(crate) fn add_lines(headers: &mut http::HeaderMap, lines: &[(&'static str, String)]) {
    for (name, value) in lines {
        if let (Ok(n), Ok(v)) = (http::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            headers.append(n, v);
        }
    }
}
