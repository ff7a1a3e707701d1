'use strict'
// The socket a RedisStore's Promise calls travel on: one `net` connection per store, driven by
// the event loop, as ioredis drives its own. A standalone plaintext store (TCP or a Unix
// socket) gets one; a plaintext cluster store one per master, each serving the calls the core
// routes to it (lib/redis-cluster.js, which reads every error reply for a redirect). Sentinel
// stores follow a master that may change, and TLS stores verify with the core's rustls, so
// their calls stay on the core's connections (src/redis.rs, `RedisStore::chosen`). Why: when the Rust store does the I/O,
// every call hops from the event loop to a Tokio thread and back, and those two thread switches
// cost more than the Redis round trip itself.
//
// This module only moves bytes and keeps time. What is sent, where a reply ends, what it means
// and which call it answers are the core's: each call's bytes come from the core
// (`throttlekit::redis::transport`, through src/transport.rs and src/redis_fast.rs), and each
// socket's state is a core `Conn` (`throttlekit::redis::transport::conn`, the `__conn*`
// functions): the replies owed, in order (the login's, AUTH and SELECT or HELLO 3 on a
// `?protocol=resp3` URL, and the scripts' loads first), each call's deadline, and, once per
// read (one native call, which also records the sends noted since the last: Transport#track),
// what every frame in it asks for (`__connRead`): finish a call with it (a limiter's check,
// peek or forecast comes back decided by that same call), send a call's
// fallback once after NOSCRIPT or a missing function, ask the cluster's routes about an error
// (lib/redis-cluster.js), or drop the connection (a refused login, a reply nobody asked for,
// bytes that are no RESP). Each request brings its bytes, its fallback's (`eval()`), and a
// `finish(reply, error, timedOut)` that turns the outcome into the Promise's value or throws
// what it rejects with. What stays here is the socket, the calls' objects by number, one timer
// per socket (armed at the core's earliest deadline) and the batching of writes:
//
// Under `scripting: auto` on Redis >= 7 (the store loaded its function library), calls are sent
// as FCALL, as on every other path; else as EVALSHA.
//
// - Pipelining: requests are written as they come (coalesced while replies are due, see
//   `write`) and answered in order, so un-awaited calls run on Redis in the order they were made.
// - A bounded wait: a call past its deadline (`timeoutMs` after it was made) is finished as
//   timed out (the limiter's fail policy decides) and the connection is dropped, failing the
//   calls still owed on it, so a silent server cannot hold later calls. A call is never sent
//   again after a time-out, nor after a lost connection: it may already have counted.
// - Lazy reconnection: when the connection goes away, every call owed on it fails as
//   `store_unavailable`; the next request opens a new connection (the core's login first).
// - Idle means unref'd: the socket keeps the process alive only while a request is pending,
//   and its one timer is unref'd.
const net = require('node:net')
const { decisionAt } = require('./decision-slots.js')

const { __connNew, __connOpen, __connSent, __connFailed, __connRead, __connExpire, __connLost, __connDeadline } = require(
  require('./platform.js').findBinding(),
)

/** What `__connRead` says a frame asks for (the core's `conn::Action`). */
const FOLLOW = 2
const RETRY = 1
const REFUSED = 3
const UNASKED = 4
/** ... and what it says of a limiter's check, peek or forecast it decided (src/redis_fast.rs). */
const DECIDED = 5
const FAILED = 6

/**
 * How many sends a socket notes (Transport#track) before the core records them: they go with
 * the next read's one native call (`__connRead`), or with `__connSent` when this many are
 * waiting, or when the core must know them first (the timer, a lost connection). Why not one
 * native call per send: that cost the 64-in-flight row 13-22 %.
 */
const SENDS = 128

/** How many frames' verdicts one `__connRead` hands back at most, and the numbers in each. */
const EVENTS = 256
const EVENT = 10

/** The numbers of a send noted in `io` (Transport#track, src/transport.rs `record`). */
const SEND = 7

/**
 * Where the verdicts start in a socket's `io` (Transport#io, `__connRead`'s one array): after
 * where to read from (then where the read stopped), how many sends are noted (then how many
 * replies are owed), this offset itself, and the sends.
 */
const EVENTS_AT = 3 + SEND * SENDS

/**
 * Takes `r` for settling, once: false when it was settled already; the transport that holds it
 * (`r.owner`, none while a cluster call is between nodes) counts it no longer.
 */
function claim(r) {
  if (r.done) return false
  r.done = true
  const owner = r.owner
  r.owner = null
  if (owner != null) owner.release()
  return true
}

/** Finishes `r` (once, `claim`): with its reply, a transport error, or as timed out. */
function finish(r, frame, error, timedOut) {
  if (!claim(r)) return
  let value
  try {
    value = r.finish(frame, error, timedOut)
  } catch (e) {
    r.reject(e)
    return
  }
  r.resolve(value)
}

/**
 * Settles `r` (once) with the decision `__connRead` made from its reply, at `io[k..k + 6]`
 * (as ScriptRequest#finish builds it from `__redisFinishFast`'s slots).
 */
function decided(r, io, k) {
  if (!claim(r)) return
  r.resolve(decisionAt(io, k))
}

/** Rejects `r` (once) with what `__connRead` failed it with (call `id` of `conn`). */
function failed(r, conn, id) {
  if (!claim(r)) return
  try {
    __connFailed(conn, id)
  } catch (e) {
    r.reject(e)
  }
}

/**
 * How many corked calls leave in one `writev` at most (Transport#write), on every socket: big
 * enough that the system call and the server's wake-up are shared by many calls, small enough
 * that the server starts on them while the client prepares the next batch.
 */
const BATCH = 16

/**
 * The executor of every request's Promise: it only hands out the resolving functions (read
 * right after `new Promise`, before anything else can run), so a call allocates no closure of
 * its own for it (a sequential call's client CPU is most of what the row measures).
 */
const captured = { resolve: null, reject: null }
function capture(resolve, reject) {
  captured.resolve = resolve
  captured.reject = reject
}

/** A new Promise that `r.resolve` and `r.reject` settle. */
function promiseOf(r) {
  const p = new Promise(capture)
  r.resolve = captured.resolve
  r.reject = captured.reject
  return p
}

/**
 * Where every socket's reads land (net's `onread`): one buffer reused for every read, instead
 * of a fresh one per read pushed through the socket's Readable stream. A read is consumed
 * before its callback returns (every complete frame is finished there, synchronously); the
 * bytes of an incomplete frame are copied out (Transport#onData).
 */
const READ_BYTES = 65536
let readBuffer = null

/** The end of a tick's writes (see Transport#write). */
function uncork(t, s) {
  t.corked = false
  s.uncork()
}

class Transport {
  /**
   * @param endpoint {host, port, path, timeoutMs, handshakeReplies, preloadReplies, retryReplies} (from the core)
   * @param handshake the login and preload bytes a new connection sends first
   * @param cluster the ClusterTransport this socket serves one master of (lib/redis-cluster.js),
   *   which the core's routes answer every error reply through; null on a standalone store
   * @param nodeId the core's number of that master
   */
  constructor(endpoint, handshake, cluster = null, nodeId = 0) {
    this.endpoint = endpoint
    this.cluster = cluster
    this.nodeId = nodeId
    this.timerAt = 0
    this.handshake = handshake
    this.timeoutMs = endpoint.timeoutMs
    this.conn = __connNew(endpoint.handshakeReplies, endpoint.preloadReplies, endpoint.retryReplies, endpoint.timeoutMs, cluster !== null)
    this.io = new Float64Array(EVENTS_AT + EVENT * EVENTS) // `__connRead`'s, and the sends noted (Transport#track)
    this.io[2] = EVENTS_AT
    this.nSends = 0
    // The calls owed, by number: call `id` is at `calls[(id - base) >>> 0]` (numbers are given
    // in order, wrapping at 2^32) until its reply, timeout or loss takes it (Transport#take).
    this.calls = []
    this.base = 0
    this.head = 0 // calls before it are all taken
    this.nextId = 0
    this.owed = 0 // replies the socket owes (the core's count, as its last answer said)
    this.socket = null
    this.buf = null
    this.off = 0
    this.pending = 0
    this.corked = false
    this.batched = 0 // calls corked since the last flush
    this.closed = false
    this.fd = -1 // the connected socket's descriptor, for Transport#direct (-1: none)
    this.timer = null
    this.onTimer = () => this.expire()
  }

  /**
   * Sends `bytes` for the request `r` ({eval(), finish(reply, error, timedOut)}); the Promise
   * settles with what `r.finish` returns (or rejects with what it throws).
   */
  request(r, bytes) {
    const p = promiseOf(r)
    r.done = false
    r.owner = this
    this.pending++
    if (this.cluster !== null) this.cluster.pending++
    if (this.closed) {
      finish(r, null, 'the Redis store is closed', false)
      return p
    }
    r.made = Date.now()
    if (this.timer === null) this.arm(this.timeoutMs)
    if (this.pending === 1 && this.socket !== null) this.socket.ref()
    try {
      if (bytes === null) this.track(r, 1) // written already (Transport#direct)
      else this.write(bytes, r, 1)
    } catch (e) {
      r.reject(e) // as a throw inside the executor did
    }
    return p
  }

  /**
   * The descriptor of this socket when a call made now may be written to it directly (by the
   * core's prepare, src/redis_fast.rs `send_now`, before `request`), else -1: only when the call
   * would go at once anyway (no reply owed, so `write` would not cork it), the connection is
   * made and not destroyed (so the descriptor is still this socket's), and nothing of ours is
   * queued on it (so the bytes keep their order). Standalone sockets only. A call sent whole
   * this way is then handed to `request` with `null` for its bytes; whatever the send left
   * goes through `write` as usual.
   */
  direct() {
    const s = this.socket
    if (this.fd < 0 || s === null || this.owed !== 0 || this.corked || this.closed) return -1
    if (s.destroyed || s.connecting || s.writableLength !== 0) return -1
    return this.fd
  }

  /**
   * Arms the one timer. It is unref'd (the socket, ref'd while a request is pending, keeps the
   * process alive) and not cleared when the last request settles: clearing and re-arming it
   * for every sequential call costs more than letting it fire once with nothing to do.
   */
  arm(ms) {
    this.timerAt = Date.now() + ms
    this.timer = setTimeout(this.onTimer, ms)
    this.timer.unref()
  }

  /**
   * The timer fired: the core times out every call past its deadline, and then the connection
   * goes, as on every other path (docs/redis.md, "At most once"): a server that stopped
   * answering would otherwise time out every later call too. The calls still owed on it fail
   * as `store_unavailable`; none is sent again, since each may already have counted.
   */
  expire() {
    this.timer = null
    const now = Date.now()
    this.record()
    const expired = __connExpire(this.conn, now)
    for (const id of expired) {
      const r = this.take(id)
      if (r !== undefined) finish(r, null, null, true)
    }
    if (expired.length > 0) {
      if (this.cluster !== null) this.cluster.lost()
      const s = this.socket
      if (s !== null) {
        this.lost(s, 'the Redis connection was dropped: a call on it timed out')
        s.destroy()
      }
    }
    if (this.pending === 0) return
    this.record()
    const next = __connDeadline(this.conn)
    if (next !== null) this.arm(Math.max(1, next - now))
  }

  /**
   * Sends a cluster call `r` whose Promise exists (its first attempt, or the next after a
   * redirect or a reroute): `replies` replies come back, the call's last. Its deadline stays the
   * one set when it was made; past it, it is finished as timed out and not written.
   */
  enqueue(r, bytes, replies, now = Date.now()) {
    r.owner = this
    this.pending++
    this.cluster.pending++
    if (this.closed) return finish(r, null, 'the Redis store is closed', false)
    const left = r.made + this.timeoutMs - now
    if (left <= 0) return finish(r, null, null, true)
    if (this.timer === null) this.arm(left)
    else if (r.made + this.timeoutMs < this.timerAt) {
      clearTimeout(this.timer)
      this.arm(left)
    }
    if (this.pending === 1 && this.socket !== null) this.socket.ref()
    this.write(bytes, r, replies)
  }

  /**
   * Notes that `r` was written (as its `replies`-reply attempt; 0: its fallback after a miss),
   * under the next number, for the core to record with the next read (see SENDS).
   */
  track(r, replies) {
    const id = this.nextId
    this.nextId = (id + 1) >>> 0
    r.id = id
    this.calls.push(r)
    let k = this.nSends
    if (k === SENDS) {
      this.record()
      k = 0
    }
    const io = this.io
    const at = 3 + SEND * k
    io[at] = id
    io[at + 1] = r.made
    io[at + 2] = replies
    // A limiter's check, peek or forecast (a ScriptRequest): what decides it from its reply
    // during the read that brings it (`__connRead`), as ScriptRequest#finish would.
    if (r.h === undefined) io[at + 3] = -1
    else {
      io[at + 3] = r.h
      io[at + 4] = r.op
      io[at + 5] = r.now
      io[at + 6] = r.counted
    }
    this.nSends = k + 1
    this.owed += replies === 0 ? this.endpoint.retryReplies : replies
  }

  /** Has the core record the sends noted since it last did (Transport#track). */
  record() {
    if (this.nSends === 0) return
    const n = this.nSends
    this.nSends = 0
    __connSent(this.conn, this.io, n)
  }

  /** The call numbered `id`, which the socket no longer owes (undefined if taken already). */
  take(id) {
    const calls = this.calls
    const i = (id - this.base) >>> 0
    const r = calls[i]
    if (r === undefined) return undefined
    calls[i] = undefined
    let head = this.head
    while (head < calls.length && calls[head] === undefined) head++
    if (head > 1024 && head * 2 > calls.length) {
      this.calls = calls.slice(head)
      this.base = (this.base + head) >>> 0
      head = 0
    }
    this.head = head
    return r
  }

  /** Forgets every call (the socket went away: the core owes none of them now). */
  forget() {
    this.calls = []
    this.base = this.nextId
    this.head = 0
  }

  /**
   * Queues `bytes` on the connection, for `r` (`replies` as Transport#track). A call made while
   * the server has nothing of ours to answer (every reply in: the sequential case, and the
   * first call of a tick after a batch of replies) is written at once. A call made while
   * replies are still due is corked, and the corked calls leave together: every `BATCH` of
   * them, and the rest at the end of the tick (`process.nextTick`), in one `writev` each.
   *
   * Why both: on loopback each `write` runs the whole TCP send path and wakes the server, which
   * was most of the client's time per call under load (perf: `LibuvStreamWrap::DoTryWrite` 31 %,
   * a third of it switching to redis-server), so the 64 calls that a batch of replies releases
   * must not write one by one. But a whole tick in one `writev` makes client and server take
   * turns: the server idles while the client settles 64 replies and prepares 64 calls, and the
   * client idles while the server runs them. On a quiet 2-core machine, where each has a core,
   * that lock-step capped 64 in flight at the sum of both sides' time per call (0.68x of
   * ioredis, which writes each call at once and so overlaps them). The first call going at once
   * and batches of `BATCH` keep the server busy while the client prepares the next batch.
   * Order is kept: corked writes go out in order, after any written before them.
   *
   * A cluster's socket differs in two ways (ClusterTransport#flushLater says why): a call goes
   * at once only when no call is due on any of the cluster's sockets, and the corked calls that
   * no `BATCH` sent leave at the end of the event loop's turn rather than of the tick.
   */
  write(bytes, r, replies) {
    const s = this.socket ?? this.connect()
    const cluster = this.cluster
    // Nothing due: on a cluster, nothing due on any of its sockets (the sequential case).
    const idle = cluster === null ? this.owed === 0 : cluster.pending === 1
    this.track(r, replies)
    if (this.corked) {
      s.write(bytes)
      if (++this.batched === BATCH) {
        this.batched = 0
        s.uncork()
        s.cork()
      }
    } else if (idle) {
      s.write(bytes)
    } else {
      this.corked = true
      this.batched = 1
      s.cork()
      if (cluster === null) process.nextTick(uncork, this, s)
      else cluster.flushLater(this, s)
      s.write(bytes)
    }
  }

  connect() {
    const ep = this.endpoint
    if (readBuffer === null) readBuffer = Buffer.allocUnsafe(READ_BYTES)
    const onread = { buffer: readBuffer, callback: (n, b) => this.onData(s, b.subarray(0, n), true) }
    let s
    if (ep.path !== null) s = net.createConnection({ path: ep.path, onread })
    else s = net.createConnection({ host: ep.host, port: ep.port, onread })
    s.setNoDelay(true)
    // Whether anything can have been written: until the connection is made, nothing was.
    s.once('connect', () => {
      s.tkConnected = true
      // Where a standalone socket's calls may be written directly (Transport#direct). Not on a
      // cluster (its calls go at once only when no socket of the cluster is due, and index.js
      // learns a call's master from the native call that would write it) nor where the handle
      // has no descriptor (Windows: -1).
      const fd = s._handle?.fd
      if (this.socket === s && this.cluster === null && Number.isInteger(fd) && fd >= 0) this.fd = fd
    })
    this.socket = s
    this.fd = -1
    this.corked = false // a tick's cork belongs to the socket it was set on
    this.buf = null
    let failure = null
    s.on('error', (e) => {
      failure = e
    })
    s.on('close', () => this.lost(s, failure ? `the Redis connection failed: ${failure.message}` : 'the Redis connection closed'))
    // The login, then every script loaded, so that calls pipelined on a fresh connection
    // never meet NOSCRIPT (whose EVAL resend would run them after calls made later).
    s.write(this.handshake)
    this.owed = __connOpen(this.conn)
    if (this.pending === 0) s.unref()
    return s
  }

  /**
   * Reads `chunk`, the next bytes from `s`; `shared` when it is the reused read buffer, whose
   * bytes are overwritten by the next read: a frame left incomplete is then copied out.
   */
  onData(s, chunk, shared = false) {
    if (s !== this.socket) return
    if (this.buf === null) {
      this.buf = chunk
      this.off = 0
    } else {
      this.buf = Buffer.concat([this.buf.subarray(this.off), chunk])
      this.off = 0
    }
    const b = this.buf
    for (;;) {
      const io = this.io
      io[0] = this.off
      io[1] = this.nSends
      this.nSends = 0
      const n = __connRead(this.conn, b, io)
      if (n < 0) {
        s.destroy(new Error('Redis sent bytes that are no RESP reply'))
        return
      }
      this.owed = io[1]
      for (let i = EVENTS_AT; i < EVENTS_AT + EVENT * n; i += EVENT) {
        const action = io[i]
        if (action === DECIDED) {
          const r = this.take(io[i + 1])
          this.off = io[i + 3]
          if (r !== undefined) decided(r, io, i + 4)
          continue
        }
        const frame = b.subarray(io[i + 2], io[i + 3])
        if (action === REFUSED || action === UNASKED) {
          const why = action === REFUSED ? `Redis refused the handshake: ${frame.toString('latin1', 1).trim()}` : 'Redis sent a reply nobody asked for'
          s.destroy(new Error(why))
          return
        }
        const id = io[i + 1]
        const r = this.take(id)
        this.off = io[i + 3]
        if (r !== undefined) {
          if (action === FAILED) failed(r, this.conn, id)
          else this.reply(r, action, frame)
        }
        if (s !== this.socket) return
      }
      this.off = io[0] // past any push read after the last reply
      if (n < EVENTS) break
    }
    if (this.off === b.length) this.buf = null
    else if (shared && b === chunk) {
      this.buf = Buffer.from(b.subarray(this.off))
      this.off = 0
    }
  }

  /** The core says `frame` is for `r`: its reply, a miss to answer with its fallback, or (a cluster) an error for the routes. */
  reply(r, action, frame) {
    if (r.done) return
    if (action === FOLLOW) {
      if (!this.cluster.follow(this, r, frame)) finish(r, frame, null, false)
      return
    }
    if (action === RETRY) {
      let bytes = null
      try {
        bytes = r.eval()
      } catch {}
      if (bytes !== null) return this.write(bytes, r, 0)
    }
    finish(r, frame, null, false)
  }

  /** One request fewer on this socket (finished, or sent on to another node). */
  release() {
    if (this.cluster !== null) this.cluster.pending--
    if (--this.pending === 0) {
      if (this.socket !== null) {
        if (this.closed) this.socket.destroy()
        else this.socket.unref()
      }
    }
  }

  /** The connection `s` is gone: every call owed on it fails; the next request reconnects. */
  lost(s, message) {
    if (s !== this.socket) return
    this.socket = null
    this.fd = -1
    this.buf = null
    this.owed = 0
    this.record()
    const ids = __connLost(this.conn)
    // On a cluster, a connection that was never made wrote nothing: the core may name another
    // master for those calls (a failover). Anything else may have reached the server: it fails
    // and is never sent again.
    const unsent = this.cluster !== null && s.tkConnected !== true
    let failed = false
    const calls = this.calls
    const base = this.base
    this.forget()
    for (const id of ids) {
      const r = calls[(id - base) >>> 0]
      if (r === undefined || r.done) continue
      if (unsent) {
        r.owner = null
        this.release()
        this.cluster.unsent(this, r, message)
      } else {
        finish(r, null, message, false)
        failed = true
      }
    }
    if (failed && this.cluster !== null) this.cluster.lost()
  }

  /** Closes the connection once the requests in flight are answered (or timed out). */
  close() {
    this.closed = true
    if (this.socket !== null && this.pending === 0) this.socket.destroy()
  }
}

module.exports = { Transport, finish, promiseOf, BATCH }
