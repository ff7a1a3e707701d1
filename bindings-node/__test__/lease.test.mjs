// The two-tier modes from Node: mode/lease options, local spends, cached denials, core's errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Limiter, ManualClock } from '../index.mjs'

const T0 = 1_800_000_000_000
const windowSpec = { kind: 'fixedWindow', options: { limit: 10, windowMs: 1000 } }

test('leased spends credits locally and stops at the limit', () => {
  const clock = new ManualClock(T0)
  const l = new Limiter({ strategy: windowSpec, clock, mode: 'leased', lease: { batch: 4, windowCoupled: true } })
  assert.equal(l.mode, 'leased')
  let allowed = 0
  for (let i = 0; i < 15; i++) if (l.checkSync('k').allowed) allowed++
  assert.equal(allowed, 10)
  const s = l.tierStats()
  assert.equal(s.leases, 4)
  assert.equal(s.localAdmits, 7)
})

test('cachedDeny answers a denial locally until its retry', () => {
  const clock = new ManualClock(T0)
  const l = new Limiter({ strategy: { kind: 'gcra', options: { limit: 10, periodMs: 1000, burst: 1 } }, clock, mode: 'cachedDeny' })
  assert.ok(l.checkSync('k').allowed)
  assert.equal(l.checkSync('k').retryAfterMs, 100)
  clock.advance(30)
  assert.equal(l.checkSync('k').retryAfterMs, 70)
  assert.equal(l.tierStats().localDenials, 1)
})

test('bad lease options are config_invalid', () => {
  const gcra = { kind: 'gcra', options: { limit: 10, periodMs: 1000 } }
  for (const [extra, field] of [
    [{ mode: 'twoTier' }, 'mode'],
    [{ lease: { batch: 0 } }, 'lease.batch'],
    [{ lease: { windowCoupled: true } }, 'lease.windowCoupled'],
    [{ lease: { bach: 1 } }, 'lease.bach'],
  ]) {
    assert.throws(() => new Limiter({ strategy: gcra, ...extra }), (e) => e.code === 'config_invalid' && e.message.includes(field))
  }
})

test('the async path leases too and releaseLeases gives back', async () => {
  // Time stands still: on the system clock a minute boundary between the checks would end the lease.
  const l = new Limiter({ strategy: { kind: 'fixedWindow', options: { limit: 100, windowMs: 60000 } }, clock: new ManualClock(T0), mode: 'leased', lease: { batch: 10 } })
  for (let i = 0; i < 3; i++) assert.ok((await l.check('k')).allowed)
  assert.equal(await l.releaseLeases(), 7)
  assert.equal(l.peekSync('k').remaining, 97)
})
