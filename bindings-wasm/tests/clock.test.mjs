// Time in the WebAssembly build is the host's: without a ManualClock a limiter reads
// `Date.now()` in JavaScript at every call. A Worker freezes `Date.now()` for the length of a
// request, so many checks at one held time must decide exactly as at one instant.
import assert from 'node:assert/strict'
import { afterEach, test } from 'node:test'

import { Limiter, ManualClock, MultiLimiter, Strategy } from '../../bindings-node/wasm/node.mjs'

const realNow = Date.now
afterEach(() => {
  Date.now = realNow
})

/** Holds `Date.now()` at `t` until the next `hold`. */
function hold(t) {
  Date.now = () => t
}

test('a limiter without a clock reads Date.now()', () => {
  hold(1_000_000_123)
  const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 5, windowMs: 1000 }) })
  assert.equal(l.checkSync('k').resetAt, 1_000_001_000, 'the window of the held time')
  hold(5_000_000_500)
  assert.equal(l.checkSync('k').resetAt, 5_000_001_000, 'a new reading at the next call')
})

test('frozen time: 1000 checks at one held instant admit exactly the burst, then nothing', () => {
  const t = 1_700_000_000_000
  hold(t)
  for (const strategy of [
    Strategy.gcra({ limit: 50, periodMs: 60_000, burst: 20 }),
    Strategy.tokenBucket({ capacity: 20, refillPerSec: 1 }),
    Strategy.fixedWindow({ limit: 20, windowMs: 60_000 }),
    Strategy.slidingWindow({ limit: 20, windowMs: 60_000 }),
    Strategy.slidingWindowLog({ limit: 20, windowMs: 60_000 }),
  ]) {
    const l = new Limiter({ strategy })
    const ds = Array.from({ length: 1000 }, () => l.checkSync('user'))
    assert.equal(ds.filter((d) => d.allowed).length, 20, strategy.kind)
    assert.deepEqual(ds.slice(0, 20).map((d) => d.remaining), Array.from({ length: 20 }, (_, i) => 19 - i), strategy.kind)
    const denied = ds.slice(20)
    assert.ok(denied.every((d) => !d.allowed && d.remaining === 0), strategy.kind)
    // Held time: every denial names the same wait and the same reset.
    assert.equal(new Set(denied.map((d) => d.retryAfterMs)).size, 1, `${strategy.kind}: one retryAfterMs`)
    assert.equal(new Set(denied.map((d) => d.resetAt)).size, 1, `${strategy.kind}: one resetAt`)
    assert.ok(denied[0].retryAfterMs > 0, strategy.kind)
    // Following the waits it names (one for most; the sliding window's points at its next
    // sub-bucket, docs/semantics.md), the key is admitted again within the window.
    let now = t
    let d = denied[0]
    while (!d.allowed && now - t <= 60_000) {
      now += d.retryAfterMs
      hold(now)
      d = l.checkSync('user')
    }
    assert.equal(d.allowed, true, `${strategy.kind} after the waits`)
    if (strategy.kind !== 'slidingWindow') assert.equal(now, t + denied[0].retryAfterMs, `${strategy.kind}: one wait`)
    hold(t)
  }
})

test('frozen time on a multi limiter: the binding dimension stays the same', () => {
  hold(1_700_000_000_000)
  const m = new MultiLimiter({
    rule: 'all',
    dimensions: [
      { name: 'user', strategy: Strategy.fixedWindow({ limit: 3, windowMs: 1000 }) },
      { name: 'ip', strategy: Strategy.fixedWindow({ limit: 10, windowMs: 1000 }) },
    ],
  })
  const ds = Array.from({ length: 50 }, () => m.checkSync(['alice', '10.0.0.1']))
  assert.equal(ds.filter((d) => d.allowed).length, 3)
  assert.ok(ds.slice(3).every((d) => d.binding === 'user' && !d.allowed))
})

test('a ManualClock is read instead of Date.now()', () => {
  hold(9_999_999_999)
  const clock = new ManualClock(500)
  const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1, windowMs: 1000 }), clock })
  assert.equal(l.checkSync('k').resetAt, 1000)
  assert.equal(clock.advance(600), 1100)
  assert.equal(l.checkSync('k').resetAt, 2000)
})
