//! [`ManualClock`], the core's test clock, and [`HostClock`], the clock of every limiter
//! without one: `Date.now()`, read in JavaScript (a Worker freezes it during a request).

use wasm_bindgen::prelude::*;

use crate::convert;
use crate::error::OrThrow;
use crate::instance::{self, Item};

#[wasm_bindgen]
extern "C" {
    /// `Date.now()`: epoch milliseconds, a whole number.
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
}

/// The host's wall clock, `Date.now()`.
#[derive(Debug, Default)]
pub struct HostClock;

impl throttlekit::Clock for HostClock {
    fn now_ms(&self) -> i64 {
        date_now() as i64
    }
}

/// A clock that moves only when told to (tests, the conformance runner).
#[wasm_bindgen]
pub struct ManualClock {
    pub(crate) inner: throttlekit::ManualClock,
    id: u32,
}

impl Drop for ManualClock {
    fn drop(&mut self) {
        instance::forget(self.id);
    }
}

#[wasm_bindgen]
impl ManualClock {
    /// A clock showing `nowMs` (default 0).
    #[wasm_bindgen(constructor)]
    pub fn new(now_ms: JsValue) -> Result<ManualClock, JsValue> {
        let now = if now_ms.is_undefined() { Ok(0) } else { convert::epoch_ms(&now_ms, "nowMs") };
        let inner = throttlekit::ManualClock::new(now.or_throw()?);
        let id = instance::register(Item::Clock(inner.clone()));
        Ok(ManualClock { inner, id })
    }

    /// The instance's id (see instance.rs).
    #[wasm_bindgen(getter = __tk)]
    pub fn tk(&self) -> u32 {
        self.id
    }

    /// The time, in epoch ms.
    pub fn now(&self) -> f64 {
        use throttlekit::Clock;
        self.inner.now_ms() as f64
    }

    /// Moves time forward by `ms`; returns the new time.
    pub fn advance(&self, ms: JsValue) -> Result<f64, JsValue> {
        let ms = convert::epoch_ms(&ms, "ms").or_throw()?;
        Ok(self.inner.advance(ms).or_throw()? as f64)
    }

    /// Sets the time (backwards too).
    pub fn set(&self, now_ms: JsValue) -> Result<(), JsValue> {
        self.inner.set(convert::epoch_ms(&now_ms, "nowMs").or_throw()?);
        Ok(())
    }
}
