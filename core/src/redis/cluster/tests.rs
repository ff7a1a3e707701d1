//! The router's verdicts and attempts, without a server.

use super::*;

fn server_error(text: &str) -> RedisResult<(Value, Option<Value>)> {
    let v = redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).unwrap();
    Ok((v, None))
}

#[test]
fn redirects_and_missing_scripts_are_the_only_replies_that_send_again() {
    assert!(matches!(
        classify(server_error("MOVED 3999 10.0.0.2:6381"), "seed"),
        Verdict::Moved(3999, (h, 6381)) if h == "10.0.0.2"
    ));
    // An empty host is the asked node's.
    assert!(matches!(classify(server_error("MOVED 1 :7001"), "seed"), Verdict::Moved(1, (h, 7001)) if h == "seed"));
    assert!(
        matches!(classify(server_error("ASK 3999 10.0.0.3:6382"), "s"), Verdict::Ask((h, 6382)) if h == "10.0.0.3")
    );
    assert!(matches!(
        classify(server_error("TRYAGAIN Multiple keys request during rehashing"), "s"),
        Verdict::TryAgain
    ));
    assert!(matches!(classify(server_error("NOSCRIPT No matching script"), "s"), Verdict::Missing));
    assert!(matches!(classify(server_error("ERR Function not found"), "s"), Verdict::Missing));
    assert!(
        matches!(classify(server_error("CLUSTERDOWN The cluster is down"), "s"), Verdict::Refused(e) if e.starts_with("CLUSTERDOWN"))
    );
    assert!(matches!(classify(server_error("ERR user_script:1: boom"), "s"), Verdict::Refused(_)));
    assert!(matches!(classify(server_error("MOVED garbage"), "s"), Verdict::Refused(_)));
    let lost = Err(redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset)));
    assert!(matches!(classify(lost, "s"), Verdict::Lost(_)));
    assert!(matches!(classify(Ok((Value::Int(1), None)), "s"), Verdict::Done(Value::Int(1), None)));
}

#[test]
fn an_attempt_is_asking_then_the_call_or_its_fallback_then_wait() {
    let call = super::super::call::single(
        "k",
        crate::store::Now::At(1),
        &crate::store::Transform::Peek { strategy: &crate::Strategy::gcra(1, 1000, None).unwrap() },
    );
    let names = |p: &Pipeline| {
        p.cmd_iter()
            .map(|c| match c.args_iter().next() {
                Some(redis::Arg::Simple(b)) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
    };
    let d = Some(Durable { replicas: 1, timeout_ms: 50 });
    assert_eq!(names(&attempt(Invoke::Functions, &call, false, false, None)), ["FCALL"]);
    assert_eq!(names(&attempt(Invoke::Functions, &call, true, true, d)), ["ASKING", "FUNCTION", "FCALL", "WAIT"]);
    assert_eq!(names(&attempt(Invoke::Scripts, &call, false, false, d)), ["EVALSHA", "WAIT"]);
    assert_eq!(names(&attempt(Invoke::Scripts, &call, true, false, None)), ["EVAL"]);
    let (v, acked) = pick(vec![Value::Okay, Value::Int(7), Value::Int(1)], true);
    assert_eq!((v, acked), (Value::Int(7), Some(Value::Int(1))));
}

/// The sync path's fast read ([`super::super::wire::answer`]) against the `Value` route it
/// replaced: every error frame still reaches [`classify`] with the same verdict, anything else is
/// decoded where it lies exactly as redis-rs's `Value` decodes it, and an odd reply is
/// `store_unavailable`, never a redirect or a decision.
mod fast_read {
    use super::super::super::call::{self, Outcome, ScriptCall};
    use super::super::super::wire::{Answer, answer};
    use super::*;
    use crate::store::{Now, Transform};

    fn check(strategy: &crate::Strategy, now: Now) -> ScriptCall {
        call::single("k", now, &Transform::Check { strategy, cost: 3 })
    }

    /// What the cluster path made of `frame` before: redis-rs's `Value`, [`classify`], then
    /// [`call::decode_reply`] for a reply that ran.
    fn via_value(call: &ScriptCall, frame: &[u8]) -> String {
        match classify(redis::parse_redis_value(frame).map(|v| (v, None)), "s") {
            Verdict::Done(v, _) => format!("{:?}", call::decode_reply(call, &v).map_err(|e| e.code())),
            // A frame redis-rs cannot parse (an integer past i64) failed the call the same way.
            Verdict::Lost(_) => format!("{:?}", Err::<(), _>(crate::ErrorCode::StoreUnavailable)),
            _ => "not a reply".into(),
        }
    }

    fn fast(call: &ScriptCall, frame: &[u8]) -> String {
        match answer(call, frame) {
            Ok(Answer::Decided(o)) => format!("{:?}", o.map_err(|e| e.code())),
            _ => "not a reply".into(),
        }
    }

    #[test]
    fn error_frames_go_to_classify_with_the_verdicts_they_had() {
        let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
        let call = check(&fixed, Now::At(1_000));
        let verdict = |frame: &[u8]| match answer(&call, frame) {
            Ok(Answer::Refused(v)) => classify(Ok((v, None)), "seed"),
            other => panic!("{frame:?} read as {other:?}"),
        };
        assert!(
            matches!(verdict(b"-MOVED 3999 10.0.0.2:6381\r\n"), Verdict::Moved(3999, (h, 6381)) if h == "10.0.0.2")
        );
        assert!(matches!(verdict(b"-ASK 3999 :6382\r\n"), Verdict::Ask((h, 6382)) if h == "seed"));
        assert!(matches!(verdict(b"-TRYAGAIN Multiple keys request during rehashing\r\n"), Verdict::TryAgain));
        assert!(matches!(verdict(b"-NOSCRIPT No matching script.\r\n"), Verdict::Missing));
        assert!(matches!(verdict(b"-ERR Function not found\r\n"), Verdict::Missing));
        for refused in [
            &b"-LOADING Redis is loading the dataset in memory\r\n"[..],
            b"-CLUSTERDOWN The cluster is down\r\n",
            b"-READONLY You can't write against a read only replica.\r\n",
            b"-ERR user_script:1: boom\r\n",
            b"-MOVED garbage\r\n",
        ] {
            assert!(matches!(verdict(refused), Verdict::Refused(_)), "{refused:?}");
        }
    }

    #[test]
    fn every_other_frame_decodes_as_the_value_route_did_and_odd_ones_are_store_unavailable() {
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
                assert_eq!(fast(call, f), via_value(call, f), "{f:?}");
            }
        }
        // The count replies a fixed window sends decode to decisions; the odd ones are the
        // store's failure, on either shape.
        assert!(matches!(answer(&count, b":3\r\n"), Ok(Answer::Decided(Ok(Outcome::Single(_))))));
        assert!(matches!(answer(&six, frames[6]), Ok(Answer::Decided(Ok(Outcome::Single(_))))));
        for (call, f) in [(&count, &b":-1\r\n"[..]), (&count, b"$3\r\nodd\r\n"), (&six, b":3\r\n"), (&six, frames[8])] {
            match answer(call, f) {
                Ok(Answer::Decided(Err(e))) => assert_eq!(e.code(), crate::ErrorCode::StoreUnavailable, "{f:?}"),
                other => panic!("{f:?} read as {other:?}"),
            }
        }
    }
    /// A master whose reply is bytes no RESP2 reply starts with, or a frame whose integers are
    /// not integers, fails the call (`store_unavailable`), never a decision or a redirect: the
    /// first is a lost connection to the router (dropped, never reused: the rest of the reply
    /// cannot be found), the second a whole frame, decoded as redis-rs decodes it.
    #[test]
    fn a_malformed_frame_from_a_socket_is_store_unavailable() {
        use std::io::{Read as _, Write as _};
        let fixed = crate::Strategy::fixed_window(10, 1000).unwrap();
        let gcra = crate::Strategy::gcra(10, 1000, None).unwrap();
        let (count, six) = (check(&fixed, Now::At(1_500)), check(&gcra, Now::Server));
        let cases: [(&ScriptCall, &'static [u8], bool); 4] = [
            (&count, b"!5\r\nodd\r\n", true),
            (&six, b"%1\r\n:1\r\n:2\r\n", true),
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
            let mut w = super::super::super::wire::Wire::connect("127.0.0.1", port, &[], deadline).unwrap();
            let got = w.call(Invoke::Functions, call);
            server.join().unwrap();
            match (got, lost) {
                (Err(e), true) => assert!(matches!(classify(Err(e), "s"), Verdict::Lost(_)), "{reply:?}"),
                (Ok(Answer::Decided(Err(e))), false) => {
                    assert_eq!(e.code(), crate::ErrorCode::StoreUnavailable, "{reply:?}")
                }
                (other, _) => panic!("{reply:?} read as {other:?}"),
            }
        }
    }
}
