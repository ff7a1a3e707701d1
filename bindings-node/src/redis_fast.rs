//! The hot half of a `Limiter`'s Promise `check`, `peek` and `forecast` over index.js's socket
//! (transport.rs has the whole protocol): `__redisPrepareFast` prepares a call and
//! `__redisFinishFast` reads its reply, raw napi callbacks that find the limiter by handle and
//! take the key, cost and decision through fast.rs's shared buffer, as `__checkSync` does. They
//! replaced `__redisPrepare` (a napi-rs function of the limiter, op, key, cost and scratch
//! buffer) and, for a reply, `__redisFinish`, which still reads a time-out or a lost connection.
//!
//! Why: on a sequential `check` our client spent about 3.5 µs more user CPU per call than
//! ioredis (docs/bench-bindings.md). `perf` put a third of the addon's share in finding the
//! receiver twice a call (`napi_check_object_type_tag` and `napi_unwrap`, each a V8 private
//! property lookup) and in napi-rs's glue for six and seven arguments (borrow scopes, a
//! `Float64Array`'s and a `Buffer`'s info, optional strings); a handle, the shared slots and
//! two buffer arguments cost a fraction of that. Error and time-out outcomes, `NOSCRIPT`
//! retries and cluster hops still take transport.rs's and cluster.rs's functions.
//!
//! Same checks, order, bytes, decisions and errors as the functions they stand for (tests:
//! `__test__/redis-transport.test.mjs`, and every Redis test of the Node suite, which now runs
//! through these).

// napi-derive leaves out export registration under cfg(test), so the unit-test build sees
// these functions as unused.
#![cfg_attr(test, allow(dead_code))]

use std::ptr;

use napi::sys;
use throttlekit::redis::transport::Op;
use throttlekit::redis::transport::conn::Action;
use throttlekit::validate;

use crate::error::{CoreResult, config};
use crate::fast::{
    Callback, Context, IO_COST, IO_HANDLE, IO_KEY_LEN, IO_LEN, IO_NAMES, KEY_BYTES, guard, number, put_decision,
};
use crate::limiter::RedisLimiter;
use crate::send::send_now;
use crate::transport::{self, RedisConn, Socket};

/// The callbacks fast.rs registers beside its own.
pub(crate) const FUNCTIONS: [(&std::ffi::CStr, Callback); 4] = [
    (c"__redisHandle", redis_handle),
    (c"__redisPrepareFast", prepare),
    (c"__redisFinishFast", finish),
    (c"__connRead", conn_read),
];

/// Where index.js puts the op of `__redisPrepareFast` (0 check, 1 peek, 2 forecast): the slot
/// `__fieldsValues` writes its names id to, free during this call.
const IO_OP: usize = IO_NAMES;

/// Where index.js puts the socket `__redisPrepareFast` may write the call to itself (its file
/// descriptor, or -1), and where that call leaves how many bytes it wrote: the decision's first
/// slot, free during this call (it holds a decision only after `__redisFinishFast`).
const IO_FD: usize = 0;

/// `__redisHandle(limiter)`: the handle of a `Limiter` whose Promise calls index.js carries
/// (registering it on first use), `null` for one it does not; throws unless `limiter` is a
/// constructed `Limiter`. index.js asks once per limiter.
unsafe extern "C" fn redis_handle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        match crate::fast::limiter(env, argv[0])?.redis_handle(&context.redis)? {
            Some(h) => number(env, h),
            None => crate::fast::null(env),
        }
    })
}

/// The shared slots' pointer (IO_LEN f64s), once index.js has bound them.
fn slots(context: &Context) -> CoreResult<*mut f64> {
    let io = context.io.get();
    if io.is_null() {
        return Err(config("io", "is not bound (load the package through index.js)"));
    }
    Ok(io)
}

/// The key's bytes in the shared buffer when index.js copied it there (their length in the
/// key slot), else `None` (the key is an argument).
fn copied_key(io: &[f64]) -> CoreResult<Option<&str>> {
    let key_len = io[IO_KEY_LEN];
    if !(0.0..=KEY_BYTES as f64).contains(&key_len) {
        return Ok(None);
    }
    // SAFETY: the KEY_BYTES bytes after the slots are in the same buffer (checked by
    // `bind_io`); `key_len` is at most KEY_BYTES.
    let bytes = unsafe { std::slice::from_raw_parts(io.as_ptr().add(IO_LEN).cast::<u8>(), key_len as usize) };
    // index.js copies only ASCII; anything else is refused, never misread.
    std::str::from_utf8(bytes).map(Some).map_err(|_| config("key", "must be valid UTF-16"))
}

/// The bytes of a `Buffer` (or any `Uint8Array`) argument.
fn bytes<'a>(env: sys::napi_env, v: sys::napi_value, field: &str) -> CoreResult<&'a mut [u8]> {
    let mut data = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: a live value of the current call; anything but a buffer fails with a status.
    if unsafe { sys::napi_get_buffer_info(env, v, &mut data, &mut len) } != sys::Status::napi_ok {
        return Err(config(field, "must be a Buffer"));
    }
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: napi gave the buffer's data and length; V8 does not move a buffer's backing
    // store, and no JS runs while the callback that holds this slice runs.
    Ok(unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), len) })
}

/// `__redisPrepareFast(scratch[, key[, cost]])`: prepares op 0 check, 1 peek or 2 forecast
/// (`transport::op`) for the limiter whose Redis handle is in the handle slot and the op in the op
/// slot, the key as for `__checkSync` (its bytes in the buffer when its length is there, else
/// the argument), the cost the cost slot's (1 for `undefined`) unless passed (index.js passes a
/// cost that is not a number, for its error; a peek ignores it). Writes the call's ticket
/// (`transport::Ticket`, what `__redisFinishFast` needs back) as its time (f64 LE, NaN: Redis's
/// clock) at `scratch[0..8]` and its counted cost (f64 LE, 0: none) at `scratch[16..24]`, on a
/// cluster its master's number (u32 LE, `0xffffffff` when no master serves the slot now) at
/// `scratch[8..12]` and its slot at `scratch[12..16]` (cluster.rs), and its first send after
/// them (`FCALL` on a store that runs functions, else `EVALSHA`), and returns how many bytes of
/// it. When the fd slot holds a socket's descriptor (index.js's `Transport#direct`), the call
/// is first written to it (`send_now`): the slot then says how many bytes went, and `scratch`
/// holds only the rest after HEAD + that many. -1 when the store is closed (the native method answers), or `-(HEAD + length)` when
/// `scratch` is too small. Written into
/// a buffer the caller keeps, because a buffer made here per call costs more than the rest of
/// the call. Bad arguments throw the native method's error.
unsafe extern "C" fn prepare(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, argc| {
        // SAFETY: `slots` points at IO_LEN f64s (checked by `bind_io`), used on this thread
        // only, and no JS runs while this slice lives.
        let io = unsafe { std::slice::from_raw_parts_mut(slots(context)?, IO_LEN) };
        let table = context.redis.try_borrow().map_err(|_| config("this", "is busy"))?;
        let l = table.get(io[IO_HANDLE]).ok_or_else(|| config("this", "is not a Limiter"))?;
        let op = transport::op(io[IO_OP] as u32);
        // As `transport::key_and_cost`: the cost first (a peek takes none), then the key.
        let cost = match op {
            Op::Peek => 1,
            _ if argc >= 3 => {
                let mut cost = f64::NAN;
                // SAFETY: a live value of the current call; a non-number fails with a status.
                if unsafe { sys::napi_get_value_double(env, argv[2], &mut cost) } != sys::Status::napi_ok {
                    return Err(config("cost", "must be a positive integer"));
                }
                validate::cost_from_f64(cost)?
            }
            _ if io[IO_COST] == 1.0 => 1,
            _ => validate::cost_from_f64(io[IO_COST])?,
        };
        let scratch = bytes(env, argv[0], "scratch")?;
        let fd = io[IO_FD];
        let (n, sent) = match copied_key(io)? {
            Some(key) => write(l, op, key, cost, scratch, fd)?,
            None => crate::convert::with_str_in(&context.key, env, argv[1], "key", |key| {
                write(l, op, key, cost, scratch, fd)
            })?,
        };
        io[IO_FD] = sent as f64;
        number(env, n as f64)
    })
}

/// `__redisPrepareFast`'s body once the arguments are read: the length (or -1, or the size
/// `scratch` needs) and how many of its bytes went to `fd` already.
fn write(l: &RedisLimiter, op: Op, key: &str, cost: u64, scratch: &mut [u8], fd: f64) -> CoreResult<(i64, usize)> {
    if l.redis.store.is_closed() {
        return Ok((-1, 0));
    }
    let functions = l.redis.store.uses_functions();
    let call = l.inner.prepare(op, key, cost)?;
    let (node, slot) = match &l.redis.routes {
        Some(routes) => {
            let slot = call.slot();
            (routes.node(slot).unwrap_or(u32::MAX), u32::from(slot))
        }
        None => (0, 0),
    };
    ENCODED.with_borrow_mut(|tail| {
        tail.clear();
        call.write(functions, throttlekit::redis::transport::Hop::default(), tail);
        if HEAD + tail.len() > scratch.len() {
            return Ok((-((HEAD + tail.len()) as i64), 0));
        }
        transport::write_ticket(call.ticket(), scratch);
        scratch[8..12].copy_from_slice(&node.to_le_bytes());
        scratch[12..16].copy_from_slice(&slot.to_le_bytes());
        let sent = send_now(fd, tail);
        // Only what is left for index.js to write through the socket.
        scratch[HEAD + sent..HEAD + tail.len()].copy_from_slice(&tail[sent..]);
        Ok((tail.len() as i64, sent))
    })
}

/// Where a call's bytes start in `__redisPrepareFast`'s scratch buffer (after its ticket, master
/// and slot).
const HEAD: usize = 24;

thread_local! {
    /// Where a call's bytes are encoded before they are copied into the caller's scratch buffer.
    static ENCODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `__redisFinishFast(reply, now, counted)`: `__redisFinish(limiter, op, now, counted, reply)` for
/// a reply frame, for the limiter whose Redis handle is in the handle slot and the call's op in
/// the op slot (as for `__redisPrepareFast`), `now` and `counted` the call's ticket as
/// `__redisPrepareFast` wrote it: the decision in slots 0-5 (allowed,
/// limit, remaining, resetAt, retryAfterMs, fallback), or what the Promise rejects with thrown.
unsafe extern "C" fn finish(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        // SAFETY: `slots` points at IO_LEN f64s (checked by `bind_io`), used on this thread
        // only, and no JS runs while this slice lives.
        let io = unsafe { std::slice::from_raw_parts_mut(slots(context)?, IO_LEN) };
        let table = context.redis.try_borrow().map_err(|_| config("this", "is busy"))?;
        let l = table.get(io[IO_HANDLE]).ok_or_else(|| config("this", "is not a Limiter"))?;
        let [mut now, mut counted] = [f64::NAN; 2];
        // SAFETY: live values of the current call; a non-number fails with a status.
        if unsafe { sys::napi_get_value_double(env, argv[1], &mut now) } != sys::Status::napi_ok
            || unsafe { sys::napi_get_value_double(env, argv[2], &mut counted) } != sys::Status::napi_ok
        {
            return Err(config("now", "must be a number"));
        }
        let reply = bytes(env, argv[0], "reply")?;
        let op = transport::op(io[IO_OP] as u32);
        let d = l.inner.finish_ticket(transport::ticket_from_js(op, now, counted), Ok(reply))?;
        put_decision(io, &d);
        Ok(ptr::null_mut())
    })
}

/// The socket state of a `__connNew` external (`conn`), or `config_invalid` for anything else.
fn conn<'a>(env: sys::napi_env, v: sys::napi_value) -> CoreResult<&'a RedisConn> {
    use napi::bindgen_prelude::{External, FromNapiRef};
    // SAFETY: a live value of the current call; napi-rs checks that it is an `External` it made
    // of this very type (anything else is an error), and the external lives at least as long
    // as this call, the only time the reference is used.
    unsafe { External::<RedisConn>::from_napi_ref(env, v) }
        .map(|e| &**e)
        .map_err(|_| config("conn", "must be a socket's state"))
}

/// How many numbers a frame's verdict takes in a socket's `io` (`__connRead`): the action, the
/// call's number, the frame's start and end, then a decision's six slots (as `put_decision`).
const EVENT: usize = 10;

/// `__connRead`'s verdict for a call the read decided: its decision is in the verdict's last six
/// slots (the core's `conn::Action`s are 0-4).
const DECIDED: f64 = 5.0;

/// `__connRead`'s verdict for a call the read finished with an error: `__connFailed` throws it.
const FAILED: f64 = 6.0;

/// `__connRead(conn, bytes, io)`: first records the calls the socket wrote since its last read,
/// then reads the frames of `bytes` (what the socket read). `io`, the socket's own
/// `Float64Array`, holds on the way in where to start reading (`io[0]`), how many sends to
/// record (`io[1]`, `transport::SEND` numbers each from `io[3]`: `transport::record`) and where
/// the verdicts go (`io[2]`); on the way out, where the read stopped (`io[0]`), how many replies
/// are still owed (`io[1]`) and each frame's verdict from `io[io[2]]` on, [`EVENT`] numbers each,
/// as many as `io` holds. A verdict is the core's (`conn::Action`, the call's number, the
/// frame's start and end), except that a limiter's check, peek or forecast answered by its
/// reply is decided here, as `__redisFinishFast` decides it: [`DECIDED`] with the decision, or
/// [`FAILED`]. Returns how many verdicts; -1 when the bytes start no RESP frame (the connection
/// must go).
///
/// Once per socket read, not per reply nor per call: a call's send and its decision cost no
/// native call of their own (one `__connSent` per call measured 13-22 % off the 64-in-flight
/// row).
unsafe extern "C" fn conn_read(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    guard(env, info, |env, context, argv, _| {
        let c = conn(env, argv[0])?;
        let bytes = bytes(env, argv[1], "bytes")?;
        let io = typed_array::<f64>(env, argv[2], sys::TypedarrayType::float64_array, "io")?;
        if bytes.len() > u32::MAX as usize {
            return Err(config("bytes", "must be shorter than 4 GiB"));
        }
        let at = io.get(2).map_or(0, |&at| at as usize);
        let sends = 3 + transport::SEND * io[1] as usize;
        if at < sends || io.len() < at + EVENT {
            return Err(config("io", "must hold the sends it counts and room for a verdict after them"));
        }
        let table = context.redis.try_borrow().map_err(|_| config("this", "is busy"))?;
        let (head, events) = io.split_at_mut(at);
        let max = events.len() / EVENT;
        let from = head[0] as usize;
        let mut n = 0;
        let read = c.with(|s| {
            transport::record(s, &head[3..sends]);
            let (conn, tags, failed) = s.parts();
            let read = conn.read(bytes, from, max, |e| {
                let v = &mut events[EVENT * n..EVENT * (n + 1)];
                v[..4].copy_from_slice(&[f64::from(e.action as u32), f64::from(e.id), e.start as f64, e.end as f64]);
                n += 1;
                if e.action == Action::Refused || e.action == Action::Unasked {
                    return;
                }
                let tag = Socket::tag(tags, e.id);
                let Some(t) = tag.filter(|t| e.action == Action::Reply && t.handle >= 0.0) else { return };
                let Some(l) = table.get(t.handle) else { return };
                let ticket = transport::ticket_from_js(transport::op(t.op), t.now, t.counted);
                match l.inner.finish_ticket(ticket, Ok(&bytes[e.start..e.end])) {
                    Ok(d) => {
                        v[0] = DECIDED;
                        put_decision(&mut v[4..], &d);
                    }
                    Err(err) => {
                        v[0] = FAILED;
                        failed.push((e.id, err));
                    }
                }
            });
            head[1] = conn.owed() as f64;
            read
        })?;
        match read {
            Ok(stop) => {
                head[0] = stop as f64;
                number(env, n as f64)
            }
            Err(_) => number(env, -1.0),
        }
    })
}

/// The elements of a typed array argument of `kind` (whose elements are `T`s).
fn typed_array<'a, T>(
    env: sys::napi_env,
    v: sys::napi_value,
    kind: sys::napi_typedarray_type,
    field: &str,
) -> CoreResult<&'a mut [T]> {
    let mut found = sys::TypedarrayType::int8_array;
    let mut len = 0usize;
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    // SAFETY: a live value of the current call; anything but a typed array fails with a status.
    let status =
        unsafe { sys::napi_get_typedarray_info(env, v, &mut found, &mut len, &mut data, &mut buffer, &mut offset) };
    if status != sys::Status::napi_ok || found != kind {
        return Err(config(field, "must be a typed array of its kind"));
    }
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: napi gave the array's data (aligned: a typed array's offset is a multiple of its
    // element's size) and length, of elements of `kind`; no JS runs while the callback that
    // holds this slice runs.
    Ok(unsafe { std::slice::from_raw_parts_mut(data.cast::<T>(), len) })
}
