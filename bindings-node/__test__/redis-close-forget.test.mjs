// A closed RedisStore leaves nothing behind once the program drops it: index.js forgets the
// socket it kept for the store's Promise calls (its buffers, the handshake with every script, the
// native connection state: about 95 KB a store, which a process that opens and closes stores all
// day kept for each one it ever closed). And a limiter made on a store after its close gets the
// store's own answer, `store_unavailable`, without a socket being opened again.
import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { after, before, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '../index.mjs'
import { startRedis, startRedisCluster } from './helpers/redis.mjs'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
// Memory outside the heap first climbs over the first hundred or so stores and then holds (V8's
// and the allocator's own reserves): the count starts after WARM of them.
const WARM = 200
const CYCLES = 100

let plain
let cluster
before(async () => {
  ;[plain, cluster] = await Promise.all([startRedis(), startRedisCluster()])
})
after(async () => {
  await plain?.stop()
  await cluster?.stop()
})

/** Memory outside V8's heap (buffers, native objects) after two collections, each followed by a
 * turn of the loop so that finalizers run and free their native side. */
async function collected() {
  for (let i = 0; i < 2; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const m = process.memoryUsage()
  return m.external + m.arrayBuffers
}

async function cycle(options, prefix) {
  const store = await RedisStore.connect(options())
  const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }), store, prefix, failPolicy: 'raise' })
  await limiter.check('k')
  await store.close()
}

for (const [name, options] of [
  ['one node', () => ({ url: plain.url })],
  ['a cluster', () => ({ urls: cluster.urls, mode: 'cluster' })],
]) {
  test(`closed and dropped stores (${name}) are collected whole`, async () => {
    const prefix = `tk-forget-${process.pid}`
    for (let i = 0; i < WARM; i++) await cycle(options, prefix)
    const base = await collected()
    for (let i = 0; i < CYCLES; i++) await cycle(options, prefix)
    const grown = (await collected()) - base
    // Kept, the stores grew it by about 9.6 MB (96 KB each); what is left is the allocator's noise.
    assert.ok(grown < 2 * 1024 * 1024, `memory outside the heap grew ${(grown / 1024).toFixed(0)} KB over ${CYCLES} closed stores`)
  })

  test(`a limiter made on a closed store (${name}) gets store_unavailable`, async () => {
    const store = await RedisStore.connect(options())
    const strategy = Strategy.gcra({ limit: 10, periodMs: 1000 })
    await new Limiter({ strategy, store, prefix: `tk-forget-${process.pid}`, failPolicy: 'raise' }).check('k')
    await store.close()
    const late = new Limiter({ strategy, store, prefix: `tk-forget-${process.pid}`, failPolicy: 'raise' })
    await assert.rejects(late.check('k'), (e) => e.code === 'store_unavailable')
    assert.equal((await new Limiter({ strategy, store, failPolicy: 'fail_open' }).check('k')).allowed, true)
  })
}
