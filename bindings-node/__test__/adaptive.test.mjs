// AdaptiveLimiter: the Node idiom around the core's adaptive concurrency limiter, its vectors,
// and the shedding middleware (Express, Fastify).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const tk = require('../index.js')
const shedding = require('../lib/http/shedding.js')
const { parseAdaptive, replayAdaptive } = require('../lib/adaptive-conformance.js')
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

test('the adaptive vectors replay with no mismatch', () => {
  const file = join(root, 'conformance-vectors', 'adaptive', 'timelines.json')
  const report = replayAdaptive(parseAdaptive(readFileSync(file, 'utf8')))
  assert.deepEqual(report.failures.slice(0, 5), [])
  assert.ok(report.passed > 1000, `${report.passed} passed`)
})

test('tryAcquire answers a permit or a rejection carrying limit and in-flight', () => {
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 2 })
  const a = limiter.tryAcquire()
  const b = limiter.tryAcquire()
  const c = limiter.tryAcquire()
  assert.ok(a instanceof tk.Permit && a.granted && b.granted)
  assert.deepEqual(c, { granted: false, limit: 2, inflight: 2, retryAfterMs: 1000, retryAfterSecs: 1 })
  assert.equal(a.release('success'), true)
  assert.equal(a.release('dropped'), false) // twice: harmless, and says so
  assert.equal(b.release('ignore', 5_000_000), true)
  const m = limiter.metrics()
  assert.deepEqual([m.inflight, m.acquired, m.rejected, m.succeeded, m.ignored], [0, 2, 1, 1, 1])
})

test('Symbol.dispose releases as ignore unless the body released', () => {
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 2 })
  const p = limiter.tryAcquire()
  p[Symbol.dispose]()
  const q = limiter.tryAcquire()
  q.release('success')
  q[Symbol.dispose]()
  const m = limiter.metrics()
  assert.deepEqual([m.inflight, m.ignored, m.succeeded, m.leaked], [0, 1, 1, 0])
})

test('a permit garbage-collected unreleased counts as ignore and leaked; a forgotten one is released', async () => {
  const { setFlagsFromString } = await import('node:v8')
  const { runInNewContext } = await import('node:vm')
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc')
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 4 })
  const kept = limiter.tryAcquire()
  ;(() => {
    limiter.tryAcquire() // dropped at once
    limiter.tryAcquire().release('success') // released, then collected: not a leak
  })()
  // The registry's callbacks run in a later task after a collection: collect, yield, look.
  for (let i = 0; i < 100 && limiter.metrics().leaked === 0; i++) {
    gc()
    await new Promise((r) => setTimeout(r, 10))
  }
  const m = limiter.metrics()
  assert.deepEqual([m.inflight, m.leaked, m.ignored, m.succeeded], [1, 1, 1, 1])
  assert.equal(kept.released, false)
  kept.__forget() // the conformance runner's `drop`: a leak now
  assert.equal(kept.released, true)
  assert.equal(kept.release('success'), false)
  assert.deepEqual([limiter.inflight(), limiter.metrics().leaked], [0, 2])
  assert.throws(() => new tk.Permit(), TypeError) // permits come from a limiter only
})

test('acquire waits without blocking the event loop, then times out with a rejection', async () => {
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 1, order: 'lifo' })
  const held = limiter.tryAcquire()
  const started = Date.now()
  let settled = false
  const waiting = limiter.acquire({ timeoutMs: 5000 })
  waiting.then(() => (settled = true))
  // Timers fire while the acquire is pending, until it is queued (on the runtime's thread, which
  // a loaded machine may run late: a fixed 30 ms pause lost that race): the wait did not block
  // the loop (a blocked thread would have held it for the whole 5 s).
  await until(() => limiter.metrics().waiting === 1)
  assert.ok(!settled && Date.now() - started < 4000)
  held.release()
  const p = await waiting
  assert.ok(p.granted)
  const before = Date.now()
  const r = await limiter.acquire({ timeoutMs: 20 })
  assert.equal(r.granted, false)
  assert.ok(Date.now() - before >= 15)
  p.release()
  assert.equal(limiter.inflight(), 0)
})

test('bad input is config_invalid naming the field', async () => {
  const bad = [
    [{ initialLimit: 0 }, 'initialLimit'],
    [{ minLimit: -1 }, 'minLimit'],
    [{ partitions: [{ name: 'a', percent: 60 }, { name: 'b', percent: 50 }] }, 'partitions'],
    [{ algorithm: 'tcp' }, 'tcp'], // serde's words: unknown variant `tcp`, expected one of ...
    [{ limit: 10 }, 'limit'],
    [{ algorithm: 'vegas', backoff: 0.5 }, 'backoff'],
  ]
  for (const [options, field] of bad) {
    assert.throws(() => new tk.AdaptiveLimiter(options), (e) => e.code === 'config_invalid' && e.message.includes(field))
  }
  const limiter = new tk.AdaptiveLimiter({ partitions: [{ name: 'live', percent: 90 }] })
  assert.throws(() => limiter.tryAcquire('nope'), (e) => e.code === 'config_invalid' && /partition/.test(e.message))
  await assert.rejects(limiter.acquire({}), (e) => e.code === 'config_invalid' && /timeoutMs/.test(e.message))
  const p = limiter.tryAcquire('live')
  assert.throws(() => p.release('success', -1), (e) => e.code === 'config_invalid' && /rtt/.test(e.message))
  assert.throws(() => p.release('fine'), (e) => e.code === 'config_invalid' && /outcome/.test(e.message))
  assert.equal(p.release(), true)
})

test('tryAcquire and release decide the same through the shared buffer as through the native methods', () => {
  // A release with a named outcome and no round trip takes the shared buffer (src/adaptive_fast.rs);
  // one given `rttNs` takes the native method. On a virtual clock both see the same round trip, so
  // two limiters driven by the same timeline, one each way, must agree on every counter.
  const options = { algorithm: 'gradient2', initialLimit: 8, minLimit: 2, windowMinSamples: 4, minRttUs: 0 }
  const clocks = [new tk.VirtualClock(), new tk.VirtualClock()]
  const [fast, native] = clocks.map((c) => new tk.AdaptiveLimiter(options, c))
  const outcomes = ['success', 'dropped', 'ignore', undefined]
  let seed = 7 // xorshift32: every outcome and branch comes up
  const next = (n) => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  const held = []
  for (let step = 0; step < 400; step++) {
    if (held.length === 0 || next(3) > 0) {
      const a = fast.tryAcquire()
      const b = native.tryAcquire()
      assert.equal(a.granted, b.granted, `step ${step}`)
      if (a.granted) held.push([a, b, clocks[0].nowNs()])
      else assert.deepEqual(a, b)
    } else {
      const [a, b, at] = held.splice(next(held.length), 1)[0]
      const outcome = outcomes[next(outcomes.length)]
      assert.equal(a.release(outcome), true)
      assert.equal(b.release(outcome, clocks[1].nowNs() - at), true)
      assert.equal(a.release(outcome), false) // twice: nothing, on either path
      assert.equal(b.release(outcome, 1), false)
    }
    const ns = 1_000 * (1 + next(5_000))
    for (const c of clocks) c.advance(ns)
    assert.deepEqual(fast.metrics(), native.metrics(), `step ${step}`)
  }
  const m = fast.metrics()
  assert.ok(m.windows > 5 && m.rejected > 0 && m.succeeded > 0 && m.dropped > 0 && m.ignored > 0, JSON.stringify(m))
})

test('each permit releases in its own limiter, whatever its id', () => {
  // Ids count from 0 in every limiter: the permit carries its limiter's handle as well.
  const a = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 2 })
  const b = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 2 })
  const pa = a.tryAcquire()
  const pb = b.tryAcquire()
  assert.equal(pa.release('dropped'), true)
  assert.deepEqual([a.inflight(), b.inflight(), a.metrics().dropped, b.metrics().dropped], [0, 1, 1, 0])
  assert.equal(pb.released, false)
  pb.release()
  assert.deepEqual([b.inflight(), b.metrics().succeeded], [0, 1])
})

test('a partition goes through the shared buffer as a string; anything else is config_invalid', () => {
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 2, partitions: [{ name: 'live', percent: 50 }] })
  const p = limiter.tryAcquire('live')
  assert.deepEqual([p.granted, limiter.metrics().partitions.live], [true, 1])
  const q = limiter.tryAcquire(null) // as undefined: no partition
  assert.equal(q.granted, true)
  for (const bad of [42, {}, ['live'], true]) {
    assert.throws(() => limiter.tryAcquire(bad), (e) => e.code === 'config_invalid' && /partition/.test(e.message))
  }
  const tryAcquire = tk.AdaptiveLimiter.prototype.tryAcquire
  for (const notALimiter of [{}, null, new tk.VirtualClock(), Object.create(limiter)]) {
    assert.throws(() => tryAcquire.call(notALimiter), (e) => e.code === 'config_invalid' && /AdaptiveLimiter/.test(e.message))
  }
  p.release()
  q.release()
  assert.equal(limiter.inflight(), 0)
})

/** Resolves once `check()` is true, polling; fails after 10 s. */
async function until(check) {
  const deadline = Date.now() + 10_000
  while (!check()) {
    assert.ok(Date.now() < deadline, 'timed out waiting')
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** A gate the held route waits on, opened by the test. */
function gate() {
  let open
  const opened = new Promise((r) => (open = r))
  return { opened, open }
}

/** With the one permit held by a request to /hold, /ok is shed with 503 + Retry-After. */
async function shedsWhileHeld(url, limiter, held) {
  const holding = fetch(`${url}/hold`)
  await until(() => limiter.inflight() === 1)
  const shed = await fetch(`${url}/ok`)
  assert.equal(shed.status, 503)
  assert.equal(shed.headers.get('retry-after'), '1')
  held.open()
  assert.equal((await holding).status, 200)
  await until(() => limiter.inflight() === 0)
}

test('Express shedding answers 503 with Retry-After and releases by status', async () => {
  const express = require('express')
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 1 })
  const held = gate()
  const app = express()
  app.use(shedding.express(limiter))
  app.get('/ok', (_req, res) => res.send('ok'))
  app.get('/504', (_req, res) => res.status(504).send('slow'))
  app.get('/hold', (_req, res) => held.opened.then(() => res.send('held')))
  const server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s))
  })
  const url = `http://127.0.0.1:${server.address().port}`
  try {
    assert.equal((await fetch(`${url}/ok`)).status, 200)
    assert.equal((await fetch(`${url}/504`)).status, 504)
    await shedsWhileHeld(url, limiter, held)
    const m = limiter.metrics()
    assert.deepEqual([m.inflight, m.succeeded, m.dropped, m.rejected], [0, 2, 1, 1])
  } finally {
    server.close()
  }
})

test('Fastify shedding answers 503 with Retry-After', async () => {
  const Fastify = require('fastify')
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 1 })
  const held = gate()
  const app = Fastify()
  await app.register(shedding.fastify(limiter))
  app.get('/hold', async () => {
    await held.opened
    return 'held'
  })
  app.get('/ok', async () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${app.server.address().port}`
  try {
    await shedsWhileHeld(url, limiter, held)
    assert.equal((await fetch(`${url}/ok`)).status, 200)
    await until(() => limiter.inflight() === 0)
    const m = limiter.metrics()
    assert.deepEqual([m.succeeded, m.rejected], [2, 1])
  } finally {
    await app.close()
  }
})

test("the docs' Node quick start runs against the package as installed by name", async () => {
  const { mkdtempSync, mkdirSync, symlinkSync, writeFileSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { execFileSync } = await import('node:child_process')
  const docs = readFileSync(join(root, 'docs', 'adaptive.md'), 'utf8')
  const section = docs.split('## Node\n')[1].split('\n## ')[0]
  const blocks = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  assert.equal(blocks.length, 1)
  const project = mkdtempSync(join(tmpdir(), 'tk-adaptive-'))
  mkdirSync(join(project, 'node_modules', '@throttlekit'), { recursive: true })
  symlinkSync(join(root, 'bindings-node'), join(project, 'node_modules', '@throttlekit', 'core'), 'dir')
  writeFileSync(join(project, 'quick.js'), blocks[0])
  execFileSync(process.execPath, [join(project, 'quick.js')], { cwd: project, stdio: 'pipe' })
})

test('Koa shedding answers 503 with Retry-After', async () => {
  const Koa = require('koa')
  const limiter = new tk.AdaptiveLimiter({ algorithm: 'fixed', initialLimit: 1 })
  const held = gate()
  const app = new Koa()
  app.use(shedding.koa(limiter))
  app.use(async (ctx) => {
    if (ctx.path === '/hold') await held.opened
    ctx.body = 'ok'
  })
  const server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s))
  })
  try {
    await shedsWhileHeld(`http://127.0.0.1:${server.address().port}`, limiter, held)
    const m = limiter.metrics()
    assert.deepEqual([m.succeeded, m.rejected], [1, 1])
  } finally {
    server.close()
  }
})
