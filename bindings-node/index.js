'use strict'
// @throttlekit/core — the CommonJS entry point. Every export is native (see src/); types are
// in index.d.ts (generated from the Rust sources; do not edit by hand).
const path = require('node:path')
const { bindingFile } = require('./lib/platform.js')

const file = path.join(__dirname, bindingFile())
let binding
try {
  binding = require(file)
} catch (e) {
  const err = new Error(
    `@throttlekit/core: could not load the native addon ${file} (${e.message}). ` +
      'Build it with `npm run build` in the package directory (needs a Rust toolchain).',
    { cause: e },
  )
  err.code = 'not_implemented'
  throw err
}

const { __bindIo, __handle, __checkSync, __liveHandles, ...api } = binding

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

// A limiter's handle (src/handles.rs) lives in a private field of its JS object, stamped on by
// the constructor-return trick: private fields are own-only (an object whose prototype is a
// limiter has none), cannot be read or written outside this module, and load as fast as a
// property. The native side checks every handle anyway; this only spares it napi_unwrap.
class Receiver {
  constructor(o) {
    return o
  }
}
class Handle extends Receiver {
  #id
  constructor(o, id) {
    super(o)
    this.#id = id
  }

  static of(o) {
    if (typeof o === 'object' && o !== null && #id in o) return o.#id
    const id = __handle(o) // throws config_invalid unless `o` is a constructed Limiter
    new Handle(o, id)
    return id
  }
}

const nativeCheckSync = api.Limiter.prototype.checkSync
Object.defineProperty(api.Limiter.prototype, 'checkSync', {
  value: function checkSync(key, cost) {
    const n = copyKey(key)
    io[6] = Handle.of(this)
    io[8] = n
    if (cost === undefined || typeof cost === 'number') {
      io[7] = cost === undefined ? 1 : cost
      if (n < 0) __checkSync(key)
      else __checkSync()
    } else {
      __checkSync(key, cost) // not a number: throws config_invalid
    }
    const d = { allowed: io[0] === 1, limit: io[1], remaining: io[2], resetAt: io[3], retryAfterMs: io[4] }
    if (io[5] === 1) d.fallback = true
    return d
  },
  writable: true,
  configurable: true,
})

module.exports = api
// For tests only: the napi-rs method the fast path replaces, and the fast path's internals
// (never the shared buffer itself). `call` writes a raw handle and cost, as checkSync would.
Object.defineProperty(module.exports, Symbol.for('throttlekit.nativeCheckSync'), { value: nativeCheckSync })
Object.defineProperty(module.exports, Symbol.for('throttlekit.fastPath'), {
  value: Object.freeze({
    handle: __handle,
    liveHandles: __liveHandles,
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
