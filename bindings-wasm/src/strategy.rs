//! [`Strategy`]: a validated algorithm, built from typed options or from a spec object (the
//! conformance vectors' `{kind, options}`), parsed and validated by the core.

use js_sys::{Object, Reflect};
use throttlekit::spec::{Data, OptionValue};
use wasm_bindgen::prelude::*;

use crate::convert;
use crate::error::{CoreResult, OrThrow, config};
use crate::instance::{self, Item};

/// A validated rate-limiting algorithm.
#[wasm_bindgen]
pub struct Strategy {
    pub(crate) inner: throttlekit::Strategy,
    id: u32,
}

impl Drop for Strategy {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

impl Strategy {
    fn wrap(inner: throttlekit::Strategy) -> Strategy {
        let id = instance::register(Item::Strategy(inner.clone()));
        Strategy { inner, id }
    }
}

/// A strategy of `kind` from the JS options object `options`.
fn typed(kind: &str, options: &JsValue) -> Result<Strategy, JsValue> {
    let built = (|| {
        let options = convert::json(options, kind)?;
        if !matches!(options, Data::Object(_)) {
            return Err(config(kind, "options must be an object"));
        }
        from_value(Data::object(vec![
            ("kind".to_owned(), Data::String(kind.to_owned())),
            ("options".to_owned(), options),
        ]))
    })();
    Ok(Strategy::wrap(built.or_throw()?))
}

/// Parses and validates a spec held as JSON data: the core's hand-written reader, which gives
/// serde's messages without serde's deserializers in the module (core/src/spec/value.rs).
pub fn from_value(spec: Data) -> CoreResult<throttlekit::Strategy> {
    throttlekit::StrategySpec::from_value(&spec)?.build()
}

/// A strategy given as a `Strategy` instance or as a spec object.
pub fn from_js(v: &JsValue, field: &str) -> CoreResult<throttlekit::Strategy> {
    match instance::of(v, field)? {
        Some(Item::Strategy(s)) => Ok(s),
        Some(_) => Err(config(field, "is not a constructed instance")),
        None => from_value(convert::json(v, field)?),
    }
}

/// The spec of `s` as a fresh JS object, `{kind, options}` with the options in name order, as
/// the native addon's (serde_json's map is sorted); built from the core's
/// `option_list`, with no JSON serializer in the module.
pub fn spec_of(s: &throttlekit::Strategy) -> JsValue {
    let spec = s.spec();
    let options = Object::new();
    let mut list = spec.option_list();
    list.sort_unstable_by_key(|(name, _)| *name);
    for (name, v) in list {
        let v = match v {
            OptionValue::Number(n) => JsValue::from_f64(n),
            OptionValue::Name(n) => JsValue::from_str(n),
        };
        // Setting properties on a fresh plain object cannot fail.
        let _ = Reflect::set(&options, &name.into(), &v);
    }
    let o = Object::new();
    let _ = Reflect::set(&o, &"kind".into(), &spec.kind().into());
    let _ = Reflect::set(&o, &"options".into(), &options);
    o.into()
}

#[wasm_bindgen]
impl Strategy {
    /// GCRA (the default algorithm): `limit` per `periodMs`, smooth pacing, `burst` at once.
    pub fn gcra(options: JsValue) -> Result<Strategy, JsValue> {
        typed("gcra", &options)
    }

    /// Token bucket of `capacity`, refilling `refillPerSec` tokens a second.
    #[wasm_bindgen(js_name = tokenBucket)]
    pub fn token_bucket(options: JsValue) -> Result<Strategy, JsValue> {
        typed("tokenBucket", &options)
    }

    /// Fixed window: `limit` per epoch-aligned `windowMs`.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(options: JsValue) -> Result<Strategy, JsValue> {
        typed("fixedWindow", &options)
    }

    /// Sliding window: `limit` per rolling `windowMs`, estimated over `buckets` sub-buckets.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(options: JsValue) -> Result<Strategy, JsValue> {
        typed("slidingWindow", &options)
    }

    /// Sliding-window log: exactly `limit` per trailing `windowMs`.
    #[wasm_bindgen(js_name = slidingWindowLog)]
    pub fn sliding_window_log(options: JsValue) -> Result<Strategy, JsValue> {
        typed("slidingWindowLog", &options)
    }

    /// Quota: a budget per calendar month/week/day, fixed or rolling period.
    pub fn quota(options: JsValue) -> Result<Strategy, JsValue> {
        typed("quota", &options)
    }

    /// A strategy from a spec object (`{kind: 'gcra', options: {limit: 10, periodMs: 1000}}`).
    #[wasm_bindgen(js_name = fromSpec)]
    pub fn from_spec(spec: JsValue) -> Result<Strategy, JsValue> {
        Ok(Strategy::wrap(from_value(convert::json(&spec, "strategy").or_throw()?).or_throw()?))
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// The spec's kind (`'gcra'`, `'tokenBucket'`, ...).
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        self.inner.kind().to_owned()
    }

    /// The `limit` its decisions report (GCRA: the burst; token bucket: the capacity).
    #[wasm_bindgen(getter)]
    pub fn limit(&self) -> f64 {
        self.inner.limit() as f64
    }

    /// The spec this strategy was built from (a fresh object each call).
    #[wasm_bindgen(js_name = toSpec)]
    pub fn to_spec(&self) -> JsValue {
        spec_of(&self.inner)
    }

    /// `toJSON` for `JSON.stringify`: the spec.
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> JsValue {
        spec_of(&self.inner)
    }
}

/// A `Strategy` instance for `s` (a limiter's `strategy` getter).
pub fn wrap(s: throttlekit::Strategy) -> Strategy {
    Strategy::wrap(s)
}
