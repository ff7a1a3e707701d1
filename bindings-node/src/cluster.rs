//! The native half of index.js's sockets on a Redis Cluster (lib/redis-cluster.js): one socket
//! per master, each call written on its master's. Every function here forwards to the core's
//! routed transport (`throttlekit::redis::routed`): the core names each call's master (slot,
//! slot map), reads each reply for a redirect (`MOVED` learnt, `ASK`, `TRYAGAIN`, a missing
//! script on that node), bounds the attempts, and reads the map again after a failover.
//! JavaScript only moves bytes, keeps sockets and keeps time. None of these functions is part
//! of the public API (`skip_typescript`; index.js hides them).

// napi-derive leaves out export registration under cfg(test) (see transport.rs).
#![cfg_attr(test, allow(dead_code))]

use napi::Env;
use napi::bindgen_prelude::{Buffer, BufferSlice, Float64ArraySlice, PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::redis::routed::{Follow, Hop, Routes};
use throttlekit::redis::transport;

use crate::error::{CoreResult, OrThrow, Settled, config};
use crate::transport::{RedisRef, key_and_cost, limiter, now_from_js, op, redis_ref};

fn cluster_ref<'a>(env: &Env, anchor: &Unknown<'a>) -> CoreResult<(&'a RedisRef, &'a Routes)> {
    let r = redis_ref(env, anchor)?.ok_or_else(|| config("this", "is not on a RedisStore"))?;
    let routes = r.routes.as_ref().ok_or_else(|| config("this", "is not on a cluster"))?;
    Ok((r, routes))
}

/// `__clusterNode(anchor, node)`: where master `node` is (JSON: host, port, how many handshake
/// and preload replies), for a new socket; `null` for an unknown node.
#[napi(js_name = "__clusterNode", skip_typescript)]
pub fn cluster_node(env: &Env, anchor: Unknown, node: u32) -> napi::Result<Option<String>> {
    let (r, routes) = cluster_ref(env, &anchor).or_throw(env)?;
    Ok(routes.endpoint(node).map(|e| r.socket_json(&e).to_string()))
}

/// `__clusterHandshake(anchor, node)`: what a new socket to `node` sends first (`AUTH` with the
/// store's credentials, then the scripts or the function library), as `__redisHandshake`.
#[napi(js_name = "__clusterHandshake", skip_typescript)]
pub fn cluster_handshake(env: &Env, anchor: Unknown, node: u32) -> napi::Result<Buffer> {
    let (r, routes) = cluster_ref(env, &anchor).or_throw(env)?;
    let e = routes.endpoint(node).ok_or_else(|| config("node", "is unknown")).or_throw(env)?;
    Ok([e.handshake(), transport::preload_for(r.store.uses_functions())].concat().concat().into())
}

/// Writes an attempt's `[node, hop, pauseMs, replies]` to `io` (index.js's Float64Array).
fn write_io(io: &mut Float64ArraySlice, values: [f64; 4]) {
    // SAFETY: `io` is a Float64Array index.js made for this and never hands out; nothing else
    // views its memory during this call, which is the only time the slice lives.
    let out = unsafe { io.as_mut() };
    if out.len() >= values.len() {
        out[..values.len()].copy_from_slice(&values);
    }
}

/// The bytes of the limiter's call (op, key, cost prepared at `now`) sent as `hop`, and how many
/// replies they get.
fn hop_bytes(
    env: &Env,
    l: &crate::limiter::Limiter,
    call: (u32, &Unknown, &Unknown, f64),
    hop: Hop,
) -> napi::Result<(Buffer, usize)> {
    let functions = l.redis.as_ref().is_some_and(|r| r.store.uses_functions());
    let op = self::op(call.0);
    let (key, cost) = key_and_cost(op, call.1, call.2).or_throw(env)?;
    let prepared = l.inner.prepare_at(op, &key, cost, now_from_js(call.3)).or_throw(env)?;
    Ok((crate::transport::bytes(&prepared, functions, hop), transport::replies(functions, hop)))
}

/// `__clusterFollow(limiter, op, key, cost, now, node, hop, frame, io)`: what the error reply
/// `frame`, read from `node` for the limiter's call (op, key, cost prepared at `now`) sent as
/// `hop`, asks for: `null` when it is the call's reply (finish it); else the next attempt's
/// bytes, with `[node, hop, pauseMs, replies]` in `io`. Throws (`store_unavailable`) when the
/// call must end (too many redirects): index.js finishes it with that error.
#[napi(js_name = "__clusterFollow", skip_typescript)]
#[allow(clippy::too_many_arguments)]
pub fn cluster_follow(
    env: &Env,
    limiter: Unknown,
    op: u32,
    key: Unknown,
    cost: Unknown,
    now: f64,
    node: u32,
    hop: u32,
    frame: BufferSlice,
    mut io: Float64ArraySlice,
) -> napi::Result<Option<Buffer>> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let Some(routes) = l.redis.as_ref().and_then(|r| r.routes.as_ref()) else { return Ok(None) };
    match routes.follow(node, Hop::from_bits(hop), &frame) {
        Follow::Reply => Ok(None),
        Follow::Fail(e) => Err(e).or_throw(env),
        Follow::Again { node, hop, pause_ms } => {
            let (bytes, replies) = hop_bytes(env, l, (op, &key, &cost, now), hop)?;
            write_io(&mut io, [f64::from(node), f64::from(hop.bits()), pause_ms as f64, replies as f64]);
            Ok(Some(bytes))
        }
    }
}

/// `__clusterReroute(anchor, slot, node, hop)`: after a socket to `node` could not be made for
/// a call sent as `hop` (nothing was written), the map read again: resolves with `[node, hop]`
/// when another master serves `slot` now (send `__clusterHopBytes` there), else `null`
/// (the call fails with the socket's error).
#[napi(js_name = "__clusterReroute", skip_typescript)]
pub fn cluster_reroute<'e>(
    env: &'e Env,
    anchor: Unknown,
    slot: u32,
    node: u32,
    hop: u32,
) -> napi::Result<PromiseRaw<'e, Settled<Option<Vec<u32>>>>> {
    let (_, routes) = cluster_ref(env, &anchor).or_throw(env)?;
    let routes = routes.clone();
    env.spawn_future(async move {
        let to = routes.reroute(slot as u16, node, Hop::from_bits(hop)).await;
        Ok(Settled(Ok(to.map(|(n, h)| vec![n, h.bits()]))))
    })
}

/// `__clusterHopBytes(limiter, op, key, cost, now, hop, io)`: the bytes of the call's attempt
/// sent as `hop` (after a reroute), with its reply count at `io[3]`.
#[napi(js_name = "__clusterHopBytes", skip_typescript)]
#[allow(clippy::too_many_arguments)]
pub fn cluster_hop_bytes(
    env: &Env,
    limiter: Unknown,
    op: u32,
    key: Unknown,
    cost: Unknown,
    now: f64,
    hop: u32,
    mut io: Float64ArraySlice,
) -> napi::Result<Buffer> {
    let l = self::limiter(env, &limiter).or_throw(env)?;
    let (bytes, replies) = hop_bytes(env, l, (op, &key, &cost, now), Hop::from_bits(hop))?;
    write_io(&mut io, [0.0, f64::from(hop), 0.0, replies as f64]);
    Ok(bytes)
}

/// `__clusterLost(anchor)`: a socket failed, or a call timed out, after a call was written: the
/// core reads the map again in the background (the call is never sent again).
#[napi(js_name = "__clusterLost", skip_typescript)]
pub fn cluster_lost(env: &Env, anchor: Unknown) -> napi::Result<()> {
    let (_, routes) = cluster_ref(env, &anchor).or_throw(env)?;
    routes.lost();
    Ok(())
}
