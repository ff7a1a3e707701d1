//! The Redis REST store (Upstash's protocol, docs/redis-rest.md): [`RedisRestStore`] holds the
//! endpoint, and [`RestCall`] is one prepared call of the core (`throttlekit::redis::rest`)
//! that the JavaScript driver below moves over `fetch`. The core prepares every request and
//! reads every reply, applies the fail policy and decides; the driver only sends bytes, with
//! an `AbortSignal` timeout, and never sends a request again after a failure.

use std::sync::Arc;

use js_sys::Reflect;
use throttlekit::redis::rest::limiter::RestOp;
use throttlekit::redis::rest::{self, Locking, Next, ReplayBook, Request};
use wasm_bindgen::prelude::*;

use crate::convert::Options;
use crate::error::{CoreResult, OrThrow, config};
use crate::instance::{self, Item};
use crate::{limiter, multi, shaper};

#[wasm_bindgen(inline_js = "
// What a store's requests share, read from the module once per store (each getter is a call
// into the module and a string copy): the URL, the timeout, the headers, and the timeout's
// current round (below).
const shared = new WeakMap()
function endpoint(store) {
  let e = shared.get(store)
  if (!e) {
    const headers = { Authorization: 'Bearer ' + store.token, 'Content-Type': 'application/json' }
    const timeoutMs = store.timeoutMs
    const url = store.url
    e = { one: url + '/', pipeline: url + '/pipeline', fetch: store.fetch, timeoutMs, slackMs: Math.ceil(timeoutMs / 8), round: null, headers, hex: { ...headers, 'Throttlekit-Encoding': 'hex' } }
    shared.set(store, e)
  }
  return e
}

// The timeout: requests share one AbortController and one timer per round instead of one each
// (a controller costs several microseconds in Node, about as much as the rest of the glue). A
// round aborts at its deadline; a request joins the open round only while the deadline is at
// least the timeout away, so each request is aborted after timeoutMs to timeoutMs * 9/8 without
// an answer, and the round's every request then fails with the timeout. A round takes at most
// ROUND requests: Node's fetch leaves each request's abort listener on the signal until the
// request is garbage-collected, and walks the signal's listeners at each request that joins
// (undici's getEventListeners and addEventListener: with a round of timeoutMs/8 that was
// thousands of listeners, 10-30 us a request at 64 in flight). A round whose requests all ended
// after it closed clears its timer; the timer is unref'd where the host allows it (it keeps no
// process alive).
const ROUND = 32
function join(e) {
  const now = Date.now()
  let r = e.round
  if (r === null || r.joined === ROUND || now + e.timeoutMs > r.deadline) {
    if (r !== null && r.pending === 0) clearTimeout(r.timer)
    const deadline = now + e.timeoutMs + e.slackMs
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(new DOMException('the request timed out', 'TimeoutError')), deadline - now)
    if (typeof timer === 'object' && typeof timer.unref === 'function') timer.unref()
    else if (typeof Deno === 'object' && typeof Deno.unrefTimer === 'function') Deno.unrefTimer(timer)
    r = e.round = { deadline, signal: abort.signal, timer, joined: 0, pending: 0 }
  }
  r.joined++
  r.pending++
  return r
}
function leave(e, r) {
  if (--r.pending === 0 && r !== e.round) clearTimeout(r.timer)
}

export async function drive(store, call) {
  const e = endpoint(store)
  const f = e.fetch ?? globalThis.fetch
  try {
    for (;;) {
      // The body as a string (fetch encodes it once; bytes it would copy once more: both
      // measured, the string's way was 0.4 us less), the path and encoding as one number.
      const body = call.request()
      const route = call.route()
      let res, bytes
      const round = join(e)
      try {
        res = await f((route & 1) === 0 ? e.one : e.pipeline, { method: 'POST', headers: (route & 2) === 0 ? e.headers : e.hex, body, signal: round.signal })
        bytes = new Uint8Array(await res.arrayBuffer())
      } catch (err) {
        if (err && (err.name === 'TimeoutError' || err.name === 'AbortError')) call.failTimeout()
        else call.failTransport(String(err && err.message ? err.message : err))
        break
      } finally {
        leave(e, round)
      }
      if (!call.feed(res.status, bytes)) break
    }
    return call.finish()
  } finally {
    call.free()
  }
}")]
extern "C" {
    /// Runs `call` to its end over `store`'s endpoint; resolves with `call.finish()`.
    fn drive(store: &JsValue, call: RestCall) -> js_sys::Promise;
}

/// The endpoint of an Upstash-protocol REST server: the URL, the token, the timeout per
/// request and which script variant to send (`locking`: `'global'` or `'keys'`).
/// `deterministicReplay: true` expires keys on the limiter's clock instead of Redis's (the
/// conformance runner's mode, as the native `RedisStore`'s; it needs the test front end,
/// tests/restfront/).
#[wasm_bindgen]
pub struct RedisRestStore {
    url: String,
    token: String,
    timeout_ms: u32,
    fetch: JsValue,
    id: u32,
}

impl Drop for RedisRestStore {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

/// The default timeout of one request.
const DEFAULT_TIMEOUT_MS: f64 = 1000.0;

#[wasm_bindgen]
impl RedisRestStore {
    /// `new RedisRestStore({ url, token, timeoutMs = 1000, locking = 'global', fetch,
    /// deterministicReplay = false })`; bad options throw `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RedisRestStore, JsValue> {
        let (url, token, timeout_ms, locking, fetch, replay) = (|| {
            let o = Options::read(
                &options,
                "redisRestStore",
                &["url", "token", "timeoutMs", "locking", "fetch", "deterministicReplay"],
                false,
            )?;
            let url = o.string("url")?.ok_or_else(|| config(&o.path("url"), "is required"))?;
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(config(&o.path("url"), "must be an http:// or https:// URL"));
            }
            let token = o.string("token")?.ok_or_else(|| config(&o.path("token"), "is required"))?;
            let timeout = match o.number("timeoutMs")? {
                None => DEFAULT_TIMEOUT_MS,
                Some(t) => throttlekit::validate::integer_at_least(&o.path("timeoutMs"), t, 1.0)?,
            };
            let locking = match o.string("locking")?.as_deref() {
                None | Some("global") => Locking::Global,
                Some("keys") => Locking::Keys,
                Some(_) => return Err(config(&o.path("locking"), "must be 'global' or 'keys'")),
            };
            let fetch = match o.get("fetch") {
                None => JsValue::UNDEFINED,
                Some(f) if f.is_function() => f.clone(),
                Some(_) => return Err(config(&o.path("fetch"), "must be a function")),
            };
            let replay = o.boolean("deterministicReplay")?.unwrap_or(false);
            let timeout_ms = timeout.min(u32::MAX as f64) as u32;
            Ok((url.trim_end_matches('/').to_owned(), token, timeout_ms, locking, fetch, replay))
        })()
        .or_throw()?;
        let id = instance::register(Item::Rest(locking, replay.then(ReplayBook::default)));
        Ok(RedisRestStore { url, token, timeout_ms, fetch, id })
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// The server's URL (without a trailing `/`).
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The Bearer token (sent only in the `Authorization` header).
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> String {
        self.token.clone()
    }

    /// The timeout of one request, in milliseconds.
    #[wasm_bindgen(getter, js_name = timeoutMs)]
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// The `fetch` the store sends with (`undefined`: the global one).
    #[wasm_bindgen(getter)]
    pub fn fetch(&self) -> JsValue {
        self.fetch.clone()
    }
}

/// Who finishes a call, and into what.
enum Finish {
    One(Arc<throttlekit::Limiter>),
    Many(Arc<throttlekit::Limiter>),
    Multi(Arc<throttlekit::MultiLimiter>),
    Shaper(Arc<throttlekit::Shaper>),
}

/// What is in flight.
enum State {
    Script(throttlekit::redis::rest::limiter::RestCall, Finish),
    /// A reset: `DEL`, and its outcome once answered.
    Del(Request, Option<CoreResult<()>>),
    Finished,
}

/// One prepared REST call (internal: the driver's handle on the core's `RestCall`).
#[wasm_bindgen]
pub struct RestCall {
    state: State,
    timeout_ms: u32,
    route: u32,
}

#[wasm_bindgen]
impl RestCall {
    /// The body of the request to send now (its JSON); [`RestCall::route`] then says where it
    /// goes.
    pub fn request(&mut self) -> String {
        let r = match &self.state {
            State::Script(c, _) => c.request(),
            State::Del(r, _) => r.clone(),
            State::Finished => Request { path: rest::PATH_ONE, body: String::new(), hex: false },
        };
        self.route = u32::from(r.path == rest::PATH_PIPELINE) | (u32::from(r.hex) << 1);
        r.body
    }

    /// Where the last [`RestCall::request`] goes, as one number: bit 0 set for
    /// [`rest::PATH_PIPELINE`] (else [`rest::PATH_ONE`]), bit 1 for [`rest::HEX_ENCODING`].
    pub fn route(&self) -> u32 {
        self.route
    }

    /// Feeds the reply; `true`: send `request()` again (the calls that met NOSCRIPT, with EVAL).
    pub fn feed(&mut self, status: u16, body: &[u8]) -> bool {
        match &mut self.state {
            State::Script(c, _) => c.feed(status, body) == Next::Send,
            State::Del(_, out) => {
                *out = Some(rest::finish_del(status, body));
                false
            }
            State::Finished => false,
        }
    }

    /// The request got no reply within the store's timeout.
    #[wasm_bindgen(js_name = failTimeout)]
    pub fn fail_timeout(&mut self) {
        self.fail(rest::timed_out(u64::from(self.timeout_ms)));
    }

    /// The request failed (refused, reset, aborted): `cause`.
    #[wasm_bindgen(js_name = failTransport)]
    pub fn fail_transport(&mut self, cause: String) {
        self.fail(rest::transport_error(&cause));
    }

    /// The call's result: a decision, decisions, a multi decision or `undefined` (a reset);
    /// throws the core's error (the fail policy `raise`, or a failed reset).
    pub fn finish(&mut self) -> Result<JsValue, JsValue> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Script(c, Finish::One(l)) => Ok(limiter::to_js(&l.rest_finish(c).or_throw()?)),
            State::Script(c, Finish::Many(l)) => {
                Ok(l.rest_finish_many(c).or_throw()?.iter().map(limiter::to_js).collect::<js_sys::Array>().into())
            }
            State::Script(c, Finish::Multi(m)) => Ok(multi::to_js(&m.rest_finish(c).or_throw()?)),
            State::Script(c, Finish::Shaper(s)) => Ok(shaper::to_js(&s.rest_finish(c).or_throw()?)),
            State::Del(_, out) => {
                out.unwrap_or_else(|| Err(throttlekit::Error::store("the REST call was not finished"))).or_throw()?;
                Ok(JsValue::UNDEFINED)
            }
            State::Finished => {
                Err(crate::error::to_js(throttlekit::Error::store("the REST call was finished already")))
            }
        }
    }
}

impl RestCall {
    fn fail(&mut self, e: throttlekit::Error) {
        match &mut self.state {
            State::Script(c, _) => {
                c.fail(e);
            }
            State::Del(_, out) => *out = Some(Err(e)),
            State::Finished => {}
        }
    }
}

/// A limiter's link to its REST store: the store object (read by the driver), its locking
/// and, in deterministic-replay mode, its book.
#[derive(Clone)]
pub struct Link {
    store: JsValue,
    locking: Locking,
    book: Option<ReplayBook>,
    /// The store's timeout, read once (each read is a call out of the module and back).
    timeout_ms: u32,
}

impl Link {
    pub fn new(store: JsValue, locking: Locking, book: Option<ReplayBook>) -> Link {
        let timeout_ms =
            Reflect::get(&store, &"timeoutMs".into()).ok().and_then(|v| v.as_f64()).unwrap_or(DEFAULT_TIMEOUT_MS)
                as u32;
        Link { store, locking, book, timeout_ms }
    }

    /// A prepared call, in the store's replay mode when it has one.
    fn script(&self, call: rest::limiter::RestCall, finish: Finish) -> State {
        match &self.book {
            Some(book) => State::Script(call.replayed(book), finish),
            None => State::Script(call, finish),
        }
    }

    fn run(&self, state: CoreResult<State>) -> js_sys::Promise {
        match state {
            Ok(state) => drive(&self.store, RestCall { state, timeout_ms: self.timeout_ms, route: 0 }),
            Err(e) => js_sys::Promise::reject(&crate::error::to_js(e)),
        }
    }

    /// `check`, `peek` or `forecast` of one key, as a Promise of its decision.
    pub fn one(&self, l: &Arc<throttlekit::Limiter>, op: RestOp, key: CoreResult<(String, u64)>) -> js_sys::Promise {
        self.run(
            key.and_then(|(k, cost)| {
                Ok(self.script(l.rest_prepare(op, &k, cost, self.locking)?, Finish::One(l.clone())))
            }),
        )
    }

    /// `checkMany`: one `/pipeline`.
    pub fn many(&self, l: &Arc<throttlekit::Limiter>, keys: CoreResult<(Vec<String>, u64)>) -> js_sys::Promise {
        self.run(keys.and_then(|(keys, cost)| {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(self.script(l.rest_prepare_many(&keys, cost, self.locking)?, Finish::Many(l.clone())))
        }))
    }

    /// A multi-dimensional check: one call of the fused script.
    pub fn multi(&self, m: &Arc<throttlekit::MultiLimiter>, keys: CoreResult<(Vec<String>, u64)>) -> js_sys::Promise {
        self.run(keys.and_then(|(keys, cost)| {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(self.script(m.rest_prepare(&keys, cost, self.locking)?, Finish::Multi(m.clone())))
        }))
    }

    /// A shaper's `reserve`: one call of the leaky bucket's script.
    pub fn reserve(&self, s: &Arc<throttlekit::Shaper>, key: CoreResult<(String, u64)>) -> js_sys::Promise {
        self.run(
            key.and_then(|(k, cost)| {
                Ok(self.script(s.rest_prepare(&k, cost, self.locking)?, Finish::Shaper(s.clone())))
            }),
        )
    }

    /// `reset`: one `DEL` per request.
    pub fn reset(&self, request: CoreResult<Request>) -> js_sys::Promise {
        self.run(request.map(|r| State::Del(r, None)))
    }
}

/// The error of a sync method on a REST limiter or shaper (every REST call waits on the network).
pub fn no_sync() -> JsValue {
    crate::error::to_js(throttlekit::Error::not_implemented(
        "the sync methods on the Redis REST store (it answers over the network: use the Promise methods)",
    ))
}
