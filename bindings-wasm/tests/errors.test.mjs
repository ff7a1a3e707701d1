// Every bad input of the Node suite's errors tests (bindings-node/__test__/errors.test.mjs) gives
// the WebAssembly build the same error as the native addon: an Error with the same `code` and the
// same `message`, thrown by the sync methods and rejected by the Promise methods.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import * as native from '../../bindings-node/index.mjs'
import * as wasm from '../../bindings-node/wasm/node.mjs'

/** What `fn(api)` throws (or rejects with), as `{code, message}`; `null` when it succeeds. */
async function outcome(fn, api) {
  try {
    await fn(api)
    return null
  } catch (e) {
    assert.ok(e instanceof Error, `not an Error: ${e}`)
    return { code: e.code, message: e.message }
  }
}

async function same(name, fn) {
  const want = await outcome(fn, native)
  const got = await outcome(fn, wasm)
  assert.ok(want !== null, `${name}: the native addon accepts it`)
  assert.equal(want.code, 'config_invalid', `${name}: native ${want.code}: ${want.message}`)
  assert.deepEqual(got, want, name)
}

const NOT_NUMBERS = [null, '1', true, 1n, {}, [], () => 1, Symbol('s')]
const BAD_COSTS = [0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53 + 2, 1e300, Number.MIN_VALUE, -0.5, null, '1', true, 1n, {}, [], Symbol('s')]
const BAD_KEYS = [undefined, null, 1, 1n, {}, [], true, Symbol('k'), () => 'k']
const label = (v) => (typeof v === 'symbol' ? 'symbol' : typeof v === 'bigint' ? `${v}n` : typeof v === 'function' ? 'function' : JSON.stringify(v) ?? String(v))

describe('bad costs and keys', () => {
  const subjects = (tk) => ({
    limiter: new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 10, periodMs: 1000 }) }),
    shaper: new tk.Shaper({ ratePerSec: 10, maxQueueMs: 1000 }),
    multi: new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: tk.Strategy.gcra({ limit: 1, periodMs: 1 }) }] }),
  })
  for (const cost of BAD_COSTS) {
    test(`cost ${label(cost)}`, async () => {
      await same('checkSync', (tk) => subjects(tk).limiter.checkSync('k', cost))
      await same('forecastSync', (tk) => subjects(tk).limiter.forecastSync('k', cost))
      await same('checkManySync', (tk) => subjects(tk).limiter.checkManySync(['k'], cost))
      await same('reserveSync', (tk) => subjects(tk).shaper.reserveSync('k', cost))
      await same('multi.checkSync', (tk) => subjects(tk).multi.checkSync(['k'], cost))
      await same('check', (tk) => subjects(tk).limiter.check('k', cost))
      await same('forecast', (tk) => subjects(tk).limiter.forecast('k', cost))
      await same('checkMany', (tk) => subjects(tk).limiter.checkMany(['k'], cost))
      await same('reserve', (tk) => subjects(tk).shaper.reserve('k', cost))
      await same('multi.check', (tk) => subjects(tk).multi.check(['k'], cost))
    })
  }
  for (const key of BAD_KEYS) {
    test(`key ${label(key)}`, async () => {
      await same('checkSync', (tk) => subjects(tk).limiter.checkSync(key))
      await same('peekSync', (tk) => subjects(tk).limiter.peekSync(key))
      await same('resetSync', (tk) => subjects(tk).limiter.resetSync(key))
      await same('reserveSync', (tk) => subjects(tk).shaper.reserveSync(key))
      await same('check', (tk) => subjects(tk).limiter.check(key))
      await same('peek', (tk) => subjects(tk).limiter.peek(key))
      await same('reset', (tk) => subjects(tk).limiter.reset(key))
    })
  }
  test('keys arrays', async () => {
    for (const keys of ['k', undefined, null, 1, [1], ['k', null], [{}]]) {
      await same(`checkManySync ${label(keys)}`, (tk) => subjects(tk).limiter.checkManySync(keys))
      await same(`multi.checkSync ${label(keys)}`, (tk) => subjects(tk).multi.checkSync(keys))
      await same(`multi.check ${label(keys)}`, (tk) => subjects(tk).multi.check(keys))
      await same(`checkMany ${label(keys)}`, (tk) => subjects(tk).limiter.checkMany(keys))
    }
    await same('one key per dimension', (tk) => subjects(tk).multi.checkSync(['a', 'b']))
  })
})

describe('bad strategies', () => {
  const bad = {
    'gcra limit 0': (tk) => tk.Strategy.gcra({ limit: 0, periodMs: 1000 }),
    'gcra limit negative': (tk) => tk.Strategy.gcra({ limit: -1, periodMs: 1000 }),
    'gcra limit non-integer': (tk) => tk.Strategy.gcra({ limit: 1.5, periodMs: 1000 }),
    'gcra limit NaN': (tk) => tk.Strategy.gcra({ limit: NaN, periodMs: 1000 }),
    'gcra limit Infinity': (tk) => tk.Strategy.gcra({ limit: Infinity, periodMs: 1000 }),
    'gcra limit huge': (tk) => tk.Strategy.gcra({ limit: 1e300, periodMs: 1000 }),
    'gcra limit BigInt': (tk) => tk.Strategy.gcra({ limit: 10n, periodMs: 1000 }),
    'gcra limit string': (tk) => tk.Strategy.gcra({ limit: '10', periodMs: 1000 }),
    'gcra limit null': (tk) => tk.Strategy.gcra({ limit: null, periodMs: 1000 }),
    'gcra periodMs missing': (tk) => tk.Strategy.gcra({ limit: 10 }),
    'gcra periodMs 0': (tk) => tk.Strategy.gcra({ limit: 10, periodMs: 0 }),
    'gcra burst 0': (tk) => tk.Strategy.gcra({ limit: 10, periodMs: 1000, burst: 0 }),
    'gcra unknown option': (tk) => tk.Strategy.gcra({ limit: 10, periodMs: 1000, brust: 2 }),
    'gcra options undefined': (tk) => tk.Strategy.gcra(undefined),
    'gcra options array': (tk) => tk.Strategy.gcra([10, 1000]),
    'token bucket refill 0': (tk) => tk.Strategy.tokenBucket({ capacity: 1, refillPerSec: 0 }),
    'token bucket capacity 0.5': (tk) => tk.Strategy.tokenBucket({ capacity: 0.5, refillPerSec: 1 }),
    'fixed window windowMs -1': (tk) => tk.Strategy.fixedWindow({ limit: 1, windowMs: -1 }),
    'sliding window buckets 0': (tk) => tk.Strategy.slidingWindow({ limit: 1, windowMs: 1000, buckets: 0 }),
    'sliding window buckets 1.5': (tk) => tk.Strategy.slidingWindow({ limit: 1, windowMs: 1000, buckets: 1.5 }),
    'sliding window log limit 0': (tk) => tk.Strategy.slidingWindowLog({ limit: 0, windowMs: 1000 }),
    'quota cadence unknown': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'hourly' }),
    'quota offset out of range': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'calendar-day', offsetMinutes: 841 }),
    'quota offset non-integer': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'calendar-day', offsetMinutes: 0.5 }),
    'quota weekStartsOn 7': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'calendar-week', weekStartsOn: 7 }),
    'quota fixed without periodMs': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'fixed' }),
    'quota rolling buckets 0': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'rolling', periodMs: 1000, buckets: 0 }),
    // The bounds in these messages are printed as integers, not by Rust's float formatter.
    'quota offset below range': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'calendar-day', offsetMinutes: -841 }),
    'quota weekStartsOn -1': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'calendar-week', weekStartsOn: -1 }),
    'quota anchor past 2^53': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 'fixed', periodMs: 1000, anchor: 2 ** 54 }),
    // How the spec reader names a value it did not expect (a float, a negative integer, a map)
    // and in which order it meets an object's keys (sorted, whatever order they were written in).
    'quota cadence a float': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 2.5 }),
    'quota cadence a tiny float': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: 1e-7 }),
    'quota cadence a negative integer': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: -3 }),
    'quota cadence a map of two': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: { rolling: null, fixed: null } }),
    'quota cadence a map with a value': (tk) => tk.Strategy.quota({ limit: 1, resetCadence: { fixed: 1 } }),
    'gcra options out of order': (tk) => tk.Strategy.gcra({ periodMs: 'x', limit: 'y' }),
    'spec keys out of order': (tk) => tk.Strategy.fromSpec({ options: { limit: 1, periodMs: 1 }, kind: 'gcra', aaa: 1 }),
    'spec array form, a string option': (tk) => tk.Strategy.fromSpec(['gcra', [1.5, 'x']]),
    'spec kind unknown': (tk) => tk.Strategy.fromSpec({ kind: 'leaky', options: {} }),
    'spec without options': (tk) => tk.Strategy.fromSpec({ kind: 'gcra' }),
    'spec extra field': (tk) => tk.Strategy.fromSpec({ kind: 'gcra', options: { limit: 1, periodMs: 1 }, extra: 1 }),
    'spec not an object': (tk) => tk.Strategy.fromSpec('gcra'),
    'spec cyclic': (tk) => {
      const o = { limit: 1, periodMs: 1 }
      o.self = o
      return tk.Strategy.fromSpec({ kind: 'gcra', options: o })
    },
  }
  for (const [name, fn] of Object.entries(bad)) test(name, () => same(name, fn))
})

describe('bad constructor options', () => {
  const s = (tk) => tk.Strategy.gcra({ limit: 1, periodMs: 1000 })
  const bad = {
    'no options': (tk) => new tk.Limiter(),
    'options null': (tk) => new tk.Limiter(null),
    'options a number': (tk) => new tk.Limiter(5),
    'strategy missing': (tk) => new tk.Limiter({}),
    'strategy a fake instance': (tk) => new tk.Limiter({ strategy: Object.create(tk.Strategy.prototype) }),
    'unknown option': (tk) => new tk.Limiter({ strategy: s(tk), perfix: 'x' }),
    'store a fake instance': (tk) => new tk.Limiter({ strategy: s(tk), store: Object.create(tk.MemoryStore.prototype) }),
    'clock a Date': (tk) => new tk.Limiter({ strategy: s(tk), clock: new Date() }),
    'prefix a number': (tk) => new tk.Limiter({ strategy: s(tk), prefix: 1 }),
    'serverClock a string': (tk) => new tk.Limiter({ strategy: s(tk), serverClock: 'yes' }),
    'failPolicy unknown': (tk) => new tk.Limiter({ strategy: s(tk), failPolicy: 'failOpen' }),
    'mode unknown': (tk) => new tk.Limiter({ strategy: s(tk), mode: 'lax' }),
    'MemoryStore maxKeys 0': (tk) => new tk.MemoryStore({ maxKeys: 0 }),
    'MemoryStore maxKeys 1.5': (tk) => new tk.MemoryStore({ maxKeys: 1.5 }),
    'MemoryStore unknown option': (tk) => new tk.MemoryStore({ size: 1 }),
    'ManualClock NaN': (tk) => new tk.ManualClock(NaN),
    'ManualClock 1.5': (tk) => new tk.ManualClock(1.5),
    'ManualClock beyond 2^53': (tk) => new tk.ManualClock(2 ** 60),
    'ManualClock advance negative': (tk) => new tk.ManualClock(0).advance(-1),
    'ManualClock set undefined': (tk) => new tk.ManualClock(0).set(undefined),
    'shaper rate 0': (tk) => new tk.Shaper({ ratePerSec: 0, maxQueueMs: 1 }),
    'shaper rate NaN': (tk) => new tk.Shaper({ ratePerSec: NaN, maxQueueMs: 1 }),
    'shaper maxQueueMs negative': (tk) => new tk.Shaper({ ratePerSec: 1, maxQueueMs: -1 }),
    'shaper maxQueueMs missing': (tk) => new tk.Shaper({ ratePerSec: 1 }),
    'multi rule unknown': (tk) => new tk.MultiLimiter({ rule: 'most', dimensions: [{ name: 'a', strategy: s(tk) }] }),
    'multi no dimensions': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [] }),
    'multi dimensions not an array': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: { a: s(tk) } }),
    'multi duplicate names': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: s(tk) }, { name: 'a', strategy: s(tk) }] }),
    'multi empty name': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: '', strategy: s(tk) }] }),
    'multi costMultiplier 0': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: s(tk), costMultiplier: 0 }] }),
    'multi costMultiplier 1.5': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: s(tk), costMultiplier: 1.5 }] }),
    'multi hashTag with braces': (tk) => new tk.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: s(tk) }], hashTag: '{x}' }),
  }
  for (const [name, fn] of Object.entries(bad)) test(name, () => same(name, fn))
  // The one message that differs by build: each names the stores its build has (the native
  // addon's Redis, Postgres and SQLite stores, the WebAssembly build's Redis REST store).
  test('store a plain object', async () => {
    const make = (tk) => new tk.Limiter({ strategy: s(tk), store: {} })
    assert.deepEqual(await outcome(make, native), {
      code: 'config_invalid',
      message: 'limiter.store must be a MemoryStore, a RedisStore, a PostgresStore or a SqliteStore',
    })
    assert.deepEqual(await outcome(make, wasm), {
      code: 'config_invalid',
      message: 'limiter.store must be a MemoryStore or a RedisRestStore',
    })
  })
  for (const v of NOT_NUMBERS) {
    test(`ManualClock(${label(v)})`, () => same(`ManualClock(${label(v)})`, (tk) => new tk.ManualClock(v)))
  }
})

// The WebAssembly build reads these options by hand (core's ClientKeyOptions::from_value), the
// native addon through serde: every field's bad values, and two fields wrong at once (serde
// reports the first in key order), give the same message.
describe('bad ClientIdentity options', () => {
  const values = [null, true, 0, 64, 128, 256, -1, 1.5, 1e300, 'forwarded', 'Forwarded', '10.0.0.0/8', [], ['::1', 5], [null], {}, { forwarded: null }, { forwarded: 1 }, { nope: null }]
  for (const v of values) {
    for (const field of ['trustedProxies', 'ipv6Prefix', 'forwardedHeader']) {
      const name = `${field} ${label(v)}`
      test(name, async () => {
        const want = await outcome((tk) => new tk.ClientIdentity({ [field]: v }), native)
        const got = await outcome((tk) => new tk.ClientIdentity({ [field]: v }), wasm)
        assert.deepEqual(got, want, name)
      })
    }
    test(`ipv6Prefix 300 and forwardedHeader ${label(v)}`, async () => {
      const make = (tk) => new tk.ClientIdentity({ ipv6Prefix: 300, forwardedHeader: v })
      assert.deepEqual(await outcome(make, wasm), await outcome(make, native))
    })
  }
})

test('the same stable codes', () => {
  assert.deepEqual(wasm.errorCodes(), native.errorCodes())
  assert.equal(wasm.version(), native.version())
})
