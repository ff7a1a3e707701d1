//! The strategy spec JSON: any text builds a strategy or fails with `config_invalid`, and a
//! strategy that built decides at extreme times without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throttlekit::{ErrorCode, Limiter, Strategy};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Strategy::from_json(text) {
        Ok(s) => {
            let l = Limiter::new(s);
            for now in [-9_007_199_254_740_992, -1, 0, 1_700_000_000_000, 9_007_199_254_740_992] {
                let d = l.check_sync_at("k", 1, now).expect("a valid check");
                assert!(0 <= d.remaining && d.remaining <= d.limit);
                assert_eq!(d.allowed, d.retry_after_ms == 0);
            }
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}"),
    }
});
