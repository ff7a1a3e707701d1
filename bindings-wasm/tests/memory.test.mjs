// The module's heap (bindings-wasm/src/heap.rs) reuses what is freed: a memory store that keeps
// evicting old keys for new ones, a store and limiters made and freed over and over, and keys
// reset, run in a memory that stops growing after the first rounds. An allocator that lost its
// freed blocks would grow the memory by megabytes here. The rounds repeat the same sizes (a
// block serves its own size class only: a key one byte longer may take a fresh block once).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'

import * as wasm from '../../bindings-node/wasm/node.mjs'
import { initSync } from '../../bindings-node/wasm/pkg/throttlekit.js'

// The entry has instantiated the module already: `initSync` hands back that instance's exports.
const { memory } = initSync({
  module: readFileSync(new URL('../../bindings-node/wasm/pkg/throttlekit_bg.wasm', import.meta.url)),
})

const strategy = { kind: 'slidingWindowLog', options: { limit: 50, windowMs: 60_000 } }

/** One round: 2000 fresh keys (of varied lengths) through a 500-key store, which evicts. */
function round(limiter, r) {
  for (let i = 0; i < 2000; i++) {
    const d = limiter.checkSync(`round ${r} user ${i} ${'x'.repeat(i % 97)}`)
    assert.equal(d.allowed, true)
  }
}

test('a store that evicts keys for new ones reuses their memory', () => {
  const store = new wasm.MemoryStore({ maxKeys: 500 })
  const limiter = new wasm.Limiter({ strategy, store })
  for (let r = 0; r < 3; r++) round(limiter, r)
  const settled = memory.buffer.byteLength
  for (let r = 3; r < 40; r++) round(limiter, r)
  assert.equal(store.size, 500)
  assert.ok(store.evictions >= 39 * 2000 - 500)
  assert.equal(memory.buffer.byteLength, settled, 'the memory grew after the first rounds')
})

test('stores, limiters and keys made and freed reuse their memory', () => {
  const cycle = (r) => {
    const store = new wasm.MemoryStore()
    const limiter = new wasm.Limiter({ strategy, store, prefix: `p${String(r).padStart(3, '0')}` })
    for (let i = 0; i < 3000; i++) limiter.checkSync(`key ${i}`, 1 + (i % 5))
    for (let i = 0; i < 3000; i += 2) limiter.resetSync(`key ${i}`)
    assert.equal(store.size, 1500)
    limiter.free()
    store.free()
  }
  // The first rounds settle the sizes the store's table and the instance list reach (one more
  // page at the tenth round, after the first test, and none in the 400 after).
  for (let r = 0; r < 20; r++) cycle(r)
  const settled = memory.buffer.byteLength
  for (let r = 20; r < 80; r++) cycle(r)
  assert.equal(memory.buffer.byteLength, settled, 'the memory grew after the first rounds')
})
