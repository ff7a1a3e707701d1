//! The HTTP edge's JSON entry points, which every binding's middleware reaches: any text either
//! renders header lines (each name a token, no value carrying CR, LF or another control byte,
//! `Retry-After` a positive integer) or a client key, or fails with `config_invalid`. The
//! first byte picks the entry point; the rest is the request.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throttlekit::ErrorCode;
use throttlekit::http::json::{client_key_json, headers_json};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    if which % 2 == 0 {
        match headers_json(text) {
            Ok(json) => {
                let lines: Vec<(String, String)> = serde_json::from_str(&json).expect("a JSON array of lines");
                for (name, value) in &lines {
                    assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'), "{name:?}");
                    assert!(value.bytes().all(|b| (0x20..0x7f).contains(&b)), "{name}: {value:?}");
                    if name.eq_ignore_ascii_case("retry-after") {
                        assert!(value.parse::<u64>().is_ok_and(|s| s >= 1), "Retry-After: {value:?}");
                    }
                }
            }
            Err(e) => assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}"),
        }
    } else {
        match client_key_json(text) {
            Ok(key) => assert!(!key.bytes().any(|b| b.is_ascii_control()), "{key:?}"),
            Err(e) => assert_eq!(e.code(), ErrorCode::ConfigInvalid, "{e}"),
        }
    }
});
