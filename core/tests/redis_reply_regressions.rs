//! Every input the `redis_reply` fuzz target found a bug with (`fuzz/regressions/redis_reply/`,
//! its first byte picks the strategy as the target does, the rest is the reply) decodes into a
//! decision that keeps its invariants, or into `store_unavailable`; never a wrong decision.
#![cfg(feature = "redis")]

use throttlekit::redis::transport::Op;
use throttlekit::store::Now;
use throttlekit::{ErrorCode, Limiter, Strategy};

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(10, 1000, Some(5)).unwrap(),
        Strategy::token_bucket(5, 2.0).unwrap(),
        Strategy::fixed_window(10, 1000).unwrap(),
        Strategy::sliding_window(10, 1000, Some(4)).unwrap(),
        Strategy::sliding_window_log(10, 1000).unwrap(),
    ]
}

#[test]
fn replies_that_broke_the_decoder_are_store_failures_or_sane_decisions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/redis_reply");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let reply = &data[1..];
        for s in strategies() {
            let l = Limiter::builder(s).prefix("p").build();
            for op in [Op::Check, Op::Peek, Op::Forecast] {
                let call = l.prepare_at(op, "key", 1, Now::At(1_700_000_000_000)).unwrap();
                match l.finish(&call, Ok(reply)) {
                    Ok(d) => {
                        assert!(d.limit >= 1 && 0 <= d.remaining && d.remaining <= d.limit, "{d:?}");
                        assert_eq!(d.allowed, d.retry_after_ms == 0, "{d:?}");
                    }
                    Err(e) => assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{e}"),
                }
            }
        }
        seen += 1;
    }
    assert!(seen >= 1, "no regression inputs in {}", dir.display());
}

#[test]
fn a_decision_reply_that_breaks_the_invariants_is_a_store_failure() {
    let l = Limiter::new(Strategy::token_bucket(5, 2.0).unwrap());
    let call = l.prepare_at(Op::Check, "k", 1, Now::At(0)).unwrap();
    for bad in [
        &b"*6\r\n:2\r\n:0\r\n:2\r\n:0\r\n:0\r\n:50\r\n"[..], // allowed = 2, limit 0, remaining > limit
        b"*6\r\n:0\r\n:5\r\n:1\r\n:0\r\n:0\r\n:50\r\n",      // denied without a retry hint
        b"*6\r\n:1\r\n:5\r\n:6\r\n:0\r\n:0\r\n:50\r\n",      // more remaining than the limit
        b"*6\r\n:1\r\n:5\r\n:-1\r\n:0\r\n:0\r\n:50\r\n",     // negative remaining
    ] {
        assert_eq!(l.finish(&call, Ok(bad)).unwrap_err().code(), ErrorCode::StoreUnavailable);
    }
    let good = b"*6\r\n:1\r\n:5\r\n:4\r\n:500\r\n:0\r\n:500\r\n";
    assert_eq!(l.finish(&call, Ok(good)).unwrap().remaining, 4);
}
