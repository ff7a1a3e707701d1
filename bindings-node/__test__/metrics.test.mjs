// Per-limiter metrics: off unless asked; checks counted by outcome, errors by code, fallbacks,
// and the latency histogram of calls to a store outside the process (Redis). Every call is
// counted once whichever way it goes: N calls down each path (sync, Promise over the event
// loop's own socket, one node or a cluster, the core's connections, Sentinel, multi limiters
// and shapers) move the counters by exactly N.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { Limiter, ManualClock, MultiLimiter, RedisStore, Shaper, Strategy } from '../index.mjs'
import { spawnRedis, startRedisCluster, startRedisSentinels } from './helpers/redis.mjs'

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

const N = 7
const fixed = () => Strategy.fixedWindow({ limit: 4, windowMs: 60_000 })

/** What the counters moved: checks decided, fallbacks, peeks, forecasts, errors. */
function moved(m) {
  const errors = Object.values(m.errors).reduce((a, b) => a + b, 0)
  return [m.allowed + m.denied, m.fallbackAllowed + m.fallbackDenied, m.peeks, m.forecasts, errors]
}

/**
 * N calls of fresh limiters, a multi limiter and a shaper on `store` down each of their methods:
 * each check, peek, forecast and reservation counted once. `timed`: whether Promise calls go
 * through the core's connections (timed), not the event loop's socket (counted, not timed).
 */
async function everyPathCountsOnce(store, tag) {
  const limiter = (path, options = {}) => new Limiter({ strategy: fixed(), store, clock: new ManualClock(1_000), prefix: `${tag}:${path}`, metrics: true, ...options })
  const checks = {
    checkSync: (l) => l.checkSync('k'),
    check: (l) => l.check('k'),
    checkManySync: (l) => l.checkManySync(['k']),
    checkMany: (l) => l.checkMany(['k']),
  }
  for (const [name, call] of Object.entries(checks)) {
    const l = limiter(name)
    for (let i = 0; i < N; i++) await call(l)
    const m = l.metrics()
    assert.deepEqual([m.allowed, m.denied], [4, 3], `${tag} ${name}`)
    assert.deepEqual(moved(m), [N, 0, 0, 0, 0], `${tag} ${name}`)
  }
  const reads = limiter('reads')
  for (let i = 0; i < N; i++) {
    reads.peekSync('k')
    await reads.peek('k')
    reads.forecastSync('k')
    await reads.forecast('k')
  }
  assert.deepEqual(moved(reads.metrics()), [0, 0, 2 * N, 2 * N, 0], `${tag} reads`)
  // Refused before the store (a key too long): one error each, on the Promise path too.
  const refused = limiter('refused')
  const long = 'k'.repeat(600)
  assert.throws(() => refused.checkSync(long), (e) => e.code === 'config_invalid')
  for (const call of [() => refused.check(long), () => refused.peek(long), () => refused.forecast(long)]) {
    await assert.rejects(call(), (e) => e.code === 'config_invalid')
  }
  assert.deepEqual(moved(refused.metrics()), [0, 0, 0, 0, 4], `${tag} refused`)
  const leased = limiter('leased', { lease: { batch: 2 } })
  for (let i = 0; i < N; i++) {
    leased.checkSync('sync')
    await leased.check('async')
  }
  assert.deepEqual(moved(leased.metrics()), [2 * N, 0, 0, 0, 0], `${tag} leased`)

  const dimensions = [
    { name: 'a', strategy: fixed() },
    { name: 'b', strategy: Strategy.gcra({ limit: 100, periodMs: 60_000 }) },
  ]
  const multi = new MultiLimiter({ rule: 'all', dimensions, store, clock: new ManualClock(1_000), prefix: `${tag}:multi`, metrics: true })
  const shaper = new Shaper({ ratePerSec: 1000, maxQueueMs: 60_000, store, prefix: `${tag}:shaper`, metrics: true })
  for (let i = 0; i < N; i++) {
    multi.checkSync(['x', 'y'])
    await multi.check(['x', 'y'])
    shaper.reserveSync('x')
    await shaper.reserve('x')
    await shaper.schedule('y')
  }
  const mm = multi.metrics()
  assert.deepEqual([mm.allowed, mm.denied], [4, 2 * N - 4], `${tag} multi`)
  assert.deepEqual(moved(mm), [2 * N, 0, 0, 0, 0], `${tag} multi`)
  assert.deepEqual(moved(shaper.metrics()), [3 * N, 0, 0, 0, 0], `${tag} shaper`)
}

describe('every path counts each call once', () => {
  let redis
  let cluster
  let sentinels
  before(async () => {
    ;[redis, cluster, sentinels] = await Promise.all([spawnRedis(), startRedisCluster(), startRedisSentinels()])
  })
  after(async () => {
    await Promise.all([redis?.stop(), cluster?.stop(), sentinels?.stop()])
  })

  test('on the memory store', async () => {
    await everyPathCountsOnce(undefined, 'memory')
  })

  test("on one node, over the event loop's own socket", async () => {
    const store = await RedisStore.connect({ url: redis.url, timeoutMs: 3000 })
    assert.equal(store.eventLoopTransport, true)
    await everyPathCountsOnce(store, 'node')
    // Its Promise calls are counted but not timed (the core does not see when bytes left);
    // its sync calls are timed.
    const l = new Limiter({ strategy: fixed(), store, prefix: 'timed', metrics: true })
    await l.check('k')
    l.checkSync('k')
    assert.equal(l.metrics().storeLatency.count, 1)
    // A call whose script or function the server lost (NOSCRIPT) is sent again (prepared again
    // by the core) and still counted once, whatever its op.
    const again = new Limiter({ strategy: fixed(), store, prefix: 'noscript', metrics: true })
    for (const call of [() => again.check('k'), () => again.peek('k'), () => again.forecast('k')]) {
      redis.cli('script', 'flush')
      redis.cli('function', 'flush')
      await call()
    }
    assert.deepEqual(moved(again.metrics()), [1, 0, 1, 1, 0])
    await store.close()
  })

  test("on one node in RESP3 (?protocol=resp3), over the event loop's own socket", async () => {
    const store = await RedisStore.connect({ url: `${redis.url}/?protocol=resp3`, timeoutMs: 3000 })
    assert.equal(store.eventLoopTransport, true)
    await everyPathCountsOnce(store, 'node3')
    await store.close()
  })

  test("on one node, over the core's connections (deterministic replay)", async () => {
    const store = await RedisStore.connect({ url: redis.url, timeoutMs: 3000, deterministicReplay: true })
    assert.equal(store.eventLoopTransport, false)
    await everyPathCountsOnce(store, 'replay')
    await store.close()
  })

  test("on a cluster, over the event loop's socket per master", async () => {
    const store = await RedisStore.connect({ urls: cluster.urls, mode: 'cluster', timeoutMs: 3000 })
    assert.equal(store.eventLoopTransport, true)
    await everyPathCountsOnce(store, `cluster${process.pid}`)
    await store.close()
  })

  test('under Sentinel', async () => {
    const store = await RedisStore.connect({ urls: sentinels.urls, mode: 'sentinel', serviceName: 'tkmain', timeoutMs: 3000 })
    await everyPathCountsOnce(store, `sentinel${process.pid}`)
    await store.close()
  })

  test('a store that went away: each Promise call one fallback or one error, by the fail policy', async () => {
    const own = await spawnRedis()
    const store = await RedisStore.connect({ url: own.url, timeoutMs: 500 })
    const open = new Limiter({ strategy: fixed(), store, failPolicy: 'fail_open', metrics: true })
    const raise = new Limiter({ strategy: fixed(), store, failPolicy: 'raise', metrics: true })
    await open.check('k')
    await own.stop()
    for (let i = 0; i < N; i++) {
      assert.equal((await open.check('k')).fallback, true)
      await assert.rejects(raise.check('k'), (e) => e.code === 'store_unavailable')
    }
    let m = open.metrics()
    assert.deepEqual([m.allowed, m.fallbackAllowed, moved(m)[4]], [1, N, 0])
    m = raise.metrics()
    assert.deepEqual(moved(m), [0, 0, 0, 0, N])
    assert.equal(m.errors.store_unavailable, N)
    await store.close()
  })
})
