//! The engine without a socket: every reply kind, redirects, a missing script or function,
//! durable `WAIT` reply pairs, garbage, and the at-most-once rule as a property.

use proptest::prelude::*;

use super::resp::{self, frame_len};
use super::value::Value;
use super::*;
use crate::store::{Now, Reply, Transform};
use crate::strategy::Strategy as Limits;

fn gcra_call() -> ScriptCall {
    let strategy = Limits::gcra(10, 1000, None).unwrap();
    call::single("p:k", Now::At(1_700_000_000_000), &Transform::Check { strategy: &strategy, cost: 1 })
}

fn rules(invoke: Invoke, durable: bool, cluster: bool) -> Rules {
    Rules { invoke, durable: durable.then_some(Durable { replicas: 1, timeout_ms: 100 }), cluster }
}

/// redis-rs's reply as the engine's (a RESP3-only type, which no script returns, as its debug
/// text in a bulk string): the tests' oracle.
pub(crate) fn from_redis(v: &redis::Value) -> Value {
    match v {
        redis::Value::Nil => Value::Nil,
        redis::Value::Int(i) => Value::Int(*i),
        redis::Value::BulkString(b) => Value::BulkString(b.clone()),
        redis::Value::Array(items) => Value::Array(items.iter().map(from_redis).collect()),
        redis::Value::Okay => Value::Okay,
        redis::Value::SimpleString(s) => Value::SimpleString(s.clone()),
        redis::Value::ServerError(e) => Value::Error(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_string(),
        }),
        other => Value::BulkString(format!("{other:?}").into_bytes()),
    }
}

const DECISION: &[u8] = b"*6\r\n:1\r\n:10\r\n:9\r\n:1700000000100\r\n:0\r\n:100\r\n";

fn done(step: Step) -> Result<Outcome> {
    match step {
        Step::Done(r) => r,
        other => panic!("not done: {other:?}"),
    }
}

fn allowed(step: Step) {
    match done(step) {
        Ok(Outcome::Single(Reply::Decision(d))) => assert!(d.allowed && d.remaining == 9, "{d:?}"),
        other => panic!("not the decision: {other:?}"),
    }
}

fn failed(step: Step) -> String {
    let e = done(step).unwrap_err();
    assert_eq!(e.code(), crate::error::ErrorCode::StoreUnavailable);
    e.message().to_string()
}

/// The commands of an attempt, each as its arguments read back from the RESP bytes.
fn sent(x: &Exchange<'_>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    x.write(&mut out);
    let mut at = 0;
    let mut commands = Vec::new();
    while at < out.len() {
        let n = frame_len(&out[at..]).unwrap().expect("whole commands");
        let redis::Value::Array(args) = redis::parse_redis_value(&out[at..at + n]).unwrap() else { panic!() };
        commands.push(
            args.iter()
                .map(|a| match a {
                    redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    other => panic!("{other:?}"),
                })
                .collect(),
        );
        at += n;
    }
    // The argument lists a non-RESP transport gets are the same commands.
    let mut listed = Vec::new();
    x.commands(|args| listed.push(args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>()));
    assert_eq!(listed, commands);
    commands
}

fn verbs(x: &Exchange<'_>) -> Vec<String> {
    sent(x).into_iter().map(|c| c[0].clone()).collect()
}

/// `verb script numkeys keys... args...` as redis-rs packs it.
fn packed(verb: &str, script: &str, call: &ScriptCall) -> Vec<u8> {
    let mut c = redis::cmd(verb);
    c.arg(script).arg(call.keys.len()).arg(&call.keys);
    call.args.iter().for_each(|a| {
        c.arg(a);
    });
    c.get_packed_command()
}

/// A server's error reply reads the same through the engine's exchange and through `decode`
/// alone (a binding's socket decides there): the script's name, the code and the detail.
#[test]
fn an_error_reply_names_the_script_and_the_error_on_every_path() {
    let call = gcra_call();
    let frame = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let direct = decode(&call, frame).expect_err("an error reply");
    assert_eq!(direct.code(), crate::ErrorCode::StoreUnavailable);
    assert_eq!(
        direct.message(),
        format!(
            "store unavailable: {} failed: OOM command not allowed when used memory > 'maxmemory'.",
            call.script.name
        )
    );
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, false));
    let exchanged = failed(x.feed(frame));
    assert_eq!(exchanged, direct.message());
    let garbled = decode(&call, b"-\r\n").expect_err("an empty error");
    assert_eq!(garbled.code(), crate::ErrorCode::StoreUnavailable);
}

#[test]
fn the_first_attempt_is_what_redis_rs_packed_for_every_scripting_mode() {
    let call = gcra_call();
    let x = Exchange::new(&call, rules(Invoke::Scripts, false, false));
    let mut out = Vec::new();
    x.write(&mut out);
    assert_eq!(out, packed("EVALSHA", &call.script.sha, &call));
    let x = Exchange::new(&call, rules(Invoke::Functions, false, false));
    let mut out = Vec::new();
    x.write(&mut out);
    assert_eq!(out, packed("FCALL", &call.script.function, &call));
    assert!(x.plain());
    assert_eq!(x.replies(), 1);
}

#[test]
fn every_attempt_gets_back_as_many_replies_as_it_sends_commands() {
    let call = gcra_call();
    for invoke in [Invoke::Scripts, Invoke::Functions] {
        for durable in [false, true] {
            for bits in 0..8u32 {
                let a = Attempt::from_bits((bits & 1) << 8 | (bits >> 1 & 1) << 9 | (bits >> 2 & 1) << 10);
                let x = Exchange::at(&call, rules(invoke, durable, true), a);
                let v = verbs(&x);
                assert_eq!(v.len(), x.replies(), "{invoke:?} durable {durable} {a:?}: {v:?}");
                assert_eq!(v.first().map(String::as_str) == Some("ASKING"), a.asking());
                assert_eq!(v.last().map(String::as_str) == Some("WAIT"), durable);
                let script = match (invoke, a.fallback()) {
                    (Invoke::Scripts, false) => "EVALSHA",
                    (Invoke::Scripts, true) => "EVAL",
                    (Invoke::Functions, _) => "FCALL",
                };
                assert!(v.iter().any(|c| c == script), "{v:?}");
                assert_eq!(v.iter().any(|c| c == "FUNCTION"), a.fallback() && invoke == Invoke::Functions);
                assert_eq!(x.plain(), !a.asking() && !a.fallback() && !durable);
            }
        }
    }
}

#[test]
fn a_decision_reply_ends_the_call() {
    let call = gcra_call();
    for invoke in [Invoke::Scripts, Invoke::Functions] {
        allowed(Exchange::new(&call, rules(invoke, false, false)).feed(DECISION));
        allowed(Exchange::new(&call, rules(invoke, false, true)).feed(DECISION));
    }
}

#[test]
fn a_missing_script_or_function_gets_the_fallback_once() {
    let call = gcra_call();
    for (invoke, miss) in [
        (Invoke::Scripts, &b"-NOSCRIPT No matching script. Please use EVAL.\r\n"[..]),
        (Invoke::Functions, b"-ERR Function not found\r\n"),
    ] {
        for cluster in [false, true] {
            let mut x = Exchange::new(&call, rules(invoke, false, cluster));
            match x.feed(miss) {
                Step::Again { to: To::Same, pause } => assert!(pause.is_zero()),
                other => panic!("{other:?}"),
            }
            assert!(x.attempt().fallback());
            let v = verbs(&x);
            match invoke {
                Invoke::Scripts => assert_eq!(v, ["EVAL"]),
                Invoke::Functions => assert_eq!(v, ["FUNCTION", "FCALL"]),
            }
            if invoke == Invoke::Functions {
                assert!(matches!(x.feed(b"$6\r\ntklib1\r\n"), Step::More));
            }
            // The fallback missing again ends the call: it is never sent a third time.
            let mut y = Exchange::at(&call, rules(invoke, false, cluster), x.attempt());
            if invoke == Invoke::Functions {
                y.feed(b"+OK\r\n");
            }
            assert!(failed(y.feed(miss)).contains(call.script.name));
            allowed(x.feed(DECISION));
        }
    }
}

#[test]
fn redirects_are_followed_on_a_cluster_only() {
    let call = gcra_call();
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, true));
    match x.feed(b"-MOVED 3999 127.0.0.1:6381\r\n") {
        Step::Again { to: To::Moved { slot: 3999, host, port: 6381 }, .. } => assert_eq!(host, "127.0.0.1"),
        other => panic!("{other:?}"),
    }
    assert!(x.attempt().redirected() && !x.attempt().asking());
    match x.feed(b"-ASK 3999 :6382\r\n") {
        Step::Again { to: To::Ask { host, port: 6382 }, .. } => assert_eq!(host, ""),
        other => panic!("{other:?}"),
    }
    assert!(x.attempt().asking());
    assert_eq!(verbs(&x), ["ASKING", "EVALSHA"]);
    assert!(matches!(x.feed(b"+OK\r\n"), Step::More));
    match x.feed(b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n") {
        Step::Again { to: To::Same, pause } => assert_eq!(pause, TRYAGAIN_PAUSE),
        other => panic!("{other:?}"),
    }
    assert!(x.attempt().asking(), "TRYAGAIN keeps ASKING");
    x.feed(b"+OK\r\n");
    allowed(x.feed(DECISION));
    // One node: a redirect is a failure like any other error.
    for frame in [&b"-MOVED 3999 127.0.0.1:6381\r\n"[..], b"-ASK 1 h:1\r\n", b"-TRYAGAIN x\r\n"] {
        let message = failed(Exchange::new(&call, rules(Invoke::Scripts, false, false)).feed(frame));
        assert!(message.contains("failed"), "{message}");
    }
    // A redirect without an address is a failure too.
    failed(Exchange::new(&call, rules(Invoke::Scripts, false, true)).feed(b"-MOVED 12\r\n"));
}

#[test]
fn a_call_takes_at_most_max_attempts() {
    let call = gcra_call();
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, true));
    let mut attempts = 1;
    let message = loop {
        match x.feed(b"-MOVED 1 h:1\r\n") {
            Step::Again { .. } => attempts += 1,
            Step::Done(r) => break r.unwrap_err().message().to_string(),
            Step::More => panic!("one reply per attempt"),
        }
    };
    assert_eq!(attempts, MAX_ATTEMPTS);
    assert!(message.contains("more than"), "{message}");
}

#[test]
fn a_stale_map_error_ends_the_call_and_says_so() {
    let call = gcra_call();
    for code in ["CLUSTERDOWN The cluster is down", "READONLY You can't write", "MASTERDOWN Link down"] {
        let frame = format!("-{code}\r\n");
        let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, true));
        assert!(failed(x.feed(frame.as_bytes())).contains(code));
        assert!(x.map_stale());
        let mut one = Exchange::new(&call, rules(Invoke::Scripts, false, false));
        failed(one.feed(frame.as_bytes()));
        assert!(!one.map_stale());
    }
}

#[test]
fn a_durable_call_reads_its_reply_and_waits_answer_together() {
    let call = gcra_call();
    for invoke in [Invoke::Scripts, Invoke::Functions] {
        let r = rules(invoke, true, false);
        let mut x = Exchange::new(&call, r);
        assert_eq!(x.replies(), 2);
        assert!(matches!(x.feed(DECISION), Step::More));
        allowed(x.feed(b":1\r\n"));
        // Fewer acknowledgements than asked: the master counted it, but it is not durable.
        let mut x = Exchange::new(&call, r);
        x.feed(DECISION);
        let m = failed(x.feed(b":0\r\n"));
        assert!(m.contains("0 of 1 replicas") && m.contains("durable_replicas"), "{m}");
        let mut x = Exchange::new(&call, r);
        x.feed(DECISION);
        assert!(failed(x.feed(b"-ERR WAIT cannot be used\r\n")).contains("WAIT answered"));
        // A server error passes as is (nothing was charged), whatever WAIT said.
        let mut x = Exchange::new(&call, r);
        x.feed(b"-ERR boom\r\n");
        assert!(failed(x.feed(b":0\r\n")).contains("boom"));
        // A miss asks for the fallback once WAIT's reply is read, and the fallback waits too.
        let mut x = Exchange::new(&call, r);
        let miss: &[u8] = if invoke == Invoke::Scripts {
            b"-NOSCRIPT No matching script\r\n"
        } else {
            b"-ERR Function not found\r\n"
        };
        assert!(matches!(x.feed(miss), Step::More));
        assert!(matches!(x.feed(b":0\r\n"), Step::Again { to: To::Same, .. }));
        assert_eq!(verbs(&x).last().map(String::as_str), Some("WAIT"));
        for _ in 0..x.replies() - 2 {
            assert!(matches!(x.feed(b"+OK\r\n"), Step::More));
        }
        assert!(matches!(x.feed(DECISION), Step::More));
        allowed(x.feed(b":3\r\n"));
    }
}

#[test]
fn a_reply_no_command_asked_for_is_a_failure() {
    let call = gcra_call();
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, true, false));
    x.feed(DECISION);
    allowed(x.feed(b":1\r\n"));
    assert!(failed(x.feed(b":1\r\n")).contains("no command asked for"));
}

#[test]
fn a_connection_not_made_may_reroute_a_cluster_call_once_the_map_chose_it() {
    let call = gcra_call();
    let cause = || Error::store("connection refused");
    assert!(failed(Exchange::new(&call, rules(Invoke::Scripts, false, false)).unsent(cause())).contains("refused"));
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, true));
    assert!(matches!(x.unsent(cause()), Step::Again { to: To::Reroute, .. }));
    allowed(x.feed(DECISION));
    // A node a redirect named is not rerouted from.
    let mut x = Exchange::new(&call, rules(Invoke::Scripts, false, true));
    x.feed(b"-MOVED 1 h:1\r\n");
    failed(x.unsent(cause()));
}

#[test]
fn garbage_is_a_failure() {
    let call = gcra_call();
    for frame in [
        &b"-\r\n"[..],
        b"-ERR two\r\nlines\r\n",
        b"+OK\r\n",
        b"*6\r\n:1\r\n",
        b"$3\r\nabc\r\n",
        b":7\r\n",
        b"\xff\xfe",
        b"",
    ] {
        let r = Exchange::new(&call, rules(Invoke::Scripts, false, true)).feed(frame);
        failed(r);
    }
}

#[test]
fn an_attempt_survives_its_bits() {
    let a = Attempt { hops: 3, asking: true, fallback: false, redirected: true };
    assert_eq!(Attempt::from_bits(a.bits()), a);
    assert_eq!(Attempt::from_bits(0), Attempt::default());
}

#[test]
fn error_lines_split_into_code_and_detail() {
    assert_eq!(resp::error(b"-NOSCRIPT No matching script.\r\n"), Some(("NOSCRIPT", "No matching script.")));
    assert_eq!(resp::error(b"-ERR\r\n"), Some(("ERR", "")));
    assert_eq!(resp::error(b"-MOVED 1 h:2\r\n"), Some(("MOVED", "1 h:2")));
    assert_eq!(resp::error(b"+OK\r\n"), None);
    assert_eq!(resp::error(b"-ERR a\r\n:1\r\n"), None);
    assert_eq!(resp::error(b"-ERR a"), None);
}

#[test]
fn replies_written_for_another_transport_read_back() {
    let mut out = Vec::new();
    resp::write_array(&mut out, 6);
    for v in [1, 10, 9, 1_700_000_000_100, 0, 100] {
        resp::write_int(&mut out, v);
    }
    assert_eq!(out, DECISION);
    let mut e = Vec::new();
    resp::write_error(&mut e, "NOSCRIPT No matching\r\nscript");
    assert_eq!(resp::error(&e), Some(("NOSCRIPT", "No matching  script")));
    let mut n = Vec::new();
    resp::write_int(&mut n, -42);
    assert_eq!(resp::int(&n), Some(-42));
}

#[test]
fn frames_end_where_redis_rs_says_they_do() {
    let frames: [&[u8]; 8] = [
        b"+OK\r\n",
        b"-NOSCRIPT No matching script.\r\n",
        b":-12\r\n",
        b"$-1\r\n",
        b"$5\r\na\r\nbc\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*3\r\n:1\r\n*2\r\n$0\r\n\r\n+x\r\n$-1\r\n",
    ];
    for f in frames {
        assert!(redis::parse_redis_value(f).is_ok(), "{f:?}");
        assert_eq!(frame_len(f).unwrap(), Some(f.len()), "{f:?}");
        // Every proper prefix asks for more; a frame followed by the next ends where it did.
        for cut in 0..f.len() {
            assert_eq!(frame_len(&f[..cut]).unwrap(), None, "{f:?} cut at {cut}");
        }
        let two = [f, b":7\r\n"].concat();
        assert_eq!(frame_len(&two).unwrap(), Some(f.len()), "{f:?}");
    }
}

#[test]
fn bytes_that_start_no_resp_frame_are_an_error() {
    for f in [&b"?1\r\n"[..], b"x\r\n", b"$abc\r\n", b"*-2\r\n", b"$99999999999999\r\n"] {
        assert!(frame_len(f).is_err(), "{f:?}");
    }
}

#[test]
fn the_integer_reader_takes_only_the_plain_form() {
    let ints = |f: &[u8]| resp::ints(f, |array, items| Some((array, items.to_vec())));
    assert_eq!(ints(b"*2\r\n:1\r\n:-20\r\n"), Some((true, vec![1, -20])));
    // Leading zeros are digits: 02 is 2, as redis-rs reads it.
    assert_eq!(ints(b"*02\r\n:1\r\n:2\r\n"), Some((true, vec![1, 2])));
    assert_eq!(ints(b":7\r\n"), Some((false, vec![7])));
    assert_eq!(ints(b"*1\r\n:-9223372036854775808\r\n"), Some((true, vec![i64::MIN])));
    assert_eq!(ints(b"*0\r\n"), Some((true, vec![])));
    let many: Vec<i64> = (0..13).collect();
    let mut f = Vec::new();
    resp::write_array(&mut f, many.len());
    many.iter().for_each(|i| resp::write_int(&mut f, *i));
    assert_eq!(ints(&f), Some((true, many)));
    for f in [
        &b"*2\r\n:1\r\n:2\r\n:3\r\n"[..],
        b"*2\r\n:1\r\n",
        b"*2\r\n:+1\r\n:2\r\n",
        b"*2\r\n:1\r\n$1\r\n2\r\n",
        b"*1\r\n:9223372036854775808\r\n",
        b"*2\r\n:1\n:2\r\n",
        b"*2\r\n:-\r\n:2\r\n",
        b"*99999999\r\n:1\r\n",
        b":1\r\n:2\r\n",
        b"-ERR nope\r\n",
    ] {
        assert_eq!(ints(f), None, "{:?}", String::from_utf8_lossy(f));
    }
}

/// Frames of every kind the engine may meet: decisions (sane or not), errors of every code
/// (those that ask for another attempt and those that end the call), and damaged bytes.
fn any_frame() -> impl Strategy<Value = Vec<u8>> {
    let ints = prop::collection::vec(any::<i64>(), 0..8).prop_map(|items| {
        let mut f = Vec::new();
        resp::write_array(&mut f, items.len());
        for i in items {
            resp::write_int(&mut f, i);
        }
        f
    });
    let codes = prop::sample::select(vec![
        "NOSCRIPT",
        "ERR",
        "MOVED",
        "ASK",
        "TRYAGAIN",
        "CLUSTERDOWN",
        "READONLY",
        "LOADING",
        "WRONGTYPE",
        "BUSY",
        "OOM",
        "NOPERM",
    ]);
    let errors = (codes, "[ -~]{0,30}", prop::option::of(0u16..16384)).prop_map(|(code, detail, slot)| {
        let detail = match (code, slot) {
            ("MOVED" | "ASK", Some(s)) => format!("{s} 127.0.0.1:{}", 7000 + s % 6),
            ("ERR", Some(_)) => "Function not found".to_string(),
            _ => detail,
        };
        let mut f = Vec::new();
        resp::write_error(&mut f, &format!("{code} {detail}"));
        f
    });
    prop_oneof![
        Just(DECISION.to_vec()),
        ints,
        errors,
        prop::collection::vec(any::<u8>(), 0..40),
        Just(b"+OK\r\n".to_vec()),
        (0i64..100).prop_map(|n| format!(":{n}\r\n").into_bytes()),
    ]
}

/// Whether a reply may ask for another attempt: one the server sends before running anything.
fn answered_before_running(frame: &[u8]) -> bool {
    resp::error(frame).is_some_and(|(code, detail)| {
        matches!(code, "NOSCRIPT" | "MOVED" | "ASK" | "TRYAGAIN")
            || code == "ERR" && detail.starts_with("Function not found")
    })
}

proptest! {
    /// At most once: whatever replies come, only one that the server sends before running the
    /// call asks for another attempt; a call never takes more than MAX_ATTEMPTS attempts; every
    /// end is an outcome or a `store_unavailable`; nothing panics.
    #[test]
    fn only_a_reply_sent_before_running_asks_for_another_attempt(
        frames in prop::collection::vec(any_frame(), 1..24),
        invoke in prop::sample::select(vec![Invoke::Scripts, Invoke::Functions]),
        durable in any::<bool>(),
        cluster in any::<bool>(),
    ) {
        let call = gcra_call();
        let mut x = Exchange::new(&call, rules(invoke, durable, cluster));
        let mut attempts = 1;
        let mut call_frame: Option<Vec<u8>> = None;
        let mut fed = 0;
        for frame in &frames {
            // The frame the engine reads as the call's own reply is the attempt's last (its
            // only one without WAIT), or the one before it (with WAIT).
            let call_at = x.replies() - 1 - usize::from(durable);
            if fed == call_at {
                call_frame = Some(frame.clone());
            }
            fed += 1;
            match x.feed(frame) {
                Step::More => {}
                Step::Again { to, .. } => {
                    let asked = call_frame.take().expect("a call frame was read");
                    prop_assert!(answered_before_running(&asked), "resent after {:?}", String::from_utf8_lossy(&asked));
                    prop_assert!(cluster || to == To::Same, "a redirect followed on one node");
                    attempts += 1;
                    fed = 0;
                }
                Step::Done(r) => {
                    if let Err(e) = r {
                        prop_assert_eq!(e.code(), crate::error::ErrorCode::StoreUnavailable);
                    }
                    break;
                }
            }
            prop_assert!(attempts <= MAX_ATTEMPTS);
        }
    }

    /// The integer reader reads every frame it accepts as redis-rs's parser does, and accepts
    /// every integer or array of integers as Redis writes them.
    #[test]
    fn the_integer_reader_agrees_with_the_parser(frame in any_frame(), cut in any::<prop::sample::Index>()) {
        for f in [frame.clone(), frame[..cut.index(frame.len() + 1)].to_vec()] {
            let parsed = redis::parse_redis_value(&f).ok().map(|v| from_redis(&v));
            let as_ints = match &parsed {
                Some(super::value::Value::Int(i)) => Some((false, vec![*i])),
                Some(super::value::Value::Array(items)) => items.iter().map(|v| if let super::value::Value::Int(i) = v { Some(*i) } else { None }).collect::<Option<Vec<_>>>().map(|v| (true, v)),
                _ => None,
            };
            match resp::ints(&f, |array, items| Some((array, items.to_vec()))) {
                Some(got) => prop_assert_eq!(Some(got), as_ints),
                None => {
                    // Declined: no integers, or not written as Redis writes them.
                    if let Some((array, items)) = as_ints {
                        let mut written = Vec::new();
                        if array {
                            resp::write_array(&mut written, items.len());
                        }
                        items.iter().for_each(|i| resp::write_int(&mut written, *i));
                        prop_assert!(written != f, "declined {:?}", String::from_utf8_lossy(&f));
                    }
                }
            }
        }
    }

    /// The small value reader reads every frame it accepts as redis-rs's parser does, and
    /// accepts every whole RESP2 frame the parser reads without an error inside.
    #[test]
    fn the_value_reader_agrees_with_the_parser(frame in any_frame(), cut in any::<prop::sample::Index>()) {
        fn has_error(v: &redis::Value) -> bool {
            match v {
                redis::Value::ServerError(_) => true,
                redis::Value::Array(items) => items.iter().any(has_error),
                _ => false,
            }
        }
        for f in [frame.clone(), frame[..cut.index(frame.len() + 1)].to_vec()] {
            let parsed = redis::parse_redis_value(&f);
            match resp::value(&f) {
                Some(v) => prop_assert_eq!(parsed.ok().map(|p| from_redis(&p)), Some(v)),
                None => {
                    let whole = resp::frame_len(&f) == Ok(Some(f.len()));
                    prop_assert!(!(whole && parsed.as_ref().is_ok_and(|v| !has_error(v))), "declined {:?}", String::from_utf8_lossy(&f));
                }
            }
        }
    }

    /// Commands written back to back are framed one at a time, whatever their bytes.
    #[test]
    fn written_commands_frame_one_at_a_time(commands in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..6), 1..5)) {
        let mut out = Vec::new();
        let mut ends = Vec::new();
        for c in &commands {
            resp::write_command(&mut out, c.iter().map(Vec::as_slice));
            ends.push(out.len());
        }
        let mut at = 0;
        for end in ends {
            prop_assert_eq!(frame_len(&out[at..]).unwrap(), Some(end - at));
            prop_assert_eq!(frame_len(&out[at..end - 1]).unwrap(), None);
            at = end;
        }
    }
}
