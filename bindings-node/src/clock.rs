//! [`ManualClock`]: the core's test clock, for deterministic tests and the conformance runner.
//! (Without one, limiters read the system clock in the core.)

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;

use crate::convert;
use crate::error::OrThrow;

/// A clock that moves only when told to. Every limiter given this clock shares its time.
#[napi]
pub struct ManualClock {
    pub(crate) inner: throttlekit::ManualClock,
}

#[napi]
impl ManualClock {
    /// A clock showing `nowMs` (epoch milliseconds, an integer; default 0).
    #[napi(constructor, ts_args_type = "nowMs?: number")]
    pub fn new(env: &Env, now_ms: Unknown) -> napi::Result<ManualClock> {
        let now = if convert::is_undefined(&now_ms) { Ok(0) } else { convert::epoch_ms(&now_ms, "nowMs") };
        Ok(ManualClock { inner: throttlekit::ManualClock::new(now.or_throw(env)?) })
    }

    /// The current time, epoch ms.
    #[napi]
    pub fn now(&self) -> i64 {
        use throttlekit::Clock;
        self.inner.now_ms()
    }

    /// Moves time forward by `ms` (a non-negative integer) and returns the new time.
    #[napi(ts_args_type = "ms: number")]
    pub fn advance(&self, env: &Env, ms: Unknown) -> napi::Result<i64> {
        let ms = convert::epoch_ms(&ms, "ms").or_throw(env)?;
        self.inner.advance(ms).or_throw(env)
    }

    /// Sets the time (backwards included, to test clock jumps).
    #[napi(ts_args_type = "nowMs: number")]
    pub fn set(&self, env: &Env, now_ms: Unknown) -> napi::Result<()> {
        self.inner.set(convert::epoch_ms(&now_ms, "nowMs").or_throw(env)?);
        Ok(())
    }
}
