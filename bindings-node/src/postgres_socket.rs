//! The native half of lib/postgres-socket.js, Node's own Postgres sockets: a `Limiter`'s
//! Promise `check`, `checkMany`, `peek` and `forecast` on a `PostgresStore` are written on Node
//! `net.Socket`s instead of hopping to the store's Tokio thread and back (two thread switches
//! cost more than the statement).
//!
//! Every function is a forward to the core (`throttlekit::postgres::session` for the wire,
//! `Limiter::prepare_sql` and `Limiter::finish_sql` for the call): the login, the statements,
//! each call's bytes and the reading of its reply, the fail policy and the metrics are the
//! core's; JavaScript only moves bytes, keeps the time-outs and settles Promises. None of these
//! functions is part of the public API (`skip_typescript`; index.js hides them).

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions (and what only they read) as unused.
#![cfg_attr(test, allow(dead_code))]

use std::cell::RefCell;
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, BufferSlice, External, ToNapiValue, Unknown};
use napi::{Env, sys};
use napi_derive::napi;
use throttlekit::postgres::call::Op;
use throttlekit::postgres::schema::{Statements, Table};
use throttlekit::postgres::session::{Done, Endpoint, Session, Tls};

use crate::convert;
use crate::decision::Decision;
use crate::error::{CoreResult, OrThrow, config};

static IDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A fresh store number (never 0).
pub(crate) fn next_id() -> u32 {
    IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

/// What a store's sockets need: where to connect, how to log in and what to prepare.
pub(crate) struct Socket {
    /// The store's number (index.js keeps its pool under it).
    pub id: u32,
    endpoint: Endpoint,
    statements: Statements,
    synchronous_commit_off: bool,
    timeout_ms: u64,
    connect_timeout_ms: u64,
    pool_size: usize,
    /// The store, to know whether it is closed.
    store: Arc<throttlekit::postgres::PostgresStore>,
}

impl Socket {
    /// The socket route of a store, or `None` when its URL names what the sockets do not do
    /// (several hosts): then every call takes the store's own connections.
    pub(crate) fn of(id: u32, store: &Arc<throttlekit::postgres::PostgresStore>) -> CoreResult<Option<Arc<Socket>>> {
        let o = store.options();
        let Some(endpoint) = Endpoint::parse(&o.url)? else { return Ok(None) };
        Ok(Some(Arc::new(Socket {
            id,
            endpoint,
            statements: Statements::new(&Table::new(&o.table)?),
            synchronous_commit_off: o.synchronous_commit_off,
            timeout_ms: o.timeout.as_millis() as u64,
            connect_timeout_ms: o.connect_timeout.as_millis() as u64,
            pool_size: o.pool_size,
            store: store.clone(),
        })))
    }
}

/// A call's token in a session: the JS request's number and the limiter that finishes it.
type Token = (u32, Arc<throttlekit::Limiter>);

/// One socket's session (JS holds it; only the event loop's thread touches it).
pub struct PgSession(RefCell<Session<Token>>);

fn limiter<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<&'a crate::limiter::Limiter> {
    crate::instance::<crate::limiter::Limiter>(env, v, "this")?.ok_or_else(|| config("this", "is not a Limiter"))
}

/// The limiter's socket route when its Promise calls take it and its store is open.
fn route<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<Option<&'a Arc<Socket>>> {
    Ok(limiter(env, v)?.postgres.as_ref().filter(|s| !s.store.is_closed()))
}

/// `__pgOf(limiter)`: `null` unless the limiter's Promise calls take index.js's Postgres
/// sockets; else, as JSON, its store's number, where to connect and the time-outs.
#[napi(js_name = "__pgOf", skip_typescript)]
pub fn pg_of(env: &Env, limiter: Unknown) -> napi::Result<Option<String>> {
    let r = route(env, &limiter).or_throw(env)?;
    Ok(r.map(|s| {
        serde_json::json!({
            "id": s.id,
            "host": s.endpoint.host,
            "port": s.endpoint.port,
            "unix": s.endpoint.unix,
            "tls": match s.endpoint.tls { Tls::Disable => "disable", Tls::Prefer => "prefer", Tls::Require => "require" },
            "timeoutMs": s.timeout_ms,
            "connectTimeoutMs": s.connect_timeout_ms,
            "poolSize": s.pool_size,
        })
        .to_string()
    }))
}

/// `__pgSession(limiter)`: a new connection's session for the limiter's store (its first bytes
/// from `__pgTake`).
#[napi(js_name = "__pgSession", skip_typescript)]
pub fn pg_session(env: &Env, limiter: Unknown) -> napi::Result<External<PgSession>> {
    let s =
        route(env, &limiter).or_throw(env)?.ok_or_else(|| config("this", "takes no Postgres socket")).or_throw(env)?;
    let session = Session::new(s.endpoint.clone(), s.statements.clone(), s.synchronous_commit_off).or_throw(env)?;
    Ok(External::new(PgSession(RefCell::new(session))))
}

/// `__pgSslRequest()`: what a socket sends first to ask for TLS.
#[napi(js_name = "__pgSslRequest", skip_typescript)]
pub fn pg_ssl_request() -> Buffer {
    throttlekit::postgres::session::ssl_request().into()
}

fn busy() -> throttlekit::Error {
    config("session", "is busy")
}

/// `__pgTake(session)`: the bytes to write now, or `null`.
#[napi(js_name = "__pgTake", skip_typescript)]
pub fn pg_take(env: &Env, session: &External<PgSession>) -> napi::Result<Option<Buffer>> {
    let mut s = session.0.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
    let out = s.take_output();
    Ok((!out.is_empty()).then(|| out.into()))
}

fn op(code: u32) -> Op {
    match code {
        1 => Op::Peek,
        2 => Op::Forecast,
        _ => Op::Check,
    }
}

/// `__pgCall(session, limiter, op, key, cost, id)`: prepares the limiter's op 0 check, 1 peek
/// or 2 forecast as request `id` on the session; the bytes to write now (`null` while the
/// session logs in: they follow). Bad arguments throw the native method's error (counted).
#[napi(js_name = "__pgCall", skip_typescript)]
pub fn pg_call(
    env: &Env,
    session: &External<PgSession>,
    limiter: Unknown,
    op: u32,
    key: Unknown,
    cost: Unknown,
    id: u32,
) -> napi::Result<Option<Buffer>> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let op = self::op(op);
    let (key, cost) = match op {
        Op::Peek => convert::string(&key, "key").map(|k| (k, 1)),
        _ => convert::key_and_cost(&key, &cost),
    }
    .or_throw(env)?;
    let c = l.inner.prepare_sql(op, &key, cost).or_throw(env)?;
    let mut s = session.0.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
    s.call((id, l.inner.clone()), c.key, c.call).or_throw(env)?;
    Ok(ready_output(&mut s))
}

/// The bytes to write now: none before the session is ready (the login's bytes leave when the
/// socket is set up, `__pgTake`; the calls once the session is ready, from `__pgFeed`'s).
fn ready_output(s: &mut Session<Token>) -> Option<Buffer> {
    if !s.is_ready() {
        return None;
    }
    let out = s.take_output();
    (!out.is_empty()).then(|| out.into())
}

/// `__pgCallMany(session, limiter, keys, cost, firstId)`: `checkMany`'s checks, one per key at
/// one clock read, as requests `firstId`, `firstId + 1`, ...; the bytes to write now, or `null`.
#[napi(js_name = "__pgCallMany", skip_typescript)]
pub fn pg_call_many(
    env: &Env,
    session: &External<PgSession>,
    limiter: Unknown,
    keys: Unknown,
    cost: Unknown,
    first_id: u32,
) -> napi::Result<Option<Buffer>> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let (keys, cost) = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))).or_throw(env)?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let calls = l.inner.prepare_sql_many(&keys, cost).or_throw(env)?;
    let mut s = session.0.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
    for (i, c) in calls.into_iter().enumerate() {
        s.call((first_id.wrapping_add(i as u32), l.inner.clone()), c.key, c.call).or_throw(env)?;
    }
    Ok(ready_output(&mut s))
}

/// The outcomes of `done` for JavaScript: `[fatal, id, value, id, value, ...]`, each value a
/// decision object or the error its Promise rejects with (the limiter's fail policy and
/// metrics applied by `finish_sql`).
fn settled(env: &Env, fatal: bool, done: Vec<Done<Token>>) -> napi::Result<Unknown<'_>> {
    let raw = env.raw();
    let mut array = std::ptr::null_mut();
    let check = |status: sys::napi_status| {
        if status == sys::Status::napi_ok { Ok(()) } else { Err(napi::Error::from_status(napi::Status::from(status))) }
    };
    // SAFETY: `raw` is the live env of this call, on the JS thread; every value made here is
    // used within it.
    unsafe {
        check(sys::napi_create_array_with_length(raw, 1 + 2 * done.len(), &mut array))?;
        check(sys::napi_set_element(raw, array, 0, bool::to_napi_value(raw, fatal)?))?;
        for (i, d) in done.into_iter().enumerate() {
            let (id, l) = d.token;
            let value = match l.finish_sql(&d.call, d.reply) {
                Ok(decision) => Decision::to_napi_value(raw, Decision::from(decision))?,
                Err(e) => crate::error::value(raw, &e)?,
            };
            check(sys::napi_set_element(raw, array, 1 + 2 * i as u32, u32::to_napi_value(raw, id)?))?;
            check(sys::napi_set_element(raw, array, 2 + 2 * i as u32, value))?;
        }
        Ok(Unknown::from_raw_unchecked(raw, array))
    }
}

/// `__pgFeed(session, bytes)`: reads what the socket received; the calls it completed as
/// `[fatal, id, value, ...]`. `fatal`: the connection is unusable (a failed login, a malformed
/// message): every call still owed is in the list too, failed; drop the socket. Bytes to send
/// after (`__pgTake`) may follow.
#[napi(js_name = "__pgFeed", skip_typescript)]
pub fn pg_feed<'e>(env: &'e Env, session: &External<PgSession>, bytes: BufferSlice) -> napi::Result<Unknown<'e>> {
    let mut done = Vec::new();
    let fatal = {
        let mut s = session.0.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
        match s.feed(&bytes, &mut done) {
            Ok(()) => false,
            Err(e) => {
                done.extend(s.abort(&e));
                true
            }
        }
    };
    settled(env, fatal, done)
}

/// `__pgAbort(session, reason)`: every call still owed, failed as `store_unavailable` with
/// `reason` (the socket was lost, or a call on it timed out): `[true, id, value, ...]`.
#[napi(js_name = "__pgAbort", skip_typescript)]
pub fn pg_abort<'e>(env: &'e Env, session: &External<PgSession>, reason: String) -> napi::Result<Unknown<'e>> {
    let done = {
        let mut s = session.0.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
        s.abort(&throttlekit::Error::store(reason))
    };
    settled(env, true, done)
}

/// `__pgStoreId(store)`: the number of a `PostgresStore` (to close its sockets), else `null`.
#[napi(js_name = "__pgStoreId", skip_typescript)]
pub fn pg_store_id(env: &Env, store: Unknown) -> napi::Result<Option<u32>> {
    Ok(crate::instance::<crate::postgres::PostgresStore>(env, &store, "this").or_throw(env)?.map(|s| s.id()))
}
