//! The native half of index.js's own Redis transport (lib/redis-transport.js): the Promise
//! methods of a `Limiter`, `MultiLimiter` or `Shaper` on a `RedisStore` write the core's bytes on a Node socket instead of
//! hopping to a Tokio thread and back (two thread switches cost more than the round trip).
//!
//! Every function here is a one-line forward to the core's transport API
//! (`throttlekit::redis::transport`): the core prepares the call (clock, prefix, script,
//! arguments, RESP bytes) and finishes it from the reply frame or the transport's error (reply
//! decoding, fail policy); the login and the reading of replies into frames are the core's too
//! (`__redisHandshake`, and each socket's state, `RedisConn`, here). JavaScript only moves bytes and
//! keeps time-outs. None of these functions is part of the public API (`skip_typescript`;
//! index.js hides them).

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions (and what only they read) as unused.
#![cfg_attr(test, allow(dead_code))]

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use napi::Env;
use napi::bindgen_prelude::{Buffer, BufferSlice, External, Float64ArraySlice, Unknown};
use napi_derive::napi;
use throttlekit::redis::transport::conn::{Conn, Setup};
use throttlekit::redis::transport::{self, Hop, Op, PreparedCall, Ticket};
use throttlekit::store::Now;

use crate::convert;
use crate::decision::MultiDecision;
use crate::decision::Reservation;
use crate::error::{CoreResult, OrThrow, config};
use crate::limiter::Limiter;
use crate::multi::MultiLimiter;
use crate::shaper::Shaper;

/// A limiter's `RedisStore`, and the number index.js keeps its socket under.
#[derive(Clone)]
pub(crate) struct RedisRef {
    pub id: u32,
    pub store: Arc<throttlekit::redis::RedisStore>,
    /// A cluster store's routes: index.js keeps a socket per master (cluster.rs).
    pub routes: Option<throttlekit::redis::routed::Routes>,
}

impl RedisRef {
    /// What index.js needs to open a socket to `e` (one of this store's servers) and read its
    /// first replies: one shape for the standalone socket (`__redisOf`) and for each cluster
    /// master's (`__clusterNode`).
    pub(crate) fn socket_json(&self, e: &transport::Endpoint) -> serde_json::Value {
        let functions = self.store.uses_functions();
        serde_json::json!({
            "host": e.host,
            "port": e.port,
            "path": e.path,
            "timeoutMs": self.store.options().timeout_ms,
            "handshakeReplies": e.handshake().len(),
            "preloadReplies": transport::preload_for(functions).len(),
            "functions": functions,
            "retryReplies": transport::replies(functions, Hop::default().with_fallback()),
        })
    }
}

static IDS: AtomicU32 = AtomicU32::new(0);

/// A fresh store number (never 0).
pub(crate) fn next_id() -> u32 {
    IDS.fetch_add(1, Ordering::Relaxed) + 1
}

pub(crate) fn limiter<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<&'a Limiter> {
    crate::instance::<Limiter>(env, v, "this")?.ok_or_else(|| config("this", "is not a Limiter"))
}

/// The limiter's store if index.js carries its calls and the store is open.
fn open_store(l: &Limiter) -> Option<&RedisRef> {
    l.redis.as_ref().filter(|r| !r.store.is_closed())
}

pub(crate) fn multi<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<&'a MultiLimiter> {
    crate::instance::<MultiLimiter>(env, v, "this")?.ok_or_else(|| config("this", "is not a MultiLimiter"))
}

/// The store of a `Limiter` or a `MultiLimiter` when index.js carries its Promise calls.
pub(crate) fn redis_ref<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<Option<&'a RedisRef>> {
    if let Some(l) = crate::instance::<Limiter>(env, v, "this")? {
        return Ok(l.redis.as_ref());
    }
    if let Some(s) = crate::instance::<Shaper>(env, v, "this")? {
        return Ok(s.redis.as_ref());
    }
    Ok(multi(env, v)?.redis.as_ref())
}

fn shaper<'a>(env: &Env, v: &Unknown<'a>) -> CoreResult<&'a Shaper> {
    crate::instance::<Shaper>(env, v, "this")?.ok_or_else(|| config("this", "is not a Shaper"))
}

/// `__redisOf(limiterOrMulti)`: `null` unless its Promise calls go over index.js's socket (never
/// once its store is closed: the native method answers those calls, and index.js does not open a
/// socket for a closed store that it has forgotten); else, as JSON, the store's number, where to connect (parsed from its URL by the core, as its
/// own connections parse it), the call timeout and how many handshake replies to expect.
#[napi(js_name = "__redisOf", skip_typescript)]
pub fn redis_of(env: &Env, limiter: Unknown) -> napi::Result<Option<String>> {
    let r = redis_ref(env, &limiter).or_throw(env)?.filter(|r| !r.store.is_closed());
    Ok(r.map(|r| {
        let mut json = r.socket_json(&r.store.endpoint());
        json["id"] = r.id.into();
        json["cluster"] = r.routes.is_some().into();
        json.to_string()
    }))
}

/// `__redisHandshake(limiter)`: what a new connection sends first: `AUTH` and `SELECT`, or
/// `HELLO 3` on a `?protocol=resp3` URL (whose failure drops the connection), then `SCRIPT
/// LOAD` of every script, or `FUNCTION LOAD REPLACE` of the library on a store that runs
/// functions (whose failure does not).
#[napi(js_name = "__redisHandshake", skip_typescript)]
pub fn redis_handshake(env: &Env, limiter: Unknown) -> napi::Result<Buffer> {
    let r = redis_ref(env, &limiter).or_throw(env)?;
    let bytes = match r {
        Some(r) => [r.store.endpoint().handshake(), transport::preload_for(r.store.uses_functions())].concat().concat(),
        None => Vec::new(),
    };
    Ok(bytes.into())
}

/// `__redisStoreId(store)`: the number of a `RedisStore` (to close its socket), else `null`.
#[napi(js_name = "__redisStoreId", skip_typescript)]
pub fn redis_store_id(env: &Env, store: Unknown) -> napi::Result<Option<u32>> {
    Ok(crate::instance::<crate::redis::RedisStore>(env, &store, "this").or_throw(env)?.map(|s| s.id()))
}

pub(crate) fn op(code: u32) -> Op {
    match code {
        0 => Op::Check,
        1 => Op::Peek,
        _ => Op::Forecast,
    }
}

/// Key and cost as the native method of `op` reads them (peek takes no cost).
pub(crate) fn key_and_cost(op: Op, key: &Unknown, cost: &Unknown) -> CoreResult<(String, u64)> {
    match op {
        Op::Peek => convert::string(key, "key").map(|k| (k, 1)),
        _ => convert::key_and_cost(key, cost),
    }
}

/// `now` for JavaScript: epoch ms, or NaN for Redis's clock (`serverClock`).
pub(crate) fn now_to_js(now: Now) -> f64 {
    match now {
        Now::At(t) => t as f64,
        Now::Server => f64::NAN,
    }
}

pub(crate) fn now_from_js(now: f64) -> Now {
    if now.is_nan() { Now::Server } else { Now::At(now as i64) }
}

/// A call's ticket at `scratch[0..8]` (its time, as [`now_to_js`]) and `scratch[16..24]` (its
/// counted cost, 0 for none; a cost is at most 2^53, exact in an f64), f64 LE: what index.js
/// keeps per call and hands back to finish it ([`ticket_from_js`]). Why a ticket and not the
/// time alone: a fixed window's check on the caller's clock goes in `count` mode, whose reply
/// is decoded with its cost (`throttlekit::redis::transport::Ticket`).
pub(crate) fn write_ticket(ticket: Ticket, scratch: &mut [u8]) {
    scratch[..8].copy_from_slice(&now_to_js(ticket.now()).to_le_bytes());
    scratch[16..24].copy_from_slice(&(ticket.counted().unwrap_or(0) as f64).to_le_bytes());
}

/// The ticket index.js kept as two numbers ([`write_ticket`]), for a call of `op` (which
/// index.js keeps anyway: the limiter's metrics count the decision as that op).
pub(crate) fn ticket_from_js(op: Op, now: f64, counted: f64) -> Ticket {
    Ticket::new(op, now_from_js(now), (counted >= 1.0).then_some(counted as u64))
}

/// `__redisEval(limiter, op, key, cost, now)`: what to send once after the server lacked the
/// call's script or function (`EVAL`, or `FUNCTION LOAD REPLACE` + `FCALL`: `retryReplies`
/// replies) for the call prepared with these arguments at `now` (rare: a buffer per call is fine).
#[napi(js_name = "__redisEval", skip_typescript)]
pub fn redis_eval(env: &Env, limiter: Unknown, op: u32, key: Unknown, cost: Unknown, now: f64) -> napi::Result<Buffer> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let op = self::op(op);
    let (key, cost) = key_and_cost(op, &key, &cost).or_throw(env)?;
    let functions = l.redis.as_ref().is_some_and(|r| r.store.uses_functions());
    let call = l.inner.prepare_at(op, &key, cost, now_from_js(now)).or_throw(env)?;
    Ok(bytes(&call, functions, Hop::default().with_fallback()))
}

/// `__redisPrepareMany(limiter, keys, cost, scratch)`: `checkMany`'s calls, one check per key
/// at one clock read and one cost, so one ticket for all (written at `scratch[0..8]` and
/// `scratch[16..24]` as by `__redisPrepareFast`, redis_fast.rs): their first sends (`FCALL` or
/// `EVALSHA`); `null` on a closed store.
#[napi(js_name = "__redisPrepareMany", skip_typescript)]
pub fn redis_prepare_many(
    env: &Env,
    limiter: Unknown,
    keys: Unknown,
    cost: Unknown,
    mut scratch: BufferSlice,
) -> napi::Result<Option<Vec<Buffer>>> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let (keys, cost) = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))).or_throw(env)?;
    let Some(store) = open_store(l) else {
        return Ok(None);
    };
    if scratch.len() < 24 {
        return Err(config("scratch", "must hold at least 24 bytes")).or_throw(env);
    }
    let functions = store.store.uses_functions();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let calls = l.inner.prepare_many(&keys, cost).or_throw(env)?;
    let ticket = calls.first().map_or(Ticket::new(Op::Check, Now::Server, None), PreparedCall::ticket);
    write_ticket(ticket, &mut scratch[..]);
    Ok(Some(calls.iter().map(|c| bytes(c, functions, Hop::default())).collect()))
}

/// The transport's outcome: the reply frame, or the transport's error (`timeoutMs` set: the
/// call timed out; else `error` says what failed).
pub(crate) fn outcome(reply: Option<&[u8]>, error: Option<String>, timeout_ms: Option<f64>) -> CoreResult<&[u8]> {
    match (reply, timeout_ms) {
        (Some(r), _) => Ok(r),
        (None, Some(ms)) => Err(transport::timed_out(ms as u64)),
        (None, None) => Err(transport::transport_error(error.as_deref().unwrap_or("the Redis connection failed"))),
    }
}

/// `__redisFinish(limiter, op, now, counted, reply, error, timeoutMs, out)`: the decision for a
/// check, peek or forecast (`op`, as [`op`] reads it) whose ticket is `now` and `counted`
/// ([`ticket_from_js`]), counted in the limiter's metrics as that op, through the
/// limiter's fail policy when there is no usable reply,
/// written to `out` as `[allowed, limit, remaining, resetAt, retryAfterMs, fallback]` (index.js
/// builds the object, as the `checkSync` fast path does); throws what the Promise rejects with.
#[napi(js_name = "__redisFinish", skip_typescript)]
#[allow(clippy::too_many_arguments)]
pub fn redis_finish(
    env: &Env,
    limiter: Unknown,
    op: u32,
    now: f64,
    counted: f64,
    reply: Option<BufferSlice>,
    error: Option<String>,
    timeout_ms: Option<f64>,
    mut out: Float64ArraySlice,
) -> napi::Result<()> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let reply = reply.as_deref();
    let ticket = ticket_from_js(self::op(op), now, counted);
    let d = l.inner.finish_ticket(ticket, outcome(reply, error, timeout_ms)).or_throw(env)?;
    let values = crate::http::decided(&d);
    // SAFETY: `out` is a Float64Array index.js made for this and never hands out; nothing else
    // views its memory during this call, which is the only time the slice lives.
    let out = unsafe { out.as_mut() };
    if out.len() >= values.len() {
        out[..values.len()].copy_from_slice(&values);
    }
    Ok(())
}

/// `__redisDel(limiter, key)`: `reset`'s `DEL` on the prefixed key; `null` on a closed store.
#[napi(js_name = "__redisDel", skip_typescript)]
pub fn redis_del(env: &Env, limiter: Unknown, key: Unknown) -> napi::Result<Option<Buffer>> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let key = convert::string(&key, "key").or_throw(env)?;
    Ok(open_store(l).map(|_| transport::del(&l.inner.full_key(&key)).into()))
}

/// `__redisFinishDel(reply, error, timeoutMs)`: `reset`'s outcome (no fail policy, as natively).
#[napi(js_name = "__redisFinishDel", skip_typescript)]
pub fn redis_finish_del(
    env: &Env,
    reply: Option<BufferSlice>,
    error: Option<String>,
    timeout_ms: Option<f64>,
) -> napi::Result<()> {
    transport::finish_del(outcome(reply.as_deref(), error, timeout_ms)).or_throw(env)
}

/// `__redisMultiPrepare(multi, keys, cost)`: the multi limiter's fused call (its `EVALSHA`
/// from `__redisMultiBytes`); `null` on a closed store. Bad arguments throw the native
/// method's error.
#[napi(js_name = "__redisMultiPrepare", skip_typescript)]
pub fn redis_multi_prepare(
    env: &Env,
    multi: Unknown,
    keys: Unknown,
    cost: Unknown,
) -> napi::Result<Option<External<PreparedCall>>> {
    let m = self::multi(env, &multi).or_throw(env)?;
    let (keys, cost) = convert::cost(&cost).and_then(|c| Ok((convert::strings(&keys, "keys")?, c))).or_throw(env)?;
    if m.redis.as_ref().is_none_or(|r| r.store.is_closed()) {
        return Ok(None);
    }
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    m.inner.prepare(&keys, cost).map(|c| Some(External::new(c))).or_throw(env)
}

/// `__redisMultiBytes(call, retry, functions)`: a prepared call's (multi limiter's or shaper's)
/// first send (`FCALL` when `functions`, the endpoint's flag, else `EVALSHA`), or what to send
/// once after the server lacked its script or function.
#[napi(js_name = "__redisMultiBytes", skip_typescript)]
pub fn redis_multi_bytes(call: &External<PreparedCall>, retry: bool, functions: bool) -> Buffer {
    bytes(call, functions, if retry { Hop::default().with_fallback() } else { Hop::default() })
}

/// `call`'s attempt `hop` in a buffer of its own (`PreparedCall::write`).
pub(crate) fn bytes(call: &PreparedCall, functions: bool, hop: Hop) -> Buffer {
    let mut out = Vec::new();
    call.write(functions, hop, &mut out);
    out.into()
}

/// `__redisMultiFinish(multi, call, reply, error, timeoutMs)`: the multi decision, through the
/// fail policy when there is no usable reply; throws what the Promise rejects with.
#[napi(js_name = "__redisMultiFinish", skip_typescript)]
pub fn redis_multi_finish(
    env: &Env,
    multi: Unknown,
    call: &External<PreparedCall>,
    reply: Option<BufferSlice>,
    error: Option<String>,
    timeout_ms: Option<f64>,
) -> napi::Result<MultiDecision> {
    let m = self::multi(env, &multi).or_throw(env)?;
    m.inner.finish(call, outcome(reply.as_deref(), error, timeout_ms)).map(MultiDecision::from).or_throw(env)
}

/// `__redisMultiDel(multi, keys)`: `reset`'s `DEL` of every dimension's key, in order; `null`
/// on a closed store.
#[napi(js_name = "__redisMultiDel", skip_typescript)]
pub fn redis_multi_del(env: &Env, multi: Unknown, keys: Unknown) -> napi::Result<Option<Vec<Buffer>>> {
    let m = self::multi(env, &multi).or_throw(env)?;
    let keys = convert::strings(&keys, "keys").or_throw(env)?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let full = m.inner.full_keys(&keys).or_throw(env)?;
    if m.redis.as_ref().is_none_or(|r| r.store.is_closed()) {
        return Ok(None);
    }
    Ok(Some(full.iter().map(|k| transport::del(k).into()).collect()))
}

/// `__redisShaperPrepare(shaper, key, cost)`: the shaper's reservation call (bytes from
/// `__redisMultiBytes`); `null` on a closed store. Bad arguments throw the native method's
/// error.
#[napi(js_name = "__redisShaperPrepare", skip_typescript)]
pub fn redis_shaper_prepare(
    env: &Env,
    shaper: Unknown,
    key: Unknown,
    cost: Unknown,
) -> napi::Result<Option<External<PreparedCall>>> {
    let s = self::shaper(env, &shaper).or_throw(env)?;
    let (key, cost) = convert::key_and_cost(&key, &cost).or_throw(env)?;
    if s.redis.as_ref().is_none_or(|r| r.store.is_closed()) {
        return Ok(None);
    }
    s.inner.prepare(&key, cost).map(|c| Some(External::new(c))).or_throw(env)
}

/// `__redisShaperFinish(shaper, call, reply, error, timeoutMs, schedule)`: the reservation;
/// for `schedule`, a refused one throws `queue_full` (index.js then waits `delayMs`).
#[napi(js_name = "__redisShaperFinish", skip_typescript)]
pub fn redis_shaper_finish(
    env: &Env,
    shaper: Unknown,
    call: &External<PreparedCall>,
    reply: Option<BufferSlice>,
    error: Option<String>,
    timeout_ms: Option<f64>,
    schedule: bool,
) -> napi::Result<Reservation> {
    let s = self::shaper(env, &shaper).or_throw(env)?;
    let r = s.inner.finish(call, outcome(reply.as_deref(), error, timeout_ms));
    let r = if schedule { r.and_then(throttlekit::shaper::accepted) } else { r };
    r.map(Reservation::from).or_throw(env)
}

/// `__redisShaperDel(shaper, key)`: `reset`'s `DEL`; `null` on a closed store.
#[napi(js_name = "__redisShaperDel", skip_typescript)]
pub fn redis_shaper_del(env: &Env, shaper: Unknown, key: Unknown) -> napi::Result<Option<Buffer>> {
    let s = self::shaper(env, &shaper).or_throw(env)?;
    let key = convert::string(&key, "key").or_throw(env)?;
    if s.redis.as_ref().is_none_or(|r| r.store.is_closed()) {
        return Ok(None);
    }
    Ok(Some(transport::del(&s.inner.full_key(&key)).into()))
}

/// One socket's state in the core (`throttlekit::redis::transport::conn`): the replies it owes
/// and what each one read back means. lib/redis-transport.js keeps the socket, one timer and
/// its calls' objects by number; this keeps everything else.
pub struct RedisConn(std::cell::RefCell<Socket>);

/// What [`RedisConn`] holds: the core's `Conn`, and what the binding needs to decide a call
/// from its reply during the read that brings it (redis_fast.rs, `__connRead`).
pub(crate) struct Socket {
    pub(crate) conn: Conn,
    /// One per call recorded, in the order written (as the replies come), until its reply,
    /// resend or loss: the limiter's check, peek or forecast it is, if any.
    tags: VecDeque<Tag>,
    /// Calls whose reply the read finished with an error (its fail policy said so), by number,
    /// until `__connFailed` throws it.
    failed: Vec<(u32, throttlekit::Error)>,
}

/// A recorded call: its number and, for a limiter's check, peek or forecast, what finishes it
/// (as `__redisFinishFast` is told: the limiter's Redis handle, the op and the ticket).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tag {
    id: u32,
    /// The limiter's Redis handle; negative for any other call (JS finishes it).
    pub(crate) handle: f64,
    pub(crate) op: u32,
    pub(crate) now: f64,
    pub(crate) counted: f64,
}

impl Socket {
    /// The tag of call `id`, whose frame the read just matched: the tags before it are of
    /// calls that got no reply (a resend's first send), in order, and go with it.
    pub(crate) fn tag(tags: &mut VecDeque<Tag>, id: u32) -> Option<Tag> {
        while let Some(t) = tags.pop_front() {
            if t.id == id {
                return Some(t);
            }
        }
        None
    }

    /// The parts a read borrows apart: the connection, the tags and the failures.
    pub(crate) fn parts(&mut self) -> (&mut Conn, &mut VecDeque<Tag>, &mut Vec<(u32, throttlekit::Error)>) {
        (&mut self.conn, &mut self.tags, &mut self.failed)
    }

    /// Forgets the tags and failures of the calls the connection no longer owes (lost, or a
    /// new socket).
    fn clear(&mut self) {
        self.tags.clear();
        self.failed.clear();
    }
}

impl RedisConn {
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut Socket) -> T) -> CoreResult<T> {
        // Never re-entered: no JavaScript runs while a `__conn*` function holds the cell.
        self.0.try_borrow_mut().map(|mut c| f(&mut c)).map_err(|_| config("conn", "is busy"))
    }
}

/// `__connNew(loginReplies, preloadReplies, retryReplies, timeoutMs, cluster)`: the state of a
/// new socket, from its endpoint (`__redisOf`'s or `__clusterNode`'s JSON).
#[napi(js_name = "__connNew", skip_typescript)]
pub fn conn_new(
    login_replies: u32,
    preload_replies: u32,
    retry_replies: u32,
    timeout_ms: f64,
    cluster: bool,
) -> External<RedisConn> {
    let setup = Setup {
        login_replies: login_replies as usize,
        preload_replies: preload_replies as usize,
        retry_replies: retry_replies as usize,
        timeout_ms: timeout_ms as u64,
        cluster,
    };
    External::new(RedisConn(std::cell::RefCell::new(Socket {
        conn: Conn::new(setup),
        tags: VecDeque::new(),
        failed: Vec::new(),
    })))
}

/// `__connOpen(conn)`: a new socket, its login and scripts written: how many replies it owes.
#[napi(js_name = "__connOpen", skip_typescript)]
pub fn conn_open(env: &Env, conn: &External<RedisConn>) -> napi::Result<u32> {
    conn.with(|s| {
        s.clear();
        s.conn.open() as u32
    })
    .or_throw(env)
}

/// How many numbers a call's send takes in a socket's `io` ([`record`]).
pub(crate) const SEND: usize = 7;

/// Records in `s` the calls lib/redis-transport.js wrote since it last told the core: `sends`
/// holds [`SEND`] numbers per call, in the order written: its number (a u32), when it was made
/// (epoch ms: its deadline is `timeoutMs` later), the replies it owes, its own the last (a
/// cluster's `ASKING` first), or 0 for its fallback after a miss (once); then, for a limiter's
/// check, peek or forecast, its limiter's Redis handle, op and ticket (`now`, `counted`, as
/// [`ticket_from_js`] reads them), else -1 and three zeros.
pub(crate) fn record(s: &mut Socket, sends: &[f64]) {
    for v in sends.chunks_exact(SEND) {
        let (id, made) = (v[0] as u32, v[1]);
        match v[2] as usize {
            0 => s.conn.resent(id, made),
            replies => s.conn.sent(id, made, replies),
        };
        s.tags.push_back(Tag { id, handle: v[3], op: v[4] as u32, now: v[5], counted: v[6] });
    }
}

/// `__connSent(conn, io, n)`: records the `n` sends noted in the socket's `io` from slot 3
/// ([`record`]; the layout is `__connRead`'s, redis_fast.rs), when the core must know them before
/// the socket's next read (its timer fired, it went away, or `io` has no room for more);
/// `__connRead` records them otherwise.
#[napi(js_name = "__connSent", skip_typescript)]
pub fn conn_sent(env: &Env, conn: &External<RedisConn>, io: Float64ArraySlice, n: u32) -> napi::Result<()> {
    let sent =
        io.get(3..3 + SEND * n as usize).ok_or_else(|| config("io", "holds fewer sends than said")).or_throw(env)?;
    conn.with(|s| record(s, sent)).or_throw(env)
}

/// `__connFailed(conn, id)`: throws what call `id`'s Promise rejects with, when the read that
/// brought its reply finished it with an error (`__connRead`'s verdict 6).
#[napi(js_name = "__connFailed", skip_typescript)]
pub fn conn_failed(env: &Env, conn: &External<RedisConn>, id: u32) -> napi::Result<()> {
    let e = conn.with(|s| s.failed.iter().position(|(i, _)| *i == id).map(|at| s.failed.swap_remove(at).1));
    match e.or_throw(env)? {
        Some(e) => Err(e).or_throw(env),
        None => Err(config("id", "names no failed call")).or_throw(env),
    }
}

/// `__connExpire(conn, now)`: the calls past their deadline at `now` (epoch ms), no longer
/// owed; any means the socket must go (`__connLost` fails the rest).
#[napi(js_name = "__connExpire", skip_typescript)]
pub fn conn_expire(env: &Env, conn: &External<RedisConn>, now: f64) -> napi::Result<Vec<u32>> {
    conn.with(|s| {
        let mut ids = Vec::new();
        s.conn.expire(now, |id| ids.push(id));
        ids
    })
    .or_throw(env)
}

/// `__connLost(conn)`: the socket went away: every call it still owed, in order (each fails
/// and is never sent again); it owes nothing after.
#[napi(js_name = "__connLost", skip_typescript)]
pub fn conn_lost(env: &Env, conn: &External<RedisConn>) -> napi::Result<Vec<u32>> {
    conn.with(|s| {
        let mut ids = Vec::new();
        s.conn.lost(|id| ids.push(id));
        s.clear();
        ids
    })
    .or_throw(env)
}

/// `__connDeadline(conn)`: the earliest deadline of a call owed (epoch ms), for the socket's
/// one timer; `null` when none is owed.
#[napi(js_name = "__connDeadline", skip_typescript)]
pub fn conn_deadline(env: &Env, conn: &External<RedisConn>) -> napi::Result<Option<f64>> {
    conn.with(|s| s.conn.deadline()).or_throw(env)
}
