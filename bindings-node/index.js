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

const { __bindOutput, __handle, __checkSync, __liveHandles, ...api } = binding

// The fast path of Limiter#checkSync (see src/fast.rs): the native side decides and writes the
// decision into `out`; V8 builds the object here, which is several times cheaper than creating
// it through napi. Same arguments, result and errors as the native method it replaces.
const out = new Float64Array(6)
__bindOutput(out)

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
    __checkSync(Handle.of(this), key, cost === undefined ? 1 : cost)
    const d = { allowed: out[0] === 1, limit: out[1], remaining: out[2], resetAt: out[3], retryAfterMs: out[4] }
    if (out[5] === 1) d.fallback = true
    return d
  },
  writable: true,
  configurable: true,
})

module.exports = api
// For tests only: the napi-rs method the fast path replaces, and how many limiters this
// thread's handle table lists.
Object.defineProperty(module.exports, Symbol.for('throttlekit.nativeCheckSync'), { value: nativeCheckSync })
Object.defineProperty(module.exports, Symbol.for('throttlekit.liveHandles'), { value: __liveHandles })
