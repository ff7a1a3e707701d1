//! [`MultiLimiter`]: several named dimensions decided atomically under `all` or `any`.

use std::sync::Arc;

use js_sys::Reflect;
use throttlekit::Rule;
use wasm_bindgen::prelude::*;

use crate::convert::{self, Options};
use crate::error::{CoreResult, OrThrow, config, settled};
use crate::limiter::{self, WIRING};
use crate::rest::{Link, no_sync};
use crate::{store, strategy};

fn dimension(v: &JsValue, field: &str) -> CoreResult<throttlekit::Dimension> {
    let o = Options::read(v, field, &["name", "strategy", "costMultiplier"], false)?;
    let name = o.string("name")?.ok_or_else(|| config(&o.path("name"), "is required"))?;
    let strategy = strategy::from_js(o.require("strategy")?, &o.path("strategy"))?;
    let mut d = throttlekit::Dimension::new(name, strategy);
    if let Some(m) = o.number("costMultiplier")? {
        let m = throttlekit::validate::integer_at_least(&o.path("costMultiplier"), m, 1.0)?;
        d = d.cost_multiplier(m as u64);
    }
    Ok(d)
}

fn build(options: &JsValue) -> CoreResult<(throttlekit::MultiLimiter, Option<Link>)> {
    let mut allowed = vec!["rule", "dimensions", "hashTag", "metrics", "mode", "lease"];
    allowed.extend(WIRING);
    let o = Options::read(options, "multiLimiter", &allowed, false)?;
    let rule = match o.string("rule")?.as_deref() {
        Some("all") => Rule::All,
        Some("any") => Rule::Any,
        _ => return Err(config(&o.path("rule"), "must be 'all' or 'any'")),
    };
    let dims_path = o.path("dimensions");
    let dims = convert::array(o.require("dimensions")?, &dims_path)?
        .iter()
        .enumerate()
        .map(|(i, d)| dimension(d, &format!("{dims_path}[{i}]")))
        .collect::<CoreResult<Vec<_>>>()?;
    let mode = limiter::mode_from_options(&o)?;
    let (store, rest) = store::memory_or_rest(&o, "MultiLimiter")?;
    let mut m =
        throttlekit::MultiLimiter::new(rule, dims)?.with_store(store).with_clock(store::clock_from_options(&o)?);
    if let Some(prefix) = o.string("prefix")? {
        m = m.with_prefix(prefix);
    }
    if let Some(on) = o.boolean("serverClock")? {
        m = m.with_server_clock(on);
    }
    if let Some(p) = store::fail_policy_from_options(&o)? {
        m = m.with_fail_policy(p);
    }
    if let Some(tag) = o.string("hashTag")? {
        m = m.with_hash_tag(tag)?;
    }
    if let Some(on) = o.boolean("metrics")? {
        m = m.with_metrics(on);
    }
    Ok((m.with_mode(mode)?, rest))
}

/// The Node binding's `MultiDecision`: the binding decision's fields, `binding` and every
/// dimension's decision.
pub fn to_js(m: &throttlekit::MultiDecision) -> JsValue {
    let v = limiter::to_js(&m.decision);
    let dims: js_sys::Array = m.dimensions.iter().map(limiter::to_js).collect();
    // Setting properties on a fresh plain object cannot fail.
    let _ = Reflect::set(&v, &"binding".into(), &m.binding.as_str().into());
    let _ = Reflect::set(&v, &"dimensions".into(), &dims);
    v
}

/// Several dimensions (per user, per IP, ...) decided together under `all` or `any`.
#[wasm_bindgen]
pub struct MultiLimiter {
    pub(crate) inner: Arc<throttlekit::MultiLimiter>,
    /// Set on the Redis REST store: the Promise methods go over the network.
    pub(crate) rest: Option<Link>,
}

impl MultiLimiter {
    fn check_now(&self, keys: &JsValue, cost: &JsValue) -> Result<JsValue, JsValue> {
        if self.rest.is_some() {
            return Err(no_sync());
        }
        let m = (|| {
            let cost = convert::cost(cost)?;
            let keys = convert::strings(keys, "keys")?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            self.inner.check_sync(&keys, cost)
        })()
        .or_throw()?;
        Ok(to_js(&m))
    }

    fn reset_now(&self, keys: &JsValue) -> Result<JsValue, JsValue> {
        if self.rest.is_some() {
            return Err(no_sync());
        }
        let keys = convert::strings(keys, "keys").or_throw()?;
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.inner.reset_sync(&keys).or_throw()?;
        Ok(JsValue::UNDEFINED)
    }
}

#[wasm_bindgen]
impl MultiLimiter {
    /// A multi limiter; bad options throw `config_invalid`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<MultiLimiter, JsValue> {
        let (inner, rest) = build(&options).or_throw()?;
        Ok(MultiLimiter { inner: Arc::new(inner), rest })
    }

    /// Checks `cost` (default 1) against one key per dimension, atomically.
    #[wasm_bindgen(js_name = checkSync)]
    pub fn check_sync(&self, keys: JsValue, cost: JsValue) -> Result<JsValue, JsValue> {
        self.check_now(&keys, &cost)
    }

    /// `checkSync` as a Promise.
    pub fn check(&self, keys: JsValue, cost: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link
                .multi(&self.inner, convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))));
        }
        settled(self.check_now(&keys, &cost))
    }

    /// Forgets the state of one key per dimension.
    #[wasm_bindgen(js_name = resetSync)]
    pub fn reset_sync(&self, keys: JsValue) -> Result<(), JsValue> {
        self.reset_now(&keys).map(|_| ())
    }

    /// `resetSync` as a Promise.
    pub fn reset(&self, keys: JsValue) -> js_sys::Promise {
        if let Some(link) = &self.rest {
            return link.reset(convert::strings(&keys, "keys").and_then(|keys| {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let full = self.inner.full_keys(&keys)?;
                let mut args: Vec<&[u8]> = vec![b"DEL"];
                args.extend(full.iter().map(|k| k.as_bytes()));
                Ok(throttlekit::redis::rest::Request {
                    path: throttlekit::redis::rest::PATH_ONE,
                    body: throttlekit::redis::rest::command_json(&args),
                    hex: false,
                })
            }));
        }
        settled(self.reset_now(&keys))
    }

    /// The rule: `'all'` or `'any'`.
    #[wasm_bindgen(getter)]
    pub fn rule(&self) -> String {
        match self.inner.rule() {
            Rule::All => "all",
            Rule::Any => "any",
        }
        .to_owned()
    }
}
