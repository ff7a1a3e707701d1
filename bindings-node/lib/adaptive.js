'use strict'
// The JS side of AdaptiveLimiter's permits (src/adaptive.rs). The native tryAcquire and acquire
// answer a granted permit with a number, its id in the limiter's table of held permits; this
// module wraps it in a plain JS `Permit`. A napi class instance per permit (an object made
// through napi, wrapped, with a native finalizer) cost most of the binding's acquire + release.
//
// A permit garbage-collected unreleased must still count as a leak (`ignore`, in
// `metrics().leaked`): one FinalizationRegistry per limiter forgets the ids of its collected
// permits. Registering is the only cost on the hot path: release does not unregister, because
// ids are never reused and forgetting a released id does nothing.

/** Replaces `AdaptiveLimiter#tryAcquire` and `#acquire` on `api` and sets `api.Permit`. */
function install(api) {
  const proto = api.AdaptiveLimiter.prototype
  const nativeTryAcquire = proto.tryAcquire
  const nativeAcquire = proto.acquire
  const nativeRelease = proto.__release
  const nativeReleased = proto.__released
  const nativeForget = proto.__forget
  const REGISTRY = Symbol('permits registry')

  /**
   * One admitted request's slot in the limit. Release it once with how the request ended;
   * releasing again does nothing and returns `false`.
   */
  class Permit {
    #limiter
    #id
    constructor(limiter, id) {
      this.#limiter = limiter
      this.#id = id
    }

    /**
     * Releases with `outcome` (`'success'` by default, `'ignore'` or `'dropped'`); the round
     * trip is measured by the core since the grant unless `rttNs` gives it. Returns whether
     * this call released the permit.
     */
    release(outcome, rttNs) {
      return nativeRelease.call(this.#limiter, this.#id, outcome, rttNs)
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
      nativeForget.call(this.#limiter, this.#id)
    }
  }
  // Not a constructor for users: `new Permit()` throws, as the native class's did.
  const makePermit = (limiter, id) => new Permit(limiter, id)
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
  function registryOf(limiter) {
    let r = limiter[REGISTRY]
    if (r === undefined) {
      r = new FinalizationRegistry((id) => nativeForget.call(limiter, id))
      Object.defineProperty(limiter, REGISTRY, { value: r })
    }
    return r
  }

  function wrap(limiter, answer) {
    if (typeof answer !== 'number') return answer
    const permit = makePermit(limiter, answer)
    registryOf(limiter).register(permit, answer)
    return permit
  }

  Object.defineProperty(proto, 'tryAcquire', {
    value: function tryAcquire(partition) {
      return wrap(this, nativeTryAcquire.call(this, partition))
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
