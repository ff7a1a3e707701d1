//! Core errors as JavaScript errors: an `Error` whose `code` is the stable string
//! (`config_invalid`, ...) and `retryAfterMs` when the core knows it — the Node binding's shape.

use js_sys::Reflect;
use wasm_bindgen::JsValue;

/// A core result, the currency of everything below the JS boundary.
pub type CoreResult<T> = throttlekit::Result<T>;

/// `config_invalid` for `field` (the core's constructor, so messages read the same everywhere).
pub fn config(field: &str, problem: &str) -> throttlekit::Error {
    throttlekit::Error::config(field, problem)
}

/// The JS error for `e`.
pub fn to_js(e: throttlekit::Error) -> JsValue {
    let error = js_sys::Error::new(e.message());
    // Setting a property on a fresh Error cannot fail; a failure would only lose the field.
    let _ = Reflect::set(&error, &"code".into(), &e.code().as_str().into());
    if let Some(ms) = e.retry_after_ms() {
        let _ = Reflect::set(&error, &"retryAfterMs".into(), &JsValue::from_f64(ms as f64));
    }
    error.into()
}

/// Lifts core results into wasm-bindgen results with our error objects.
pub trait OrThrow<T> {
    /// The value, or the JS error for the core error.
    fn or_throw(self) -> Result<T, JsValue>;
}

impl<T> OrThrow<T> for CoreResult<T> {
    #[inline]
    fn or_throw(self) -> Result<T, JsValue> {
        self.map_err(to_js)
    }
}

/// A Promise settled with `r` (the Promise methods: the memory store answers at once).
pub fn settled(r: Result<JsValue, JsValue>) -> js_sys::Promise {
    match r {
        Ok(v) => js_sys::Promise::resolve(&v),
        Err(e) => js_sys::Promise::reject(&e),
    }
}
