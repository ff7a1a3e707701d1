// Per-limiter metrics: off unless asked; checks counted by outcome, errors by code, fallbacks,
// and the latency histogram of calls to a store outside the process (Redis).
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { Limiter, ManualClock, MultiLimiter, RedisStore, Shaper, Strategy } from '../index.mjs'
import { spawnRedis } from './helpers/redis.mjs'

describe('Limiter metrics', () => {
  test('are off unless asked', () => {
    assert.equal(new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }) }).metrics(), null)
  })

  test('count checks by outcome and errors by code', () => {
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }), clock: new ManualClock(0), metrics: true })
    for (let i = 0; i < 5; i++) l.checkSync('k')
    assert.throws(() => l.checkSync('k'.repeat(300)), (e) => e.code === 'config_invalid')
    l.peekSync('k') // not a check
    const m = l.metrics()
    assert.deepEqual([m.allowed, m.denied, m.fallbackAllowed, m.fallbackDenied], [2, 3, 0, 0])
    assert.deepEqual(m.errors, { config_invalid: 1, store_unavailable: 0, rate_limit_exceeded: 0, queue_full: 0, not_implemented: 0 })
    assert.equal(m.storeLatency.counts.length, m.storeLatency.boundsUs.length + 1)
    assert.equal(m.storeLatency.count, 0) // the memory store is in process: counted, not timed
    assert.throws(() => new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), metrics: 1 }), (e) => e.code === 'config_invalid')
  })

  describe('on Redis', () => {
    let redis
    before(async () => {
      redis = await spawnRedis()
    })
    after(async () => {
      await redis?.stop()
    })

    test('time blocking calls and count fallbacks', async () => {
      const store = await RedisStore.connect({ url: redis.url, timeoutMs: 300 })
      const open = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }), store, failPolicy: 'fail_open', metrics: true })
      open.checkSync('k')
      open.checkSync('k')
      let m = open.metrics()
      assert.equal(m.allowed, 2)
      assert.equal(m.storeLatency.count, 2)
      assert.ok(m.storeLatency.sumUs > 0)
      await redis.stop()
      assert.equal(open.checkSync('k').allowed, true)
      m = open.metrics()
      assert.deepEqual([m.allowed, m.fallbackAllowed], [2, 1])
      await store.close()
    })
  })
})

describe('peeks, forecasts, multi limiters and shapers', () => {
  test('peeks and forecasts are counted apart from checks', () => {
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }), clock: new ManualClock(0), metrics: true })
    l.checkSync('k')
    l.peekSync('k')
    l.peekSync('other')
    l.forecastSync('k', 2)
    const m = l.metrics()
    assert.deepEqual([m.allowed, m.denied, m.peeks, m.forecasts], [1, 0, 2, 1])
  })

  test('a multi limiter counts its combined decisions and errors', async () => {
    const dimensions = [
      { name: 'ip', strategy: Strategy.fixedWindow({ limit: 3, windowMs: 1000 }) },
      { name: 'user', strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }) },
    ]
    assert.equal(new MultiLimiter({ rule: 'all', dimensions }).metrics(), null)
    const multi = new MultiLimiter({ rule: 'all', dimensions, clock: new ManualClock(0), metrics: true })
    const got = [multi.checkSync(['1.2.3.4', 'u']).allowed, multi.checkSync(['1.2.3.4', 'u']).allowed]
    got.push((await multi.check(['1.2.3.4', 'u'])).allowed)
    assert.deepEqual(got, [true, true, false])
    assert.throws(() => multi.checkSync(['only one key']), (e) => e.code === 'config_invalid')
    const m = multi.metrics()
    assert.deepEqual([m.allowed, m.denied, m.peeks, m.forecasts], [2, 1, 0, 0])
    assert.equal(m.errors.config_invalid, 1)
    assert.throws(() => new MultiLimiter({ rule: 'all', dimensions, metrics: 'yes' }), (e) => e.code === 'config_invalid')
  })

  test('a shaper counts reservations accepted as allowed and rejected as denied', async () => {
    assert.equal(new Shaper({ ratePerSec: 5, maxQueueMs: 300 }).metrics(), null)
    // 200 ms between departures, 300 ms of queue: two accepted, then rejected.
    const s = new Shaper({ ratePerSec: 5, maxQueueMs: 300, clock: new ManualClock(0), metrics: true })
    const got = [s.reserveSync('k').accepted, s.reserveSync('k').accepted, (await s.reserve('k')).accepted, s.reserveSync('k').accepted]
    assert.deepEqual(got, [true, true, false, false])
    const m = s.metrics()
    assert.deepEqual([m.allowed, m.denied], [2, 2])
    assert.equal(m.storeLatency.count, 0)
    assert.throws(() => new Shaper({ ratePerSec: 5, maxQueueMs: 300, metrics: 1 }), (e) => e.code === 'config_invalid')
  })
})
