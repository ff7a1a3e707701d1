// The WebAssembly build decides exactly as the native addon: random sequences of checks, peeks,
// forecasts and resets at random times, replayed through both, give equal results.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import * as native from '../../bindings-node/index.mjs'
import * as wasm from '../../bindings-node/wasm/node.mjs'
import { rng } from './support/rng.mjs'

const SPECS = [
  { kind: 'gcra', options: { limit: 7, periodMs: 1000, burst: 3 } },
  { kind: 'tokenBucket', options: { capacity: 5, refillPerSec: 2.5 } },
  { kind: 'fixedWindow', options: { limit: 4, windowMs: 700 } },
  { kind: 'slidingWindow', options: { limit: 6, windowMs: 1000, buckets: 4 } },
  { kind: 'slidingWindowLog', options: { limit: 3, windowMs: 500 } },
  { kind: 'quota', options: { limit: 9, resetCadence: 'calendar-day', offsetMinutes: 60 } },
  { kind: 'quota', options: { limit: 9, resetCadence: 'rolling', periodMs: 3000, buckets: 3 } },
]

function run(tk, spec, seed) {
  const next = rng(seed)
  const clock = new tk.ManualClock(1_700_000_000_000)
  const l = new tk.Limiter({ strategy: spec, clock, prefix: 'p' })
  const out = []
  for (let i = 0; i < 400; i++) {
    clock.advance(Math.floor(next() * 150))
    const key = `k${Math.floor(next() * 3)}`
    const r = next()
    const cost = 1 + Math.floor(next() * 3)
    if (r < 0.7) out.push(l.checkSync(key, cost))
    else if (r < 0.8) out.push(l.peekSync(key))
    else if (r < 0.9) out.push(l.forecastSync(key, cost))
    else if (r < 0.95) out.push(l.checkManySync([key, 'k9'], cost))
    else out.push(l.resetSync(key) ?? 'reset')
  }
  return out
}

for (const spec of SPECS) {
  test(`${spec.kind} ${JSON.stringify(spec.options)}`, () => {
    for (const seed of [1, 2, 3, 42]) assert.deepEqual(run(wasm, spec, seed), run(native, spec, seed), `seed ${seed}`)
  })
}

test('a strategy reads back the spec it was built from', () => {
  for (const spec of SPECS) {
    assert.deepEqual(wasm.Strategy.fromSpec(spec).toSpec(), native.Strategy.fromSpec(spec).toSpec())
    // The same text too: the options in the same order (the WebAssembly build writes them by
    // hand, the native addon through serde_json's sorted map).
    assert.equal(JSON.stringify(wasm.Strategy.fromSpec(spec)), JSON.stringify(native.Strategy.fromSpec(spec)))
    assert.equal(wasm.Strategy.fromSpec(spec).limit, native.Strategy.fromSpec(spec).limit)
  }
})

test('a shared MemoryStore is shared; size and evictions as native', () => {
  for (const tk of [wasm, native]) {
    const store = new tk.MemoryStore({ maxKeys: 2 })
    const clock = new tk.ManualClock(0)
    const a = new tk.Limiter({ strategy: { kind: 'fixedWindow', options: { limit: 1, windowMs: 1000 } }, store, clock })
    const b = new tk.Limiter({ strategy: { kind: 'fixedWindow', options: { limit: 1, windowMs: 1000 } }, store, clock })
    assert.equal(a.checkSync('x').allowed, true)
    assert.equal(b.checkSync('x').allowed, false, 'the same store, the same key')
    a.checkSync('y')
    a.checkSync('z')
    assert.equal(store.size, 2)
    assert.equal(store.evictions, 1)
  }
})
