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
