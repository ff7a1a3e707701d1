//! The HTTP edge of core (`throttlekit::http`) for Node: rate-limit response fields, client
//! identity and the 429 problem body. The middleware in `lib/http/` is built on these.
//!
//! Nothing here formats a header, parses an address or does arithmetic: each entry point
//! converts its JavaScript arguments, calls core, and converts the answer back.
//!
//! - [`RateLimitFields`]: a limiter (or multi limiter) and header options, bound once; its
//!   `lines` turns one request's decision into the response's header lines.
//! - [`ClientIdentity`]: trusted proxies and IPv6 grouping, validated once; `key` gives the
//!   key a request counts against.
//! - [`rate_limit_headers`], [`client_key`]: the same two functions on plain data, in the
//!   format of the HTTP conformance vectors (`conformance-vectors/http/`).
//! - [`problem_body`], [`unavailable_body`]: the RFC 9457 bodies of a 429 and a 503.

// The free functions below are napi exports, called from JavaScript only: a test build of the
// crate (no napi registration) sees them as unused.
#![cfg_attr(test, allow(dead_code))]

use std::cell::OnceCell;
use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{Either, PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::FailPolicy;
use throttlekit::http::{self as core_http, Action, HeaderOptions as CoreHeaderOptions, HttpEdge, LimitStatus};

use crate::convert::{self, Options};
use crate::decision::{Decision, MultiDecision};
use crate::error::{CoreResult, OrThrow, Settled, config, settle};
use crate::handles::{self, Registration};
use crate::limiter::Limiter;
use crate::multi::MultiLimiter;

/// Options of `new RateLimitFields()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct HeaderOptions {
    /// Which fields to send (default `'draft-10'`): `'draft-6'` (`RateLimit-Limit`,
    /// `-Remaining`, `-Reset`), `'draft-7'` (one `RateLimit` dictionary), `'draft-10'`
    /// (`RateLimit: "name";r=;t=` lists) or `'legacy'` (`X-RateLimit-*`, reset in epoch seconds).
    #[napi(ts_type = "HeaderFamily")]
    pub family: Option<String>,
    /// The policy name of a single limiter (default `'default'`); a multi limiter's dimensions
    /// are named after themselves.
    pub policy_name: Option<String>,
    /// When set, `draft-10` fields carry `pk`: HMAC-SHA256 of the key under this secret.
    pub partition_key_secret: Option<String>,
    /// The middleware's answer when the store could not answer (`store_unavailable`), settled
    /// by core: `'raise'` (a `Checked` whose `action` is `'unavailable'`: answer 503),
    /// `'fail_open'` (forward, no fields) or `'fail_closed'` (deny, `Retry-After: 1`). Unset:
    /// `check` rejects with the store's error.
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
    /// Shadow mode: a denied request's `action` is `'shadow'` (forward it, tell the hook)
    /// instead of `'deny'`.
    pub shadow: Option<bool>,
}

/// The header families `RateLimitFields` can send.
#[napi(string_enum)]
pub enum HeaderFamily {
    #[napi(value = "draft-6")]
    Draft6,
    #[napi(value = "draft-7")]
    Draft7,
    #[napi(value = "draft-10")]
    Draft10,
    #[napi(value = "legacy")]
    Legacy,
}

/// The options of `new RateLimitFields()`, as core's edge and the fail policy given (`None`:
/// a store error is the caller's).
fn edge_options(options: &Unknown) -> CoreResult<(HttpEdge, Option<FailPolicy>)> {
    let o = Options::read(
        options,
        "headers",
        &["family", "policyName", "partitionKeySecret", "failPolicy", "shadow"],
        true,
    )?;
    let mut h = CoreHeaderOptions::default();
    if let Some(f) = o.string("family")? {
        h.family = core_http::Family::parse(&f)?;
    }
    if let Some(name) = o.string("policyName")? {
        h.policy_name = name;
    }
    h.partition_key_secret = o.string("partitionKeySecret")?;
    let fail_policy = o.string("failPolicy")?.map(|p| FailPolicy::parse(&p)).transpose()?;
    let shadow = o.boolean("shadow")?.unwrap_or(false);
    let edge = HttpEdge::new(h, &core_http::ClientKeyOptions::default(), fail_policy.unwrap_or(FailPolicy::Raise))?
        .with_shadow(shadow);
    Ok((edge, fail_policy))
}

/// An action as `Checked.action` names it.
pub(crate) fn action_name(action: Action) -> &'static str {
    match action {
        Action::Forward => "forward",
        Action::Shadow => "shadow",
        Action::Deny => "deny",
        Action::Unavailable => "unavailable",
    }
}

/// What a `RateLimitFields` reports on: one limiter, or every dimension of a multi limiter.
#[derive(Clone)]
enum Source {
    Single(Arc<throttlekit::Limiter>),
    Multi(Arc<throttlekit::MultiLimiter>),
}

/// Property `name` of the object `v` (`undefined` when absent); `v` must be an object.
fn property<'a>(v: &Unknown<'a>, name: &std::ffi::CStr, field: &str) -> CoreResult<Unknown<'a>> {
    if convert::type_of(v) != napi::sys::ValueType::napi_object {
        return Err(config(field, "must be a decision object"));
    }
    let value = napi::JsValue::value(v);
    let mut out = std::ptr::null_mut();
    // SAFETY: `value` is a live object of the current call and `name` is NUL-terminated; a
    // throwing getter fails the call here (its exception is reported by napi-rs on return).
    if unsafe { napi::sys::napi_get_named_property(value.env, value.value, name.as_ptr(), &mut out) }
        != napi::sys::Status::napi_ok
    {
        return Err(config(field, "could not be read"));
    }
    // SAFETY: `out` is a live value in the same env.
    Ok(unsafe { Unknown::from_raw_unchecked(value.env, out) })
}

/// A decision object (`Decision`, or a `MultiDecision`, which has the same five fields) as
/// core's struct, read field by field: what the middleware passes on every request, so it
/// avoids turning the whole object into JSON. The numbers must be whole (core's integers).
fn decision_of(v: &Unknown, field: &str) -> CoreResult<throttlekit::Decision> {
    let whole = |name: &std::ffi::CStr, key: &str| -> CoreResult<i64> {
        let path = format!("{field}.{key}");
        convert::epoch_ms(&property(v, name, field)?, &path)
    };
    let fallback = property(v, c"fallback", field)?;
    Ok(throttlekit::Decision {
        allowed: convert::boolean(&property(v, c"allowed", field)?, &format!("{field}.allowed"))?,
        limit: whole(c"limit", "limit")?,
        remaining: whole(c"remaining", "remaining")?,
        reset_at: whole(c"resetAt", "resetAt")?,
        retry_after_ms: whole(c"retryAfterMs", "retryAfterMs")?,
        fallback: !convert::is_undefined(&fallback) && convert::boolean(&fallback, &format!("{field}.fallback"))?,
    })
}

fn multi_decision_of(v: &Unknown) -> CoreResult<throttlekit::MultiDecision> {
    let decision = decision_of(v, "decision")?;
    let binding = convert::string(&property(v, c"binding", "decision")?, "decision.binding")?;
    let dimensions = convert::array(&property(v, c"dimensions", "decision")?, "decision.dimensions")?
        .iter()
        .enumerate()
        .map(|(i, d)| decision_of(d, &format!("decision.dimensions[{i}]")))
        .collect::<CoreResult<Vec<_>>>()?;
    Ok(throttlekit::MultiDecision { decision, binding, dimensions })
}

/// The header lines as one flat array, `[name, value, name, value, ...]`: what
/// `res.setHeader` loops and `new Headers()` want, without an array per line.
fn flat(lines: Vec<(&'static str, String)>) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len() * 2);
    for (name, value) in lines {
        out.push(name.to_owned());
        out.push(value);
    }
    out
}

/// A check's decision, what the middleware does with it (core's HTTP edge decides) and its
/// response header lines (`[name, value, ...]`), made at one reading of the limiter's clock.
#[napi(object, object_from_js = false)]
pub struct Checked {
    /// The decision: a `MultiDecision` for a multi limiter; absent when the store could not
    /// answer and the fail policy is `'raise'` (`action` `'unavailable'`).
    pub decision: Option<Either<Decision, MultiDecision>>,
    /// The header lines for it, as `lines` gives them.
    pub lines: Vec<String>,
    /// What the middleware does: `'forward'`; `'shadow'` (denied in shadow mode: tell the hook,
    /// forward); `'deny'` (tell the hook, answer `status` with `problemBody(decision)`);
    /// `'unavailable'` (answer `status` with `unavailableBody()`).
    #[napi(ts_type = "'forward' | 'shadow' | 'deny' | 'unavailable'")]
    pub action: &'static str,
    /// The status the middleware answers with itself: 429 (`'deny'`), 503 (`'unavailable'`), or
    /// 0 when it forwards.
    pub status: u32,
}

/// A [`core_http::LineSink`] collecting `[name, value, ...]`.
struct Flat(Vec<String>);

impl core_http::LineSink for Flat {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.0.push(name.to_owned());
        self.0.push(String::new());
        // Cannot be empty: a value was just pushed.
        self.0.last_mut().expect("a value was pushed")
    }
}

/// The keys a check takes: one string for a limiter, one per dimension for a multi limiter.
enum Keys {
    One(String),
    Many(Vec<String>),
}

impl Source {
    fn keys(&self, key: &Unknown) -> CoreResult<Keys> {
        Ok(match self {
            Source::Single(_) => Keys::One(convert::string(key, "key")?),
            Source::Multi(_) => Keys::Many(convert::strings(key, "key")?),
        })
    }

    fn now(&self) -> i64 {
        match self {
            Source::Single(l) => l.clock().now_ms(),
            Source::Multi(m) => m.clock().now_ms(),
        }
    }

    /// Checks at `now` (on the store's own connections when it has any), settles the result
    /// with core's edge (`fail_policy` `None`: a store error is returned as it is) and renders
    /// the lines at that same instant.
    async fn check(
        &self,
        keys: &Keys,
        cost: u64,
        now: i64,
        edge: &HttpEdge,
        fail_policy: Option<FailPolicy>,
    ) -> CoreResult<Checked> {
        let mut lines = Flat(Vec::new());
        match (self, keys) {
            (Source::Single(l), Keys::One(key)) => {
                let result = if l.store().as_memory().is_some() {
                    l.check_sync_at(key, cost, now)
                } else {
                    l.check_at(key, cost, throttlekit::store::Now::At(now)).await
                };
                let result = if fail_policy.is_none() { Ok(result?) } else { result };
                let o = edge.settle(l, result, now)?;
                edge.write_outcome_lines(l, key, &o, &mut lines)?;
                Ok(checked(o.action, o.decision.map(|d| Either::A(Decision::from(d))), lines.0))
            }
            (Source::Multi(m), Keys::Many(keys)) => {
                let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
                let result = m.check_at(&refs, cost, throttlekit::store::Now::At(now)).await;
                let result = if fail_policy.is_none() { Ok(result?) } else { result };
                let o = edge.settle_multi(m, result, now)?;
                edge.write_multi_outcome_lines(m, &refs, &o, &mut lines)?;
                Ok(checked(o.action, o.decision.map(|d| Either::B(MultiDecision::from(d))), lines.0))
            }
            _ => Err(config("key", "does not fit the limiter")),
        }
    }
}

fn checked(action: Action, decision: Option<Either<Decision, MultiDecision>>, lines: Vec<String>) -> Checked {
    Checked { decision, lines, action: action_name(action), status: u32::from(action.status()) }
}

/// The rate-limit response fields of one limiter (or multi limiter), in one header family.
/// Build it once, next to the limiter; call `lines` per request.
#[napi]
pub struct RateLimitFields {
    pub(crate) core: Arc<FieldsCore>,
    /// Its entry in its environment's fields handle table, made by the first fast-path
    /// `checkSync` (fast.rs, handles.rs); dropping the `RateLimitFields` frees it.
    handle: OnceCell<Registration<FieldsCore>>,
}

/// What a `RateLimitFields` binds: shared with the fast path's handle table (fast.rs), which
/// finds it by number instead of unwrapping the JS object.
pub(crate) struct FieldsCore {
    source: Source,
    /// Core's edge: the header options, the fail policy and shadow mode.
    edge: Arc<HttpEdge>,
    /// The fail policy as given: `None` leaves a store error to the caller.
    fail_policy: Option<FailPolicy>,
}

#[napi]
impl RateLimitFields {
    /// Binds `limiter` (a `Limiter` or a `MultiLimiter`) and the header options. Bad options
    /// throw `config_invalid`.
    #[napi(constructor, ts_args_type = "limiter: Limiter | MultiLimiter, options?: HeaderOptions")]
    pub fn new(env: &Env, limiter: Unknown, options: Unknown) -> napi::Result<RateLimitFields> {
        (|| {
            let source = if let Some(l) = crate::instance::<Limiter>(env, &limiter, "limiter")? {
                Source::Single(l.inner.clone())
            } else if let Some(m) = crate::instance::<MultiLimiter>(env, &limiter, "limiter")? {
                Source::Multi(m.inner.clone())
            } else {
                return Err(config("limiter", "must be a Limiter or a MultiLimiter"));
            };
            let (edge, fail_policy) = edge_options(&options)?;
            let core = Arc::new(FieldsCore { source, edge: Arc::new(edge), fail_policy });
            Ok(RateLimitFields { core, handle: OnceCell::new() })
        })()
        .or_throw(env)
    }

    /// The response header lines for `decision` (what the limiter's check returned), as
    /// `[name, value, name, value, ...]`: the family's fields, then `Retry-After` on a denial.
    /// `key` (a string; a multi limiter's keys array) is read only for `pk`. `nowMs` is the
    /// instant of the decision; by default the limiter's clock is read now.
    #[napi(ts_args_type = "decision: Decision | MultiDecision, key?: string | string[], nowMs?: number")]
    pub fn lines(&self, env: &Env, decision: Unknown, key: Unknown, now_ms: Unknown) -> napi::Result<Vec<String>> {
        (|| {
            let now = if convert::is_undefined(&now_ms) {
                self.core.source.now()
            } else {
                convert::epoch_ms(&now_ms, "nowMs")?
            };
            let limits = match &self.core.source {
                Source::Single(l) => {
                    let key = if convert::is_undefined(&key) { None } else { Some(convert::string(&key, "key")?) };
                    vec![LimitStatus::single(l.strategy(), decision_of(&decision, "decision")?, key.as_deref())]
                }
                Source::Multi(m) => {
                    let keys = if convert::is_undefined(&key) { Vec::new() } else { convert::strings(&key, "key")? };
                    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                    LimitStatus::multi(m, &multi_decision_of(&decision)?, &keys)
                }
            };
            core_http::rate_limit_headers(&limits, self.core.edge.header_options(), now).map(flat)
        })()
        .or_throw(env)
    }

    /// Checks `key` (a multi limiter: one key per dimension) for `cost` units (default 1)
    /// synchronously, and renders the header lines at the instant of the decision. Only for a
    /// limiter on a `MemoryStore` (see `inProcess`): anything else would block the event loop,
    /// and throws `config_invalid`.
    #[napi(ts_args_type = "key: string | string[], cost?: number")]
    pub fn check_sync(&self, env: &Env, key: Unknown, cost: Unknown) -> napi::Result<Checked> {
        (|| {
            let l = self.core.sync_limiter()?;
            let key = convert::string(&key, "key")?;
            let mut lines = Flat(Vec::new());
            let (d, action) = self.core.check_into(l, &key, convert::cost(&cost)?, &mut lines)?;
            Ok(checked(action, Some(Either::A(Decision::from(d))), lines.0))
        })()
        .or_throw(env)
    }

    /// `checkSync` for any store: the limiter's async check (Redis: one round trip, never
    /// blocking the event loop) at one reading of its clock, and the lines at that instant.
    #[napi(ts_args_type = "key: string | string[], cost?: number", ts_return_type = "Promise<Checked>")]
    pub fn check<'e>(
        &self,
        env: &'e Env,
        key: Unknown,
        cost: Unknown,
    ) -> napi::Result<PromiseRaw<'e, Settled<Checked>>> {
        let args = (|| Ok((self.core.source.keys(&key)?, convert::cost(&cost)?)))();
        let core = self.core.clone();
        settle(env, args, move |(keys, cost)| async move {
            let now = core.source.now();
            core.source.check(&keys, cost, now, &core.edge, core.fail_policy).await
        })
    }

    /// The decision core's fail policy gives when the store could not answer
    /// (`store_unavailable`): `'fail_open'` admits with `fallback: true` (its `lines` are
    /// empty), `'fail_closed'` denies with `fallback: true` (its `lines` are `Retry-After`
    /// only), and `'raise'` throws the `store_unavailable` error. The numbers are the binding
    /// limit's (a multi limiter's first dimension), at the limiter's clock.
    #[napi(ts_args_type = "failPolicy: FailPolicy")]
    pub fn fallback(&self, env: &Env, fail_policy: Unknown) -> napi::Result<Decision> {
        (|| {
            let policy = convert::with_str(&fail_policy, "failPolicy", throttlekit::FailPolicy::parse)?;
            let limit = match &self.core.source {
                Source::Single(l) => l.strategy().limit(),
                Source::Multi(m) => m.dimensions()[0].strategy.limit(),
            };
            let now = self.core.source.now();
            let unavailable = throttlekit::Error::new(
                throttlekit::ErrorCode::StoreUnavailable,
                "the rate limiter's store did not answer",
            );
            policy.fallback(unavailable, limit, now).map(Decision::from)
        })()
        .or_throw(env)
    }

    /// Whether the limiter decides in this process without I/O (a single limiter on a
    /// `MemoryStore`): the middleware then calls `checkSync`, which cannot block the event
    /// loop, instead of paying for a Promise. Anything else takes the Promise `check`.
    #[napi(getter)]
    pub fn in_process(&self) -> bool {
        self.core.in_process()
    }

    /// A multi limiter's dimension names in declaration order (the middleware gives each the
    /// request's key unless a key function returns one key per dimension); `null` for a
    /// single limiter.
    #[napi(getter)]
    pub fn dimensions(&self) -> Option<Vec<String>> {
        match &self.core.source {
            Source::Single(_) => None,
            Source::Multi(m) => Some(m.dimensions().iter().map(|d| d.name.clone()).collect()),
        }
    }

    /// The header family these fields are sent in.
    #[napi(getter)]
    pub fn family(&self) -> HeaderFamily {
        match self.core.edge.header_options().family {
            core_http::Family::Draft6 => HeaderFamily::Draft6,
            core_http::Family::Draft7 => HeaderFamily::Draft7,
            core_http::Family::Draft10 => HeaderFamily::Draft10,
            core_http::Family::Legacy => HeaderFamily::Legacy,
        }
    }
}

/// Options of `new ClientIdentity()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; core's serde form reads the values.
pub struct ClientIdentityOptions {
    /// CIDRs or addresses of the proxies whose forwarding header is believed (default none:
    /// the socket peer is the client, whatever the headers say).
    pub trusted_proxies: Option<Vec<String>>,
    /// IPv6 clients are grouped by this prefix length, 1 to 128 (default 64).
    pub ipv6_prefix: Option<u32>,
    /// The header the trusted proxies write (default `'x-forwarded-for'`).
    #[napi(ts_type = "'x-forwarded-for' | 'forwarded'")]
    pub forwarded_header: Option<String>,
}

/// A decision as the fast paths' shared arrays carry it:
/// `[allowed, limit, remaining, resetAt, retryAfterMs, fallback]`.
pub(crate) fn decided(d: &throttlekit::Decision) -> [f64; 6] {
    [
        f64::from(u8::from(d.allowed)),
        d.limit as f64,
        d.remaining as f64,
        d.reset_at as f64,
        d.retry_after_ms as f64,
        f64::from(u8::from(d.fallback)),
    ]
}

impl RateLimitFields {
    /// The handle of these fields in `table`, registering them on first use (as
    /// `Limiter::handle` does).
    pub(crate) fn handle(&self, table: &handles::Shared<FieldsCore>) -> CoreResult<f64> {
        handles::handle_in(&self.handle, table, || self.core.clone())
    }
}

/// The joined form of the lines, `name\nvalue\nname\nvalue`, written in place (core's
/// [`core_http::LineSink`]).
struct Joined<'a>(&'a mut String);

impl core_http::LineSink for Joined<'_> {
    fn start(&mut self, name: &'static str) -> &mut String {
        if !self.0.is_empty() {
            self.0.push('\n');
        }
        self.0.push_str(name);
        self.0.push('\n');
        self.0
    }
}

impl FieldsCore {
    /// Whether the limiter decides in this process without I/O (see `inProcess`).
    fn in_process(&self) -> bool {
        match &self.source {
            Source::Single(l) => l.store().as_memory().is_some(),
            Source::Multi(_) => false,
        }
    }

    /// The limiter `checkSync` decides with: `config_invalid` unless it is one limiter on a
    /// MemoryStore (the checks and errors of `checkSync`, in its order).
    pub(crate) fn sync_limiter(&self) -> CoreResult<&throttlekit::Limiter> {
        if !self.in_process() {
            return Err(config("checkSync", "is only for a limiter on a MemoryStore: use check"));
        }
        let Source::Single(l) = &self.source else {
            return Err(config("key", "must be a string"));
        };
        Ok(l)
    }

    /// `checkSync`'s decision for `key` on `l` (from [`Self::sync_limiter`]) and core's action
    /// for it, its lines appended to `joined` as `name\nvalue\nname\nvalue` (core's lines, at
    /// the same reading of the limiter's clock as the decision; nothing allocated).
    pub(crate) fn check_joined(
        &self,
        l: &throttlekit::Limiter,
        key: &str,
        cost: u64,
        joined: &mut String,
    ) -> CoreResult<(throttlekit::Decision, Action)> {
        self.check_into(l, key, cost, &mut Joined(joined))
    }

    /// [`Self::check_joined`] with the lines written to any sink (`__fieldsValues` keeps the
    /// names apart from the values). A limiter in this process has no store to fail, so the
    /// outcome always has a decision.
    pub(crate) fn check_into(
        &self,
        l: &throttlekit::Limiter,
        key: &str,
        cost: u64,
        sink: &mut impl core_http::LineSink,
    ) -> CoreResult<(throttlekit::Decision, Action)> {
        let now = l.clock().now_ms();
        let o = self.edge.check(l, key, cost, now)?;
        self.edge.write_outcome_lines(l, key, &o, sink)?;
        match o.decision {
            Some(d) => Ok((d, o.action)),
            None => Err(throttlekit::Error::store("the rate limiter's store did not answer")),
        }
    }
}

/// Which client a request comes from: the socket peer, or, behind trusted proxies, the
/// rightmost untrusted hop of their forwarding header; IPv6 grouped by prefix.
#[napi]
pub struct ClientIdentity {
    inner: core_http::ClientIdentity,
    header: &'static str,
}

fn client_key_options(options: &Unknown) -> CoreResult<core_http::ClientKeyOptions> {
    let o = Options::read(options, "clientIdentity", &["trustedProxies", "ipv6Prefix", "forwardedHeader"], true)?;
    let mut map = serde_json::Map::new();
    for name in ["trustedProxies", "ipv6Prefix", "forwardedHeader"] {
        if let Some(v) = o.get(name) {
            map.insert(name.to_owned(), convert::json(v, &o.path(name))?);
        }
    }
    serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| config("clientIdentity", &format!("options are invalid: {e}")))
}

#[napi]
impl ClientIdentity {
    /// Validates the options once. A bad CIDR, a prefix outside 1..=128 or an unknown header
    /// throws `config_invalid` naming the field.
    #[napi(constructor, ts_args_type = "options?: ClientIdentityOptions")]
    pub fn new(env: &Env, options: Unknown) -> napi::Result<ClientIdentity> {
        (|| {
            let options = client_key_options(&options)?;
            let header = match options.forwarded_header {
                core_http::ForwardedHeader::XForwardedFor => "x-forwarded-for",
                core_http::ForwardedHeader::Forwarded => "forwarded",
            };
            Ok(ClientIdentity { inner: core_http::ClientIdentity::new(&options)?, header })
        })()
        .or_throw(env)
    }

    /// The key of the client behind `peer` (the socket's remote address, as the framework
    /// gives it). `forwarded` is the value, or the values in order, of the request's
    /// `forwardedHeader`; it is believed only when `peer` is a trusted proxy. A peer that is
    /// not an IP address throws `config_invalid`.
    #[napi(ts_args_type = "peer: string, forwarded?: string | string[] | null")]
    pub fn key(&self, env: &Env, peer: Unknown, forwarded: Unknown) -> napi::Result<String> {
        (|| {
            let values: Vec<String> = match convert::type_of(&forwarded) {
                napi::sys::ValueType::napi_undefined | napi::sys::ValueType::napi_null => Vec::new(),
                napi::sys::ValueType::napi_string => vec![convert::string(&forwarded, "forwarded")?],
                _ => convert::strings(&forwarded, "forwarded")?,
            };
            let headers: Vec<(&str, &str)> = values.iter().map(|v| (self.header, v.as_str())).collect();
            convert::with_str(&peer, "peer", |p| self.inner.key_for_peer(p, &headers))
        })()
        .or_throw(env)
    }

    /// The (lower-case) name of the header read from trusted proxies.
    #[napi(getter, ts_return_type = "'x-forwarded-for' | 'forwarded'")]
    pub fn forwarded_header(&self) -> &'static str {
        self.header
    }
}

/// One limit of a `rateLimitHeaders` request.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; core's serde form reads the values.
pub struct HeadersLimit {
    /// The policy name (absent for a single limiter: `options.policyName` applies).
    pub name: Option<String>,
    /// The limited key, used only for `pk`.
    pub key: Option<String>,
    /// The limit's strategy, as a spec.
    #[napi(ts_type = "StrategySpec")]
    pub strategy: serde_json::Value,
    /// Its decision.
    #[napi(ts_type = "Decision")]
    pub decision: serde_json::Value,
}

/// The request of `rateLimitHeaders`: the header vectors' `request` object.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; core's serde form reads the values.
pub struct HeadersRequest {
    /// Rendering options.
    pub options: Option<HeaderOptions>,
    /// The instant of the decisions, epoch ms.
    pub now_ms: f64,
    /// The limits that applied, the binding one first.
    pub limits: Vec<HeadersLimit>,
}

/// The request of `clientKey`: the client key vectors' `request` object.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; core's serde form reads the values.
pub struct ClientKeyRequest {
    /// The socket peer's address.
    pub peer: String,
    /// The request's headers as `[name, value]` pairs.
    #[napi(ts_type = "Array<[string, string]>")]
    pub headers: Option<Vec<Vec<String>>>,
    /// Identity options.
    pub options: Option<ClientIdentityOptions>,
}

/// Core's header function on plain data (the header vectors' request format): limits given
/// as strategy specs and decisions, the binding one first. Returns `[[name, value], ...]`.
/// `RateLimitFields` is the same function bound to a limiter, for serving requests.
#[napi(ts_args_type = "request: HeadersRequest", ts_return_type = "Array<[string, string]>")]
pub fn rate_limit_headers(env: &Env, request: Unknown) -> napi::Result<Vec<Vec<String>>> {
    (|| {
        let request: core_http::json::HeadersRequest = serde_json::from_value(convert::json(&request, "request")?)
            .map_err(|e| config("http.headersRequest", &format!("is not valid: {e}")))?;
        let lines = request.render()?;
        Ok(lines.into_iter().map(|(n, v)| vec![n.to_owned(), v]).collect())
    })()
    .or_throw(env)
}

/// Core's client identity on plain data (the client key vectors' request format).
/// `ClientIdentity` is the same function with its options validated once.
#[napi(ts_args_type = "request: ClientKeyRequest")]
pub fn client_key(env: &Env, request: Unknown) -> napi::Result<String> {
    (|| {
        let request: core_http::json::ClientKeyRequest = serde_json::from_value(convert::json(&request, "request")?)
            .map_err(|e| config("http.clientKeyRequest", &format!("is not valid: {e}")))?;
        request.key()
    })()
    .or_throw(env)
}

/// The media type of the bodies below: `application/problem+json`.
#[napi]
pub const PROBLEM_CONTENT_TYPE: &str = core_http::PROBLEM_CONTENT_TYPE;

/// The RFC 9457 body of a 429 for a denied `decision` (type `quota-exceeded`, `title`,
/// `status`, and a `detail` naming the same wait as `Retry-After`), as JSON text.
#[napi(ts_args_type = "decision: Decision | MultiDecision")]
pub fn problem_body(env: &Env, decision: Unknown) -> napi::Result<String> {
    (|| Ok(core_http::quota_exceeded_body(&decision_of(&decision, "decision")?)))().or_throw(env)
}

/// The RFC 9457 body of the 503 sent when the store could not answer and the fail policy is
/// `'raise'` (type `temporary-reduced-capacity`), as JSON text.
#[napi]
pub fn unavailable_body() -> String {
    core_http::unavailable_body()
}
