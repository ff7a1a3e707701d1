'use strict'
// The requests index.js hands lib/redis-transport.js (each {eval(), finish(reply, error,
// timedOut)}, see there): a limiter's script call, `reset`'s DEL, a multi limiter's fused call
// and a shaper's reservation. Made from the addon's functions, which index.js passes in under
// their own names, with its shared `io` slots and `decided` array. (Out of index.js to keep
// that file short.)

const { decisionAt } = require('./decision-slots.js')

module.exports = function requests(natives) {
  const { io, decided, __redisEval, __clusterFollow, __clusterHopBytes, __redisFinish, __redisFinishFast } = natives
  const { __redisFinishDel, __redisMultiBytes, __redisMultiFinish, __redisShaperFinish } = natives

  /**
   * One script call of a limiter on the wire (see lib/redis-transport.js for the protocol). It
   * keeps the call's ticket as the core made it (src/transport.rs, `write_ticket`): `now` (NaN:
   * Redis's clock) and `counted`, the cost of a fixed window's check sent in count mode (its reply
   * is the window's count), else 0; both go back to the core with the reply.
   */
  class ScriptRequest {
    constructor(t, limiter, op, key, cost, now, counted, h) {
      this.t = t
      this.limiter = limiter
      this.op = op
      this.key = key
      this.cost = cost
      this.now = now
      this.counted = counted
      this.h = h
      // Transport#request's fields, declared here so that every request has one shape from the
      // start (added later, each would move the object to a new hidden class per call).
      this.resolve = null
      this.reject = null
      this.done = false
      this.owner = null
      this.made = 0
      this.id = 0
      this.hop = 0
      this.slot = 0
    }

    eval() {
      return __redisEval(this.limiter, this.op, this.key, this.cost, this.now)
    }

    /** On a cluster: the next attempt after the error reply `frame` from `node` (lib/redis-cluster.js). */
    follow(node, frame, io) {
      return __clusterFollow(this.limiter, this.op, this.key, this.cost, this.now, node, this.hop, frame, io)
    }

    /** On a cluster: the bytes of an attempt sent as `hop` (after a reroute). */
    hopBytes(hop, io) {
      return __clusterHopBytes(this.limiter, this.op, this.key, this.cost, this.now, hop, io)
    }

    finish(reply, error, timedOut) {
      if (reply === null) {
        // No reply (the connection failed, or the call timed out): the fail policy's path.
        __redisFinish(this.limiter, this.op, this.now, this.counted, reply, error, timedOut ? this.t.timeoutMs : undefined, decided)
        return decisionAt(decided, 0)
      }
      io[6] = this.h
      io[9] = this.op
      __redisFinishFast(reply, this.now, this.counted)
      return decisionAt(io, 0)
    }
  }

  /** `reset`'s DEL on the wire. */
  class DelRequest {
    constructor(t) {
      this.t = t
    }

    eval() {
      return null
    }

    finish(reply, error, timedOut) {
      __redisFinishDel(reply, error, timedOut ? this.t.timeoutMs : undefined)
    }
  }

  /** A multi limiter's fused call on the wire. */
  class MultiRequest {
    constructor(t, multi, call) {
      this.t = t
      this.multi = multi
      this.call = call
    }

    eval() {
      return __redisMultiBytes(this.call, true, this.t.endpoint.functions)
    }

    finish(reply, error, timedOut) {
      return __redisMultiFinish(this.multi, this.call, reply, error, timedOut ? this.t.timeoutMs : undefined)
    }
  }

  /** A shaper's reservation on the wire; for `schedule`, a refusal throws `queue_full`. */
  class ReserveRequest {
    constructor(t, shaper, call, schedule) {
      this.t = t
      this.shaper = shaper
      this.call = call
      this.schedule = schedule
    }

    eval() {
      return __redisMultiBytes(this.call, true, this.t.endpoint.functions)
    }

    finish(reply, error, timedOut) {
      return __redisShaperFinish(this.shaper, this.call, reply, error, timedOut ? this.t.timeoutMs : undefined, this.schedule)
    }
  }

  return { ScriptRequest, DelRequest, MultiRequest, ReserveRequest }
}
