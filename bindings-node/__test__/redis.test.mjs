// The Redis path through the Promise API: atomicity under concurrency, multi, shaper, fail
// policies, the server clock, and that Redis I/O leaves the event loop free.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { Limiter, ManualClock, MultiLimiter, RedisStore, Shaper, Strategy } from '../index.mjs'
import { startRedis } from './helpers/redis.mjs'

let redis
let store
const ns = `tk-node-test:${process.pid}:${Date.now()}`
let n = 0
const prefix = () => `${ns}:${n++}`

before(async () => {
  redis = await startRedis()
  store = await RedisStore.connect({ url: redis.url, timeoutMs: 2000 })
})
after(async () => {
  await store?.close()
  await redis?.stop()
})

describe('RedisStore', () => {
  test('reports its options', () => {
    assert.equal(store.url, redis.url)
    assert.equal(store.timeoutMs, 2000)
    assert.equal(store.deterministicReplay, false)
  })

  test('many in-flight checks on one key admit exactly the burst', async () => {
    for (const [strategy, k] of [
      [Strategy.gcra({ limit: 1, periodMs: 3_600_000, burst: 7 }), 7],
      [Strategy.tokenBucket({ capacity: 9, refillPerSec: 0.0001 }), 9],
      [Strategy.fixedWindow({ limit: 5, windowMs: 3_600_000 }), 5],
      [Strategy.slidingWindowLog({ limit: 6, windowMs: 3_600_000 }), 6],
    ]) {
      const l = new Limiter({ strategy, store, prefix: prefix() })
      const ds = await Promise.all(Array.from({ length: 300 }, () => l.check('hot')))
      assert.equal(ds.filter((d) => d.allowed).length, k, strategy.kind)
      assert.ok(ds.filter((d) => !d.allowed).every((d) => d.retryAfterMs >= 1))
    }
  })

  test('two limiters on two connections share one limit', async () => {
    const other = await RedisStore.connect({ url: redis.url })
    const p = prefix()
    const strategy = Strategy.gcra({ limit: 1, periodMs: 3_600_000, burst: 10 })
    const a = new Limiter({ strategy, store, prefix: p })
    const b = new Limiter({ strategy, store: other, prefix: p })
    const ds = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).check('k')))
    assert.equal(ds.filter((d) => d.allowed).length, 10)
    await other.close()
  })

  test('checkSync, check, peek, forecast, checkMany and reset agree with the memory store', async () => {
    // Redis expires the keys on its own clock, as far ahead as the ManualClock's windows end: a
    // minute's window, stepped 4.2 s at a time, keeps them for seconds, so a loaded machine's
    // pause between two calls cannot expire one before the memory store does.
    const clock = new ManualClock(1_700_000_040_000)
    const strategy = Strategy.slidingWindow({ limit: 4, windowMs: 60_000, buckets: 4 })
    const onRedis = new Limiter({ strategy, store, clock, prefix: prefix() })
    const inMemory = new Limiter({ strategy, clock })
    for (let i = 0; i < 12; i++) {
      clock.advance(4_200)
      assert.deepEqual(await onRedis.check('k', 1 + (i % 2)), inMemory.checkSync('k', 1 + (i % 2)), `op ${i}`)
      assert.deepEqual(await onRedis.peek('k'), inMemory.peekSync('k'))
      assert.deepEqual(await onRedis.forecast('k', 2), inMemory.forecastSync('k', 2))
    }
    assert.deepEqual(await onRedis.checkMany(['x', 'y', 'x']), inMemory.checkManySync(['x', 'y', 'x']))
    await onRedis.reset('k')
    inMemory.resetSync('k')
    assert.deepEqual(await onRedis.check('k'), inMemory.checkSync('k'))
  })

  test('a multi check is atomic across dimensions', async () => {
    const m = new MultiLimiter({
      rule: 'all',
      dimensions: [
        { name: 'ip', strategy: Strategy.fixedWindow({ limit: 4, windowMs: 3_600_000 }) },
        { name: 'user', strategy: Strategy.fixedWindow({ limit: 100, windowMs: 3_600_000 }) },
      ],
      store,
      prefix: prefix(),
    })
    const ds = await Promise.all(Array.from({ length: 50 }, (_, i) => m.check(['1.2.3.4', `u${i % 3}`])))
    assert.equal(ds.filter((d) => d.allowed).length, 4)
    assert.ok(ds.filter((d) => !d.allowed).every((d) => d.binding === 'ip'))
    await m.reset(['1.2.3.4', 'u0'])
  })

  test('the shaper reserves atomically', async () => {
    // A fixed clock: with the wall clock, later calls would see time pass and shorter delays.
    // Redis expires the queue's key on its own clock at the queue's tail: departures a second
    // apart (not 10 ms, which a server descheduled between two reservations could outlive).
    const s = new Shaper({ ratePerSec: 1, maxQueueMs: 60_000, store, clock: new ManualClock(Date.now()), prefix: prefix() })
    const rs = await Promise.all(Array.from({ length: 20 }, () => s.reserve('q')))
    assert.deepEqual(rs.map((r) => r.delayMs).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i * 1000))
    await s.reset('q')
  })

  test('the server clock stands in for this process', async () => {
    const far = new ManualClock(0) // 1970: ignored when serverClock is on
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1, windowMs: 1000 }), store, clock: far, prefix: prefix(), serverClock: true })
    const d = await l.check('k')
    assert.ok(Math.abs(d.resetAt - Date.now()) < 5000, `resetAt ${d.resetAt} follows Redis TIME`)
  })

  test('Redis I/O does not block the event loop', async () => {
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 1000, periodMs: 1 }), store, prefix: prefix() })
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    const pending = Array.from({ length: 2000 }, (_, i) => l.check(`k${i % 50}`))
    // The calls are in flight, and the loop is free to run timers and immediates meanwhile.
    await new Promise((r) => setImmediate(r))
    await Promise.all(pending)
    clearInterval(timer)
    assert.ok(ticks > 0, 'the interval ran while checks were in flight')
  })
})

describe('fail policies when Redis is gone', () => {
  let dead
  before(async () => {
    dead = await RedisStore.connect({ url: redis.url, timeoutMs: 200 })
    await dead.close()
  })
  const strategy = Strategy.gcra({ limit: 10, periodMs: 1000 })

  test('raise: store_unavailable', async () => {
    const l = new Limiter({ strategy, store: dead })
    await assert.rejects(l.check('k'), (e) => e.code === 'store_unavailable')
  })

  test('fail_open: allowed, flagged as a fallback', async () => {
    const d = await new Limiter({ strategy, store: dead, failPolicy: 'fail_open' }).check('k')
    assert.equal(d.allowed, true)
    assert.equal(d.fallback, true)
  })

  test('fail_closed: denied with a retry, flagged', async () => {
    const d = await new Limiter({ strategy, store: dead, failPolicy: 'fail_closed' }).check('k')
    assert.equal(d.allowed, false)
    assert.equal(d.fallback, true)
    assert.ok(d.retryAfterMs > 0)
  })

  test("the store's failPolicy is the default of its limiters", async () => {
    const s = await RedisStore.connect({ url: redis.url, failPolicy: 'fail_open' })
    await s.close()
    const l = new Limiter({ strategy, store: s })
    assert.equal(l.failPolicy, 'fail_open')
    assert.equal((await l.check('k')).fallback, true)
    assert.equal(new Limiter({ strategy, store: s, failPolicy: 'raise' }).failPolicy, 'raise')
  })

  test('multi: fail_open admits', async () => {
    const m = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }], store: dead, failPolicy: 'fail_open' })
    const d = await m.check(['k'])
    assert.equal(d.allowed, true)
    assert.equal(d.fallback, true)
  })
})
