//! The typed fast path of a memory-store `Limiter`'s `checkSync`, `peekSync`, `forecastSync`,
//! `resetSync` and their Promise forms (bindings-node/wasm/fast.mjs is its JavaScript half).
//!
//! wasm-bindgen's own shims cost several times the core's decision: the key and the cost come
//! in as `JsValue`s read through calls back into JavaScript, and the decision goes out as an
//! object built by another call. Here nothing but numbers crosses: JavaScript writes the key's
//! UTF-8 bytes into [`SCRATCH`] (a fixed area of this module's memory; a key equal to the last
//! one written finds its bytes there already, as nothing else writes the area), calls
//! [`tk_limiter`] with the limiter's handle, the operation and the cost, and reads the
//! decision's five numbers and its fallback flag back from the same area; it builds the
//! decision object itself. An error is kept here and handed over as the usual JS error by
//! `__takeError`.
//!
//! Only well-typed calls come here (a string key, an `undefined` or number cost): every other
//! argument takes wasm-bindgen's path, which gives the `config_invalid` messages. A cost that is
//! a number is validated here by the same validator, so its errors read the same.

use std::cell::{Cell, UnsafeCell};

use throttlekit::validate;
use wasm_bindgen::prelude::*;

use crate::error::{self, config};

/// The longest key (in UTF-8 bytes) the fast path takes; longer keys take wasm-bindgen's path.
pub const KEY_CAP: usize = 3072;

/// Where the decision's numbers go (`allowed`, `limit`, `remaining`, `resetAt`,
/// `retryAfterMs`, `fallback`; booleans as 0 or 1), then the key's bytes.
#[repr(C, align(8))]
pub struct Area {
    out: [f64; 6],
    key: [u8; KEY_CAP],
}

/// The one scratch area (the module is single-threaded: wasm32-unknown-unknown without atomics).
struct Scratch(UnsafeCell<Area>);

// SAFETY: wasm32-unknown-unknown without the atomics feature runs on one thread.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch(UnsafeCell::new(Area { out: [0.0; 6], key: [0; KEY_CAP] }));

thread_local! {
    /// The error of the last fast call that failed, until `__takeError` takes it.
    static ERROR: Cell<Option<throttlekit::Error>> = const { Cell::new(None) };
}

/// The scratch area's address in the module's memory (the decision at +0, the key at +48).
#[unsafe(no_mangle)]
pub extern "C" fn tk_scratch() -> *mut Area {
    SCRATCH.0.get()
}

/// Set in a handle whose limiter reads the host's clock: JavaScript then passes `Date.now()`.
/// (A handle is otherwise the address of the core limiter, which is aligned: bit 0 is free.)
pub const HOST_CLOCK: u32 = 1;

/// One operation of a memory-store limiter: `op` 0 `check`, 1 `peek`, 2 `forecast`, 3 `reset`,
/// on the key of `key_len` bytes in the scratch area, at `cost` (ignored by `peek` and `reset`)
/// and at `now` (`Date.now()` for a handle with [`HOST_CLOCK`], else NaN).
/// Returns 0 with the decision written to the scratch area, 1 with nothing to read (`reset`), or
/// 2 on an error (take it with `__takeError`).
///
/// # Safety
/// `handle` is a `Limiter.__fastHandle` of a limiter that has not been freed, and the first
/// `key_len` bytes of the scratch area's key are this call's key as UTF-8, written there by
/// fast.mjs for this call or left there by the last call on the same key (not validated again:
/// a `key_len` past [`KEY_CAP`] is refused, invalid UTF-8 is undefined behaviour).
///
/// Compiled for speed (`optimize(speed)`, as the core's `Limiter::check_sync_at`), not for size
/// as the rest of the module: this is the whole path of a memory-store check.
#[unsafe(no_mangle)]
#[optimize(speed)]
pub unsafe extern "C" fn tk_limiter(handle: u32, op: u32, key_len: u32, cost: f64, now: f64) -> u32 {
    let limiter = (handle & !HOST_CLOCK) as *const throttlekit::Limiter;
    // SAFETY: the caller's contract above; nothing else touches the area during the call.
    let (limiter, area) = unsafe { (&*limiter, &mut *SCRATCH.0.get()) };
    let Some(key) = area.key.get(..key_len as usize) else {
        return fail(config("key", "must be a string"));
    };
    // SAFETY: the caller's contract: fast.mjs writes only UTF-8 (its ASCII loop, then
    // `TextEncoder.encodeInto`, which writes well-formed UTF-8 and whole characters only). Not
    // validating it again here took ~2 ns a call off ~120 (a `perf` profile of `checkSync`).
    let key = unsafe { std::str::from_utf8_unchecked(key) };
    debug_assert!(std::str::from_utf8(key.as_bytes()).is_ok());
    // The host clock's reading, taken in JavaScript (`Date.now()`: no call back out for it);
    // NaN for a limiter on a `ManualClock`, which reads its own.
    let now = (!now.is_nan()).then_some(now as i64);
    let decided = match (op, now) {
        (0 | 2, _) => cost_from_f64(cost).and_then(|cost| match (op, now) {
            (0, Some(now)) => limiter.check_sync_at(key, cost, now),
            (0, None) => limiter.check_sync(key, cost),
            (_, Some(now)) => limiter.forecast_sync_at(key, cost, now),
            (_, None) => limiter.forecast_sync(key, cost),
        }),
        (1, Some(now)) => limiter.peek_sync_at(key, now),
        (1, None) => limiter.peek_sync(key),
        _ => return limiter.reset_sync(key).map_or_else(fail, |()| 1),
    };
    match decided {
        Ok(d) => {
            area.out = [
                f64::from(u8::from(d.allowed)),
                d.limit as f64,
                d.remaining as f64,
                d.reset_at as f64,
                d.retry_after_ms as f64,
                f64::from(u8::from(d.fallback)),
            ];
            0
        }
        Err(e) => fail(e),
    }
}

/// The validated cost: the default (what fast.mjs passes for `undefined`) without the
/// validator's out-of-line call.
#[inline(always)]
fn cost_from_f64(cost: f64) -> throttlekit::Result<u64> {
    if cost == 1.0 { Ok(1) } else { validate::cost_from_f64(cost) }
}

fn fail(e: throttlekit::Error) -> u32 {
    ERROR.with(|slot| slot.set(Some(e)));
    2
}

/// Internal: the JS error of the last fast call that failed (`undefined` if none).
#[wasm_bindgen(js_name = __takeError)]
pub fn take_error() -> JsValue {
    ERROR.with(Cell::take).map_or(JsValue::UNDEFINED, error::to_js)
}
