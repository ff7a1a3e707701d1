//! The HTTP edge of core (`throttlekit::http`) for the WebAssembly build: what the fetch wrapper
//! and the Hono middleware (`bindings-node/wasm/http/`) are built on, and the same classes and
//! functions as the Node binding's `src/http.rs` (`RateLimitFields`, `ClientIdentity`,
//! `problemBody`, `unavailableBody`, `PROBLEM_CONTENT_TYPE`).
//!
//! Nothing here formats a header, parses an address, applies a fail policy or decides: core's
//! `HttpEdge` settles a check into an action and writes its header lines; this converts
//! JavaScript values in and out.

use std::rc::Rc;

use js_sys::{Array, Reflect};
use throttlekit::FailPolicy;
use throttlekit::http::{self as core_http, Action, HeaderOptions, HttpEdge};
use throttlekit::redis::rest::limiter::RestOp;
use throttlekit::spec::Data;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, config, settled};
use crate::limiter::{self, Limiter};
use crate::multi::{self, MultiLimiter};
use crate::rest::Link;

#[wasm_bindgen(inline_js = "
export function settleLater(pending, settler) {
  return pending.then((d) => settler.decided(d), (e) => settler.failed(e))
}")]
extern "C" {
    /// `pending` (a REST check's Promise) settled by core's edge once it is answered.
    #[wasm_bindgen(js_name = settleLater)]
    fn settle_later(pending: &js_sys::Promise, settler: Settler) -> js_sys::Promise;
}

/// What a `RateLimitFields` reports on: one limiter or a multi limiter, and the REST link of
/// either when its store answers over the network.
#[derive(Clone)]
enum Source {
    Single(std::sync::Arc<throttlekit::Limiter>, Option<Link>),
    Multi(std::sync::Arc<throttlekit::MultiLimiter>, Option<Link>),
}

/// A limiter's core, handed to `new RateLimitFields()` (internal: wasm-bindgen gives Rust no
/// way to borrow a class instance passed as a plain value, but it can take over a fresh one).
#[wasm_bindgen]
pub struct EdgeSource(Source);

#[wasm_bindgen]
impl Limiter {
    /// Internal: this limiter's core for `RateLimitFields`.
    #[wasm_bindgen(js_name = __edgeSource)]
    pub fn edge_source(&self) -> EdgeSource {
        EdgeSource(Source::Single(self.inner.clone(), self.rest.clone()))
    }
}

#[wasm_bindgen]
impl MultiLimiter {
    /// Internal: this multi limiter's core for `RateLimitFields`.
    #[wasm_bindgen(js_name = __edgeSource)]
    pub fn edge_source(&self) -> EdgeSource {
        EdgeSource(Source::Multi(self.inner.clone(), self.rest.clone()))
    }
}

/// The source of `limiter` (a `Limiter` or a `MultiLimiter` of this module).
fn source_of(limiter: &JsValue) -> CoreResult<Source> {
    let invalid = || config("limiter", "must be a Limiter or a MultiLimiter");
    let method = Reflect::get(limiter, &"__edgeSource".into()).map_err(|_| invalid())?;
    let method: &js_sys::Function = method.dyn_ref().ok_or_else(invalid)?;
    let made = method.call0(limiter).map_err(|_| invalid())?;
    EdgeSource::try_from_js_value(made).map(|s| s.0).map_err(|_| invalid())
}

/// An action as `Checked.action` names it (the Node binding's names).
fn action_name(action: Action) -> &'static str {
    match action {
        Action::Forward => "forward",
        Action::Shadow => "shadow",
        Action::Deny => "deny",
        Action::Unavailable => "unavailable",
    }
}

/// A [`core_http::LineSink`] collecting `[name, value, ...]`.
struct Flat(Vec<String>);

impl core_http::LineSink for Flat {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.0.push(name.to_owned());
        self.0.push(String::new());
        let last = self.0.len() - 1;
        &mut self.0[last]
    }
}

/// The Node binding's `Checked`: `{ action, status, decision, lines }`.
fn checked(action: Action, decision: JsValue, lines: Vec<String>) -> JsValue {
    let o = js_sys::Object::new();
    let lines: Array = lines.into_iter().map(JsValue::from).collect();
    // Setting properties on a fresh plain object cannot fail.
    let _ = Reflect::set(&o, &"decision".into(), &decision);
    let _ = Reflect::set(&o, &"lines".into(), &lines);
    let _ = Reflect::set(&o, &"action".into(), &action_name(action).into());
    let _ = Reflect::set(&o, &"status".into(), &JsValue::from(action.status()));
    o.into()
}

/// Property `name` of the decision object `v`.
fn field(v: &JsValue, name: &str, path: &str) -> CoreResult<JsValue> {
    if !v.is_object() {
        return Err(config(path, "must be a decision object"));
    }
    Reflect::get(v, &name.into()).map_err(|_| config(path, "could not be read"))
}

/// A decision object (`Decision`, or a `MultiDecision`'s five fields) as core's struct.
fn decision_of(v: &JsValue, path: &str) -> CoreResult<throttlekit::Decision> {
    let whole = |name: &str| convert::epoch_ms(&field(v, name, path)?, &format!("{path}.{name}"));
    let fallback = field(v, "fallback", path)?;
    Ok(throttlekit::Decision {
        allowed: convert::boolean(&field(v, "allowed", path)?, &format!("{path}.allowed"))?,
        limit: whole("limit")?,
        remaining: whole("remaining")?,
        reset_at: whole("resetAt")?,
        retry_after_ms: whole("retryAfterMs")?,
        fallback: !fallback.is_undefined() && convert::boolean(&fallback, &format!("{path}.fallback"))?,
    })
}

fn multi_decision_of(v: &JsValue) -> CoreResult<throttlekit::MultiDecision> {
    let decision = decision_of(v, "decision")?;
    let binding = convert::string(&field(v, "binding", "decision")?, "decision.binding")?;
    let dimensions = convert::array(&field(v, "dimensions", "decision")?, "decision.dimensions")?
        .iter()
        .enumerate()
        .map(|(i, d)| decision_of(d, &format!("decision.dimensions[{i}]")))
        .collect::<CoreResult<Vec<_>>>()?;
    Ok(throttlekit::MultiDecision { decision, binding, dimensions })
}

/// The keys a check takes: one string for a limiter, one per dimension for a multi limiter.
#[derive(Clone)]
enum Keys {
    One(String),
    Many(Vec<String>),
}

/// What a `RateLimitFields` binds.
struct FieldsCore {
    source: Source,
    /// Core's edge: the header options, the fail policy and shadow mode.
    edge: HttpEdge,
    /// The fail policy as given: `None` leaves a store error to the caller.
    fail_policy: Option<FailPolicy>,
}

impl FieldsCore {
    fn now(&self) -> i64 {
        match &self.source {
            Source::Single(l, _) => l.clock().now_ms(),
            Source::Multi(m, _) => m.clock().now_ms(),
        }
    }

    fn keys(&self, key: &JsValue) -> CoreResult<Keys> {
        Ok(match self.source {
            Source::Single(..) => Keys::One(convert::string(key, "key")?),
            Source::Multi(..) => Keys::Many(convert::strings(key, "key")?),
        })
    }

    /// Settles `result` (a decision as JavaScript, or the core error of the check) with core's
    /// edge at `now` and renders its lines: the `Checked` object.
    fn settle(&self, keys: &Keys, result: CoreResult<JsValue>, now: i64) -> CoreResult<JsValue> {
        let mut lines = Flat(Vec::new());
        match (&self.source, keys) {
            (Source::Single(l, _), Keys::One(key)) => {
                let result = result.and_then(|d| decision_of(&d, "decision"));
                let result = if self.fail_policy.is_none() { Ok(result?) } else { result };
                let o = self.edge.settle(l, result, now)?;
                self.edge.write_outcome_lines(l, key, &o, &mut lines)?;
                let d = o.decision.as_ref().map_or(JsValue::UNDEFINED, limiter::to_js);
                Ok(checked(o.action, d, lines.0))
            }
            (Source::Multi(m, _), Keys::Many(keys)) => {
                let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
                let result = result.and_then(|d| multi_decision_of(&d));
                let result = if self.fail_policy.is_none() { Ok(result?) } else { result };
                let o = self.edge.settle_multi(m, result, now)?;
                self.edge.write_multi_outcome_lines(m, &refs, &o, &mut lines)?;
                let d = o.decision.as_ref().map_or(JsValue::UNDEFINED, multi::to_js);
                Ok(checked(o.action, d, lines.0))
            }
            _ => Err(config("key", "does not fit the limiter")),
        }
    }

    /// The check in this module, at `now`: a limiter or multi limiter on a `MemoryStore`.
    fn check_here(&self, keys: &Keys, cost: u64, now: i64) -> CoreResult<JsValue> {
        let result = match (&self.source, keys) {
            (Source::Single(l, _), Keys::One(key)) => l.check_sync_at(key, cost, now).map(|d| limiter::to_js(&d)),
            (Source::Multi(m, _), Keys::Many(keys)) => {
                let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
                m.check_sync_at(&refs, cost, now).map(|d| multi::to_js(&d))
            }
            _ => return Err(config("key", "does not fit the limiter")),
        };
        self.settle(keys, result, now)
    }
}

/// The pending half of a REST check (internal: `settleLater` calls one of its methods, which
/// takes it over, so nothing is left for JavaScript to free).
#[wasm_bindgen]
pub struct Settler {
    core: Rc<FieldsCore>,
    keys: Keys,
    now: i64,
}

#[wasm_bindgen]
impl Settler {
    /// The check's decision came back.
    pub fn decided(self, decision: JsValue) -> Result<JsValue, JsValue> {
        self.core.settle(&self.keys, Ok(decision), self.now).or_throw()
    }

    /// The check failed with `error`: a `store_unavailable` goes through core's fail policy;
    /// anything else is the caller's, as it came.
    pub fn failed(self, error: JsValue) -> Result<JsValue, JsValue> {
        let code = Reflect::get(&error, &"code".into()).ok().and_then(|c| c.as_string());
        if code.as_deref() != Some(throttlekit::ErrorCode::StoreUnavailable.as_str()) || self.core.fail_policy.is_none()
        {
            return Err(error);
        }
        let message = Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
        self.core.settle(&self.keys, Err(throttlekit::Error::store(message)), self.now).or_throw()
    }
}

fn edge_options(options: &JsValue) -> CoreResult<(HttpEdge, Option<FailPolicy>)> {
    let o = Options::read(
        options,
        "headers",
        &["family", "policyName", "partitionKeySecret", "failPolicy", "shadow"],
        true,
    )?;
    let mut h = HeaderOptions::default();
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

/// The rate-limit response fields of one limiter (or multi limiter), in one header family,
/// with the middleware's fail policy and shadow mode: build it once, call `check` per request.
#[wasm_bindgen]
pub struct RateLimitFields {
    core: Rc<FieldsCore>,
}

#[wasm_bindgen]
impl RateLimitFields {
    /// Binds `limiter` (a `Limiter` or a `MultiLimiter`) and the header options (`family`,
    /// `policyName`, `partitionKeySecret`, `failPolicy`, `shadow`). Bad options throw
    /// `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(limiter: JsValue, options: JsValue) -> Result<RateLimitFields, JsValue> {
        (|| {
            let source = source_of(&limiter)?;
            let (edge, fail_policy) = edge_options(&options)?;
            Ok(RateLimitFields { core: Rc::new(FieldsCore { source, edge, fail_policy }) })
        })()
        .or_throw()
    }

    /// Checks `key` for `cost` (default 1) synchronously and renders the header lines at the
    /// instant of the decision: `{ action, status, decision, lines }`. Only for a limiter on a
    /// `MemoryStore` (`inProcess`); anything else throws `config_invalid`.
    #[wasm_bindgen(js_name = checkSync)]
    pub fn check_sync(&self, key: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        (|| {
            if !self.in_process() {
                return Err(config("checkSync", "is only for a limiter on a MemoryStore: use check"));
            }
            let keys = Keys::One(convert::string(&key, "key")?);
            self.core.check_here(&keys, convert::cost(&cost)?, self.core.now())
        })()
        .or_throw()
    }

    /// `checkSync` for any limiter: a Promise of `{ action, status, decision, lines }` (a REST
    /// store: one round trip, then core's edge settles its answer or its failure).
    pub fn check(&self, key: JsValue, cost: JsValue) -> js_sys::Promise {
        let args = (|| Ok((self.core.keys(&key)?, convert::cost(&cost)?)))();
        let (keys, cost) = match args {
            Ok(a) => a,
            Err(e) => return settled(Err(crate::error::to_js(e))),
        };
        let now = self.core.now();
        let pending = match (&self.core.source, &keys) {
            (Source::Single(l, Some(link)), Keys::One(key)) => link.one(l, RestOp::Check, Ok((key.clone(), cost))),
            (Source::Multi(m, Some(link)), Keys::Many(keys)) => link.multi(m, Ok((keys.clone(), cost))),
            _ => return settled(self.core.check_here(&keys, cost, now).or_throw()),
        };
        settle_later(&pending, Settler { core: self.core.clone(), keys, now })
    }

    /// Whether the limiter decides in this module without I/O (one limiter on a `MemoryStore`):
    /// the middleware then calls `checkSync`.
    #[wasm_bindgen(getter, js_name = inProcess)]
    pub fn in_process(&self) -> bool {
        matches!(self.core.source, Source::Single(_, None))
    }

    /// A multi limiter's dimension names in declaration order; `null` for a single limiter.
    #[wasm_bindgen(getter)]
    pub fn dimensions(&self) -> Option<Vec<String>> {
        match &self.core.source {
            Source::Single(..) => None,
            Source::Multi(m, _) => Some(m.dimensions().iter().map(|d| d.name.clone()).collect()),
        }
    }

    /// The header family these fields are sent in.
    #[wasm_bindgen(getter)]
    pub fn family(&self) -> String {
        match self.core.edge.header_options().family {
            core_http::Family::Draft6 => "draft-6",
            core_http::Family::Draft7 => "draft-7",
            core_http::Family::Draft10 => "draft-10",
            core_http::Family::Legacy => "legacy",
        }
        .to_owned()
    }
}

/// Which client a request comes from: the socket peer, or, behind trusted proxies, the
/// rightmost untrusted hop of their forwarding header; IPv6 grouped by prefix.
#[wasm_bindgen]
pub struct ClientIdentity {
    inner: core_http::ClientIdentity,
    header: &'static str,
}

#[wasm_bindgen]
impl ClientIdentity {
    /// `{ trustedProxies, ipv6Prefix, forwardedHeader }`, validated once: a bad CIDR, a prefix
    /// outside 1..=128 or an unknown header throws `config_invalid` naming the field.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<ClientIdentity, JsValue> {
        (|| {
            const NAMES: [&str; 3] = ["trustedProxies", "ipv6Prefix", "forwardedHeader"];
            let o = Options::read(&options, "clientIdentity", &NAMES, true)?;
            let mut members = Vec::new();
            for name in NAMES {
                if let Some(v) = o.get(name) {
                    members.push((name.to_owned(), convert::json(v, &o.path(name))?));
                }
            }
            // serde's reading and messages, by hand (see `from_value`): the native binding's.
            let options = core_http::ClientKeyOptions::from_value(&Data::object(members))
                .map_err(|e| config("clientIdentity", &format!("options are invalid: {e}")))?;
            let header = match options.forwarded_header {
                core_http::ForwardedHeader::XForwardedFor => "x-forwarded-for",
                core_http::ForwardedHeader::Forwarded => "forwarded",
            };
            Ok(ClientIdentity { inner: core_http::ClientIdentity::new(&options)?, header })
        })()
        .or_throw()
    }

    /// The key of the client behind `peer` (the socket's address). `forwarded` is the value, or
    /// the values in order, of the request's `forwardedHeader`, believed only when `peer` is a
    /// trusted proxy. A peer that is not an IP address throws `config_invalid`.
    pub fn key(&self, peer: JsValue, forwarded: JsValue) -> Result<String, JsValue> {
        (|| {
            let values = if forwarded.is_undefined() || forwarded.is_null() {
                Vec::new()
            } else if let Some(s) = forwarded.as_string() {
                vec![s]
            } else {
                convert::strings(&forwarded, "forwarded")?
            };
            let headers: Vec<(&str, &str)> = values.iter().map(|v| (self.header, v.as_str())).collect();
            self.inner.key_for_peer(&convert::string(&peer, "peer")?, &headers)
        })()
        .or_throw()
    }

    /// The (lower-case) name of the header read from trusted proxies.
    #[wasm_bindgen(getter, js_name = forwardedHeader)]
    pub fn forwarded_header(&self) -> String {
        self.header.to_owned()
    }
}

/// The media type of the bodies below (`application/problem+json`); the package exports it as
/// `PROBLEM_CONTENT_TYPE`.
#[wasm_bindgen(js_name = problemContentType)]
pub fn problem_content_type() -> String {
    core_http::PROBLEM_CONTENT_TYPE.to_owned()
}

/// The RFC 9457 body of a 429 for a denied `decision`, as JSON text.
#[wasm_bindgen(js_name = problemBody)]
pub fn problem_body(decision: JsValue) -> Result<String, JsValue> {
    decision_of(&decision, "decision").map(|d| core_http::quota_exceeded_body(&d)).or_throw()
}

/// The RFC 9457 body of the 503 sent when the store could not answer and the fail policy is
/// `'raise'`, as JSON text.
#[wasm_bindgen(js_name = unavailableBody)]
pub fn unavailable_body() -> String {
    core_http::unavailable_body()
}
