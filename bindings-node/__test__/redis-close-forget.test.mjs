// A closed RedisStore leaves nothing behind in index.js: the socket it kept for the store's
// Promise calls (its buffers, the handshake with every script, the native connection state:
// about 96 KB a store) leaves its map at close, so a process that opens and closes stores all day
// does not keep one for every store it ever closed (the soak found that as a slow climb in Node's
// memory). Counted exactly, through a test-only hook: measured memory swings by megabytes between
// collections. And a limiter made on a store after its close gets the store's own answer,
// `store_unavailable`, without a socket being made for it again.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '../index.mjs'
import { startRedis, startRedisCluster } from './helpers/redis.mjs'

const socketsHeld = createRequire(import.meta.url)('../index.js')[Symbol.for('throttlekit.socketsHeld')]
const CYCLES = 20

let plain
let cluster
before(async () => {
  ;[plain, cluster] = await Promise.all([startRedis(), startRedisCluster()])
})
after(async () => {
  await plain?.stop()
  await cluster?.stop()
})

const strategy = Strategy.gcra({ limit: 10, periodMs: 1000 })
const prefix = `tk-forget-${process.pid}`

for (const [name, options] of [
  ['one node', () => ({ url: plain.url })],
  ['a cluster', () => ({ urls: cluster.urls, mode: 'cluster' })],
]) {
  test(`index.js holds no socket for a closed store (${name})`, async () => {
    const base = socketsHeld()
    const open = []
    for (let i = 0; i < CYCLES; i++) {
      const store = await RedisStore.connect(options())
      await new Limiter({ strategy, store, prefix, failPolicy: 'raise' }).check('k')
      open.push(store)
    }
    assert.equal(socketsHeld(), base + CYCLES, 'one socket per open store that made a Promise call')
    for (const store of open) await store.close()
    assert.equal(socketsHeld(), base, `sockets held after ${CYCLES} stores closed`)
  })

  test(`a limiter made on a closed store (${name}) gets store_unavailable, and no socket`, async () => {
    const store = await RedisStore.connect(options())
    await new Limiter({ strategy, store, prefix, failPolicy: 'raise' }).check('k')
    await store.close()
    const base = socketsHeld()
    await assert.rejects(new Limiter({ strategy, store, prefix, failPolicy: 'raise' }).check('k'), (e) => e.code === 'store_unavailable')
    assert.equal((await new Limiter({ strategy, store, failPolicy: 'fail_open' }).check('k')).allowed, true)
    assert.equal(socketsHeld(), base)
  })
}
