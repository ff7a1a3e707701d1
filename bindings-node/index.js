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

const { __bindOutput, __checkSyncInto, ...api } = binding

// The fast path of Limiter#checkSync (see src/fast.rs): the native side decides and writes the
// decision into `out`; V8 builds the object here, which is several times cheaper than creating
// it through napi. Same arguments, result and errors as the native method it replaces.
const out = new Float64Array(6)
__bindOutput(out)
const nativeCheckSync = api.Limiter.prototype.checkSync
Object.defineProperty(api.Limiter.prototype, 'checkSync', {
  value: function checkSync(key, cost) {
    __checkSyncInto(this, key, cost)
    const d = { allowed: out[0] === 1, limit: out[1], remaining: out[2], resetAt: out[3], retryAfterMs: out[4] }
    if (out[5] === 1) d.fallback = true
    return d
  },
  writable: true,
  configurable: true,
})

module.exports = api
// For the equivalence test only: the napi-rs method the fast path replaces.
Object.defineProperty(module.exports, Symbol.for('throttlekit.nativeCheckSync'), { value: nativeCheckSync })
