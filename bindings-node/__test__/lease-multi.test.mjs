// A multi limiter's two-tier modes from Node: credits per dimension key spent locally, cached
// denials, core's errors, and a leased fleet on Redis through core's async path.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { ManualClock, MultiLimiter, RedisStore } from '../index.mjs'
import { startRedis } from './helpers/redis.mjs'

const T0 = 1_800_000_000_000
const win = (limit, windowMs = 1000) => ({ kind: 'fixedWindow', options: { limit, windowMs } })
const dims = () => [
  { name: 'ip', strategy: win(10) },
  { name: 'user', strategy: win(100) },
]

let redis
before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis?.stop()
})

test('leased: every dimension spends its credits locally; exactly the tightest limit', () => {
  const clock = new ManualClock(T0)
  const m = new MultiLimiter({ rule: 'all', dimensions: dims(), clock, mode: 'leased', lease: { batch: 4, windowCoupled: true } })
  assert.equal(m.mode, 'leased')
  let allowed = 0
  for (let i = 0; i < 15; i++) if (m.checkSync(['1.2.3.4', 'u1']).allowed) allowed++
  assert.equal(allowed, 10)
  const s = m.tierStats()
  assert.equal(s.leases, 4) // 4 + 4 + 2, then a denied lease (cached)
  assert.equal(s.localAdmits, 7)
  assert.equal(s.localDenials, 4)
})

test('cachedDeny answers a repeated denial locally until its retry', () => {
  const clock = new ManualClock(T0)
  const m = new MultiLimiter({ rule: 'all', dimensions: dims(), clock, mode: 'cachedDeny' })
  for (let i = 0; i < 10; i++) assert.ok(m.checkSync(['ip', 'u']).allowed)
  const first = m.checkSync(['ip', 'u'])
  assert.equal(first.binding, 'ip')
  clock.advance(250)
  assert.equal(m.checkSync(['ip', 'u']).retryAfterMs, first.retryAfterMs - 250)
  assert.equal(m.tierStats().localDenials, 1)
})

test('bad multi modes are config_invalid', () => {
  const gcra = [{ name: 'g', strategy: { kind: 'gcra', options: { limit: 10, periodMs: 1000 } } }]
  for (const [extra, field] of [
    [{ mode: 'hot' }, 'mode'],
    [{ lease: { batch: 4, lowWater: 1 } }, 'lease.lowWater'],
    [{ lease: { windowCoupled: true } }, 'lease.windowCoupled'],
  ]) {
    assert.throws(
      () => new MultiLimiter({ rule: 'all', dimensions: gcra, ...extra }),
      (e) => e.code === 'config_invalid' && e.message.includes(field),
    )
  }
})

test('a leased multi fleet on Redis admits exactly the limit (Promise path) and gives back', async () => {
  const clock = new ManualClock(T0) // one window for the whole test
  const fleetDims = [
    { name: 'tenant', strategy: win(20, 60000) },
    { name: 'user', strategy: win(12, 60000) },
  ]
  const prefix = `nodetest:${process.pid}:${Date.now()}`
  const stores = []
  const fleet = []
  for (let i = 0; i < 3; i++) {
    const store = await RedisStore.connect({ url: redis.url, timeoutMs: 2000 })
    stores.push(store)
    fleet.push(new MultiLimiter({ rule: 'all', dimensions: fleetDims, store, clock, prefix, lease: { batch: 3, windowCoupled: true } }))
  }
  let admitted = 0
  for (let i = 0; i < 30; i++) {
    for (const m of fleet) if ((await m.check(['t', `u${i % 3}`])).allowed) admitted++
  }
  assert.equal(admitted, 20)
  assert.ok(fleet.every((m) => m.tierStats().leases > 0), 'leases went through core, not the socket')
  const other = new MultiLimiter({ rule: 'all', dimensions: fleetDims, store: stores[0], clock, prefix: `${prefix}b`, lease: { batch: 3, windowCoupled: true } })
  assert.ok((await other.check(['t', 'u'])).allowed)
  assert.equal(await other.releaseLeases(), 4, '2 credits back per dimension')
  for (const s of stores) await s.close()
})
