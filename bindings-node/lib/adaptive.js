'use strict'
// The JS side of AdaptiveLimiter's permits (src/adaptive.rs). The native tryAcquire and acquire
// answer a granted permit with a number, its id in the limiter's table of held permits; this
// module wraps it in a plain JS `Permit`. A napi class instance per permit (an object made
// through napi, wrapped, with a native finalizer) cost most of the binding's acquire + release.
//
// tryAcquire and release take the fast path (src/adaptive_fast.rs) when they can: the limiter's
// handle, the permit's id and the outcome (0 success, 1 ignore, 2 dropped) go through index.js's
// shared Float64Array `io` and the answer comes back in it, with no napi value made or read but
// the partition. A napi-rs method call cost ~0.3 µs before doing anything on the bench's guest.
// Anything else (a partition that is not a string, an unknown outcome, a round trip given)
// takes the native method, which throws its coded error or answers the same way.
//
// A permit garbage-collected unreleased must still count as a leak (`ignore`, in
// `metrics().leaked`): one FinalizationRegistry per limiter forgets the ids of its collected
// permits. Registering is the only cost on the hot path: release does not unregister, because
// ids are never reused and forgetting a released id does nothing.
const { handleField } = require('./handle-field.js')

/**
 * Replaces `AdaptiveLimiter#tryAcquire` and `#acquire` on `api` and sets `api.Permit`. `fast` is
 * index.js's shared buffer `io` and the native `handle`, `tryAcquire`, `release` and `forget`
 * functions of src/adaptive_fast.rs.
 */
function install(api, fast) {
  const { io } = fast
  const fastHandle = fast.handle
  const fastTryAcquire = fast.tryAcquire
  const fastRelease = fast.release
  const fastForget = fast.forget
  const proto = api.AdaptiveLimiter.prototype
  const nativeTryAcquire = proto.tryAcquire
  const nativeAcquire = proto.acquire
  const nativeRelease = proto.__release
  const nativeReleased = proto.__released
  const REGISTRY = Symbol('permits registry')

  /**
   * One admitted request's slot in the limit. Release it once with how the request ended;
   * releasing again does nothing and returns `false`.
   */
  class Permit {
    // The limiter itself, not only its handle: a held permit keeps its limiter (and so the
    // handle's table entry) alive.
    #limiter
    #handle
    #id
    constructor(limiter, handle, id) {
      this.#limiter = limiter
      this.#handle = handle
      this.#id = id
    }

    /**
     * Releases with `outcome` (`'success'` by default, `'ignore'` or `'dropped'`); the round
     * trip is measured by the core since the grant unless `rttNs` gives it. Returns whether
     * this call released the permit.
     */
    release(outcome, rttNs) {
      const code =
        outcome === undefined || outcome === 'success' ? 0 : outcome === 'ignore' ? 1 : outcome === 'dropped' ? 2 : -1
      if (code < 0 || rttNs !== undefined) return nativeRelease.call(this.#limiter, this.#id, outcome, rttNs)
      io[6] = this.#handle
      io[7] = this.#id
      io[8] = code
      fastRelease()
      return io[0] === 1
    }

    /** Always `true` (a `Rejection`'s is `false`). */
    get granted() {
      return true
    }

    /** Whether it was released. */
    get released() {
      return nativeReleased.call(this.#limiter, this.#id)
    }

    /** Drops it unreleased now, as the garbage collector would: for the conformance runner. */
    __forget() {
      forget(this.#handle, this.#id)
    }
  }
  // Not a constructor for users: `new Permit()` throws, as the native class's did.
  const makePermit = (limiter, handle, id) => new Permit(limiter, handle, id)
  const PublicPermit = function Permit() {
    throw new TypeError('Permit has no public constructor: use AdaptiveLimiter#tryAcquire or #acquire')
  }
  PublicPermit.prototype = Permit.prototype
  Object.defineProperty(Permit.prototype, 'constructor', { value: PublicPermit, writable: true, configurable: true })

  // `using permit = limiter.tryAcquire()` (TypeScript 5.2+, or a runtime with explicit resource
  // management): leaving the block releases the permit as `ignore` unless the body released it.
  if (typeof Symbol.dispose === 'symbol') {
    Object.defineProperty(Permit.prototype, Symbol.dispose, {
      value: function dispose() {
        this.release('ignore')
      },
      writable: true,
      configurable: true,
    })
  }

  /**
   * The limiter's registry of permits to forget when collected, made at its first grant and kept
   * on it under a module-private symbol (a property load; a WeakMap lookup cost more).
   */
  function registryOf(limiter, handle) {
    let r = limiter[REGISTRY]
    if (r === undefined) {
      r = new FinalizationRegistry((id) => forget(handle, id))
      Object.defineProperty(limiter, REGISTRY, { value: r })
    }
    return r
  }

  /**
   * Drops permit `id` of the limiter whose handle is `handle` unreleased (a leak); nothing when
   * it was released. A FinalizationRegistry callback runs as a task of its own, never inside
   * another call that is using `io`.
   */
  function forget(handle, id) {
    io[6] = handle
    io[7] = id
    fastForget()
  }

  /** A new `Permit` for id `id` of `limiter` (whose handle is `handle`). */
  function grant(limiter, handle, id) {
    const permit = makePermit(limiter, handle, id)
    registryOf(limiter, handle).register(permit, id)
    return permit
  }

  function wrap(limiter, answer) {
    if (typeof answer !== 'number') return answer
    return grant(limiter, handleOf(limiter), answer)
  }

  // An AdaptiveLimiter's handle (src/handles.rs), kept in a private field of its JS object;
  // fastHandle throws config_invalid unless its argument is a constructed AdaptiveLimiter.
  const handleOf = handleField(fastHandle)

  Object.defineProperty(proto, 'tryAcquire', {
    value: function tryAcquire(partition) {
      if (partition !== undefined && partition !== null && typeof partition !== 'string') {
        return wrap(this, nativeTryAcquire.call(this, partition)) // throws config_invalid
      }
      const handle = handleOf(this)
      io[6] = handle
      if (partition === undefined || partition === null) fastTryAcquire()
      else fastTryAcquire(partition)
      if (io[0] === 1) return grant(this, handle, io[1])
      return { granted: false, limit: io[1], inflight: io[2], retryAfterMs: io[3], retryAfterSecs: io[4] }
    },
    writable: true,
    configurable: true,
  })
  Object.defineProperty(proto, 'acquire', {
    value: function acquire(options) {
      return nativeAcquire.call(this, options).then((answer) => wrap(this, answer))
    },
    writable: true,
    configurable: true,
  })
  api.Permit = PublicPermit
}

module.exports = { install }
