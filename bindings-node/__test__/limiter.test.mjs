// The limiter, multi limiter, shaper, strategies and clock through the public API, in memory.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, test } from 'node:test'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

import * as esm from '../index.mjs'
import { Limiter, ManualClock, MemoryStore, MultiLimiter, Shaper, Strategy, errorCodes, version } from '../index.mjs'

const require = createRequire(import.meta.url)
const cjs = require('../index.js')
const run = promisify(execFile)

const gcra = (o = {}) => Strategy.gcra({ limit: 10, periodMs: 1000, burst: 2, ...o })

describe('entry points', () => {
  test('ESM and CommonJS export the same objects', () => {
    assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), Object.keys(cjs).sort())
    for (const k of Object.keys(cjs)) assert.equal(esm[k], cjs[k], k)
  })

  test('errorCodes() is the documented list, in order', () => {
    assert.deepEqual(errorCodes(), ['config_invalid', 'store_unavailable', 'rate_limit_exceeded', 'queue_full', 'not_implemented'])
  })

  test('version() is the package version', () => {
    assert.equal(version(), require('../package.json').version)
  })
})

describe('Limiter', () => {
  test('checkSync admits the burst, then denies with an exact retry', () => {
    const clock = new ManualClock(1000)
    const l = new Limiter({ strategy: gcra(), clock })
    assert.deepEqual(l.checkSync('u'), { allowed: true, limit: 2, remaining: 1, resetAt: 1100, retryAfterMs: 0 })
    assert.deepEqual(l.checkSync('u'), { allowed: true, limit: 2, remaining: 0, resetAt: 1200, retryAfterMs: 0 })
    assert.deepEqual(l.checkSync('u'), { allowed: false, limit: 2, remaining: 0, resetAt: 1200, retryAfterMs: 100 })
    clock.advance(99)
    assert.equal(l.checkSync('u').allowed, false)
    clock.advance(1)
    assert.equal(l.checkSync('u').allowed, true)
  })

  test('a spec object works like the typed constructor', () => {
    const clock = new ManualClock(0)
    const a = new Limiter({ strategy: { kind: 'gcra', options: { limit: 10, periodMs: 1000, burst: 2 } }, clock })
    const b = new Limiter({ strategy: gcra(), clock })
    for (let i = 0; i < 4; i++) assert.deepEqual(a.checkSync('k', 1), b.checkSync('k', 1))
  })

  test('the fast checkSync path equals the native method on random timelines', () => {
    const native = cjs[Symbol.for('throttlekit.nativeCheckSync')]
    assert.equal(typeof native, 'function')
    const strategies = [
      gcra(),
      Strategy.tokenBucket({ capacity: 5, refillPerSec: 2.5 }),
      Strategy.fixedWindow({ limit: 3, windowMs: 1000 }),
      Strategy.slidingWindow({ limit: 4, windowMs: 1000, buckets: 4 }),
      Strategy.slidingWindowLog({ limit: 3, windowMs: 500 }),
      Strategy.quota({ limit: 5, resetCadence: 'calendar-day', offsetMinutes: 60 }),
    ]
    let seed = 42
    const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n)
    for (const strategy of strategies) {
      const clock = new ManualClock(1_700_000_000_000)
      const fast = new Limiter({ strategy, clock })
      const slow = new Limiter({ strategy, clock })
      for (let i = 0; i < 300; i++) {
        clock.advance(rand(200))
        const key = `k${rand(3)}`
        const cost = 1 + rand(3)
        assert.deepEqual(fast.checkSync(key, cost), native.call(slow, key, cost), `${strategy.kind} op ${i}`)
      }
    }
  })

  test('check returns a Promise of the same decision', async () => {
    const clock = new ManualClock(0)
    const l = new Limiter({ strategy: gcra(), clock })
    const p = l.check('a')
    assert.ok(p instanceof Promise)
    assert.deepEqual(await p, { allowed: true, limit: 2, remaining: 1, resetAt: 100, retryAfterMs: 0 })
  })

  test('checkMany decides each key at one clock reading', async () => {
    const clock = new ManualClock(0)
    const l = new Limiter({ strategy: gcra({ burst: 1 }), clock })
    const ds = await l.checkMany(['a', 'b', 'a'])
    assert.deepEqual(ds.map((d) => d.allowed), [true, true, false])
    assert.deepEqual(l.checkManySync(['c', 'c']).map((d) => d.allowed), [true, false])
  })

  test('peek and forecast consume nothing; reset forgets', async () => {
    const clock = new ManualClock(0)
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 3, windowMs: 1000 }), clock })
    l.checkSync('k', 2)
    assert.deepEqual(l.peekSync('k'), await l.peek('k'))
    assert.equal(l.peekSync('k').remaining, 1)
    assert.equal(l.forecastSync('k', 2).allowed, false)
    assert.equal((await l.forecast('k', 1)).allowed, true)
    assert.equal(l.peekSync('k').remaining, 1)
    l.resetSync('k')
    assert.equal(l.peekSync('k').remaining, 3)
    l.checkSync('k', 3)
    await l.reset('k')
    assert.equal(l.peekSync('k').remaining, 3)
    await l.close()
  })

  test('a prefix namespaces keys on a shared store', () => {
    const store = new MemoryStore()
    // Time stands still: on the system clock a's credit comes back 100 ms after its check.
    const clock = new ManualClock(0)
    const a = new Limiter({ strategy: gcra({ burst: 1 }), store, clock, prefix: 'a' })
    const b = new Limiter({ strategy: gcra({ burst: 1 }), store, clock, prefix: 'b' })
    assert.equal(a.checkSync('k').allowed, true)
    assert.equal(b.checkSync('k').allowed, true)
    assert.equal(a.checkSync('k').allowed, false)
    assert.equal(store.size, 2)
    assert.equal(a.prefix, 'a')
  })

  test('quotas fail closed by default; other strategies raise', () => {
    assert.equal(new Limiter({ strategy: Strategy.quota({ limit: 1, resetCadence: 'calendar-month' }) }).failPolicy, 'fail_closed')
    assert.equal(new Limiter({ strategy: gcra() }).failPolicy, 'raise')
    assert.equal(new Limiter({ strategy: gcra(), failPolicy: 'fail_open' }).failPolicy, 'fail_open')
  })

  test('a quota over calendar months resets at the month boundary (UTC offset applied)', () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 31, 22, 0))
    const l = new Limiter({ strategy: Strategy.quota({ limit: 2, resetCadence: 'calendar-month', offsetMinutes: 120 }), clock })
    const d = l.checkSync('acct')
    // 22:00 UTC on Jan 31 is 00:00 Feb 1 at UTC+2: the February period, ending at March 1 local.
    assert.equal(d.resetAt, Date.UTC(2024, 2, 1) - 120 * 60_000)
  })

  test('strategies report their kind, limit and spec', () => {
    const s = Strategy.slidingWindow({ limit: 5, windowMs: 1000 })
    assert.equal(s.kind, 'slidingWindow')
    assert.equal(s.limit, 5)
    assert.deepEqual(s.toSpec(), { kind: 'slidingWindow', options: { limit: 5, windowMs: 1000 } })
    assert.deepEqual(Strategy.fromSpec(s.toSpec()).toSpec(), s.toSpec())
    assert.deepEqual(JSON.parse(JSON.stringify(gcra())), { kind: 'gcra', options: { limit: 10, periodMs: 1000, burst: 2 } })
    assert.equal(new Limiter({ strategy: s }).strategy.kind, 'slidingWindow')
  })

  test('ManualClock: advance forward only, set may go backwards', () => {
    const c = new ManualClock()
    assert.equal(c.now(), 0)
    assert.equal(c.advance(5), 5)
    c.set(-10)
    assert.equal(c.now(), -10)
  })
})

describe('MultiLimiter', () => {
  const dims = [
    { name: 'ip', strategy: Strategy.fixedWindow({ limit: 3, windowMs: 1000 }) },
    { name: 'user', strategy: { kind: 'gcra', options: { limit: 1, periodMs: 1000 } }, costMultiplier: 1 },
  ]

  test('all: a denial anywhere commits nothing and names the binding dimension', async () => {
    const clock = new ManualClock(0)
    const m = new MultiLimiter({ rule: 'all', dimensions: dims, clock })
    const first = m.checkSync(['1.2.3.4', 'bob'])
    assert.equal(first.allowed, true)
    assert.equal(first.binding, 'user')
    assert.equal(first.dimensions.length, 2)
    const second = await m.check(['1.2.3.4', 'bob'])
    assert.equal(second.allowed, false)
    assert.equal(second.binding, 'user')
    // The denied request charged no dimension: another user on the same IP sees 3 - 1 - 1.
    assert.equal(m.checkSync(['1.2.3.4', 'alice']).dimensions[0].remaining, 1)
    assert.deepEqual(m.dimensionNames, ['ip', 'user'])
  })

  test('any: one allowing dimension suffices and only it pays', () => {
    const clock = new ManualClock(0)
    const m = new MultiLimiter({ rule: 'any', dimensions: dims, clock })
    m.checkSync(['ip', 'bob'])
    const d = m.checkSync(['ip', 'bob'])
    assert.equal(d.allowed, true)
    assert.equal(d.binding, 'ip')
    assert.equal(d.dimensions[0].remaining, 1)
    m.resetSync(['ip', 'bob'])
    assert.equal(m.checkSync(['ip', 'bob']).dimensions[0].remaining, 2)
  })
})

describe('Shaper', () => {
  test('reserve spaces departures and refuses past maxQueueMs', async () => {
    const clock = new ManualClock(0)
    const s = new Shaper({ ratePerSec: 10, maxQueueMs: 150, clock })
    assert.deepEqual(s.reserveSync('a'), { accepted: true, delayMs: 0 })
    assert.deepEqual(await s.reserve('a'), { accepted: true, delayMs: 100 })
    assert.deepEqual(s.reserveSync('a'), { accepted: false, delayMs: 50 })
    s.resetSync('a')
    assert.deepEqual(s.reserveSync('a'), { accepted: true, delayMs: 0 })
  })

  test('schedule resolves after the delay', async () => {
    // The queue's time is a ManualClock's, so the second departure is exactly 100 ms after the
    // first however long the first await took (on the system clock, a loaded machine could let
    // the first slot pass before the second reservation and see no delay); the wait itself is
    // on real timers, measured from before the call.
    const s = new Shaper({ ratePerSec: 10, maxQueueMs: 1000, clock: new ManualClock(0) })
    assert.deepEqual(await s.schedule('k'), { accepted: true, delayMs: 0 })
    const t0 = performance.now()
    const r = await s.schedule('k')
    const waited = performance.now() - t0
    assert.deepEqual(r, { accepted: true, delayMs: 100 })
    // A timer never fires early; 1 ms for the two clocks' rounding.
    assert.ok(waited >= r.delayMs - 1, `waited ${waited} ms for a ${r.delayMs} ms delay`)
  })

  test('schedule rejects queue_full with retryAfterMs', async () => {
    const clock = new ManualClock(0)
    const s = new Shaper({ ratePerSec: 1, maxQueueMs: 500, clock })
    await s.schedule('k')
    await assert.rejects(s.schedule('k'), (e) => e instanceof Error && e.code === 'queue_full' && e.retryAfterMs === 500)
  })

  test('a delay past the 2^31-1 ms timer ceiling is still waited for (not fired after 1 ms)', async () => {
    // Rate 1 per 30 days: the second departure is ~2.6e9 ms away, beyond setTimeout's range.
    // In a child process, because the pending wait (rightly) keeps its event loop alive.
    const script = `
      const { Shaper, ManualClock } = require(${JSON.stringify(require.resolve('../index.js'))})
      const s = new Shaper({ ratePerSec: 1 / (30 * 86400), maxQueueMs: 40 * 86400000, clock: new ManualClock(0) })
      s.schedule('k').then(() => {
        let settled = false
        s.schedule('k').then((r) => { settled = r.delayMs }, (e) => { settled = e.code })
        setTimeout(() => { console.log(JSON.stringify(settled)); process.exit(0) }, 200)
      })`
    const { stdout } = await run(process.execPath, ['-e', script])
    assert.equal(stdout.trim(), 'false')
  })
})
