use serde_json::{Value as Tree, json};

use super::*;
use crate::error::ErrorCode;
use crate::redis::{call, engine};
use crate::store::{Now, Reply, Transform};
use crate::{Decision, Strategy};

fn check(key: &str) -> ScriptCall {
    let s = Box::leak(Box::new(Strategy::gcra(10, 1000, None).unwrap()));
    call::single(key, Now::At(5_000), &Transform::Check { strategy: s, cost: 1 })
}

fn body(r: &Request) -> Tree {
    serde_json::from_str(&r.body).unwrap()
}

fn decision(o: Result<Outcome>) -> Result<Decision> {
    match o? {
        Outcome::Single(Reply::Decision(d)) => Ok(d),
        other => panic!("{other:?}"),
    }
}

const REPLY: &str = r#"{"result":[1,10,9,5100,0,100]}"#;

/// One call is `POST /` with the `EVALSHA` command as a JSON array; its `{"result"}` decodes
/// to the decision the same integers decode to on RESP.
#[test]
fn one_call_is_one_command_and_its_result_decodes_as_on_resp() {
    let c = check("k");
    let mut batch = Batch::new(vec![c.clone()], Locking::Global);
    let r = batch.request();
    assert_eq!(r.path, PATH_ONE);
    let b = body(&r);
    assert_eq!(b[0], "EVALSHA");
    assert_eq!(b[1], c.script.sha.as_str());
    assert_eq!((b[2].as_str(), b[3].as_str()), (Some("1"), Some("k")));
    assert_eq!(batch.feed(200, REPLY.as_bytes()), Next::Done);
    let got = decision(batch.outcomes().next().unwrap()).unwrap();
    let want = decision(engine::decode(&c, b"*6\r\n:1\r\n:10\r\n:9\r\n:5100\r\n:0\r\n:100\r\n")).unwrap();
    assert_eq!(got, want);
    assert_eq!(
        headers("t0k"),
        [("Authorization", "Bearer t0k".to_string()), ("Content-Type", "application/json".to_string())]
    );
}

/// `NOSCRIPT` (HTTP 400) asks for `EVAL` with the source, once: a second miss ends the call.
#[test]
fn noscript_falls_back_to_eval_once() {
    let c = check("k");
    let noscript = br#"{"error":"NOSCRIPT No matching script. Please use EVAL."}"#;
    let mut batch = Batch::new(vec![c.clone()], Locking::Global);
    assert_eq!(batch.feed(400, noscript), Next::Send);
    let b = body(&batch.request());
    assert_eq!((b[0].as_str(), b[1].as_str()), (Some("EVAL"), Some(c.script.source.as_str())));
    assert_eq!(batch.feed(200, REPLY.as_bytes()), Next::Done);
    assert!(decision(batch.outcomes().next().unwrap()).unwrap().allowed);

    let mut batch = Batch::new(vec![c], Locking::Global);
    assert_eq!(batch.feed(400, noscript), Next::Send);
    assert_eq!(batch.feed(400, noscript), Next::Done);
    let e = batch.outcomes().next().unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("NOSCRIPT"), "{e}");
}

/// Several calls are one `/pipeline`; after a miss only the call that missed goes again.
#[test]
fn a_pipeline_sends_again_only_the_calls_that_missed() {
    let calls = vec![check("a"), check("b"), check("c")];
    let mut batch = Batch::new(calls, Locking::Global);
    let r = batch.request();
    assert_eq!(r.path, PATH_PIPELINE);
    assert_eq!(body(&r).as_array().unwrap().len(), 3);
    let reply = json!([
        {"result": [1, 10, 9, 5100, 0, 100]},
        {"error": "NOSCRIPT No matching script."},
        {"error": "ERR something broke"}
    ]);
    assert_eq!(batch.feed(200, reply.to_string().as_bytes()), Next::Send);
    let again = batch.request();
    assert_eq!(again.path, PATH_ONE);
    let b = body(&again);
    assert_eq!((b[0].as_str(), b[3].as_str()), (Some("EVAL"), Some("b")));
    assert_eq!(batch.feed(200, br#"{"result":[0,10,0,5100,100,-1]}"#), Next::Done);
    let out: Vec<_> = batch.outcomes().collect();
    assert!(decision(out[0].clone()).unwrap().allowed);
    assert!(!decision(out[1].clone()).unwrap().allowed);
    let e = out[2].clone().unwrap_err();
    assert!(e.message().contains("ERR something broke"), "{e}");
}

/// A refused token, another status, garbage, a wrong count or a transport failure end every
/// call still in flight with `store_unavailable`; nothing is sent again.
#[test]
fn failures_end_the_calls_with_store_unavailable() {
    let cases: [(u16, &[u8], &str); 7] = [
        (401, br#"{"error":"Unauthorized"}"#, "refused the token"),
        (500, b"oops", "HTTP 500"),
        (200, b"<html>", "unreadable"),
        (200, br#"{"result":[1,2]}"#, "unexpected reply"),
        (200, br#"{"result":1.5}"#, "unreadable"),
        (400, b"bad", "unreadable"),
        (200, br#"{"nothing":1}"#, "unreadable"),
    ];
    for (status, text, words) in cases {
        let mut batch = Batch::new(vec![check("k")], Locking::Global);
        assert_eq!(batch.feed(status, text), Next::Done, "{status}");
        let e = batch.outcomes().next().unwrap().unwrap_err();
        assert_eq!(e.code(), ErrorCode::StoreUnavailable);
        assert!(e.message().contains(words), "{status}: {e}");
    }
    let mut batch = Batch::new(vec![check("a"), check("b")], Locking::Global);
    assert_eq!(batch.feed(200, br#"[{"result":[1,10,9,5100,0,100]}]"#), Next::Done);
    assert!(batch.outcomes().all(|o| o.unwrap_err().message().contains("1 replies to 2 commands")));
    let mut batch = Batch::new(vec![check("a")], Locking::Global);
    assert_eq!(batch.fail(timed_out(250)), Next::Done);
    assert!(batch.outcomes().next().unwrap().unwrap_err().message().contains("250 ms"));
}

/// The key-locking variant is each script with Upstash's flag line first: its own SHA1, the
/// same name and main.
#[test]
fn the_key_locking_variant_is_the_script_with_the_flag_line() {
    for s in SCRIPTS.all() {
        let f = flagged(s);
        assert_eq!(f.source, format!("#!lua flags=allow-key-locking\n{}", s.source));
        assert_ne!(f.sha, s.sha);
        assert_eq!(f.name, s.name);
        assert_eq!(&f.source[f.main_at..], &s.source[s.main_at..]);
    }
    let c = check("k");
    let batch = Batch::new(vec![c.clone()], Locking::Keys);
    assert_eq!(body(&batch.request())[1], flagged(c.script).sha.as_str());
}

/// Redis replies in JSON become the RESP frames Redis would have sent.
#[test]
fn json_replies_become_resp_frames() {
    let mut out = Vec::new();
    let json = |text: &str| Json::parse(text.as_bytes()).unwrap();
    write_resp(&mut out, &json(r#"[1, -2, "ab", null, [3], {"error": "ERR x"}]"#)).unwrap();
    assert_eq!(out, b"*6\r\n:1\r\n:-2\r\n$2\r\nab\r\n$-1\r\n*1\r\n:3\r\n-ERR x\r\n");
    for bad in ["true", "1.5", "1e2", "-0", "9223372036854775808", r#"{"a": 1, "b": 2}"#] {
        assert!(write_resp(&mut Vec::new(), &json(bad)).is_none(), "{bad}");
    }
}

proptest::proptest! {
    /// A command's JSON, written by hand, reads back as the same strings through serde_json
    /// (quotes, backslashes, control characters, any Unicode, bytes that are not UTF-8 written
    /// lossily), in one command and in a pipeline.
    #[test]
    fn a_commands_json_reads_back_as_its_arguments(args in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..12), 1..6), text in "\\PC*") {
        let mut args: Vec<Vec<u8>> = args;
        args.push(text.into_bytes());
        args.push(b"a\"b\\c\n\x01\x1f\x7f".to_vec());
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let want: Vec<String> = refs.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let read: Vec<String> = serde_json::from_str(&command_json(&refs)).unwrap();
        proptest::prop_assert_eq!(&read, &want);
        let mut pipeline = String::new();
        write_command(&mut pipeline, &refs);
        proptest::prop_assert_eq!(pipeline, command_json(&refs));
    }
}
