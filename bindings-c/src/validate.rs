//! Conversions for numbers that arrive as doubles (JSON, scripting hosts): they call core's
//! validators, so `1.5`, `0`, `-1` or `NaN` are refused by the same rule in every language.

use crate::args::{out, try_arg};
use crate::panic::guard;
use crate::result::{tk_result, write_out};

/// Converts a cost held in a double to the integer every `cost` parameter takes. A cost must be
/// a whole number in `[1, 2^53]`; anything else is `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `out_cost` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_cost_from_double(cost: f64, out_cost: *mut u64) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_cost, "out_cost") });
        write_out(throttlekit::validate::cost_from_f64(cost), o)
    })
}

/// Converts an epoch-millisecond time held in a double to the integer every `now` parameter
/// takes: a whole number within ±2^53, else `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `out_now` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_now_from_double(now: f64, out_now: *mut i64) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_now, "out_now") });
        write_out(throttlekit::validate::now_from_f64(now), o)
    })
}
