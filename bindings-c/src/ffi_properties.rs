//! Every export fed random arguments: random numbers (costs, times, bounds, strategy
//! parameters, result codes, rules, fail policies), random bytes as strings (invalid UTF-8,
//! JSON-ish text), random key lists and NULL in any pointer position. Whatever comes in, a call
//! returns a documented result — never `TK_RESULT_PANIC`, never an abort — writes its outputs
//! only on success, and every decision it writes keeps core's invariants.

use std::ffi::{CString, c_char};
use std::ptr;

use proptest::prelude::*;

use crate::clock::*;
use crate::decision::{tk_decision, tk_reservation};
use crate::limiter::*;
use crate::multi::*;
use crate::result::{tk_last_error_message, tk_result, tk_result_code, tk_result_message};
use crate::shaper::*;
use crate::store::*;
use crate::strategy::*;
use crate::validate::{tk_cost_from_double, tk_now_from_double};

/// A C string of arbitrary bytes (cut at the first NUL, as C would see it).
fn c_string(bytes: &[u8]) -> CString {
    CString::new(bytes.split(|&b| b == 0).next().unwrap_or_default()).unwrap()
}

/// A result that must be one of the documented ones, and not a caught panic.
fn documented(r: tk_result) -> Result<tk_result, TestCaseError> {
    prop_assert!(tk_result::ALL.contains(&r), "undocumented result {}", r as u32);
    prop_assert_ne!(r, tk_result::Panic, "a panic reached the boundary");
    Ok(r)
}

fn sane(d: &tk_decision) -> Result<(), TestCaseError> {
    prop_assert!(d.limit >= 1 && 0 <= d.remaining && d.remaining <= d.limit, "{:?}", d);
    prop_assert_eq!(d.allowed, d.retry_after_ms == 0, "{:?}", d);
    Ok(())
}

fn any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![3 => 0u64..20, 1 => any::<u64>(), 1 => Just(9_007_199_254_740_992u64), 1 => Just(9_007_199_254_740_993u64)]
}

fn any_i64() -> impl Strategy<Value = i64> {
    prop_oneof![3 => 0i64..1_000_000, 2 => any::<i64>(), 1 => Just(i64::MIN), 1 => Just(9_007_199_254_740_993i64)]
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![3 => -10.0f64..1e6, 1 => any::<f64>(), 1 => Just(f64::NAN), 1 => Just(f64::INFINITY)]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..40),
        1 => "[{}\":a-zA-Z0-9,. -]{0,80}".prop_map(String::into_bytes),
        1 => Just(br#"{"kind":"gcra","options":{"limit":5,"periodMs":1000}}"#.to_vec()),
    ]
}

/// The strategy every other call is built on: one of the numeric constructors or JSON.
fn make_strategy(kind: u8, a: u64, b: u64, c: u64, f: f64, json: &[u8]) -> Result<*mut tk_strategy, TestCaseError> {
    let mut s = ptr::null_mut();
    let r = unsafe {
        match kind % 6 {
            0 => tk_strategy_gcra(a, b, c, &mut s),
            1 => tk_strategy_token_bucket(a, f, &mut s),
            2 => tk_strategy_fixed_window(a, b, &mut s),
            3 => tk_strategy_sliding_window(a, b, c, &mut s),
            4 => tk_strategy_sliding_window_log(a, b, &mut s),
            _ => tk_strategy_from_json(c_string(json).as_ptr(), &mut s),
        }
    };
    prop_assert_eq!(documented(r)? == tk_result::Ok, !s.is_null(), "the handle is written exactly on success");
    Ok(s)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn limiter_calls_take_any_arguments(
        kind in any::<u8>(), a in any_u64(), b in any_u64(), c in any_u64(), f in any_f64(), json in bytes(),
        max_keys in prop_oneof![Just(0usize), 1usize..100, Just(usize::MAX)],
        max_len in prop_oneof![Just(0usize), 1usize..40, Just(usize::MAX)],
        policy in prop_oneof![0u32..4, any::<u32>()], prefix in prop::option::of(bytes()),
        mode in prop_oneof![0u32..3, any::<u32>()],
        lease in prop::option::of((prop_oneof![0u64..8, any_u64()], 0u64..8, any::<bool>(), 0usize..4)),
        ops in prop::collection::vec((0u8..8, bytes(), any_u64(), any_i64(), any::<bool>()), 1..30),
    ) {
        let s = make_strategy(kind, a, b, c, f, &json)?;
        let mut store = ptr::null_mut();
        documented(unsafe { tk_store_memory_new_with_limits(max_keys, max_len, &mut store) })?;
        let mut clock = ptr::null_mut();
        prop_assert_eq!(unsafe { tk_clock_new_manual(0, &mut clock) }, tk_result::Ok);
        let prefix = prefix.map(|p| c_string(&p));
        let cfg = tk_limiter_config {
            store,
            clock,
            prefix: prefix.as_ref().map_or(ptr::null(), |p| p.as_ptr()),
            fail_policy: policy,
            metrics: policy % 2 == 0,
            mode,
            lease: ptr::null(),
        };
        let lease = lease.map(|(batch, low_water, window_coupled, max_keys)| crate::lease::tk_lease_options { batch, low_water, window_coupled, max_keys });
        let cfg = tk_limiter_config { lease: lease.as_ref().map_or(ptr::null(), |o| o as *const _), ..cfg };
        let mut l = ptr::null_mut();
        let r = documented(unsafe { tk_limiter_new(s, &cfg, &mut l) })?;
        prop_assert_eq!(r == tk_result::Ok, !l.is_null());
        for (op, key, cost, now, null_out) in ops {
            let key = c_string(&key);
            let k = if null_out && op == 7 { ptr::null() } else { key.as_ptr() };
            let mut d = tk_decision { allowed: true, limit: -7, remaining: -7, reset_at: -7, retry_after_ms: -7, fallback: true };
            let out: *mut tk_decision = if null_out && op == 6 { ptr::null_mut() } else { &mut d };
            let r = documented(unsafe {
                match op % 8 {
                    0 => tk_limiter_check(l, k, cost, out),
                    1 => tk_limiter_check_at(l, k, cost, now, out),
                    2 => tk_limiter_peek_at(l, k, now, out),
                    3 => tk_limiter_forecast_at(l, k, cost, now, out),
                    4 => tk_limiter_reset(l, k),
                    5 => tk_clock_set(clock, now),
                    6 => tk_limiter_check_at(l, k, cost, now, out),
                    _ => tk_limiter_peek(l, k, out),
                }
            })?;
            if op % 8 <= 3 || op % 8 >= 6 {
                if r == tk_result::Ok {
                    sane(&d)?;
                } else {
                    prop_assert_eq!(d.limit, -7, "a failed call wrote its output");
                }
            }
            let mut buf = [0 as c_char; 64];
            let mut n = 0usize;
            prop_assert_eq!(unsafe { tk_last_error_message(buf.as_mut_ptr(), buf.len(), &mut n) }, tk_result::Ok);
        }
        let mut m = crate::metrics::tk_metrics::default();
        prop_assert_eq!(documented(unsafe { crate::metrics::tk_limiter_metrics(l, &mut m) })? == tk_result::Ok, !l.is_null());
        let mut t = crate::lease::tk_tier_stats::default();
        prop_assert_eq!(documented(unsafe { crate::lease::tk_limiter_tier_stats(l, &mut t) })? == tk_result::Ok, !l.is_null());
        let r = documented(unsafe { crate::lease::tk_limiter_release_leases(l, crate::lease::TK_RELEASE_ALL_KEYS, ptr::null_mut()) })?;
        prop_assert_eq!(r == tk_result::Ok, !l.is_null());
        let mut ev = 0u64;
        if !store.is_null() {
            prop_assert_eq!(unsafe { tk_store_memory_evictions(store, &mut ev) }, tk_result::Ok);
        }
        unsafe {
            tk_limiter_free(l);
            tk_store_free(store);
            tk_clock_free(clock);
            tk_strategy_free(s);
        }
    }

    #[test]
    fn multi_and_shaper_calls_take_any_arguments(
        kind in any::<u8>(), a in any_u64(), b in any_u64(), c in any_u64(), f in any_f64(), json in bytes(),
        rule in prop_oneof![0u32..2, any::<u32>()], names in prop::collection::vec(bytes(), 0..4),
        mults in prop::collection::vec(any_u64(), 4), keys in prop::collection::vec(bytes(), 0..5),
        cost in any_u64(), now in any_i64(), rate in any_f64(), queue in any_f64(), index in 0usize..6,
    ) {
        let s = make_strategy(kind, a, b, c, f, &json)?;
        let names: Vec<CString> = names.iter().map(|n| c_string(n)).collect();
        let dims: Vec<tk_dimension> = names
            .iter()
            .zip(&mults)
            .map(|(n, &m)| tk_dimension { name: n.as_ptr(), strategy: s, cost_multiplier: m })
            .collect();
        let mut m = ptr::null_mut();
        let dims_ptr = if dims.is_empty() { ptr::null() } else { dims.as_ptr() };
        let r = documented(unsafe { tk_multi_limiter_new(rule, dims_ptr, dims.len(), ptr::null(), &mut m) })?;
        prop_assert_eq!(r == tk_result::Ok, !m.is_null());
        let keys: Vec<CString> = keys.iter().map(|k| c_string(k)).collect();
        let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let mut d = tk_decision { allowed: false, limit: 0, remaining: 0, reset_at: 0, retry_after_ms: 0, fallback: false };
        let mut binding = 0usize;
        // Room for every dimension's decision (the out-array is sized by the dimension count).
        let mut each = vec![d; dims.len().max(1)];
        let r = documented(unsafe {
            tk_multi_limiter_check_at(m, key_ptrs.as_ptr(), key_ptrs.len(), cost, now, &mut d, &mut binding, each.as_mut_ptr())
        })?;
        if r == tk_result::Ok {
            sane(&d)?;
            prop_assert!(binding < dims.len());
        }
        documented(unsafe { tk_multi_limiter_reset(m, key_ptrs.as_ptr(), key_ptrs.len()) })?;
        let mut name = ptr::null();
        documented(unsafe { tk_multi_limiter_dimension_name(m, index, &mut name) })?;
        unsafe { tk_multi_limiter_free(m) };

        let mut sh = ptr::null_mut();
        let r = documented(unsafe { tk_shaper_new(rate, queue, ptr::null(), &mut sh) })?;
        prop_assert_eq!(r == tk_result::Ok, !sh.is_null());
        let mut res = tk_reservation { accepted: false, delay_ms: -1 };
        let key = keys.first().map_or(ptr::null(), |k| k.as_ptr());
        let r = documented(unsafe { tk_shaper_reserve_at(sh, key, cost, now, &mut res) })?;
        if r == tk_result::Ok {
            prop_assert!(res.delay_ms >= 0);
        }
        let mut from_json = ptr::null_mut();
        documented(unsafe { tk_shaper_new_json(c_string(&json).as_ptr(), ptr::null(), &mut from_json) })?;
        unsafe { tk_shaper_free(from_json) };
        unsafe { tk_shaper_free(sh) };
        tk_strategy_free_checked(s);

        let mut out_cost = 0u64;
        documented(unsafe { tk_cost_from_double(f, &mut out_cost) })?;
        let mut out_now = 0i64;
        documented(unsafe { tk_now_from_double(f, &mut out_now) })?;
        for code in [rule, 0, 100, 101, 102] {
            prop_assert!(!tk_result_message(code).is_null() && !tk_result_code(code).is_null());
        }
    }
}

fn tk_strategy_free_checked(s: *mut tk_strategy) {
    unsafe { tk_strategy_free(s) }
}
