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

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, BufferSlice, External, Float64ArraySlice, Unknown};
use napi::{Env, sys};
use napi_derive::napi;
use throttlekit::postgres::call::Op;
use throttlekit::postgres::schema::{Statements, Table};
use throttlekit::postgres::session::{Done, Endpoint, Session};

use crate::convert;
use crate::error::{CoreResult, OrThrow, config};
use crate::send::send_now;

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

/// One socket's session (JS holds it; only the event loop's thread touches it), with what it
/// has for JavaScript that the call which made it could not hand over: bytes to write (for
/// `__pgTake`) and outcomes past the end of `out` (for the next `__pgFeed`).
pub struct PgSession {
    session: RefCell<Session<Token>>,
    output: RefCell<Vec<u8>>,
    left: RefCell<VecDeque<Done<Token>>>,
}

fn busy() -> throttlekit::Error {
    config("session", "is busy")
}

impl PgSession {
    fn session(&self) -> CoreResult<RefMut<'_, Session<Token>>> {
        self.session.try_borrow_mut().map_err(|_| busy())
    }

    fn output(&self) -> CoreResult<RefMut<'_, Vec<u8>>> {
        self.output.try_borrow_mut().map_err(|_| busy())
    }
}

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
            // The sslmode as core read it (libpq's meaning): ask for TLS, insist, what to verify.
            "tls": s.endpoint.tls.name(),
            // A server that declines TLS is refused (require, verify-ca, verify-full).
            "tlsRequired": s.endpoint.tls.required(),
            // verify-ca/verify-full: sslrootcert's PEM (null: the system's roots).
            "ca": s.endpoint.root_certs.as_deref().map(String::from_utf8_lossy),
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
    Ok(External::new(PgSession {
        session: RefCell::new(session),
        output: RefCell::new(Vec::new()),
        left: RefCell::new(VecDeque::new()),
    }))
}

/// `__pgSslRequest()`: what a socket sends first to ask for TLS.
#[napi(js_name = "__pgSslRequest", skip_typescript)]
pub fn pg_ssl_request() -> Buffer {
    throttlekit::postgres::session::ssl_request().into()
}

/// `__pgTake(session)`: the bytes to write now, or `null`.
#[napi(js_name = "__pgTake", skip_typescript)]
pub fn pg_take(env: &Env, session: &External<PgSession>) -> napi::Result<Option<Buffer>> {
    let mut kept = session.output().or_throw(env)?;
    session.session().or_throw(env)?.drain_output(|out| kept.extend_from_slice(out));
    Ok((!kept.is_empty()).then(|| std::mem::take(&mut *kept).into()))
}

fn op(code: u32) -> Op {
    match code {
        1 => Op::Peek,
        2 => Op::Forecast,
        _ => Op::Check,
    }
}

/// `__pgCall(session, limiter, op, key, cost, id, scratch, fd)`: prepares the limiter's op 0
/// check, 1 peek or 2 forecast as request `id` on the session. Its bytes (none while the
/// session logs in: they follow its login) are first written to the socket `fd` when it is
/// not -1 (`send_now`); what is left is copied to the start of `scratch` and the answer is how
/// many bytes, or -1 when they do not fit there (then `__pgTake` has them). Bad arguments
/// throw the native method's error (counted).
///
/// Why `scratch` and `fd`: a `Buffer` made here per call (an external backing store, its
/// finalizer) and net.Socket's write path (the Writable's bookkeeping, a `WriteWrap` per write)
/// were a good part of what a sequential call spent in Node (perf), while the call goes out
/// at once anyway when nothing else is owed on the socket, the only time index.js passes its
/// descriptor (`Conn#direct`).
#[napi(js_name = "__pgCall", skip_typescript)]
#[allow(clippy::too_many_arguments)] // one per thing a call needs, as JS passes them
pub fn pg_call(
    env: &Env,
    session: &External<PgSession>,
    limiter: Unknown,
    op: u32,
    key: Unknown,
    cost: Unknown,
    id: u32,
    mut scratch: BufferSlice,
    fd: f64,
) -> napi::Result<i64> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let op = self::op(op);
    let (key, cost) = match op {
        Op::Peek => convert::string(&key, "key").map(|k| (k, 1)),
        _ => convert::key_and_cost(&key, &cost),
    }
    .or_throw(env)?;
    let c = l.inner.prepare_sql(op, &key, cost).or_throw(env)?;
    let mut s = session.session().or_throw(env)?;
    s.call((id, l.inner.clone()), c.key, c.call).or_throw(env)?;
    hand_over(session, &mut s, &mut scratch, fd).or_throw(env)
}

/// What `__pgCall` and `__pgCallMany` answer: the session's new bytes (none before it is ready:
/// the login's leave through `__pgTake`, held calls once it is ready) sent to `fd` as far as
/// it takes them, the rest in `scratch` (their length), or -1 when that is too small or bytes
/// kept for `__pgTake` must leave first (then they join those).
fn hand_over(session: &PgSession, s: &mut Session<Token>, scratch: &mut [u8], fd: f64) -> CoreResult<i64> {
    if !s.is_ready() {
        return Ok(0);
    }
    let mut kept = session.output()?;
    Ok(s.drain_output(|out| {
        if !kept.is_empty() || out.len() > scratch.len() {
            kept.extend_from_slice(out);
            return -1;
        }
        let sent = send_now(fd, out);
        let rest = &out[sent..];
        scratch[..rest.len()].copy_from_slice(rest);
        rest.len() as i64
    }))
}

/// `__pgCallMany(session, limiter, keys, cost, firstId, scratch)`: `checkMany`'s checks, one per
/// key at one clock read, as requests `firstId`, `firstId + 1`, ...; answered as `__pgCall`
/// (never written by itself).
#[napi(js_name = "__pgCallMany", skip_typescript)]
pub fn pg_call_many(
    env: &Env,
    session: &External<PgSession>,
    limiter: Unknown,
    keys: Unknown,
    cost: Unknown,
    first_id: u32,
    mut scratch: BufferSlice,
) -> napi::Result<i64> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let (keys, cost) = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))).or_throw(env)?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let calls = l.inner.prepare_sql_many(&keys, cost).or_throw(env)?;
    let mut s = session.session().or_throw(env)?;
    for (i, c) in calls.into_iter().enumerate() {
        s.call((first_id.wrapping_add(i as u32), l.inner.clone()), c.key, c.call).or_throw(env)?;
    }
    hand_over(session, &mut s, &mut scratch, -1.0).or_throw(env)
}

/// The layout of `out`, the `Float64Array` `__pgFeed` and `__pgAbort` answer in: whether the
/// connection is unusable, how many outcomes follow, whether more are left for the next
/// `__pgFeed`, whether `__pgTake` has bytes to write; then the outcomes, each the request's
/// number, the index of its error in the returned array (-1: none) and the six slots of its
/// decision (lib/decision-slots.js). Why not an object per decision: napi sets each of its
/// properties with a new key string (perf: about a tenth of a sequential call's time in Node);
/// index.js builds it from the slots with one object literal.
const OUT_FATAL: usize = 0;
const OUT_COUNT: usize = 1;
const OUT_MORE: usize = 2;
const OUT_TAKE: usize = 3;
const OUT_HEAD: usize = 4;
const OUTCOME: usize = 8;

/// Writes into `out` the outcomes `session` left from before, then those of `done`, as far as
/// it has room (the rest stay for the next `__pgFeed`), with `fatal` and whether `__pgTake` has
/// bytes. The answer: the errors among them (what their Promises reject with, the limiter's
/// fail policy and metrics applied by `finish_sql` as to a decision), or `null` when none.
fn settled<'e>(
    env: &'e Env,
    session: &PgSession,
    fatal: bool,
    done: Vec<Done<Token>>,
    out: &mut [f64],
) -> napi::Result<Unknown<'e>> {
    if out.len() < OUT_HEAD + OUTCOME {
        return Err(config("out", "has no room for an outcome")).or_throw(env);
    }
    let raw = env.raw();
    let check = |status: sys::napi_status| {
        if status == sys::Status::napi_ok { Ok(()) } else { Err(napi::Error::from_status(napi::Status::from(status))) }
    };
    let mut left = session.left.try_borrow_mut().map_err(|_| busy()).or_throw(env)?;
    left.extend(done);
    let n = left.len().min((out.len() - OUT_HEAD) / OUTCOME);
    let mut errors: sys::napi_value = std::ptr::null_mut();
    let mut failed = 0u32;
    for (i, d) in left.drain(..n).enumerate() {
        let k = OUT_HEAD + i * OUTCOME;
        let (id, l) = d.token;
        out[k] = f64::from(id);
        match l.finish_sql(&d.call, d.reply) {
            Ok(decision) => {
                out[k + 1] = -1.0;
                out[k + 2..k + OUTCOME].copy_from_slice(&crate::http::decided(&decision));
            }
            Err(e) => {
                // SAFETY: `raw` is the live env of this call, on the JS thread; every value
                // made here is used within it.
                unsafe {
                    if errors.is_null() {
                        check(sys::napi_create_array(raw, &mut errors))?;
                    }
                    check(sys::napi_set_element(raw, errors, failed, crate::error::value(raw, &e)?))?;
                }
                out[k + 1] = f64::from(failed);
                failed += 1;
            }
        }
    }
    out[OUT_FATAL] = f64::from(u8::from(fatal));
    out[OUT_COUNT] = n as f64;
    out[OUT_MORE] = f64::from(u8::from(!left.is_empty()));
    out[OUT_TAKE] = f64::from(u8::from(!session.output().or_throw(env)?.is_empty()));
    // SAFETY: as above.
    unsafe {
        if errors.is_null() {
            check(sys::napi_get_null(raw, &mut errors))?;
        }
        Ok(Unknown::from_raw_unchecked(raw, errors))
    }
}

/// `__pgFeed(session, bytes, length, out)`: reads the first `length` bytes of `bytes`, what the
/// socket received (`null`: nothing new, hand out what an earlier read left), and answers the
/// calls it completed in `out` (see `OUT_HEAD`). The length is separate so that a socket's
/// read buffer goes in as it is, with no `subarray` made per read. Fatal: the connection is unusable (a failed login, a malformed message):
/// every call still owed is among the outcomes too, failed; drop the socket once they are all
/// out.
#[napi(js_name = "__pgFeed", skip_typescript)]
pub fn pg_feed<'e>(
    env: &'e Env,
    session: &External<PgSession>,
    bytes: Option<BufferSlice>,
    length: u32,
    mut out: Float64ArraySlice,
) -> napi::Result<Unknown<'e>> {
    let mut done = Vec::new();
    let mut fatal = false;
    if let Some(bytes) = bytes {
        let bytes = bytes.get(..length as usize).ok_or_else(|| config("length", "is past the bytes")).or_throw(env)?;
        let mut s = session.session().or_throw(env)?;
        if let Err(e) = s.feed(bytes, &mut done) {
            done.extend(s.abort(&e));
            fatal = true;
        }
        let mut kept = session.output().or_throw(env)?;
        s.drain_output(|out| kept.extend_from_slice(out));
    }
    // SAFETY: `out` is the Float64Array index.js made for these answers and never hands out;
    // nothing else views its memory during this call, the only time the slice lives.
    settled(env, session, fatal, done, unsafe { out.as_mut() })
}

/// `__pgAbort(session, reason, out)`: every call still owed, failed as `store_unavailable`
/// with `reason` (the socket was lost, or a call on it timed out), answered as `__pgFeed`'s,
/// fatal.
#[napi(js_name = "__pgAbort", skip_typescript)]
pub fn pg_abort<'e>(
    env: &'e Env,
    session: &External<PgSession>,
    reason: String,
    mut out: Float64ArraySlice,
) -> napi::Result<Unknown<'e>> {
    let done = session.session().or_throw(env)?.abort(&throttlekit::Error::store(reason));
    // SAFETY: as in `pg_feed`.
    settled(env, session, true, done, unsafe { out.as_mut() })
}

/// `__pgStoreId(store)`: the number of a `PostgresStore` (to close its sockets), else `null`.
#[napi(js_name = "__pgStoreId", skip_typescript)]
pub fn pg_store_id(env: &Env, store: Unknown) -> napi::Result<Option<u32>> {
    Ok(crate::instance::<crate::postgres::PostgresStore>(env, &store, "this").or_throw(env)?.map(|s| s.id()))
}
