// The typed fast path of a memory-store Limiter (bindings-node/wasm/fast.mjs, bindings-wasm/src/
// fast.rs) answers exactly as wasm-bindgen's path and the native addon: keys of every shape (ASCII,
// multi-byte, lone surrogates, empty, at and past the scratch area's size), costs of every shape,
// the module's memory growing under it, a freed limiter, and stores that answer only
// asynchronously.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import * as native from '../../bindings-node/index.mjs'
import * as wasm from '../../bindings-node/wasm/node.mjs'

const spec = { kind: 'gcra', options: { limit: 3, periodMs: 1000, burst: 2 } }

/** What `f` returns, or the error's code, message and retryAfterMs. */
function outcome(f) {
  try {
    return { value: f() }
  } catch (e) {
    return { code: e.code, message: e.message, retryAfterMs: e.retryAfterMs }
  }
}

/** Both builds' limiters at one manual instant. */
function pair(strategy = spec) {
  const make = (tk) => new tk.Limiter({ strategy, clock: new tk.ManualClock(1_700_000_000_000), prefix: 'p' })
  return [make(wasm), make(native)]
}

const KEYS = [
  'a',
  '',
  'user:42',
  'ключ', // two bytes a unit
  'k€y', // three bytes, after ASCII
  '😀 emoji', // a surrogate pair first
  'lone \ud800 surrogate', // replaced by U+FFFD in both builds
  'x'.repeat(1024), // the longest key the fast path takes (a third of its 3072 bytes)
  'x'.repeat(1025), // one past: wasm-bindgen's path
  '€'.repeat(1024), // 3072 bytes exactly
  'y'.repeat(70_000), // far past: the core's own key-length rule, through wasm-bindgen's path
]

test('every key shape: the same decisions and errors as the native addon', () => {
  const [w, n] = pair()
  for (const key of KEYS) {
    for (const op of ['checkSync', 'peekSync', 'forecastSync', 'checkSync', 'checkSync', 'resetSync', 'checkSync']) {
      assert.deepEqual(outcome(() => w[op](key, 1)), outcome(() => n[op](key, 1)), `${op}(${JSON.stringify(key).slice(0, 40)})`)
    }
  }
})

test('every cost shape: the same decisions and errors as the native addon', () => {
  const costs = [undefined, 1, 2, 3, 0, -1, 1.5, NaN, Infinity, 2 ** 53, 2 ** 64, '1', null, 1n, {}]
  for (const cost of costs) {
    const [w, n] = pair()
    for (const op of ['checkSync', 'forecastSync', 'checkSync', 'peekSync']) {
      assert.deepEqual(outcome(() => w[op]('k', cost)), outcome(() => n[op]('k', cost)), `${op}('k', ${String(cost)})`)
    }
  }
})

test('the last key kept in the scratch area serves only that key', () => {
  // fast.mjs writes a key's bytes only when it differs from the last key written: a key checked
  // after another of the same length, after a prefix of itself, after the same text in another
  // string, after a key that took wasm-bindgen's path or failed, and on two limiters, must each
  // be decided on its own bytes.
  const [w, n] = pair()
  const [w2, n2] = pair()
  const sameText = ['user:', '7'].join('')
  const sequence = ['user:7', 'user:8', 'user:7', sameText, 'user:', 'user:78', 'user:7', 'ключ', 'ключи', 'ключ',
    'x'.repeat(1025), 'x'.repeat(1024), 'x'.repeat(1025), 'user:7', 'user:8', 'user:8']
  for (const [i, key] of sequence.entries()) {
    for (const [lw, ln] of [[w, n], [w2, n2], [w, n]]) {
      assert.deepEqual(outcome(() => lw.checkSync(key)), outcome(() => ln.checkSync(key)), `${i}: checkSync(${key.slice(0, 12)})`)
    }
    // A failed call between two calls on one key.
    assert.deepEqual(outcome(() => w.checkSync(key, -1)), outcome(() => n.checkSync(key, -1)))
    assert.deepEqual(outcome(() => w.peekSync(key)), outcome(() => n.peekSync(key)), `${i}: peekSync(${key.slice(0, 12)})`)
  }
})

test('non-string keys take wasm-bindgen path and fail as the native addon', () => {
  const [w, n] = pair()
  for (const key of [undefined, null, 1, {}, ['a'], Symbol('s')]) {
    for (const op of ['checkSync', 'peekSync', 'forecastSync', 'resetSync']) {
      assert.deepEqual(outcome(() => w[op](key)), outcome(() => n[op](key)), `${op}(${String(key)})`)
    }
  }
})

test('the Promise forms settle as the native addon', async () => {
  const [w, n] = pair()
  for (const [op, args] of [['check', ['k']], ['check', ['k', 2]], ['peek', ['k']], ['forecast', ['k', 1]], ['reset', ['k']], ['check', ['k', 0]], ['check', [5]]]) {
    const settle = (p) => p.then((value) => ({ value }), (e) => ({ code: e.code, message: e.message }))
    const pw = w[op](...args)
    assert.ok(pw instanceof Promise, `${op} returns a Promise`)
    assert.deepEqual(await settle(pw), await settle(n[op](...args)), `${op}(${args.join(', ')})`)
  }
})

test('decisions stay right while the module memory grows under the fast path', () => {
  // 30 000 distinct keys make the memory store allocate well past the module's first pages,
  // which detaches the views the fast path holds; every decision must still read right.
  const w = new wasm.Limiter({ strategy: { kind: 'fixedWindow', options: { limit: 2, windowMs: 60_000 } }, clock: new wasm.ManualClock(0) })
  for (let i = 0; i < 30_000; i++) {
    const key = `grow:${i}:${'z'.repeat(i % 200)}`
    const a = w.checkSync(key)
    const b = w.checkSync(key)
    const c = w.checkSync(key)
    assert.deepEqual([a.allowed, a.remaining, b.allowed, b.remaining, c.allowed, c.remaining], [true, 1, true, 0, false, 0], key)
  }
})

test('fail-open fallbacks and a frozen clock read back through the scratch area', () => {
  const clock = new wasm.ManualClock(5_000)
  const w = new wasm.Limiter({ strategy: spec, clock })
  const seen = new Set()
  for (let i = 0; i < 50; i++) seen.add(JSON.stringify(w.checkSync('frozen')))
  // 2 admits (burst), then one denial repeated: the same retryAfterMs at one instant.
  assert.equal(seen.size, 3)
  const last = w.checkSync('frozen')
  assert.equal(last.allowed, false)
  assert.equal('fallback' in last, false)
})

test('a freed limiter throws, as wasm-bindgen does', () => {
  const w = new wasm.Limiter({ strategy: spec })
  assert.equal(w.checkSync('k').allowed, true)
  w.free()
  assert.throws(() => w.checkSync('k'))
  assert.throws(() => w.peekSync('k'))
})

test('a store that answers only asynchronously keeps its sync methods refused', () => {
  const store = new wasm.RedisRestStore({ url: 'http://127.0.0.1:9', token: 't' })
  const w = new wasm.Limiter({ strategy: spec, store })
  for (const op of ['checkSync', 'peekSync', 'forecastSync', 'resetSync']) {
    assert.equal(outcome(() => w[op]('k')).code, 'not_implemented', op)
  }
})
