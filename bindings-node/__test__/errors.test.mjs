// Every kind of bad input gives an Error with a stable `code` — never a crash, never napi's own
// status names — on the sync methods (thrown) and the Promise methods (rejected).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Limiter, ManualClock, MemoryStore, MultiLimiter, RedisStore, Shaper, Strategy } from '../index.mjs'

function throwsCode(fn, code = 'config_invalid', what = '') {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, `${what}: not an Error: ${e}`)
    assert.equal(e.code, code, `${what}: ${e.code}: ${e.message}`)
    return true
  })
}

async function rejectsCode(promise, code = 'config_invalid', what = '') {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof Error, `${what}: not an Error: ${e}`)
    assert.equal(e.code, code, `${what}: ${e.code}: ${e.message}`)
    return true
  })
}

// Values of the wrong kind, for arguments that want a number.
const NOT_NUMBERS = [undefined, null, '1', true, 1n, {}, [], () => 1, Symbol('s')]
const BAD_COSTS = [0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53 + 2, 1e300, Number.MIN_VALUE, -0.5, null, '1', true, 1n, {}, [], Symbol('s')]
const BAD_KEYS = [undefined, null, 1, 1n, {}, [], true, Symbol('k'), () => 'k']

describe('bad costs and keys', () => {
  const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }) })
  const shaper = new Shaper({ ratePerSec: 10, maxQueueMs: 1000 })
  const multi = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: Strategy.gcra({ limit: 1, periodMs: 1 }) }] })

  for (const cost of BAD_COSTS) {
    const what = `cost ${typeof cost === 'symbol' ? 'symbol' : typeof cost === 'bigint' ? `${cost}n` : JSON.stringify(cost) ?? String(cost)}`
    test(what, async () => {
      throwsCode(() => limiter.checkSync('k', cost), 'config_invalid', `checkSync ${what}`)
      throwsCode(() => limiter.forecastSync('k', cost), 'config_invalid', `forecastSync ${what}`)
      throwsCode(() => limiter.checkManySync(['k'], cost), 'config_invalid', `checkManySync ${what}`)
      throwsCode(() => shaper.reserveSync('k', cost), 'config_invalid', `reserveSync ${what}`)
      throwsCode(() => multi.checkSync(['k'], cost), 'config_invalid', `multi ${what}`)
      await rejectsCode(limiter.check('k', cost), 'config_invalid', `check ${what}`)
      await rejectsCode(limiter.forecast('k', cost), 'config_invalid', `forecast ${what}`)
      await rejectsCode(limiter.checkMany(['k'], cost), 'config_invalid', `checkMany ${what}`)
      await rejectsCode(shaper.reserve('k', cost), 'config_invalid', `reserve ${what}`)
      await rejectsCode(shaper.schedule('k', cost), 'config_invalid', `schedule ${what}`)
      await rejectsCode(multi.check(['k'], cost), 'config_invalid', `multi.check ${what}`)
    })
  }

  test('a bad cost changes nothing', () => {
    const clock = new ManualClock(0)
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }), clock })
    throwsCode(() => l.checkSync('k', 1.5))
    assert.equal(l.peekSync('k').remaining, 2)
  })

  for (const key of BAD_KEYS) {
    test(`key ${typeof key}`, async () => {
      throwsCode(() => limiter.checkSync(key))
      throwsCode(() => limiter.peekSync(key))
      throwsCode(() => limiter.resetSync(key))
      throwsCode(() => shaper.reserveSync(key))
      await rejectsCode(limiter.check(key))
      await rejectsCode(limiter.peek(key))
      await rejectsCode(limiter.reset(key))
    })
  }

  test('keys arrays: not an array, wrong element types', async () => {
    for (const keys of ['k', undefined, null, 1, [1], ['k', null], [{}]]) {
      throwsCode(() => limiter.checkManySync(keys))
      throwsCode(() => multi.checkSync(keys))
      await rejectsCode(multi.check(keys))
      await rejectsCode(limiter.checkMany(keys))
    }
    throwsCode(() => multi.checkSync(['a', 'b']), 'config_invalid', 'one key per dimension')
  })

  test('long and non-ASCII keys are fine on a store that takes them', () => {
    const clock = new ManualClock(0)
    // The default store refuses keys over 256 bytes (memory-bounds.test.mjs); this one takes any.
    const store = new MemoryStore({ maxKeyLength: Infinity })
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), clock, store })
    const long = 'ü'.repeat(5000) + '😀'
    assert.equal(l.checkSync(long).allowed, true)
    assert.equal(l.checkSync(long).allowed, false)
    assert.equal(l.checkSync(long.slice(0, -1)).allowed, true, 'a prefix of the key is another key')
    assert.equal(l.checkSync('').allowed, true)
  })

  test('methods called on the wrong receiver', () => {
    throwsCode(() => Limiter.prototype.checkSync.call({}, 'k'))
    throwsCode(() => Limiter.prototype.checkSync.call(Strategy.gcra({ limit: 1, periodMs: 1 }), 'k'))
    throwsCode(() => Limiter.prototype.checkSync.call(Object.create(Limiter.prototype), 'k'))
    throwsCode(() => Limiter.prototype.checkSync.call(undefined, 'k'))
  })
})

describe('bad strategies', () => {
  const bad = {
    'gcra limit 0': () => Strategy.gcra({ limit: 0, periodMs: 1000 }),
    'gcra limit negative': () => Strategy.gcra({ limit: -1, periodMs: 1000 }),
    'gcra limit non-integer': () => Strategy.gcra({ limit: 1.5, periodMs: 1000 }),
    'gcra limit NaN': () => Strategy.gcra({ limit: NaN, periodMs: 1000 }),
    'gcra limit Infinity': () => Strategy.gcra({ limit: Infinity, periodMs: 1000 }),
    'gcra limit huge': () => Strategy.gcra({ limit: 1e300, periodMs: 1000 }),
    'gcra limit BigInt': () => Strategy.gcra({ limit: 10n, periodMs: 1000 }),
    'gcra limit string': () => Strategy.gcra({ limit: '10', periodMs: 1000 }),
    'gcra limit null': () => Strategy.gcra({ limit: null, periodMs: 1000 }),
    'gcra periodMs missing': () => Strategy.gcra({ limit: 10 }),
    'gcra periodMs 0': () => Strategy.gcra({ limit: 10, periodMs: 0 }),
    'gcra burst 0': () => Strategy.gcra({ limit: 10, periodMs: 1000, burst: 0 }),
    'gcra unknown option': () => Strategy.gcra({ limit: 10, periodMs: 1000, brust: 2 }),
    'gcra options undefined': () => Strategy.gcra(undefined),
    'gcra options array': () => Strategy.gcra([10, 1000]),
    'token bucket refill 0': () => Strategy.tokenBucket({ capacity: 1, refillPerSec: 0 }),
    'token bucket capacity 0.5': () => Strategy.tokenBucket({ capacity: 0.5, refillPerSec: 1 }),
    'fixed window windowMs -1': () => Strategy.fixedWindow({ limit: 1, windowMs: -1 }),
    'sliding window buckets 0': () => Strategy.slidingWindow({ limit: 1, windowMs: 1000, buckets: 0 }),
    'sliding window buckets 1.5': () => Strategy.slidingWindow({ limit: 1, windowMs: 1000, buckets: 1.5 }),
    'sliding window log limit 0': () => Strategy.slidingWindowLog({ limit: 0, windowMs: 1000 }),
    'quota cadence unknown': () => Strategy.quota({ limit: 1, resetCadence: 'hourly' }),
    'quota offset out of range': () => Strategy.quota({ limit: 1, resetCadence: 'calendar-day', offsetMinutes: 841 }),
    'quota offset non-integer': () => Strategy.quota({ limit: 1, resetCadence: 'calendar-day', offsetMinutes: 0.5 }),
    'quota weekStartsOn 7': () => Strategy.quota({ limit: 1, resetCadence: 'calendar-week', weekStartsOn: 7 }),
    'quota fixed without periodMs': () => Strategy.quota({ limit: 1, resetCadence: 'fixed' }),
    'quota rolling buckets 0': () => Strategy.quota({ limit: 1, resetCadence: 'rolling', periodMs: 1000, buckets: 0 }),
    'spec kind unknown': () => Strategy.fromSpec({ kind: 'leaky', options: {} }),
    'spec without options': () => Strategy.fromSpec({ kind: 'gcra' }),
    'spec extra field': () => Strategy.fromSpec({ kind: 'gcra', options: { limit: 1, periodMs: 1 }, extra: 1 }),
    'spec not an object': () => Strategy.fromSpec('gcra'),
    'spec cyclic': () => {
      const o = { limit: 1, periodMs: 1 }
      o.self = o
      return Strategy.fromSpec({ kind: 'gcra', options: o })
    },
  }
  for (const [name, fn] of Object.entries(bad)) test(name, () => throwsCode(fn))

  test('a spec with a getter that throws reports that error or config_invalid, never crashes', () => {
    const options = { limit: 1, get periodMs() { throw new Error('boom') } }
    assert.throws(() => Strategy.fromSpec({ kind: 'gcra', options }))
  })
})

describe('bad constructor options', () => {
  const strategy = Strategy.gcra({ limit: 1, periodMs: 1000 })
  const limiters = {
    'no options': () => new Limiter(),
    'options null': () => new Limiter(null),
    'options a number': () => new Limiter(5),
    'strategy missing': () => new Limiter({}),
    'strategy a fake instance': () => new Limiter({ strategy: Object.create(Strategy.prototype) }),
    'unknown option': () => new Limiter({ strategy, perfix: 'x' }),
    'store a plain object': () => new Limiter({ strategy, store: {} }),
    'store a fake instance': () => new Limiter({ strategy, store: Object.create(MemoryStore.prototype) }),
    'store a Limiter': () => new Limiter({ strategy, store: new Limiter({ strategy }) }),
    'clock a Date': () => new Limiter({ strategy, clock: new Date() }),
    'prefix a number': () => new Limiter({ strategy, prefix: 1 }),
    'serverClock a string': () => new Limiter({ strategy, serverClock: 'yes' }),
    'failPolicy unknown': () => new Limiter({ strategy, failPolicy: 'failOpen' }),
    'MemoryStore maxKeys 0': () => new MemoryStore({ maxKeys: 0 }),
    'MemoryStore maxKeys 1.5': () => new MemoryStore({ maxKeys: 1.5 }),
    'MemoryStore unknown option': () => new MemoryStore({ size: 1 }),
    'ManualClock NaN': () => new ManualClock(NaN),
    'ManualClock 1.5': () => new ManualClock(1.5),
    'ManualClock beyond 2^53': () => new ManualClock(2 ** 60),
    'ManualClock BigInt': () => new ManualClock(1n),
    'ManualClock advance negative': () => new ManualClock(0).advance(-1),
    'ManualClock set undefined': () => new ManualClock(0).set(undefined),
    'shaper rate 0': () => new Shaper({ ratePerSec: 0, maxQueueMs: 1 }),
    'shaper rate NaN': () => new Shaper({ ratePerSec: NaN, maxQueueMs: 1 }),
    'shaper maxQueueMs negative': () => new Shaper({ ratePerSec: 1, maxQueueMs: -1 }),
    'shaper maxQueueMs missing': () => new Shaper({ ratePerSec: 1 }),
    'multi rule unknown': () => new MultiLimiter({ rule: 'most', dimensions: [{ name: 'a', strategy }] }),
    'multi no dimensions': () => new MultiLimiter({ rule: 'all', dimensions: [] }),
    'multi dimensions not an array': () => new MultiLimiter({ rule: 'all', dimensions: { a: strategy } }),
    'multi duplicate names': () => new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }, { name: 'a', strategy }] }),
    'multi empty name': () => new MultiLimiter({ rule: 'all', dimensions: [{ name: '', strategy }] }),
    'multi costMultiplier 0': () => new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy, costMultiplier: 0 }] }),
    'multi costMultiplier 1.5': () => new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy, costMultiplier: 1.5 }] }),
    'multi hashTag with braces': () => new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }], hashTag: '{x}' }),
  }
  for (const [name, fn] of Object.entries(limiters)) test(name, () => throwsCode(fn))

  test('RedisStore: bad options reject config_invalid; no server rejects store_unavailable', async () => {
    await rejectsCode(RedisStore.connect())
    await rejectsCode(RedisStore.connect({}))
    await rejectsCode(RedisStore.connect({ url: 5 }))
    await rejectsCode(RedisStore.connect({ url: 'nope://x' }))
    await rejectsCode(RedisStore.connect({ url: 'redis://127.0.0.1:1', timeoutMs: 0 }))
    await rejectsCode(RedisStore.connect({ url: 'redis://127.0.0.1:1', timeoutMs: 1.5 }))
    await rejectsCode(RedisStore.connect({ url: 'redis://127.0.0.1:1', failPolicy: 'open' }))
    await rejectsCode(RedisStore.connect({ url: 'redis://127.0.0.1:1', timeoutMs: 300 }), 'store_unavailable')
    assert.throws(() => new RedisStore(), Error, 'RedisStore has no public constructor (use RedisStore.connect)')
  })

  for (const v of NOT_NUMBERS.filter((v) => v !== undefined)) {
    test(`ManualClock(${typeof v})`, () => throwsCode(() => new ManualClock(v)))
  }
})
