//! [`Limiter`]: a strategy bound to a store, a clock and a key prefix — the core's `Limiter`.
//! The Promise methods settle at once (the memory store never waits); invalid arguments reject.

use std::sync::Arc;

use wasm_bindgen::prelude::*;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, settled};
use crate::rest::{Link, no_sync};
use crate::store::Backend;
use crate::{held, store, strategy};
use throttlekit::redis::rest::limiter::RestOp;
use throttlekit::store::held::Op;

#[wasm_bindgen(inline_js = "
export function decision(allowed, limit, remaining, resetAt, retryAfterMs, fallback) {
  const d = { allowed, limit, remaining, resetAt, retryAfterMs }
  if (fallback) d.fallback = true
  return d
}")]
extern "C" {
    /// The plain `Decision` object of the Node binding, made in one call.
    fn decision(
        allowed: bool,
        limit: f64,
        remaining: f64,
        reset_at: f64,
        retry_after_ms: f64,
        fallback: bool,
    ) -> JsValue;
}

/// `d` as a plain JS object.
#[inline]
pub fn to_js(d: &throttlekit::Decision) -> JsValue {
    decision(d.allowed, d.limit as f64, d.remaining as f64, d.reset_at as f64, d.retry_after_ms as f64, d.fallback)
}

/// The options every limiter takes besides its algorithm (the Node binding's list, so an
/// unknown option names the same choices; `serverClock`, `metrics`, `mode` and `lease` mean
/// nothing on the memory store and are checked and passed on as there).
pub const WIRING: [&str; 5] = ["store", "clock", "prefix", "serverClock", "failPolicy"];

/// `mode` and `lease` from a limiter's options (parsing and checks are core's).
pub fn mode_from_options(o: &Options) -> CoreResult<throttlekit::Mode> {
    let lease = match o.get("lease") {
        Some(v) => {
            let l = Options::read(v, &o.path("lease"), &["batch", "lowWater", "windowCoupled", "maxKeys"], false)?;
            Some(throttlekit::LeaseOptions::from_fields(
                l.number("batch")?,
                l.number("lowWater")?,
                l.boolean("windowCoupled")?,
                l.number("maxKeys")?,
            )?)
        }
        None => None,
    };
    match (o.string("mode")?, lease) {
        (None, None) => Ok(throttlekit::Mode::Strict),
        (None, Some(l)) => Ok(throttlekit::Mode::Leased(l)),
        (Some(m), l) => throttlekit::Mode::parse(&m, l.unwrap_or_default()),
    }
}

/// The core limiter, its store's links, and whether its clock is the host's.
type Built = (throttlekit::Limiter, Option<Link>, Option<held::Link>, bool);

fn build(options: &JsValue) -> CoreResult<Built> {
    let mut allowed = vec!["strategy"];
    allowed.extend(WIRING);
    allowed.extend(["metrics", "mode", "lease"]);
    let o = Options::read(options, "limiter", &allowed, false)?;
    let strategy = strategy::from_js(o.require("strategy")?, &o.path("strategy"))?;
    let unused = || Arc::new(throttlekit::MemoryStore::new()) as Arc<dyn throttlekit::Store>;
    let (store, rest, held) = match store::backend_from_options(&o)? {
        Backend::Memory(s) => (s, None, None),
        Backend::Rest(link) => (unused(), Some(link), None),
        Backend::Held(link) => (unused(), None, Some(link)),
    };
    let mode = mode_from_options(&o)?;
    let mut b = throttlekit::Limiter::builder(strategy).store(store).clock(store::clock_from_options(&o)?);
    if let Some(prefix) = o.string("prefix")? {
        b = b.prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")? {
        b = b.server_clock(on);
    }
    if let Some(p) = store::fail_policy_from_options(&o)? {
        b = b.fail_policy(p);
    }
    if let Some(on) = o.boolean("metrics")? {
        b = b.metrics(on);
    }
    Ok((b.mode(mode)?.build(), rest, held, o.get("clock").is_none()))
}

/// A rate limiter: one strategy applied per key.
#[wasm_bindgen]
pub struct Limiter {
    pub(crate) inner: Arc<throttlekit::Limiter>,
    /// Set on the Redis REST store: the Promise methods go over the network.
    pub(crate) rest: Option<Link>,
    /// Set on a Durable Object or Deno KV store: the Promise methods go to it.
    held: Option<held::Link>,
    /// Whether the clock is the host's (no `ManualClock`): the fast path reads it in JavaScript.
    host_clock: bool,
}

impl Limiter {
    fn key_and_cost(key: &JsValue, cost: &JsValue) -> CoreResult<(String, u64)> {
        let cost = convert::cost(cost)?;
        Ok((convert::string(key, "key")?, cost))
    }

    /// Throws when the store answers only asynchronously.
    fn sync_ok(&self) -> Result<(), JsValue> {
        if self.held.is_some() {
            return Err(held::no_sync());
        }
        if self.rest.is_some() { Err(no_sync()) } else { Ok(()) }
    }

    fn check_now(&self, key: &JsValue, cost: &JsValue) -> Result<JsValue, JsValue> {
        self.sync_ok()?;
        let (key, cost) = Limiter::key_and_cost(key, cost).or_throw()?;
        Ok(to_js(&self.inner.check_sync(&key, cost).or_throw()?))
    }

    fn check_many_now(&self, keys: &JsValue, cost: &JsValue) -> Result<JsValue, JsValue> {
        self.sync_ok()?;
        let ds = (|| {
            let cost = convert::cost(cost)?;
            let keys = convert::strings(keys, "keys")?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.inner.check_many_sync(&keys, cost)
        })()
        .or_throw()?;
        Ok(ds.iter().map(to_js).collect::<js_sys::Array>().into())
    }

    fn peek_now(&self, key: &JsValue) -> Result<JsValue, JsValue> {
        self.sync_ok()?;
        let key = convert::string(key, "key").or_throw()?;
        Ok(to_js(&self.inner.peek_sync(&key).or_throw()?))
    }

    fn forecast_now(&self, key: &JsValue, cost: &JsValue) -> Result<JsValue, JsValue> {
        self.sync_ok()?;
        let (key, cost) = Limiter::key_and_cost(key, cost).or_throw()?;
        Ok(to_js(&self.inner.forecast_sync(&key, cost).or_throw()?))
    }

    fn reset_now(&self, key: &JsValue) -> Result<JsValue, JsValue> {
        self.sync_ok()?;
        let key = convert::string(key, "key").or_throw()?;
        self.inner.reset_sync(&key).or_throw()?;
        Ok(JsValue::UNDEFINED)
    }
}

#[wasm_bindgen]
impl Limiter {
    /// A limiter; bad options throw `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Limiter, JsValue> {
        let (inner, rest, held, host_clock) = build(&options).or_throw()?;
        Ok(Limiter { inner: Arc::new(inner), rest, held, host_clock })
    }

    /// Checks (and, when allowed, consumes) `cost` units (default 1) for `key`.
    #[wasm_bindgen(js_name = checkSync)]
    pub fn check_sync(&self, key: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        self.check_now(&key, &cost)
    }

    /// `checkSync` as a Promise.
    pub fn check(&self, key: JsValue, cost: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.one(&self.inner, RestOp::Check, Limiter::key_and_cost(&key, &cost));
        }
        if let Some(link) = &self.held {
            return link.one(&self.inner, Op::Check, &key, &cost);
        }
        settled(self.check_now(&key, &cost))
    }

    /// One request of `cost` per key, all at one clock reading (each key on its own).
    #[wasm_bindgen(js_name = checkManySync)]
    pub fn check_many_sync(&self, keys: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        self.check_many_now(&keys, &cost)
    }

    /// `checkManySync` as a Promise.
    #[wasm_bindgen(js_name = checkMany)]
    pub fn check_many(&self, keys: JsValue, cost: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.held {
            return link.many(&self.inner, &keys, &cost);
        }
        if let Some(link) = &self.rest {
            return link
                .many(&self.inner, convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))));
        }
        settled(self.check_many_now(&keys, &cost))
    }

    /// Current capacity of `key`, consuming nothing.
    #[wasm_bindgen(js_name = peekSync)]
    pub fn peek_sync(&self, key: JsValue) -> Result<JsValue, JsValue> {
        self.peek_now(&key)
    }

    /// `peekSync` as a Promise.
    pub fn peek(&self, key: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.one(&self.inner, RestOp::Peek, convert::string(&key, "key").map(|k| (k, 1)));
        }
        if let Some(link) = &self.held {
            return link.one(&self.inner, Op::Peek, &key, &JsValue::UNDEFINED);
        }
        settled(self.peek_now(&key))
    }

    /// The decision a check of `cost` would get now, consuming nothing.
    #[wasm_bindgen(js_name = forecastSync)]
    pub fn forecast_sync(&self, key: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        self.forecast_now(&key, &cost)
    }

    /// `forecastSync` as a Promise.
    pub fn forecast(&self, key: JsValue, cost: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.one(&self.inner, RestOp::Forecast, Limiter::key_and_cost(&key, &cost));
        }
        if let Some(link) = &self.held {
            return link.one(&self.inner, Op::Forecast, &key, &cost);
        }
        settled(self.forecast_now(&key, &cost))
    }

    /// Forgets `key`'s state.
    #[wasm_bindgen(js_name = resetSync)]
    pub fn reset_sync(&self, key: JsValue) -> Result<(), JsValue> {
        self.reset_now(&key).map(|_| ())
    }

    /// `resetSync` as a Promise.
    pub fn reset(&self, key: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.reset(convert::string(&key, "key").and_then(|k| self.inner.rest_reset(&k)));
        }
        if let Some(link) = &self.held {
            return link.reset(&self.inner, &key);
        }
        settled(self.reset_now(&key))
    }

    /// Nothing to close (the REST store holds no connection); resolves at once.
    pub fn close(&self) -> js_sys::Promise {
        js_sys::Promise::resolve(&JsValue::UNDEFINED)
    }

    /// The strategy.
    #[wasm_bindgen(getter)]
    pub fn strategy(&self) -> strategy::Strategy {
        strategy::wrap(self.inner.strategy().clone())
    }

    /// The key prefix (`''` for none).
    #[wasm_bindgen(getter)]
    pub fn prefix(&self) -> String {
        self.inner.prefix().to_owned()
    }

    /// Internal: the handle `tk_limiter` takes (fast.rs), or 0 when the store answers only
    /// asynchronously (REST, Durable Object, Deno KV: wasm-bindgen's path handles those). Valid
    /// while this limiter is not freed.
    #[wasm_bindgen(getter, js_name = __fastHandle)]
    pub fn fast_handle(&self) -> u32 {
        if self.rest.is_some() || self.held.is_some() {
            return 0;
        }
        Arc::as_ptr(&self.inner) as u32 | if self.host_clock { crate::fast::HOST_CLOCK } else { 0 }
    }

    /// The fail policy in effect.
    #[wasm_bindgen(getter, js_name = failPolicy)]
    pub fn fail_policy(&self) -> String {
        store::fail_policy_name(self.inner.fail_policy()).to_owned()
    }
}
