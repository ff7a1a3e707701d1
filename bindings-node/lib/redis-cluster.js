'use strict'
// The sockets a RedisStore's Promise calls travel on when the store is a Redis Cluster: one
// Transport (lib/redis-transport.js) per master, each call written on the socket of the master
// the core names for it. Why: the core's own cluster calls hop from the event loop to a Tokio
// thread and back, and those two thread switches cost more than the round trip
// (docs/bench-bindings.md, "Cluster").
//
// Every routing rule is the core's (`throttlekit::redis::routed`, through src/cluster.rs):
// which master serves a call's slot, what an error reply asks for (MOVED: the core learns the
// slot and reads the map again; ASK: ASKING and the call, pipelined, to the target; TRYAGAIN: a
// pause; NOSCRIPT or a missing function: that node's fallback), how many attempts a call may
// take (5), and where a call goes when its master's socket could not be made (the map read
// again: a failover). This module only carries out what the core says:
//
// - A call's deadline is set once, when it is made (`timeoutMs`); every attempt fits in it.
// - A reply that is not an error, or an error the core does not redirect, finishes the call.
// - A socket that failed, or a call that timed out, after the call was written on it: the call
//   fails (`store_unavailable`, the fail policy decides) and is never sent again; the core
//   reads the map again in the background. Only a socket that was never connected (nothing
//   written) lets the core reroute its calls.
const { Transport, finish, promiseOf } = require('./redis-transport.js')

const NO_MASTER = 0xffffffff

class ClusterTransport {
  /**
   * @param endpoint the store's {timeoutMs, ...} (from the core)
   * @param anchor a Limiter on the store: the natives reach the store's routes through it
   * @param natives {node, handshake, follow, reroute, hopBytes, lost}: src/cluster.rs's functions
   */
  constructor(endpoint, anchor, natives) {
    this.endpoint = endpoint
    this.timeoutMs = endpoint.timeoutMs
    this.anchor = anchor
    this.natives = natives
    this.nodes = [] // by the core's node number: its Transport
    this.io = new Float64Array(4) // [node, hop, pauseMs, replies] of the next attempt
    this.closed = false
    this.pending = 0 // calls on all its sockets (Transport#enqueue and #release count them)
    this.corked = [] // [transport, socket, ...]: the sockets corked this turn (flushLater)
    this.onFlush = () => this.flush()
  }

  /**
   * Transport `t` corked its socket `s` (Transport#write: a call made while some master of the
   * cluster owes replies): uncork it when this turn of the event loop has run its I/O callbacks
   * (`setImmediate`), with every other socket corked in the turn; every `BATCH` calls corked on
   * one socket leave at once, as on one server.
   *
   * Why a turn and not a tick, as on one server: the replies of several masters arrive in one
   * wake-up of this thread (one `epoll_wait` that finds several sockets readable), and Node runs
   * each socket's callback, and the Promise continuations it releases, in a tick of its own.
   * Each tick's calls spread over every master, so flushing per tick sent each master a third
   * of one socket's replies, several times per wake-up, and the CPU per call rose by about a
   * ninth (docs/bench-bindings.md, "Clusters"). Flushed per turn, each master gets one `writev`
   * with what the wake-up released for it. Why a call to a master that owes nothing still waits
   * while another master owes replies: written at once, it wakes that server for one call, and
   * that measured no faster.
   *
   * Why `BATCH` all the same: without it, a master's calls of a turn left in one write of up to
   * 64, so client and server took turns (the server idle while the client settled and prepared
   * a whole turn's calls, the client idle while the server ran them): with every key on one
   * master the 64-in-flight row read 0.71x of one server at about the same CPU per call.
   */
  flushLater(t, s) {
    if (this.corked.length === 0) setImmediate(this.onFlush)
    this.corked.push(t, s)
  }

  /** Uncorks the sockets corked this turn (flushLater); a socket replaced since is uncorked alone. */
  flush() {
    const corked = this.corked
    this.corked = []
    for (let i = 0; i < corked.length; i += 2) {
      const t = corked[i]
      const s = corked[i + 1]
      // The flag is the transport's current socket's: after a loss this turn it belongs to the
      // replacement (Transport#connect cleared it; a new cork is later in this list), if any.
      if (t.socket === s) t.corked = false
      s.uncork()
    }
  }

  /** The socket of master `id`, made on first use. */
  node(id) {
    let t = this.nodes[id]
    if (t === undefined) {
      const json = this.natives.node(this.anchor, id)
      if (json === null) return null
      t = new Transport(JSON.parse(json), this.natives.handshake(this.anchor, id), this, id)
      this.nodes[id] = t
    }
    return t
  }

  /**
   * Sends the first attempt of `r` ({follow(node, frame, io), hopBytes(hop, io), finish(...)})
   * to master `node` (the core's choice for `slot`); the Promise settles as Transport#request's.
   */
  request(r, bytes, node, slot) {
    const p = promiseOf(r)
    r.done = false
    r.owner = null
    r.hop = 0
    r.slot = slot
    const now = Date.now()
    r.made = now
    if (this.closed) {
      finish(r, null, 'the Redis store is closed', false)
      return p
    }
    try {
      // No master serves the slot now (a failover): fails as the core's own path does (the core
      // is reading the map again).
      const t = node === NO_MASTER ? null : this.node(node)
      if (t === null) finish(r, null, `no master serves slot ${slot} now (the cluster is failing over?)`, false)
      else t.enqueue(r, bytes, 1, now)
    } catch (e) {
      r.reject(e) // as a throw inside the executor did
    }
    return p
  }

  /**
   * The error reply `frame` came from `t` for `r`: true when the core sends `r` on (the
   * redirect taken), false when `frame` is `r`'s reply.
   */
  follow(t, r, frame) {
    const io = this.io
    let bytes
    try {
      bytes = r.follow(t.nodeId, frame, io)
    } catch (e) {
      finish(r, null, e.message, false) // too many redirects
      return true
    }
    if (bytes === null) return false
    r.owner = null
    t.release()
    r.hop = io[1]
    const node = io[0]
    const replies = io[3]
    if (io[2] > 0) setTimeout(() => this.send(r, node, bytes, replies), io[2])
    else this.send(r, node, bytes, replies)
    return true
  }

  send(r, node, bytes, replies) {
    if (r.done) return
    if (this.closed) return finish(r, null, 'the Redis store is closed', false)
    const t = this.node(node)
    if (t === null) return finish(r, null, `the cluster named an unknown node ${node}`, false)
    t.enqueue(r, bytes, replies)
  }

  /**
   * The socket of `t` was never connected (nothing written) and `r` was on it: the core reads
   * the map again and may name another master for `r`'s slot (a failover); else `r` fails with
   * `message`. Bounded by `r`'s deadline.
   */
  unsent(t, r, message) {
    const left = r.made + this.timeoutMs - Date.now()
    if (left <= 0 || this.closed) return finish(r, null, this.closed ? 'the Redis store is closed' : null, !this.closed)
    const timer = setTimeout(() => finish(r, null, null, true), left)
    const fail = () => {
      clearTimeout(timer)
      finish(r, null, message, false)
    }
    let rerouted
    try {
      rerouted = this.natives.reroute(this.anchor, r.slot, t.nodeId, r.hop)
    } catch {
      return fail()
    }
    rerouted.then((to) => {
      if (r.done) return
      if (to === null) return fail()
      clearTimeout(timer)
      let bytes
      try {
        bytes = r.hopBytes(to[1], this.io)
      } catch (e) {
        return finish(r, null, e.message, false)
      }
      r.hop = to[1]
      this.send(r, to[0], bytes, this.io[3])
    }, fail)
  }

  /** A call failed after it was written: the core reads the map again in the background. */
  lost() {
    try {
      this.natives.lost(this.anchor)
    } catch {}
  }

  /** Closes every socket once the requests in flight are answered (or timed out). */
  close() {
    this.closed = true
    for (const t of this.nodes) if (t !== undefined) t.close()
  }
}

module.exports = { ClusterTransport }
