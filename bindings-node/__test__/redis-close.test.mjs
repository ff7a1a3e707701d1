// close() releases what a RedisStore holds at once, not when the garbage collector finalizes the
// store: its connections, and the core store's runtime (a thread and its descriptors). The
// stores stay referenced (so nothing is collected) and no GC is forced; Linux /proc counts.
//
// Nor does index.js keep anything of a closed store: the socket it kept for the store's Promise
// calls (its buffers, the handshake with every script, the native connection state: about 96 KB
// a store) leaves its map at close, so a process that opens and closes stores all day does not
// keep one for every store it ever closed (the soak found that as a slow climb in Node's memory).
// Counted exactly through a test-only hook: measured memory swings by megabytes between
// collections. A limiter made on a store after its close gets the store's own answer,
// `store_unavailable`, without a socket being made for it again.
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '../index.mjs'
import { startRedis, startRedisCluster } from './helpers/redis.mjs'

const CYCLES = 5
const socketsHeld = createRequire(import.meta.url)('../index.js')[Symbol.for('throttlekit.socketsHeld')]
const strategy = Strategy.gcra({ limit: 10, periodMs: 1000 })
const prefix = `tk-close-${process.pid}`
let plain
let cluster

before(async () => {
  ;[plain, cluster] = await Promise.all([startRedis(), startRedisCluster()])
})
after(async () => {
  await plain?.stop()
  await cluster?.stop()
})

const count = () => ({ fds: readdirSync('/proc/self/fd').length, threads: readdirSync('/proc/self/task').length })

/** Waits (up to 10 s) for the counts to fall back within `slack` of `base`; the last counts. */
async function settled(base, slack) {
  let now = count()
  for (let i = 0; i < 200 && (now.fds > base.fds + slack || now.threads > base.threads); i++) {
    await new Promise((r) => setTimeout(r, 50))
    now = count()
  }
  return now
}

for (const [name, options] of [
  ['one node', () => ({ url: plain.url })],
  ['a cluster', () => ({ urls: cluster.urls, mode: 'cluster' })],
]) {
  test(`closed stores (${name}) hold no descriptor or thread, without GC`, async () => {
    // One store made and closed first: the process's one-time set-up (napi's runtime, the
    // addon) is not counted.
    const warm = await RedisStore.connect(options())
    await new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }), store: warm, failPolicy: 'raise' }).check('k')
    await warm.close()
    const base = await settled(count(), 0)
    const kept = []
    for (let i = 0; i < CYCLES; i++) {
      const store = await RedisStore.connect(options())
      const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }), store, prefix: `tk-close-${process.pid}`, failPolicy: 'raise' })
      await limiter.check('k')
      limiter.checkSync('k')
      await store.close()
      kept.push(store, limiter) // referenced to the end: GC cannot be what releases them
    }
    // Without the fix each cycle kept 3 descriptors and a thread (5 cycles: +15, +5).
    const now = await settled(base, 1)
    assert.ok(now.fds <= base.fds + 1, `descriptors ${base.fds} -> ${now.fds} after ${CYCLES} connect+close cycles`)
    assert.ok(now.threads <= base.threads, `threads ${base.threads} -> ${now.threads} after ${CYCLES} cycles`)
    await assert.rejects(kept[1].check('k'), (e) => e.code === 'store_unavailable')
    assert.equal(kept.length, 2 * CYCLES)
  })

  test(`index.js holds no socket for a closed store (${name})`, async () => {
    const base = socketsHeld()
    const open = []
    for (let i = 0; i < 4 * CYCLES; i++) {
      const store = await RedisStore.connect(options())
      await new Limiter({ strategy, store, prefix, failPolicy: 'raise' }).check('k')
      open.push(store)
    }
    assert.equal(socketsHeld(), base + 4 * CYCLES, 'one socket per open store that made a Promise call')
    for (const store of open) await store.close()
    assert.equal(socketsHeld(), base, `sockets held after ${4 * CYCLES} stores closed`)
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
