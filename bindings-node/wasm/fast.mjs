// The typed fast path of a memory-store Limiter (the JavaScript half of bindings-wasm/src/fast.rs):
// `checkSync`, `peekSync`, `forecastSync`, `resetSync` and their Promise forms write the key's
// UTF-8 bytes into a fixed scratch area of the module's memory (or leave them there when the key
// is the one last written), call one export with numbers only, read the decision's numbers back
// from the area and build the decision object here. A call with any other argument (a key that
// is not a string, a cost that is neither undefined nor a number, a key past the area), a
// limiter whose store answers asynchronously, or a freed limiter takes wasm-bindgen's methods
// unchanged: the same errors, the same decisions. `Limiter` here is the package's (api.mjs
// exports it); `attach` gives it the instantiated module.
import { Limiter as RawLimiter, __takeError } from './pkg/throttlekit.js'

/** bindings-wasm/src/fast.rs's KEY_CAP; a key of more UTF-16 units than a third of it may not fit. */
const KEY_CAP = 3072
const KEY_UNITS = KEY_CAP / 3
const KEY_AT = 48

let exports
/** `exports.tk_limiter`, read once: the exports object has hundreds of properties (a dictionary
 * to V8), so reading it at each call went through the generic LoadIC (about 5 ns a call). */
let tkLimiter
let scratch = 0
/** The key's part of the scratch area, and the decision's numbers. Both are empty once the
 * memory grew (growing detaches the old buffer); `views` then makes them again. */
let keyBytes = new Uint8Array(0)
let numbers = new Float64Array(0)
const encoder = new TextEncoder()
/** The key whose UTF-8 bytes the scratch area holds, and their length (see `writeKey`). */
const last = { key: undefined, len: 0 }

/** Views over the module's memory, made again after it grew (a grown memory detaches the old buffer). */
function views() {
  const buffer = exports.memory.buffer
  keyBytes = new Uint8Array(buffer, scratch + KEY_AT, KEY_CAP)
  numbers = new Float64Array(buffer, scratch, 6)
}

/**
 * Writes `key` to the scratch area as UTF-8 (what fast.rs reads without validating it): ASCII
 * by a char-code loop, the rest by `encodeInto` from the first other unit on, which writes only
 * well-formed UTF-8 (a lone surrogate becomes U+FFFD, as wasm-bindgen's own string passing does)
 * and only whole characters. Returns its length in bytes.
 */
function writeKey(key) {
  // The area still holds the last key written (nothing else writes there, and a grown memory
  // keeps its bytes): a limiter checked on one key again and again writes nothing.
  if (key === last.key) return last.len
  let out = keyBytes
  if (out.length === 0) {
    views()
    out = keyBytes
  }
  const n = key.length
  let i = 0
  for (; i < n; i++) {
    const c = key.charCodeAt(i)
    if (c > 0x7f) break
    out[i] = c
  }
  if (i !== n) i += encoder.encodeInto(key.slice(i), out.subarray(i)).written
  last.key = key
  last.len = i
  return i
}

/** fast.rs's HOST_CLOCK: the limiter reads the host's clock, which is read here. */
const HOST_CLOCK = 1

/** One operation (fast.rs's `tk_limiter`): the decision, `undefined` for a reset; throws the core's error. */
function call(handle, op, key, cost) {
  const len = writeKey(key)
  // Read at each call, never kept: a Worker freezes `Date.now()` within a request itself.
  const now = (handle & HOST_CLOCK) === 0 || op === 3 ? NaN : Date.now()
  const status = tkLimiter(handle, op, len, cost === undefined ? 1 : cost, now)
  if (status === 0) {
    let o = numbers
    if (o.length === 0) {
      views()
      o = numbers
    }
    const d = { allowed: o[0] === 1, limit: o[1], remaining: o[2], resetAt: o[3], retryAfterMs: o[4] }
    if (o[5] === 1) d.fallback = true
    return d
  }
  if (status === 1) return undefined
  throw __takeError()
}

/** Settles like wasm-bindgen's Promise methods on the memory store: at once. */
function settled(handle, op, key, cost) {
  try {
    return Promise.resolve(call(handle, op, key, cost))
  } catch (e) {
    return Promise.reject(e)
  }
}

/** Whether a call with these arguments may take the fast path (its limiter's handle aside). */
function typed(key, cost) {
  return typeof key === 'string' && key.length <= KEY_UNITS && (cost === undefined || typeof cost === 'number')
}

/**
 * The WebAssembly build's `Limiter`: wasm-bindgen's class, with the fast path in front of its
 * memory-store methods. `#fast` is the handle of fast.rs (0 when the store answers only
 * asynchronously); wasm-bindgen zeroes `__wbg_ptr` when the limiter is freed, and its own
 * methods then throw.
 */
export class Limiter extends RawLimiter {
  #fast

  constructor(options) {
    super(options)
    this.#fast = this.__fastHandle
  }

  /** The handle when a call with these arguments takes the fast path, else 0. */
  #handle(key, cost) {
    return typed(key, cost) && this.__wbg_ptr !== 0 ? this.#fast : 0
  }

  checkSync(key, cost) {
    const h = this.#handle(key, cost)
    return h === 0 ? super.checkSync(key, cost) : call(h, 0, key, cost)
  }

  check(key, cost) {
    const h = this.#handle(key, cost)
    return h === 0 ? super.check(key, cost) : settled(h, 0, key, cost)
  }

  peekSync(key) {
    const h = this.#handle(key, undefined)
    return h === 0 ? super.peekSync(key) : call(h, 1, key, undefined)
  }

  peek(key) {
    const h = this.#handle(key, undefined)
    return h === 0 ? super.peek(key) : settled(h, 1, key, undefined)
  }

  forecastSync(key, cost) {
    const h = this.#handle(key, cost)
    return h === 0 ? super.forecastSync(key, cost) : call(h, 2, key, cost)
  }

  forecast(key, cost) {
    const h = this.#handle(key, cost)
    return h === 0 ? super.forecast(key, cost) : settled(h, 2, key, cost)
  }

  resetSync(key) {
    const h = this.#handle(key, undefined)
    return h === 0 ? super.resetSync(key) : call(h, 3, key, undefined)
  }

  reset(key) {
    const h = this.#handle(key, undefined)
    return h === 0 ? super.reset(key) : settled(h, 3, key, undefined)
  }
}

/**
 * Hands the fast path the instance's exports (what `initSync`/`init` returned). Each entry calls
 * it once, after instantiating and before any limiter is made.
 */
export function attach(wasmExports) {
  exports = wasmExports
  tkLimiter = exports.tk_limiter
  scratch = exports.tk_scratch()
  last.key = undefined
  views()
}
