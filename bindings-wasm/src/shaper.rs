//! [`Shaper`]: the leaky bucket as a traffic shaper — the core's `Shaper`. It delays instead of
//! denying: `reserve` says how long to wait (the caller waits; this build has no `schedule`).
//! On the Redis REST store its Promise methods go over the network and the sync ones throw
//! `not_implemented`, as a limiter's do.

use std::sync::Arc;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, config, settled};
use crate::rest::{Link, no_sync};
use crate::store;

fn build(options: &JsValue) -> CoreResult<(throttlekit::Shaper, Option<Link>)> {
    let o = Options::read(
        options,
        "shaper",
        &["ratePerSec", "maxQueueMs", "store", "clock", "prefix", "serverClock", "metrics"],
        false,
    )?;
    let rate = o.number("ratePerSec")?.ok_or_else(|| config(&o.path("ratePerSec"), "is required"))?;
    let max_queue = o.number("maxQueueMs")?.ok_or_else(|| config(&o.path("maxQueueMs"), "is required"))?;
    // NaN and infinities have no JSON form (the Node binding's path through serde): the core's
    // validator gives them its message for -1. Any other number reads as itself.
    let spec = throttlekit::LeakyBucketOptions { rate_per_sec: finite(rate), max_queue_ms: finite(max_queue) };
    let (store, rest) = store::memory_or_rest(&o, "Shaper")?;
    let mut s = throttlekit::Shaper::new(&spec)?.with_store(store).with_clock(store::clock_from_options(&o)?);
    if let Some(prefix) = o.string("prefix")? {
        s = s.with_prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")? {
        s = s.with_server_clock(on);
    }
    if let Some(on) = o.boolean("metrics")? {
        s = s.with_metrics(on);
    }
    Ok((s, rest))
}

fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { -1.0 }
}

/// A leaky-bucket shaper: requests queue up to `maxQueueMs` at `ratePerSec`.
#[wasm_bindgen]
pub struct Shaper {
    inner: Arc<throttlekit::Shaper>,
    /// Set on the Redis REST store: the Promise methods go over the network.
    rest: Option<Link>,
}

/// `r` as the plain `{accepted, delayMs}` object.
pub fn to_js(r: &throttlekit::Reservation) -> JsValue {
    let v = js_sys::Object::new();
    // Setting properties on a fresh plain object cannot fail.
    let _ = Reflect::set(&v, &"accepted".into(), &r.accepted.into());
    let _ = Reflect::set(&v, &"delayMs".into(), &JsValue::from_f64(r.delay_ms as f64));
    v.into()
}

impl Shaper {
    fn key_and_cost(key: &JsValue, cost: &JsValue) -> CoreResult<(String, u64)> {
        let cost = convert::cost(cost)?;
        Ok((convert::string(key, "key")?, cost))
    }

    fn reserve_now(&self, key: &JsValue, cost: &JsValue) -> Result<JsValue, JsValue> {
        if self.rest.is_some() {
            return Err(no_sync());
        }
        let (key, cost) = Shaper::key_and_cost(key, cost).or_throw()?;
        Ok(to_js(&self.inner.reserve_sync(&key, cost).or_throw()?))
    }

    fn reset_now(&self, key: &JsValue) -> Result<JsValue, JsValue> {
        if self.rest.is_some() {
            return Err(no_sync());
        }
        self.inner.reset_sync(&convert::string(key, "key").or_throw()?).or_throw()?;
        Ok(JsValue::UNDEFINED)
    }
}

#[wasm_bindgen]
impl Shaper {
    /// A shaper; bad options throw `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Shaper, JsValue> {
        let (inner, rest) = build(&options).or_throw()?;
        Ok(Shaper { inner: Arc::new(inner), rest })
    }

    /// Reserves a slot for `cost` units: `{accepted, delayMs}`.
    #[wasm_bindgen(js_name = reserveSync)]
    pub fn reserve_sync(&self, key: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        self.reserve_now(&key, &cost)
    }

    /// `reserveSync` as a Promise.
    pub fn reserve(&self, key: JsValue, cost: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.reserve(&self.inner, Shaper::key_and_cost(&key, &cost));
        }
        settled(self.reserve_now(&key, &cost))
    }

    /// Forgets `key`'s queue.
    #[wasm_bindgen(js_name = resetSync)]
    pub fn reset_sync(&self, key: JsValue) -> Result<(), JsValue> {
        self.reset_now(&key).map(|_| ())
    }

    /// `resetSync` as a Promise.
    pub fn reset(&self, key: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.reset(convert::string(&key, "key").and_then(|k| self.inner.rest_reset(&k)));
        }
        settled(self.reset_now(&key))
    }
}
