'use strict'
// @throttlekit/core — the CommonJS entry point. Every export is native (see src/) but `Permit`
// (lib/adaptive.js); types are in index.d.ts (generated from the Rust sources and the header in
// scripts/build.js; do not edit by hand).
const { findBinding, missingAddonMessage } = require('./lib/platform.js')
const { decisionAt } = require('./lib/decision-slots.js')

const file = findBinding()
if (file === null) {
  const err = new Error(missingAddonMessage())
  err.code = 'not_implemented'
  throw err
}
let binding
try {
  binding = require(file)
} catch (e) {
  const err = new Error(
    `@throttlekit/core: could not load the native addon ${file} (${e.message}). ` +
      'Rebuild it with `npm run build` in a source checkout (needs a Rust toolchain).',
    { cause: e },
  )
  err.code = 'not_implemented'
  throw err
}

const {
  __bindIo,
  __handle,
  __checkSync,
  __liveHandles,
  __redisOf,
  __redisHandshake,
  __redisStoreId,
  __redisPrepareMany,
  __redisEval,
  __redisFinish,
  __redisDel,
  __redisFinishDel,
  __redisMultiPrepare,
  __redisMultiBytes,
  __redisMultiFinish,
  __redisMultiDel,
  __redisShaperPrepare,
  __redisShaperFinish,
  __redisShaperDel,
  __clusterNode,
  __clusterHandshake,
  __clusterFollow,
  __clusterReroute,
  __clusterHopBytes,
  __clusterLost,
  __fieldsHandle,
  __fieldsCheck,
  __fieldsValues,
  __fieldsNames,
  __adaptiveHandle,
  __adaptiveTryAcquire,
  __adaptiveRelease,
  __adaptiveForget,
  __redisHandle,
  __redisPrepareFast,
  __redisFinishFast,
  // lib/redis-transport.js's socket state (it loads the addon itself): kept out of the exports
  __connNew,
  __connOpen,
  __connSent,
  __connFailed,
  __connRead,
  __connExpire,
  __connLost,
  __connDeadline,
  ...api
} = binding

// The fast path of Limiter#checkSync (see src/fast.rs): `io` carries the limiter's handle, the
// cost and the key's length in (slots 6-8), and the decision out (slots 0-5); `keyBytes`, in the
// same buffer, a short ASCII key. That is several times cheaper than passing them as napi
// values and building the object through napi. Same arguments, result and errors as the native
// method it replaces. The buffer is made natively and never leaves this module: the native side
// keeps a pointer into it, so nobody else may hold (and detach) it. Only element accesses touch
// it here (a typed-array method could be replaced by user code and be handed the array).
const { io, keyBytes } = __bindIo()
const KEY_BYTES = keyBytes.length
// Captured now, so that replacing String.prototype.charCodeAt later cannot run user code (and
// so a nested checkSync) halfway through copying a key.
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt)

/** Copies `key` into keyBytes when it is a short ASCII string; its length, else -1. */
function copyKey(key) {
  if (typeof key !== 'string' || key.length > KEY_BYTES) return -1
  let any = 0
  for (let i = 0; i < key.length; i++) {
    const c = charCodeAt(key, i)
    any |= c
    keyBytes[i] = c
  }
  return any < 0x80 ? key.length : -1
}

// A limiter's handle (src/handles.rs), kept in a private field of its JS object.
// __handle throws config_invalid unless its argument is a constructed Limiter.
const { handleField } = require('./lib/handle-field.js')
const handleOf = handleField(__handle)

// AdaptiveLimiter's permits are plain JS objects holding an id (lib/adaptive.js).
// tryAcquire and release go through `io` (src/adaptive_fast.rs).
require('./lib/adaptive.js').install(api, {
  io,
  handle: __adaptiveHandle,
  tryAcquire: __adaptiveTryAcquire,
  release: __adaptiveRelease,
  forget: __adaptiveForget,
})

const nativeCheckSync = api.Limiter.prototype.checkSync
Object.defineProperty(api.Limiter.prototype, 'checkSync', {
  value: function checkSync(key, cost) {
    const n = copyKey(key)
    io[6] = handleOf(this)
    io[8] = n
    if (cost === undefined || typeof cost === 'number') {
      io[7] = cost === undefined ? 1 : cost
      if (n < 0) __checkSync(key)
      else __checkSync()
    } else {
      __checkSync(key, cost) // not a number: throws config_invalid
    }
    return decisionAt(io, 0)
  },
  writable: true,
  configurable: true,
})

// The Promise methods of a Limiter, a MultiLimiter or a Shaper on a RedisStore travel on one
// socket per store, driven by this event loop (lib/redis-transport.js); the core prepares every
// call and reads every reply (src/transport.rs). Anything else (a MemoryStore, a
// deterministic-replay store, a closed store, a receiver of the wrong class) takes the native
// method.
const { Transport } = require('./lib/redis-transport.js')
const { ClusterTransport } = require('./lib/redis-cluster.js')
// On a cluster, a Limiter's check, peek and forecast go to the master the core names, one socket
// per master (lib/redis-cluster.js); its checkMany and reset, and multi limiters and shapers,
// take the native methods there.
const clusterNatives = {
  node: __clusterNode,
  handshake: __clusterHandshake,
  reroute: __clusterReroute,
  lost: __clusterLost,
}
const transports = new Map() // store number -> Transport
const limiterTransports = new WeakMap() // Limiter -> Transport | null
// Where __redisPrepareFast writes a call (its ticket: time at 0 and counted cost at 16, see
// ScriptRequest in lib/redis-requests.js; then its FCALL or EVALSHA from HEAD, or what its own
// send left of it) and __redisFinish a decision: reused, because a buffer or object made
// natively per call costs more than the call. Never handed out (each call's bytes are copied
// out before anything else can run).
let scratch = Buffer.from(new ArrayBuffer(16384))
// The ticket's two f64s (time at 0, counted cost at 16, little-endian) read through a view on a
// little-endian host (a view is cheaper than readDoubleLE, a call of its own); scratch always
// starts an ArrayBuffer of its own, so the view is aligned.
const LE = require('node:os').endianness() === 'LE'
let ticket = new Float64Array(scratch.buffer, 0, 3)
const HEAD = 24
const decided = new Float64Array(6)

/** The socket the Promise calls of `limiter` (a Limiter, MultiLimiter or Shaper) take, or null. */
function transportOf(limiter) {
  if (typeof limiter !== 'object' || limiter === null) return null
  let t = limiterTransports.get(limiter)
  if (t !== undefined) return t
  let json
  try {
    json = __redisOf(limiter)
  } catch {
    return null // not a Limiter: the native method throws its own error
  }
  t = null
  if (json !== null) {
    const endpoint = JSON.parse(json)
    t = transports.get(endpoint.id)
    if (t === undefined) {
      t = endpoint.cluster ? new ClusterTransport(endpoint, limiter, clusterNatives) : new Transport(endpoint, __redisHandshake(limiter))
      transports.set(endpoint.id, t)
    }
  }
  limiterTransports.set(limiter, t)
  return t
}

/** The socket of `limiter` unless its store is a cluster (whose calls only check, peek and forecast take). */
function plainTransportOf(limiter) {
  const t = transportOf(limiter)
  return t === null || t instanceof ClusterTransport ? null : t
}

/**
 * What a Limiter's check, peek and forecast need per call (src/redis_fast.rs): its socket and
 * its Redis handle, or null when index.js does not carry its calls.
 */
const limiterCalls = new WeakMap() // Limiter -> {t, h} | null

function callsOf(limiter) {
  if (typeof limiter !== 'object' || limiter === null) return null // the native method throws its own error
  let c = limiterCalls.get(limiter)
  if (c !== undefined) return c
  const t = transportOf(limiter)
  c = null
  if (t !== null) {
    const h = __redisHandle(limiter)
    if (h !== null) c = { t, h }
  }
  limiterCalls.set(limiter, c)
  return c
}

const { ScriptRequest, DelRequest, MultiRequest, ReserveRequest } = require('./lib/redis-requests.js')({
  __redisEval,
  __clusterFollow,
  __clusterHopBytes,
  __redisFinish,
  __redisFinishFast,
  __redisFinishDel,
  __redisMultiBytes,
  __redisMultiFinish,
  __redisShaperFinish,
  io,
  decided,
})

// Node's timers, like the core's (`throttlekit::shaper::timer_chunks`), wait at most 2^31 - 1 ms.
const MAX_TIMER_MS = 2147483647

/** Resolves with `r` once `r.delayMs` has passed, waiting in chunks below the timer ceiling. */
function waitOut(r) {
  return new Promise((resolve) => {
    let left = r.delayMs
    const step = () => {
      if (left <= 0) return resolve(r)
      const chunk = Math.min(left, MAX_TIMER_MS)
      left -= chunk
      setTimeout(step, chunk)
    }
    step()
  })
}

/**
 * Prepares a call of the limiter with Redis handle `h` into `scratch` (growing it if needed):
 * its first send's length, or -1 if closed. The handle, op, cost and a short ASCII key travel
 * in the shared buffer, as for checkSync (src/redis_fast.rs); a key that is not one, and a cost
 * that is not a number (for its error), are passed. With `fd` (Transport#direct, else -1), the
 * native side also writes the call to that socket itself and leaves in io[0] how many of its
 * bytes went; scratch then holds only the rest.
 */
function prepare(h, op, key, cost, fd = -1) {
  for (;;) {
    const k = copyKey(key)
    io[0] = fd
    io[6] = h
    io[8] = k
    io[9] = op
    let n
    if (op === 1 || cost === undefined || typeof cost === 'number') {
      io[7] = op === 1 || cost === undefined ? 1 : cost
      n = k < 0 ? __redisPrepareFast(scratch, key) : __redisPrepareFast(scratch)
    } else {
      n = __redisPrepareFast(scratch, key, cost) // not a number: throws config_invalid
    }
    if (n >= -1) return n
    scratch = Buffer.from(new ArrayBuffer(-n * 2))
    ticket = new Float64Array(scratch.buffer, 0, 3)
  }
}

// A Limiter's Promise calls on a PostgresStore take Node's own sockets (lib/postgres-socket.js),
// installed first so that the Redis methods below fall back to them.
require('./lib/postgres-socket.js')(api)

const L = api.Limiter.prototype
const native = { check: L.check, peek: L.peek, forecast: L.forecast, checkMany: L.checkMany, reset: L.reset, close: L.close }
const OP = { check: 0, peek: 1, forecast: 2 }
for (const name of ['check', 'peek', 'forecast']) {
  const op = OP[name]
  const fallback = native[name]
  Object.defineProperty(L, name, {
    value: {
      [name](key, cost) {
        const c = callsOf(this)
        if (c === null) return fallback.apply(this, arguments)
        const t = c.t
        // A standalone socket with nothing due: the native prepare writes the call itself.
        const fd = t instanceof ClusterTransport ? -1 : t.direct()
        let n
        try {
          n = prepare(c.h, op, key, cost, fd)
        } catch (e) {
          return Promise.reject(e)
        }
        if (n < 0) return fallback.apply(this, arguments) // closed: the native method answers
        const sent = fd < 0 ? 0 : io[0]
        let bytes = null
        if (sent < n) {
          bytes = Buffer.allocUnsafe(n - sent)
          scratch.copy(bytes, 0, HEAD + sent, HEAD + n)
        }
        const r = new ScriptRequest(t, this, op, key, cost, LE ? ticket[0] : scratch.readDoubleLE(0), LE ? ticket[2] : scratch.readDoubleLE(16), c.h)
        if (t instanceof ClusterTransport) return t.request(r, bytes, scratch.readUInt32LE(8), scratch.readUInt32LE(12))
        return t.request(r, bytes)
      },
    }[name],
    writable: true,
    configurable: true,
  })
}
Object.defineProperty(L, 'checkMany', {
  value: function checkMany(keys, cost) {
    const c = callsOf(this)
    if (c === null || c.t instanceof ClusterTransport) return native.checkMany.apply(this, arguments)
    const t = c.t
    let calls
    try {
      calls = __redisPrepareMany(this, keys, cost, scratch)
    } catch (e) {
      return Promise.reject(e)
    }
    if (calls === null) return native.checkMany.apply(this, arguments)
    const now = scratch.readDoubleLE(0)
    const counted = scratch.readDoubleLE(16)
    return Promise.all(calls.map((bytes, i) => t.request(new ScriptRequest(t, this, OP.check, keys[i], cost, now, counted, c.h), bytes)))
  },
  writable: true,
  configurable: true,
})
Object.defineProperty(L, 'reset', {
  value: function reset(key) {
    const t = plainTransportOf(this)
    if (t === null) return native.reset.apply(this, arguments)
    let bytes
    try {
      bytes = __redisDel(this, key)
    } catch (e) {
      return Promise.reject(e)
    }
    if (bytes === null) return native.reset.apply(this, arguments)
    return t.request(new DelRequest(t), bytes)
  },
  writable: true,
  configurable: true,
})
Object.defineProperty(L, 'close', {
  value: function close() {
    transportOf(this)?.close()
    return native.close.apply(this, arguments)
  },
  writable: true,
  configurable: true,
})
const M = api.MultiLimiter.prototype
const nativeMulti = { check: M.check, reset: M.reset }
Object.defineProperty(M, 'check', {
  value: function check(keys, cost) {
    const t = plainTransportOf(this)
    if (t === null) return nativeMulti.check.apply(this, arguments)
    let call
    try {
      call = __redisMultiPrepare(this, keys, cost)
    } catch (e) {
      return Promise.reject(e)
    }
    if (call === null) return nativeMulti.check.apply(this, arguments) // closed: the native method answers
    return t.request(new MultiRequest(t, this, call), __redisMultiBytes(call, false, t.endpoint.functions))
  },
  writable: true,
  configurable: true,
})
Object.defineProperty(M, 'reset', {
  value: function reset(keys) {
    const t = plainTransportOf(this)
    if (t === null) return nativeMulti.reset.apply(this, arguments)
    let dels
    try {
      dels = __redisMultiDel(this, keys)
    } catch (e) {
      return Promise.reject(e)
    }
    if (dels === null) return nativeMulti.reset.apply(this, arguments)
    return Promise.all(dels.map((bytes) => t.request(new DelRequest(t), bytes))).then(() => undefined)
  },
  writable: true,
  configurable: true,
})
const S = api.Shaper.prototype
const nativeShaper = { reserve: S.reserve, schedule: S.schedule, reset: S.reset }
for (const name of ['reserve', 'schedule']) {
  const schedule = name === 'schedule'
  const fallback = nativeShaper[name]
  Object.defineProperty(S, name, {
    value: {
      [name](key, cost) {
        const t = plainTransportOf(this)
        if (t === null) return fallback.apply(this, arguments)
        let call
        try {
          call = __redisShaperPrepare(this, key, cost)
        } catch (e) {
          return Promise.reject(e)
        }
        if (call === null) return fallback.apply(this, arguments) // closed: the native method answers
        const reserved = t.request(new ReserveRequest(t, this, call, schedule), __redisMultiBytes(call, false, t.endpoint.functions))
        return schedule ? reserved.then(waitOut) : reserved
      },
    }[name],
    writable: true,
    configurable: true,
  })
}
Object.defineProperty(S, 'reset', {
  value: function reset(key) {
    const t = plainTransportOf(this)
    if (t === null) return nativeShaper.reset.apply(this, arguments)
    let bytes
    try {
      bytes = __redisShaperDel(this, key)
    } catch (e) {
      return Promise.reject(e)
    }
    if (bytes === null) return nativeShaper.reset.apply(this, arguments)
    return t.request(new DelRequest(t), bytes)
  },
  writable: true,
  configurable: true,
})
const nativeStoreClose = api.RedisStore?.prototype.close
if (nativeStoreClose !== undefined) {
  Object.defineProperty(api.RedisStore.prototype, 'close', {
    value: function close() {
      let id = null
      try {
        id = __redisStoreId(this)
      } catch {}
      if (id !== null) {
        // Its socket goes from the map at once (a Limiter that still holds it keeps it, closed):
        // a process that opens and closes stores all day must not keep every one it closed.
        transports.get(id)?.close()
        transports.delete(id)
      }
      return nativeStoreClose.apply(this, arguments)
    },
    writable: true,
    configurable: true,
  })
}

// RateLimitFields#checkSync, the in-process middleware's one native call per request (see
// src/fast.rs, `__fieldsCheck`): the fields object, key and cost travel as for Limiter#checkSync
// (a short ASCII key's bytes and the cost in the shared buffer), the decision comes back in `io`
// and the lines as one string, and the objects are built here, several times cheaper than
// through napi. Same arguments, result and errors as the native method, which answers a
// receiver of another class.
const nativeFieldsCheckSync = api.RateLimitFields.prototype.checkSync
// The fields' handle (src/handles.rs, a table of its own) lives in a private field as a
// limiter's does; a field of its own, so a limiter's handle is never taken for one. Null (and
// nothing kept) when the object is not a RateLimitFields.
const fieldsHandleOf = handleField(__fieldsHandle)
/**
 * One fields call through `native` (`__fieldsCheck` or `__fieldsValues`): the key and cost go in
 * `io`, and its answer comes back; null when `fields` is not a RateLimitFields.
 */
function fieldsCall(native, fields, key, cost) {
  const n = copyKey(key)
  const id = fieldsHandleOf(fields)
  if (id === null) return null
  io[6] = id
  io[8] = n
  if (cost === undefined || typeof cost === 'number') {
    io[7] = cost === undefined ? 1 : cost
    return n < 0 ? native(key) : native()
  }
  return native(key, cost) // not a number: throws config_invalid
}
/** `__fieldsCheck` for `fields`: the joined lines, or null when `fields` is not one. */
const fieldsCheck = (fields, key, cost) => fieldsCall(__fieldsCheck, fields, key, cost)
/**
 * `__fieldsValues` for `fields`: the lines' values joined by '\n', their names' id in io[9]
 * (see `fieldsParts.namesId`); null when `fields` is not a RateLimitFields.
 */
const fieldsValues = (fields, key, cost) => fieldsCall(__fieldsValues, fields, key, cost)
/** Core's action for a fields check, by its code (io[10]), and the status that goes with it. */
const ACTIONS = Object.freeze(['forward', 'shadow', 'deny', 'unavailable'])
const STATUSES = Object.freeze([0, 0, 429, 503])
/** The decision the last `__fieldsCheck` wrote in `io`, as an object (read it at once). */
function fieldsDecision() {
  return decisionAt(io, 0)
}
Object.defineProperty(api.RateLimitFields.prototype, 'checkSync', {
  value: function checkSync(key, cost) {
    const joined = fieldsCheck(this, key, cost)
    if (joined === null) return nativeFieldsCheckSync.apply(this, arguments)
    return {
      decision: fieldsDecision(),
      lines: joined === '' ? [] : joined.split('\n'),
      action: ACTIONS[io[10]],
      status: STATUSES[io[10]],
    }
  },
  writable: true,
  configurable: true,
})

module.exports = api
// For lib/http/decide.js only: RateLimitFields#checkSync in parts, so that a middleware whose
// request is allowed (the usual case) makes no object at all: `checkSync(fields, key, cost)`
// returns the lines joined by '\n' (null when `fields` is not a RateLimitFields: call the
// method), `allowed()`, `decision()`, `action()` (core's: 'forward', 'shadow' or 'deny') and
// `status()` (core's: 0 or 429) read the decision that call left. Same arguments,
// errors and values as the method. `decision()` must be read before the next call.
// `values(fields, key, cost)` is `checkSync` with the lines' values alone joined by '\n' and
// `namesId()` the id of their names, which `names(id)` gives joined by '\n' (an id is for
// the life of the process); namesId() -1: `values` returned the lines joined as `checkSync`.
Object.defineProperty(module.exports, Symbol.for('throttlekit.fieldsParts'), {
  value: Object.freeze({
    checkSync: fieldsCheck,
    values: fieldsValues,
    namesId: () => io[9],
    names: (id) => __fieldsNames(id),
    allowed: () => io[0] === 1,
    action: () => ACTIONS[io[10]],
    status: () => STATUSES[io[10]],
    decision: fieldsDecision,
  }),
})
// For tests only: how many stores' sockets index.js holds (one per open store that made a Promise
// call; a closed store's leaves at once).
Object.defineProperty(module.exports, Symbol.for('throttlekit.socketsHeld'), { value: () => transports.size })
// For tests only: the napi-rs method the fast path replaces, and the fast path's internals
// (never the shared buffer itself). `call` writes a raw handle and cost, as checkSync would.
Object.defineProperty(module.exports, Symbol.for('throttlekit.nativeCheckSync'), { value: nativeCheckSync })
Object.defineProperty(module.exports, Symbol.for('throttlekit.fastPath'), {
  value: Object.freeze({
    handle: __handle,
    liveHandles: __liveHandles,
    fieldsHandle: __fieldsHandle,
    /** A raw `__fieldsCheck` with `handle` in the handle slot: `[joined lines, six slots]`. */
    fieldsCall(handle, key, cost) {
      for (let i = 0; i < 6; i++) io[i] = -1
      io[8] = copyKey(key)
      io[6] = handle
      io[7] = cost
      const joined = __fieldsCheck(key)
      return [joined, [io[0], io[1], io[2], io[3], io[4], io[5]]]
    },
    call(handle, key, cost) {
      for (let i = 0; i < 6; i++) io[i] = -1
      io[8] = copyKey(key)
      io[6] = handle
      io[7] = cost
      __checkSync(key)
      return [io[0], io[1], io[2], io[3], io[4], io[5]]
    },
  }),
})
