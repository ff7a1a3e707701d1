//! The C ABI's entry points fed arbitrary bytes and lengths: JSON specs, keys, key lists of any
//! length, error buffers of any size, numbers of any value. Every call returns a documented
//! result and never `TK_RESULT_PANIC`.
#![no_main]

use std::ffi::{CString, c_char};
use std::ptr;

use libfuzzer_sys::fuzz_target;
use throttlekit_c::limiter::*;
use throttlekit_c::multi::*;
use throttlekit_c::result::{tk_last_error_message, tk_result};
use throttlekit_c::shaper::*;
use throttlekit_c::store::*;
use throttlekit_c::strategy::*;
use throttlekit_c::{tk_decision, tk_reservation};

fn ok(r: tk_result) -> bool {
    assert!(tk_result::ALL.contains(&r) && r != tk_result::Panic, "result {}", r as u32);
    r == tk_result::Ok
}

/// Reads numbers off the front of the input, zeros when it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(b)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let (a, b, c, now, cost, buf_len) = (input.u64(), input.u64(), input.u64(), input.u64() as i64, input.u64(), input.u64());
    // The rest: strings separated by NUL (as C sees them).
    let strings: Vec<CString> = input.0.split(|&x| x == 0).map(|s| CString::new(s).expect("no NUL")).collect();
    let text = |i: usize| strings.get(i).map_or(ptr::null(), |s| s.as_ptr());
    unsafe {
        let mut s = ptr::null_mut();
        let built = match a % 4 {
            0 => ok(tk_strategy_from_json(text(0), &mut s)),
            1 => ok(tk_strategy_gcra(b, c, a >> 8, &mut s)),
            2 => ok(tk_strategy_token_bucket(b, f64::from_bits(c), &mut s)),
            _ => ok(tk_strategy_sliding_window(b % 1000, c, a >> 8, &mut s)),
        };
        let mut store = ptr::null_mut();
        ok(tk_store_memory_new_with_limits((b % 64) as usize, (c % 300) as usize, &mut store));
        let cfg = tk_limiter_config {
            store,
            clock: ptr::null(),
            prefix: text(1),
            fail_policy: (a >> 32) as u32,
            metrics: true,
            // The two-tier modes (3: an unknown number), with core's default lease options.
            mode: ((c >> 40) % 4) as u32,
            lease: ptr::null(),
        };
        let mut l = ptr::null_mut();
        if built && ok(tk_limiter_new(s, &cfg, &mut l)) {
            let mut d = tk_decision::default();
            for i in 0..strings.len().min(8) {
                ok(tk_limiter_check_at(l, text(i), cost, now, &mut d));
                ok(tk_limiter_peek_at(l, text(i), now, &mut d));
                ok(tk_limiter_forecast_at(l, text(i), cost, now, &mut d));
                ok(tk_limiter_reset(l, text(i)));
            }
            let names = [c"a".as_ptr(), c"b".as_ptr()];
            let dims: Vec<tk_dimension> =
                names.iter().map(|&name| tk_dimension { name, strategy: s, cost_multiplier: 1 + (b & 3) }).collect();
            let mut m = ptr::null_mut();
            if ok(tk_multi_limiter_new((c & 1) as u32, dims.as_ptr(), dims.len(), ptr::null(), &mut m)) {
                let keys: Vec<*const c_char> = strings.iter().map(|k| k.as_ptr()).collect();
                let mut each = [tk_decision::default(); 2];
                let mut binding = 0usize;
                ok(tk_multi_limiter_check_at(m, keys.as_ptr(), keys.len(), cost, now, &mut d, &mut binding, each.as_mut_ptr()));
                ok(tk_multi_limiter_reset(m, keys.as_ptr(), keys.len()));
                tk_multi_limiter_free(m);
            }
            tk_limiter_free(l);
        }
        let mut sh = ptr::null_mut();
        if ok(tk_shaper_new_json(text(2), ptr::null(), &mut sh)) {
            let mut r = tk_reservation::default();
            ok(tk_shaper_reserve_at(sh, text(0), cost, now, &mut r));
            tk_shaper_free(sh);
        }
        let mut buf = vec![0 as c_char; (buf_len % 512) as usize];
        let mut n = 0usize;
        let p = if buf.is_empty() { ptr::null_mut() } else { buf.as_mut_ptr() };
        ok(tk_last_error_message(p, buf.len(), &mut n));
        tk_store_free(store);
        tk_strategy_free(s);
    }
});
