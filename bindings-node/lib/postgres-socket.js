'use strict'
// Node's own Postgres sockets: a Limiter's Promise `check`, `checkMany`, `peek` and `forecast`
// on a PostgresStore travel on a small pool of `net.Socket`s (TLS through `tls.connect` when the
// URL's sslmode asks for it and the server agrees) driven by this event loop, instead of hopping
// to the store's Tokio thread and back (two thread switches cost more than the statement).
//
// This module only moves bytes and keeps time. The login (trust, password, md5, SCRAM), the
// statements prepared on each connection, every call's bytes and the reading of its reply, the
// fail policy and the metrics are the core's (`throttlekit::postgres::session`,
// `Limiter::prepare_sql`/`finish_sql`, through src/postgres_socket.rs). The wire rules:
//
// - Pipelining: every call is Bind/Execute/Sync, written as it is made (the writes of one tick
//   leave together); several are in flight per socket and their replies come back in order.
//   A call goes to the pool's socket with the fewest calls owed (the first on a tie), so
//   sequential calls keep to one warm socket.
// - A bounded wait: each call has a deadline `timeoutMs` after it was made (one timer per
//   socket, for the earliest). Past it, the socket is dropped and every call owed on it fails as
//   `store_unavailable` through the limiter's fail policy: a silent server cannot hold later
//   calls. A call is never sent again, after a time-out nor after a lost connection: it may
//   already have committed.
// - Lazy reconnection: the next call after a loss opens a new connection (the core's login
//   first; calls made meanwhile wait in the session and leave once it is ready).
// - Idle means unref'd: a socket keeps the process alive only while calls are owed on it.
//
// What stays on the store's own (tokio) connections: multi limiters, shapers, `reset`, a
// limiter in a leased or cached-deny mode, `migrate`, the sweeper, and every call of a store
// whose URL names several hosts (src/postgres.rs says the same).
const net = require('node:net')
const tls = require('node:tls')
const { decisionAt } = require('./decision-slots.js')

/** `out`'s layout (src/postgres_socket.rs `OUT_HEAD`): the header's slots, then the outcomes. */
const OUT_FATAL = 0
const OUT_COUNT = 1
const OUT_MORE = 2
const OUT_TAKE = 3
const OUT_HEAD = 4
const OUTCOME = 8
/** How many outcomes one `__pgFeed` hands back at most (the rest follow in the next). */
const OUTCOMES = 256
/** Room for a call's bytes that `__pgCall` did not write to the socket itself. */
const SCRATCH = 4096

/**
 * tls.connect's certificate checks for the sslmode core read (libpq's meaning): prefer and
 * require encrypt without checking the certificate, verify-ca checks its chain against
 * sslrootcert's PEM (`e.ca`; null: Node's roots), verify-full the chain and the host name.
 */
function verification(e) {
  if (e.tls === 'prefer' || e.tls === 'require') return { rejectUnauthorized: false }
  const checks = { rejectUnauthorized: true }
  if (e.ca !== null) checks.ca = e.ca
  if (e.tls === 'verify-ca') checks.checkServerIdentity = () => undefined
  return checks
}

/**
 * Routes `api`'s Limiter methods through the sockets (each falls back to the native method when
 * the limiter's calls do not take them), and removes the `__pg*` natives from `api`'s exports.
 */
module.exports = function install(api) {
  const native = require(require('./platform.js').findBinding())
  const { __pgOf, __pgSession, __pgSslRequest, __pgTake, __pgCall, __pgCallMany, __pgFeed, __pgAbort, __pgStoreId } = native
  for (const k of Object.keys(api)) if (k.startsWith('__pg')) delete api[k]
  if (api.PostgresStore === undefined) return

  // What every native call answers in: read and consumed before any other JS runs (settling
  // a Promise runs no code at once), so one of each serves every socket.
  const out = new Float64Array(OUT_HEAD + OUTCOME * OUTCOMES)
  const scratch = Buffer.alloc(SCRATCH)

  /** The executor of every call's Promise hands out its resolving functions (no closure per call). */
  const captured = { resolve: null, reject: null }
  function capture(resolve, reject) {
    captured.resolve = resolve
    captured.reject = reject
  }

  /** One connection: its socket, the core's session, the calls owed on it by number. */
  class Conn {
    constructor(pool) {
      this.pool = pool
      this.socket = null
      this.session = null
      this.calls = new Map() // request number -> {resolve, reject, deadline}
      this.timer = null
      this.timerAt = Infinity
      this.corked = false
      this.buffer = null // what a plain socket reads into (`onread`), kept across reconnections
      this.fd = -1 // the plain socket's descriptor once connected (Conn#direct), else -1
      this.onTimer = () => this.expire()
    }

    /**
     * Opens the socket and starts the login (SSLRequest first unless sslmode=disable). A
     * connection that may stay plain reads through `onread` into one buffer of its own: no
     * Buffer, stream push and 'data' event per read. Where the server answers the SSLRequest
     * with TLS, that socket is dropped unread and one that tls.connect can wrap is opened
     * (`openTls`; the session has sent nothing yet).
     */
    open(limiter) {
      const e = this.pool.endpoint
      this.session = __pgSession(limiter)
      if (e.tlsRequired) {
        this.openTls(e)
        return
      }
      if (this.buffer === null) this.buffer = Buffer.allocUnsafe(65536)
      let answer = e.tls === 'prefer' // the SSLRequest's one-byte answer comes first
      const s = this.connect(e, {
        buffer: this.buffer,
        callback: (n, buf) => {
          if (this.socket !== s) return false
          if (answer) {
            answer = false
            if (buf[0] === 0x53 /* S */) {
              this.socket = null
              s.destroy()
              this.openTls(e)
              return false
            }
            this.start(s, false)
            if (n > 1) this.read(s, buf.subarray(1, n), n - 1)
            return true
          }
          this.read(s, buf, n)
          return true
        },
      })
      if (answer) s.write(__pgSslRequest())
      else this.start(s, false)
    }

    /** A socket to the endpoint (reading through `onread` when given), as the connection's. */
    connect(e, onread) {
      const options = e.unix ? { path: e.host } : { host: e.host, port: e.port }
      if (onread !== null) options.onread = onread
      const s = net.connect(options)
      s.setNoDelay(true)
      this.socket = s
      this.fd = -1
      if (onread !== null) {
        s.once('connect', () => {
          const fd = s._handle?.fd
          if (this.socket === s && Number.isInteger(fd) && fd >= 0) this.fd = fd
        })
      }
      const lost = (err) => this.lose(s, `the Postgres connection was lost${err ? `: ${err.message}` : ''} (not resent: it may have committed)`)
      s.on('error', lost)
      s.on('close', () => lost(null))
      return s
    }

    /** A connection that asks for TLS on a stream socket (tls.connect wraps it when offered). */
    openTls(e) {
      const s = this.connect(e, null)
      s.write(__pgSslRequest())
      s.once('data', (answer) => {
        if (this.socket !== s) return
        if (answer[0] === 0x53 /* S */) {
          s.removeAllListeners('data')
          const t = tls.connect({ socket: s, host: e.host, servername: net.isIP(e.host) ? undefined : e.host, ...verification(e) })
          t.setNoDelay?.(true)
          this.socket = t
          this.fd = -1 // its bytes go through TLS
          t.on('error', (err) => this.lose(t, `the Postgres TLS connection failed: ${err.message} (not resent: it may have committed)`))
          t.on('close', () => this.lose(t, 'the Postgres connection was lost (not resent: it may have committed)'))
          t.once('secureConnect', () => this.start(t, true))
        } else if (e.tlsRequired) {
          this.lose(s, `the Postgres server refused TLS and the URL says sslmode=${e.tls}`)
          s.destroy()
        } else {
          this.start(s, true)
        }
      })
    }

    /** The login's first bytes, then whatever the session says; a stream socket's reads too. */
    start(s, stream) {
      if (this.socket !== s) return
      if (stream) s.on('data', (bytes) => this.read(s, bytes, bytes.length))
      this.flush()
      if (this.calls.size === 0) s.unref()
    }

    /** Writes what the session has for the socket. */
    flush() {
      const bytes = __pgTake(this.session)
      if (bytes !== null) this.write(bytes)
    }

    /**
     * The descriptor `__pgCall` may write a call to itself (src/postgres_socket.rs `send_now`),
     * else -1: only when the call would go at once anyway (no call owed, so `write` would not
     * cork it), on a plain connected socket not destroyed (so the descriptor is still this
     * socket's), with nothing of ours queued on it (so the bytes keep their order).
     */
    direct() {
      const s = this.socket
      if (this.fd < 0 || this.corked || this.calls.size !== 0 || s.destroyed || s.connecting || s.writableLength !== 0) return -1
      return this.fd
    }

    /** Writes what a native call answered `n` for: `n` bytes of `scratch`, or (-1) `__pgTake`'s. */
    written(n) {
      if (n > 0) this.write(Buffer.from(scratch.subarray(0, n)))
      else if (n < 0) this.flush()
    }

    /**
     * Queues `bytes`. A call made while nothing else is owed on the socket (the sequential case)
     * is written at once; otherwise the writes of one tick leave together (one `writev`).
     */
    write(bytes) {
      const s = this.socket
      if (!this.corked && this.calls.size <= 1) {
        s.write(bytes)
        return
      }
      if (!this.corked) {
        this.corked = true
        s.cork()
        process.nextTick(() => {
          this.corked = false
          s.uncork()
        })
      }
      s.write(bytes)
    }

    /** Feeds the first `n` bytes of `bytes` (a read buffer as it is: no `subarray` per read). */
    read(s, bytes, n) {
      if (this.socket !== s) return
      const session = this.session
      this.settle(__pgFeed(session, bytes, n, out))
      const fatal = out[OUT_FATAL] === 1
      while (out[OUT_MORE] === 1) this.settle(__pgFeed(session, null, 0, out))
      if (fatal) {
        this.drop(s)
        return
      }
      if (out[OUT_TAKE] === 1) this.flush()
    }

    /**
     * Settles the outcomes in `out`: each a decision, or the error at its index in `errors`
     * that its Promise rejects with.
     */
    settle(errors) {
      const n = out[OUT_COUNT]
      for (let i = 0, k = OUT_HEAD; i < n; i++, k += OUTCOME) {
        const id = out[k]
        const r = this.calls.get(id)
        if (r === undefined) continue
        this.calls.delete(id)
        this.pool.pending--
        const e = out[k + 1]
        if (e >= 0) r.reject(errors[e])
        else r.resolve(decisionAt(out, k + 2))
      }
      if (this.calls.size === 0 && this.socket !== null) this.socket.unref()
    }

    /** The connection is gone: every call owed on it fails (never resent); the next call reconnects. */
    lose(s, reason) {
      if (this.socket !== s) return
      this.abort(reason)
      this.drop(s)
    }

    /** Forgets the socket and its session (whose calls were settled) and closes it. */
    drop(s) {
      if (this.socket === s) {
        this.socket = null
        this.session = null
        this.fd = -1
      }
      s.destroy()
    }

    /** Fails every call owed, with `reason`. */
    abort(reason) {
      if (this.session !== null) {
        const session = this.session
        this.settle(__pgAbort(session, reason, out))
        while (out[OUT_MORE] === 1) this.settle(__pgFeed(session, null, 0, out))
      }
      // Calls whose session went with an earlier socket (none expected): fail them too.
      for (const [id, r] of this.calls) {
        this.calls.delete(id)
        this.pool.pending--
        const e = new Error(reason)
        e.code = 'store_unavailable'
        r.reject(e)
      }
    }

    /** A call numbered `id` whose bytes `send(session)` prepares (it throws on bad arguments). */
    request(limiter, id, deadline) {
      if (this.socket === null) this.open(limiter)
      const p = new Promise(capture)
      this.calls.set(id, { resolve: captured.resolve, reject: captured.reject, deadline })
      this.pool.pending++
      if (this.calls.size === 1) this.socket.ref()
      if (deadline < this.timerAt) this.arm(deadline)
      return p
    }

    arm(deadline) {
      if (this.timer !== null) clearTimeout(this.timer)
      this.timerAt = deadline
      this.timer = setTimeout(this.onTimer, Math.max(1, deadline - Date.now()))
      this.timer.unref()
    }

    /** A call past its deadline drops the connection and fails every call owed on it. */
    expire() {
      this.timer = null
      this.timerAt = Infinity
      const now = Date.now()
      let next = Infinity
      let expired = false
      for (const r of this.calls.values()) {
        if (r.deadline <= now) expired = true
        else if (r.deadline < next) next = r.deadline
      }
      if (expired && this.socket !== null) {
        const t = this.pool.endpoint.timeoutMs
        this.abort(`the Postgres call timed out after ${t} ms, or its connection was dropped because a call on it did (not resent: it may have committed)`)
        this.drop(this.socket)
        return
      }
      if (this.calls.size > 0 && next !== Infinity) this.arm(next)
    }
  }

  /** A store's connections. */
  class Pool {
    constructor(endpoint) {
      this.endpoint = endpoint
      this.conns = []
      for (let i = 0; i < Math.max(1, endpoint.poolSize); i++) this.conns.push(new Conn(this))
      this.pending = 0
      this.nextId = 1
      this.closed = false
    }

    /** The connection with the fewest calls owed (the first on a tie). */
    pick() {
      let best = this.conns[0]
      if (this.pending === 0) return best
      for (let i = 1; i < this.conns.length; i++) if (this.conns[i].calls.size < best.calls.size) best = this.conns[i]
      return best
    }

    call(limiter, op, key, cost) {
      const c = this.pick()
      const id = this.nextId++
      if (this.nextId > 0xfffffff0) this.nextId = 1
      if (c.socket === null) c.open(limiter)
      const n = __pgCall(c.session, limiter, op, key, cost, id, scratch, c.direct()) // throws on bad arguments
      const p = c.request(limiter, id, Date.now() + this.endpoint.timeoutMs)
      c.written(n)
      return p
    }

    callMany(limiter, keys, cost) {
      const c = this.pick()
      const first = this.nextId
      if (c.socket === null) c.open(limiter)
      const n = __pgCallMany(c.session, limiter, keys, cost, first, scratch) // throws on bad arguments
      this.nextId += keys.length
      const deadline = Date.now() + this.endpoint.timeoutMs
      const ps = []
      for (let i = 0; i < keys.length; i++) ps.push(c.request(limiter, first + i, deadline))
      c.written(n)
      return Promise.all(ps)
    }

    close() {
      this.closed = true
      for (const c of this.conns) {
        c.abort('the Postgres store is closed')
        if (c.socket !== null) c.drop(c.socket)
      }
    }
  }

  const pools = new Map() // store number -> Pool
  const limiterPools = new WeakMap() // Limiter -> Pool | null

  /** The pool a limiter's Promise calls take, or null (the native methods answer). */
  function poolOf(limiter) {
    if (typeof limiter !== 'object' || limiter === null) return null
    let p = limiterPools.get(limiter)
    if (p === undefined) {
      let json = null
      try {
        json = __pgOf(limiter)
      } catch {
        json = null // not a Limiter: the native method throws its own error
      }
      p = null
      if (json !== null) {
        const endpoint = JSON.parse(json)
        p = pools.get(endpoint.id)
        if (p === undefined) {
          p = new Pool(endpoint)
          pools.set(endpoint.id, p)
        }
      }
      limiterPools.set(limiter, p)
    }
    return p === null || p.closed ? null : p
  }

  // For tests only: how many of the pool's sockets are open for a limiter, or null when its
  // Promise calls take the store's own connections.
  Object.defineProperty(api, Symbol.for('throttlekit.postgresSocket'), {
    value: (limiter) => {
      const p = poolOf(limiter)
      return p === null ? null : { open: p.conns.filter((c) => c.socket !== null).length }
    },
  })

  const L = api.Limiter.prototype
  const OP = { check: 0, peek: 1, forecast: 2 }
  for (const name of ['check', 'peek', 'forecast']) {
    const op = OP[name]
    const fallback = L[name]
    Object.defineProperty(L, name, {
      value: {
        [name](key, cost) {
          const p = poolOf(this)
          if (p === null) return fallback.apply(this, arguments)
          try {
            return p.call(this, op, key, cost)
          } catch (e) {
            return Promise.reject(e)
          }
        },
      }[name],
      writable: true,
      configurable: true,
    })
  }
  const nativeCheckMany = L.checkMany
  Object.defineProperty(L, 'checkMany', {
    value: function checkMany(keys, cost) {
      const p = poolOf(this)
      if (p === null) return nativeCheckMany.apply(this, arguments)
      try {
        return p.callMany(this, keys, cost)
      } catch (e) {
        return Promise.reject(e)
      }
    },
    writable: true,
    configurable: true,
  })
  const nativeClose = api.PostgresStore.prototype.close
  Object.defineProperty(api.PostgresStore.prototype, 'close', {
    value: function close() {
      let id = null
      try {
        id = __pgStoreId(this)
      } catch {}
      if (id !== null) pools.get(id)?.close()
      return nativeClose.apply(this, arguments)
    },
    writable: true,
    configurable: true,
  })
}
