//! The cluster's reply reading through the engine, against the `Value` route it replaced: a
//! reply that is no error frame decodes where it lies exactly as redis-rs's `Value` decodes it,
//! and an odd reply is `store_unavailable`, never a redirect or a decision (the redirect rules
//! themselves: `redis::engine::tests`).

use std::time::{Duration, Instant};

use super::super::call::{self, ScriptCall};
use super::super::engine::{Exchange, Invoke, Rules, Step};
use super::super::wire::Wire;
use crate::store::{Now, Transform};

fn check(strategy: &crate::Strategy, now: Now) -> ScriptCall {
    call::single("k", now, &Transform::Check { strategy, cost: 3 })
}

fn rules() -> Rules {
    Rules { invoke: Invoke::Functions, durable: None, cluster: true }
}

/// What the cluster path made of a frame that is no error before the engine: redis-rs's
/// `Value`, then [`call::decode_reply`].
fn via_value(call: &ScriptCall, frame: &[u8]) -> String {
    match redis::parse_redis_value(frame) {
        Ok(v) => format!(
            "{:?}",
            call::decode_reply(call, &super::super::engine::tests::from_redis(&v)).map_err(|e| e.code())
        ),
        // A frame redis-rs cannot parse (an integer past i64) failed the call the same way.
        Err(_) => format!("{:?}", Err::<(), _>(crate::ErrorCode::StoreUnavailable)),
    }
}

fn fed(call: &ScriptCall, frame: &[u8]) -> String {
    match Exchange::new(call, rules()).feed(frame) {
        Step::Done(o) => format!("{:?}", o.map_err(|e| e.code())),
        other => format!("{other:?}"),
    }
}

#[test]
fn every_frame_that_is_no_error_decodes_as_the_value_route_did_and_odd_ones_are_store_unavailable() {
    let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
    let gcra = crate::Strategy::gcra(10, 1000, None).unwrap();
    let count = check(&fixed, Now::At(1_500));
    let six = check(&gcra, Now::Server);
    assert!(matches!(count.shape, call::Shape::WindowCount(_)), "a fixed window on the caller's clock counts");
    let frames: [&[u8]; 13] = [
        b":3\r\n",
        b":10\r\n",
        b":13\r\n",
        b":0\r\n",
        b":-1\r\n",
        b":99999999999999999999\r\n",
        b"*6\r\n:1\r\n:10\r\n:7\r\n:1000\r\n:0\r\n:2000\r\n",
        b"*6\r\n:0\r\n:10\r\n:0\r\n:1000\r\n:250\r\n:2000\r\n",
        b"*6\r\n:2\r\n:0\r\n:2\r\n:0\r\n:0\r\n:50\r\n",
        b"*5\r\n:1\r\n:10\r\n:7\r\n:1000\r\n:0\r\n",
        b"$3\r\nodd\r\n",
        b"$-1\r\n",
        b"+OK\r\n",
    ];
    for call in [&count, &six] {
        for f in frames {
            assert_eq!(fed(call, f), via_value(call, f), "{f:?}");
        }
    }
    // The count replies a fixed window sends decode to decisions; the odd ones are the store's
    // failure, on either shape.
    assert!(fed(&count, b":3\r\n").starts_with("Ok(Single("));
    assert!(fed(&six, frames[6]).starts_with("Ok(Single("));
    for (call, f) in [(&count, &b":-1\r\n"[..]), (&count, b"$3\r\nodd\r\n"), (&six, b":3\r\n"), (&six, frames[8])] {
        assert_eq!(fed(call, f), "Err(StoreUnavailable)", "{f:?}");
    }
}

/// A master whose reply is bytes no RESP reply starts with, or a frame whose integers are not
/// integers, fails the call (`store_unavailable`), never a decision or a redirect: the first is
/// a lost connection to the blocking driver (dropped, never reused: the rest of the reply cannot
/// be found), the second a whole frame, decoded as redis-rs decodes it.
#[test]
fn a_malformed_frame_from_a_socket_is_store_unavailable() {
    use std::io::{Read as _, Write as _};
    let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
    let gcra = crate::Strategy::gcra(10, 1000, None).unwrap();
    let (count, six) = (check(&fixed, Now::At(1_500)), check(&gcra, Now::Server));
    let cases: [(&ScriptCall, &'static [u8], bool); 4] = [
        (&count, b"@5\r\nodd\r\n", true),
        (&six, b"?1\r\n:1\r\n:2\r\n", true),
        (&count, b":12x\r\n", false),
        (&six, b"*6\r\n:1\r\n:a\r\n:7\r\n:1000\r\n:0\r\n:2000\r\n", false),
    ];
    for (call, reply, lost) in cases {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.read(&mut [0u8; 4096]).unwrap();
            s.write_all(reply).unwrap();
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut conn =
            Wire::connect(&crate::redis::socket::Target::Tcp("127.0.0.1".into(), port), &[], deadline).unwrap();
        let got = conn.drive(&mut Exchange::new(call, rules()), deadline);
        server.join().unwrap();
        match (got, lost) {
            (Err(_), true) => {}
            (Ok((Step::Done(Err(e)), _)), false) => {
                assert_eq!(e.code(), crate::ErrorCode::StoreUnavailable, "{reply:?}")
            }
            (other, _) => panic!("{reply:?} read as {other:?}"),
        }
    }
}

/// The size of the future an async fn of four arguments returns.
fn future_size<A, B, C, D, F>(_: fn(A, B, C, D) -> F) -> usize {
    std::mem::size_of::<F>()
}

/// Every async call builds [`super::Router::run`]'s future and moves it (into the store's box,
/// under its timeout), so a cold path that keeps a large state across an await makes every call
/// pay for it: an `if let` on the refresh a failed connect waits for once kept the refresh's
/// whole state (its connects and TLS handshakes) there, 4.7 KB against 0.6 KB, and about half
/// the client's instructions per call with 50 in flight went to moving it.
#[test]
fn a_calls_future_holds_no_cold_paths_state() {
    type Run<'a> = &'a std::sync::Arc<super::Router>;
    let size = future_size::<Run<'_>, u16, Exchange<'_>, Option<&tokio::runtime::Handle>, _>(
        super::Router::run::<Exchange<'_>>,
    );
    assert!(size <= 1024, "Router::run's future is {size} bytes");
}
