//! The session against byte-level server messages.

use super::*;
use crate::decision::Decision;
use crate::postgres::schema::Table;

/// A backend message: its tag, then its length (itself included) and body.
fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn auth(code: i32, rest: &[u8]) -> Vec<u8> {
    msg(b'R', &[&code.to_be_bytes()[..], rest].concat())
}

fn ready() -> Vec<u8> {
    msg(b'Z', b"I")
}

fn param_description(types: &[Type]) -> Vec<u8> {
    let mut body = (types.len() as i16).to_be_bytes().to_vec();
    for t in types {
        body.extend_from_slice(&t.oid().to_be_bytes());
    }
    msg(b't', &body)
}

/// A call's reply: the row of `r` (`None`: SQL NULL), as the server sends it in binary.
fn row_reply(r: Option<&[i64]>) -> Vec<u8> {
    column_reply(r.map(|r| {
        let mut v = BytesMut::new();
        r.to_vec().to_sql(&Type::INT8_ARRAY, &mut v).unwrap();
        v.to_vec()
    }))
}

/// A call's reply of one column's binary value (`None`: SQL NULL).
fn column_reply(value: Option<Vec<u8>>) -> Vec<u8> {
    let mut body = 1i16.to_be_bytes().to_vec();
    match value {
        None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(v) => {
            body.extend_from_slice(&(v.len() as i32).to_be_bytes());
            body.extend_from_slice(&v);
        }
    }
    [msg(b'2', b""), msg(b'D', &body), msg(b'C', b"INSERT 0 1\0"), ready()].concat()
}

fn error_response(code: &str, message: &str) -> Vec<u8> {
    let body = format!("SERROR\0C{code}\0M{message}\0\0");
    msg(b'E', body.as_bytes())
}

/// The front-end messages in `bytes` (after a startup message), as `(tag, body)`.
fn frontend_messages(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = i32::from_be_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        out.push((bytes[at], bytes[at + 5..at + 1 + len].to_vec()));
        at += 1 + len;
    }
    out
}

fn session(url: &str) -> Session<u32> {
    let endpoint = Endpoint::parse(url).unwrap().unwrap();
    Session::new(endpoint, Statements::new(&Table::new("tk").unwrap()), false).unwrap()
}

/// The unit fixed window's inline statement's parameter types (`inline::unit_window_params`).
const WINDOW: [Type; 6] = [Type::TEXT, Type::INT8, Type::INT8, Type::INT8, Type::INT8, Type::INT8];

const STEP: [Type; 6] = [Type::TEXT, Type::INT8, Type::INT2, Type::INT2, Type::FLOAT8_ARRAY, Type::INT8];

/// The types the server describes each prepared statement with (GCRA's inline statement's
/// as `inline::gcra_params` binds them).
fn descriptions() -> Vec<u8> {
    let gcra = [Type::TEXT, Type::INT8, Type::FLOAT8, Type::FLOAT8, Type::FLOAT8, Type::FLOAT8, Type::INT8];
    let mut out = Vec::new();
    for p in Prepared::ALL {
        out.extend(msg(b'1', b""));
        out.extend(param_description(match p {
            Prepared::Inline(Inline::Gcra) => &gcra[..],
            Prepared::Inline(Inline::FixedWindowUnit) => &WINDOW[..],
            Prepared::Step | Prepared::StepNew => &STEP[..],
            Prepared::Inline(_) => &[Type::TEXT],
        }));
        out.extend(msg(b'T', &[0, 0]));
    }
    out.extend(ready());
    out
}

/// A session logged in by trust and prepared.
fn ready_session() -> Session<u32> {
    let mut s = session("postgres://u@h:1/db");
    s.take_output();
    let mut done = Vec::new();
    s.feed(&[auth(0, b""), ready()].concat(), &mut done).unwrap();
    s.take_output();
    s.feed(&descriptions(), &mut done).unwrap();
    assert!(s.is_ready() && done.is_empty());
    s
}

fn gcra_check(now: i64) -> StepCall {
    StepCall { now: Some(now), op: call::Op::Check, algo: 1, params: [100.0, 1000.0, 10.0, 0.0, 0.0, 0.0], cost: 1 }
}

fn window_check(now: i64) -> StepCall {
    StepCall { now: Some(now), op: call::Op::Check, algo: 3, params: [10.0, 1000.0, 0.0, 0.0, 0.0, 0.0], cost: 1 }
}

fn sliding_check(now: i64) -> StepCall {
    StepCall { now: Some(now), op: call::Op::Check, algo: 4, params: [10.0, 1000.0, 10.0, 100.0, 0.0, 0.0], cost: 1 }
}

#[test]
fn the_startup_message_names_the_user_database_and_options_of_the_url() {
    let mut s = session("postgres://alice:pw@db.example:6543/app?application_name=tk&options=-c%20x%3D1");
    let out = s.take_output();
    assert_eq!(i32::from_be_bytes(out[0..4].try_into().unwrap()) as usize, out.len());
    assert_eq!(i32::from_be_bytes(out[4..8].try_into().unwrap()), 196_608, "protocol 3.0");
    let text = String::from_utf8_lossy(&out[8..]).into_owned();
    for part in
        ["user\0alice\0", "database\0app\0", "client_encoding\0UTF8\0", "application_name\0tk\0", "options\0-c x=1\0"]
    {
        assert!(text.contains(part), "{part:?} in {text:?}");
    }
    let e = Endpoint::parse("postgres://alice:pw@db.example:6543/app").unwrap().unwrap();
    assert_eq!((e.host.as_str(), e.port, e.unix, e.tls), ("db.example", 6543, false, Tls::Prefer));
    let e = Endpoint::parse("postgres://u@h/db?sslmode=require").unwrap().unwrap();
    assert_eq!((e.port, e.tls), (5432, Tls::Require));
    let e = Endpoint::parse("host=/run/pg port=5433 user=u sslmode=disable").unwrap().unwrap();
    assert_eq!((e.host.as_str(), e.unix, e.tls), ("/run/pg/.s.PGSQL.5433", true, Tls::Disable));
    assert_eq!(Endpoint::parse("host=a,b user=u").unwrap(), None, "several hosts: the tokio store's");
    let bad = Endpoint::parse("postgres://u@h:notaport/db").unwrap_err();
    assert_eq!(bad.code(), ErrorCode::ConfigInvalid);
    assert_eq!(ssl_request(), [0, 0, 0, 8, 4, 210, 22, 47]);
}

#[test]
fn cleartext_and_md5_logins_answer_with_the_password_and_its_hash() {
    let mut s = session("postgres://alice:secret@h/db");
    s.take_output();
    let mut done = Vec::new();
    s.feed(&auth(3, b""), &mut done).unwrap();
    assert_eq!(frontend_messages(&s.take_output()), vec![(b'p', b"secret\0".to_vec())]);

    let mut s = session("postgres://alice:secret@h/db");
    s.take_output();
    s.feed(&auth(5, &[1, 2, 3, 4]), &mut done).unwrap();
    let hash = postgres_protocol::authentication::md5_hash(b"alice", b"secret", [1, 2, 3, 4]);
    assert!(hash.starts_with("md5") && hash.len() == 35);
    assert_eq!(frontend_messages(&s.take_output()), vec![(b'p', [hash.as_bytes(), b"\0"].concat())]);

    // No password in the URL: a clear error, not an empty password.
    let mut s = session("postgres://alice@h/db");
    let e = s.feed(&auth(3, b""), &mut done).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("the URL has none"), "{e}");
}

#[test]
fn scram_starts_with_the_client_first_message_and_other_methods_are_refused() {
    let mut s = session("postgres://alice:secret@h/db");
    s.take_output();
    let mut done = Vec::new();
    s.feed(&auth(10, b"SCRAM-SHA-256\0\0"), &mut done).unwrap();
    let out = frontend_messages(&s.take_output());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, b'p');
    let body = String::from_utf8_lossy(&out[0].1).into_owned();
    assert!(body.starts_with("SCRAM-SHA-256\0") && body.contains("n,,n=,r="), "{body:?}");
    // A server-final that does not verify fails the login.
    let e = s.feed(&auth(11, b"r=bogus,s=AAAA,i=4096"), &mut done).unwrap_err();
    assert!(e.message().contains("authentication failed"), "{e}");

    let mut s = session("postgres://alice:secret@h/db");
    let e = s.feed(&auth(10, b"SCRAM-SHA-256-PLUS-ONLY\0\0"), &mut done).unwrap_err();
    assert!(e.message().contains("no SASL mechanism"), "{e}");
    let mut s = session("postgres://alice:secret@h/db");
    let e = s.feed(&auth(7, b""), &mut done).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("scram-sha-256 are supported"), "{e}");
}

#[test]
fn a_refused_login_is_coded_as_the_tokio_store_codes_it() {
    let mut s = session("postgres://alice:wrong@h/db");
    let e = s.feed(&error_response("28P01", "password authentication failed"), &mut Vec::new()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("authentication failed") && e.message().contains("SQLSTATE 28P01"), "{e}");
    // A missing function while preparing: the schema's fault.
    let mut s = session("postgres://u@h/db");
    let mut done = Vec::new();
    s.feed(&[auth(0, b""), ready()].concat(), &mut done).unwrap();
    let e = s.feed(&error_response("42883", "function throttlekit_v1_step does not exist"), &mut done).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConfigInvalid);
}

#[test]
fn once_logged_in_every_statement_is_parsed_and_described_in_one_round_trip() {
    let mut s = session("postgres://u@h/db");
    s.take_output();
    let mut done = Vec::new();
    // Calls made before the session is ready wait for it.
    s.call(7, "k".into(), gcra_check(1_000)).unwrap();
    assert!(s.take_output().is_empty());
    s.feed(&[auth(0, b""), msg(b'S', b"server_version\x0015\0"), msg(b'K', &[0; 8]), ready()].concat(), &mut done)
        .unwrap();
    let tags: Vec<u8> = frontend_messages(&s.take_output()).iter().map(|m| m.0).collect();
    assert_eq!(tags, [[b'P', b'D'].repeat(6), vec![b'S']].concat());
    assert!(!s.is_ready() && s.owed() == 1);
    s.feed(&descriptions(), &mut done).unwrap();
    assert!(s.is_ready());
    // The held call goes out: Bind of the inline GCRA statement, Execute, Sync.
    let out = frontend_messages(&s.take_output());
    assert_eq!(out.iter().map(|m| m.0).collect::<Vec<_>>(), [b'B', b'E', b'S']);
    assert!(out[0].1.starts_with(b"\0tk0\0"), "the unnamed portal of statement tk0");
}

#[test]
fn replies_come_back_in_order_and_are_read_by_the_stores_reader() {
    let mut s = ready_session();
    let mut done = Vec::new();
    s.call(1, "a".into(), gcra_check(1_000)).unwrap();
    s.call(2, "b".into(), gcra_check(1_000)).unwrap();
    assert_eq!(frontend_messages(&s.take_output()).len(), 6, "both pipelined at once");
    // The first reply arrives in two pieces.
    let first = row_reply(Some(&[1, 10, 9, 1_100, 0]));
    s.feed(&first[..7], &mut done).unwrap();
    assert!(done.is_empty());
    s.feed(&[&first[7..], &row_reply(Some(&[0, 10, 0, 2_000, 100]))[..]].concat(), &mut done).unwrap();
    let got: Vec<(u32, Decision)> = done.drain(..).map(|d| (d.token, d.reply.unwrap().decision().unwrap())).collect();
    assert_eq!(got[0].0, 1);
    assert_eq!((got[0].1.allowed, got[0].1.remaining, got[0].1.reset_at), (true, 9, 1_100));
    assert_eq!((got[1].0, got[1].1.allowed, got[1].1.retry_after_ms), (2, false, 100));
    assert_eq!(s.owed(), 0);
}

#[test]
fn the_unit_window_statement_answers_a_denial_with_no_row_and_no_other_statement_may() {
    let mut s = ready_session();
    let mut done = Vec::new();
    s.call(1, "a".into(), window_check(1_500)).unwrap();
    s.call(2, "b".into(), window_check(1_500)).unwrap();
    s.call(3, "c".into(), gcra_check(1_500)).unwrap();
    let out = frontend_messages(&s.take_output());
    assert!(out[0].1.starts_with(b"\0tk3\0"), "the unit window statement");
    // Admitted: its row, the new count; denied: no row, only the command's end (the `WHERE`
    // skipped the write).
    let no_row = [msg(b'2', b""), msg(b'C', b"INSERT 0 0\0"), ready()].concat();
    s.feed(&[column_reply(Some(1i64.to_be_bytes().to_vec())), no_row.clone(), no_row].concat(), &mut done).unwrap();
    let got: Vec<Result<Decision>> = done.drain(..).map(|d| d.reply.and_then(|r| r.decision())).collect();
    let (a, b) = (got[0].as_ref().unwrap(), got[1].as_ref().unwrap());
    assert_eq!((a.allowed, a.limit, a.remaining, a.reset_at, a.retry_after_ms), (true, 10, 9, 2_000, 0));
    // The window [1000, 2000) at 1500: remaining 0 (a count past the room), 500 ms to its end.
    assert_eq!((b.allowed, b.limit, b.remaining, b.reset_at, b.retry_after_ms), (false, 10, 0, 2_000, 500));
    let e = got[2].as_ref().unwrap_err();
    assert!(e.code() == ErrorCode::StoreUnavailable && e.message().contains("no reply"), "{e}");
}

#[test]
fn a_step_on_a_new_key_goes_again_as_step_new_and_nothing_else_is_resent() {
    let mut s = ready_session();
    let mut done = Vec::new();
    s.call(1, "new".into(), sliding_check(1_000)).unwrap();
    s.call(2, "gcra".into(), gcra_check(1_000)).unwrap();
    let out = frontend_messages(&s.take_output());
    assert!(out[0].1.starts_with(b"\0tk4\0"), "the step statement");
    // step answers NULL: the call goes as step_new (tk5), owed after the GCRA call.
    s.feed(&row_reply(None), &mut done).unwrap();
    assert!(done.is_empty());
    let out = frontend_messages(&s.take_output());
    assert_eq!(out.iter().map(|m| m.0).collect::<Vec<_>>(), [b'B', b'E', b'S']);
    assert!(out[0].1.starts_with(b"\0tk5\0"));
    // The GCRA call's error is its own; the step_new reply decides the first call.
    s.feed(&[error_response("40P01", "deadlock detected"), ready()].concat(), &mut done).unwrap();
    s.feed(&row_reply(Some(&[1, 10, 9, 1_100, 0])), &mut done).unwrap();
    assert_eq!(done.len(), 2);
    assert_eq!(done[0].token, 2);
    let e = done[0].reply.as_ref().unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("not resent") && e.message().contains("40P01"), "{e}");
    assert_eq!(done[1].token, 1);
    assert!(matches!(done[1].reply, Ok(Reply::Decision(ref d)) if d.allowed));
    // A NULL from step_new is an error, not a loop.
    s.call(3, "x".into(), sliding_check(1_000)).unwrap();
    s.feed(&row_reply(None), &mut done).unwrap();
    s.feed(&row_reply(None), &mut done).unwrap();
    assert_eq!(done.len(), 3);
    assert!(done[2].reply.is_err());
    assert!(!s.take_output().is_empty() && s.owed() == 0);
}

#[test]
fn abort_fails_every_owed_call_in_order_and_keeps_nothing() {
    let mut s = ready_session();
    s.call(1, "a".into(), gcra_check(1)).unwrap();
    s.call(2, "b".into(), sliding_check(1)).unwrap();
    let reason = Error::store("the Postgres connection was lost");
    let failed = s.abort(&reason);
    assert_eq!(failed.iter().map(|d| d.token).collect::<Vec<_>>(), [1, 2]);
    assert!(failed.iter().all(|d| d.reply.as_ref().unwrap_err() == &reason));
    assert_eq!(s.owed(), 0);
    // A reply nothing asked for is fatal to the connection.
    let e = ready_session().feed(&ready(), &mut Vec::new()).unwrap_err();
    assert!(e.message().contains("a reply to no call"), "{e}");
}
