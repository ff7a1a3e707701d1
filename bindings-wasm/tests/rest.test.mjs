// The Redis REST store of the WebAssembly build against the test front end (tests/restfront/)
// and a throwaway redis-server: the same decisions (and a Shaper's reservations) as the native
// addon's RESP store and as the memory store on the same timelines, byte for byte; the script
// variants; and a server that hangs, refuses, answers garbage or drops the connection gives
// `store_unavailable` through the fail policy — in bounded time, never a silent admit.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import * as native from '../../bindings-node/index.mjs'
import * as wasm from '../../bindings-node/wasm/node.mjs'
import { startRestFront } from './support/restfront.mjs'
import { rng } from './support/rng.mjs'

let front
before(async () => {
  front = await startRestFront()
})
after(() => front?.stop())

// Slow rates and long windows: no key's TTL runs out in the (real) seconds a run takes, so the
// RESP and REST stores (whose keys expire on Redis's clock) and the memory store must agree.
const SPECS = [
  { kind: 'gcra', options: { limit: 7, periodMs: 60_000, burst: 3 } },
  { kind: 'tokenBucket', options: { capacity: 5, refillPerSec: 0.1 } },
  { kind: 'fixedWindow', options: { limit: 9, windowMs: 60_000 } },
  { kind: 'slidingWindow', options: { limit: 9, windowMs: 60_000, buckets: 4 } },
  { kind: 'slidingWindowLog', options: { limit: 6, windowMs: 60_000 } },
  { kind: 'quota', options: { limit: 12, resetCadence: 'calendar-day', offsetMinutes: 60 } },
]
// A window boundary (60 s aligned), so the 30 s a run spans stays in one window.
const START = 1_700_000_040_000

let runs = 0
async function timeline(tk, store, spec, seed) {
  const next = rng(seed)
  const clock = new tk.ManualClock(START)
  const prefix = `rest-parity:${process.pid}:${runs++}`
  const l = new tk.Limiter({ strategy: spec, clock, prefix, store })
  const out = []
  for (let i = 0; i < 120; i++) {
    clock.advance(Math.floor(next() * 250))
    const key = `k${Math.floor(next() * 3)}`
    const r = next()
    const cost = 1 + Math.floor(next() * 3)
    if (r < 0.7) out.push(await l.check(key, cost))
    else if (r < 0.8) out.push(await l.peek(key))
    else if (r < 0.9) out.push(await l.forecast(key, cost))
    else if (r < 0.96) out.push(await l.checkMany([key, 'k9'], cost))
    else out.push((await l.reset(key)) ?? 'reset')
  }
  return out
}

async function multiTimeline(tk, store, rule, seed) {
  const next = rng(seed)
  const clock = new tk.ManualClock(START)
  const m = new tk.MultiLimiter({
    rule,
    store,
    clock,
    prefix: `rest-parity-multi:${process.pid}:${runs++}`,
    dimensions: [
      { name: 'user', strategy: { kind: 'gcra', options: { limit: 4, periodMs: 60_000 } } },
      { name: 'ip', strategy: { kind: 'fixedWindow', options: { limit: 6, windowMs: 60_000 } }, costMultiplier: 2 },
    ],
  })
  const out = []
  for (let i = 0; i < 60; i++) {
    clock.advance(Math.floor(next() * 300))
    const keys = [`u${Math.floor(next() * 2)}`, `ip${Math.floor(next() * 2)}`]
    if (next() < 0.93) out.push(await m.check(keys, 1 + Math.floor(next() * 2)))
    else out.push((await m.reset(keys)) ?? 'reset')
  }
  return out
}

async function shaperTimeline(tk, store, seed) {
  const next = rng(seed)
  const clock = new tk.ManualClock(START)
  // 50 s a unit: a key's TTL (its queue's length) outlives the run, as the limiters' periods do.
  const s = new tk.Shaper({ ratePerSec: 0.02, maxQueueMs: 200_000, store, clock, prefix: `rest-parity-shaper:${process.pid}:${runs++}` })
  const out = []
  for (let i = 0; i < 80; i++) {
    clock.advance(Math.floor(next() * 400))
    const key = `q${Math.floor(next() * 2)}`
    if (next() < 0.95) out.push(await s.reserve(key, 1 + Math.floor(next() * 3)))
    else out.push((await s.reset(key)) ?? 'reset')
  }
  return out
}

const rest = (locking) => new wasm.RedisRestStore({ url: front.url, token: front.token, timeoutMs: 5000, locking })

test('the REST store decides as the native RESP store and the memory store', async () => {
  const resp = await native.RedisStore.connect({ url: `redis://127.0.0.1:${front.redisPort}` })
  try {
    for (const spec of SPECS) {
      for (const seed of [7]) {
        const want = await timeline(native, resp, spec, seed)
        assert.deepEqual(await timeline(wasm, rest('global'), spec, seed), want, `${spec.kind} seed ${seed} (global)`)
        assert.deepEqual(await timeline(wasm, rest('keys'), spec, seed), want, `${spec.kind} seed ${seed} (keys)`)
        assert.deepEqual(await timeline(wasm, new wasm.MemoryStore(), spec, seed), want, `${spec.kind} seed ${seed} (memory)`)
      }
    }
    for (const rule of ['all', 'any']) {
      const want = await multiTimeline(native, resp, rule, 3)
      assert.deepEqual(await multiTimeline(wasm, rest('global'), rule, 3), want, `multi ${rule}`)
      assert.deepEqual(await multiTimeline(wasm, rest('keys'), rule, 3), want, `multi ${rule} (keys)`)
    }
    const want = await shaperTimeline(native, resp, 5)
    assert.ok(want.some((r) => r.accepted && r.delayMs > 0) && want.some((r) => r.accepted === false), 'the timeline queues and refuses')
    assert.deepEqual(await shaperTimeline(wasm, rest('global'), 5), want, 'shaper (global)')
    assert.deepEqual(await shaperTimeline(wasm, rest('keys'), 5), want, 'shaper (keys)')
    assert.deepEqual(await shaperTimeline(wasm, new wasm.MemoryStore(), 5), want, 'shaper (memory)')
  } finally {
    await resp.close?.()
  }
})

test('80 concurrent checks on one key admit exactly the limit', async () => {
  const l = new wasm.Limiter({
    strategy: { kind: 'fixedWindow', options: { limit: 25, windowMs: 60_000 } },
    // 80 connections at once on a loaded machine: a generous timeout (a timeout fails the test).
    store: new wasm.RedisRestStore({ url: front.url, token: front.token, timeoutMs: 20_000, locking: 'keys' }),
    prefix: `rest-concurrent:${process.pid}`,
    failPolicy: 'raise',
    // At the start of a window, so its key's TTL (59 s of Redis's clock) outlives every request;
    // on the host's clock a run near a minute's end would see the key expire under requests
    // still in flight and count afresh.
    clock: new wasm.ManualClock(START + 1000),
  })
  const ds = await Promise.all(Array.from({ length: 80 }, () => l.check('hot')))
  assert.equal(ds.filter((d) => d.allowed).length, 25)
})

test('options are checked: config_invalid, and sync methods are not_implemented', () => {
  const bad = [
    [{ token: 't' }, 'redisRestStore.url is required'],
    [{ url: 'ftp://x', token: 't' }, 'redisRestStore.url must be an http:// or https:// URL'],
    [{ url: 'http://x' }, 'redisRestStore.token is required'],
    [{ url: 'http://x', token: 't', timeoutMs: 0 }, undefined],
    [{ url: 'http://x', token: 't', locking: 'none' }, "redisRestStore.locking must be 'global' or 'keys'"],
    [{ url: 'http://x', token: 't', nope: 1 }, undefined],
  ]
  for (const [o, message] of bad) {
    assert.throws(() => new wasm.RedisRestStore(o), (e) => e.code === 'config_invalid' && (!message || e.message === message), JSON.stringify(o))
  }
  const l = new wasm.Limiter({ strategy: { kind: 'gcra', options: { limit: 1, periodMs: 1000 } }, store: rest() })
  assert.throws(() => l.checkSync('k'), (e) => e.code === 'not_implemented')
  const s = new wasm.Shaper({ ratePerSec: 1, maxQueueMs: 1000, store: rest() })
  assert.throws(() => s.reserveSync('k'), (e) => e.code === 'not_implemented')
  assert.throws(() => s.resetSync('k'), (e) => e.code === 'not_implemented')
})

test('a wrong token is store_unavailable through the fail policy', async () => {
  const store = new wasm.RedisRestStore({ url: front.url, token: 'wrong', timeoutMs: 2000 })
  const l = new wasm.Limiter({ strategy: { kind: 'gcra', options: { limit: 5, periodMs: 1000 } }, store, failPolicy: 'raise' })
  await assert.rejects(l.check('k'), (e) => e.code === 'store_unavailable' && /refused the token/.test(e.message))
})

for (const fault of ['hang', 'refuse', 'garbage', 'drop']) {
  test(`a front end that ${fault}s: store_unavailable through each fail policy (a shaper: rejected), in bounded time`, async () => {
    const bad = await startRestFront({ fault, redisPort: front.redisPort })
    try {
      const store = new wasm.RedisRestStore({ url: bad.url, token: bad.token, timeoutMs: 300 })
      const strategy = { kind: 'gcra', options: { limit: 5, periodMs: 1000 } }
      const mk = (failPolicy) => new wasm.Limiter({ strategy, store, failPolicy })
      // The clock starts before the call does (the call sets the request's timer), at the start
      // of an event-loop turn: a timer counts from the loop's cached clock (libuv's loop time),
      // which lags performance.now() by whatever ran in the turn before the call.
      const timed = async (call) => {
        await new Promise((resolve) => setImmediate(resolve))
        const t0 = performance.now()
        try {
          return [await call(), performance.now() - t0]
        } catch (e) {
          return [e, performance.now() - t0]
        }
      }
      const [closed, t1] = await timed(() => mk('fail_closed').check('k'))
      assert.equal(closed.allowed, false, 'fail_closed denies')
      const [open, t2] = await timed(() => mk('fail_open').check('k'))
      assert.equal(open.allowed, true)
      assert.equal(open.fallback, true, 'fail_open admits only as a fallback')
      const [raised, t3] = await timed(() => mk('raise').check('k'))
      assert.equal(raised.code, 'store_unavailable', String(raised))
      const [many] = await timed(() => mk('fail_open').checkMany(['a', 'b']))
      assert.ok(many.every((d) => d.allowed && d.fallback))
      const m = new wasm.MultiLimiter({ rule: 'all', store, failPolicy: 'raise', dimensions: [{ name: 'a', strategy }] })
      const [mr] = await timed(() => m.check(['x']))
      assert.equal(mr.code, 'store_unavailable')
      const [rr] = await timed(() => mk('raise').reset('k'))
      assert.equal(rr.code, 'store_unavailable')
      // A shaper has no fail policy: its reservation rejects.
      const [sr] = await timed(() => new wasm.Shaper({ ratePerSec: 5, maxQueueMs: 1000, store }).reserve('k'))
      assert.equal(sr.code, 'store_unavailable', String(sr))
      for (const t of [t1, t2, t3]) assert.ok(t < 2000, `answered in ${t} ms`)
      if (fault === 'hang') {
        // 20 ms of slack for the loop time's lag (above).
        for (const t of [t1, t2, t3]) assert.ok(t >= 280, `a hang ends at the timeout, not before (${t} ms)`)
        assert.match(raised.message, /did not answer within 300 ms/)
        // 70 at once span three timeout rounds (a round takes at most 32 requests): every
        // round's timer aborts its requests. A round's timer lost would leave its requests to
        // undici's own 300 s; 15 s is far from both (100 connections to the hanging front end
        // took 0.6 to 3.9 s on this 2-core VM at load 20).
        const hung = new Promise((resolve) => setTimeout(resolve, 15_000, 'hung').unref())
        const all70 = Promise.all(Array.from({ length: 70 }, (_, i) => mk('raise').check(`k${i}`).catch((e) => e)))
        // (No lower bound here: 70 fetch calls in one turn lag the loop's clock, which the
        // rounds' timers count from, by more than the single calls above do.)
        const all = await Promise.race([all70, hung])
        assert.notEqual(all, 'hung', 'a request outlived its timeout round by 15 s')
        assert.ok(all.every((e) => e.code === 'store_unavailable'), String(all.find((e) => e.code !== 'store_unavailable')))
      }
    } finally {
      bad.stop()
    }
  })
}

test('Deno and Bun drive the REST store as Node does', async () => {
  const { spawnSync } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  const probe = fileURLToPath(new URL('./support/rest-probe.mjs', import.meta.url))
  const bin = fileURLToPath(new URL('../node_modules/.bin/', import.meta.url))
  const run = (cmd, args, prefix) => {
    const env = { ...process.env, THROTTLEKIT_REST_URL: front.url, THROTTLEKIT_REST_TOKEN: front.token, PROBE_PREFIX: prefix, DENO_NO_UPDATE_CHECK: '1' }
    const r = spawnSync(cmd, [...args, probe], { env, encoding: 'utf8' })
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`)
    return JSON.parse(r.stdout)
  }
  const want = run(process.execPath, [], `probe-node:${process.pid}`)
  assert.equal(want.at(-1).fallback, true)
  assert.deepEqual(run(bin + 'deno', ['run', '--quiet', '--allow-read', '--allow-env', '--allow-net=127.0.0.1'], `probe-deno:${process.pid}`), want)
  assert.deepEqual(run(bin + 'bun', [], `probe-bun:${process.pid}`), want)
})
