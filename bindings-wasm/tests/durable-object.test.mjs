// The Durable Object store under workerd (workerd/durable.mjs served by support/workerd.mjs):
// concurrent checks of one key admit exactly the limit; the rate-limit suites of every vectors
// file replay through the objects with the memory store's decisions (one object per key, and
// keys spread over a few shards); reset forgets; the sweep drops only states long expired; the first
// write plans the alarm, which sweeps when it fires and plans the next while a state is left; and the
// state outlives a restart of workerd when the objects' storage is on disk.
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import * as wasm from '../../bindings-node/wasm/node.mjs'
import { startWorkerd } from './support/workerd.mjs'

const WORKER = fileURLToPath(new URL('../workerd/durable.mjs', import.meta.url))
const VECTORS = fileURLToPath(new URL('../../conformance-vectors/', import.meta.url))
// 10 at once, then one every 6 minutes: no refill in the seconds a run takes.
const SPEC = { kind: 'gcra', options: { limit: 10, periodMs: 3_600_000, burst: 10 } }

let server
before(async () => {
  server = await startWorkerd(WORKER)
})
after(() => server?.stop())

async function post(url, path, body) {
  const res = await fetch(url + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) })
  const out = await res.json()
  assert.equal(res.status, 200, JSON.stringify(out))
  return out
}

for (const shards of [undefined, 3]) {
  test(`60 concurrent checks of one key admit exactly 10 (shards ${shards ?? 'none'})`, async () => {
    const key = `burst-${shards}`
    // Four requests at once, each with 15 checks at once: 60 RPCs to one object, all at one
    // instant (each request's frozen clock would differ, and a check stamped earlier may reach
    // the object later and read one less remaining).
    const now = Date.now()
    const batches = await Promise.all(Array.from({ length: 4 }, () => post(server.url, '/burst', { spec: SPEC, key, n: 15, shards, now })))
    const all = batches.flat()
    assert.equal(all.length, 60)
    assert.equal(all.filter((d) => d.allowed).length, 10)
    assert.ok(all.every((d) => !d.fallback), 'no decision is a fail-policy fallback')
    // Every admitted check left a different remaining: 9, 8, ..., 0.
    assert.deepEqual(all.filter((d) => d.allowed).map((d) => d.remaining).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    const more = await post(server.url, '/burst', { spec: SPEC, key, n: 1, shards })
    assert.equal(more[0].allowed, false)
    const peek = await post(server.url, '/reset', { spec: SPEC, key, shards })
    assert.equal(peek.remaining, 10, 'reset forgot the key')
  })
}

for (const shards of [undefined, 2]) {
  test(`the vectors' rate-limit suites replay through the objects with 0 mismatches (shards ${shards ?? 'none'})`, async () => {
    let passed = 0
    let suites = 0
    for (const f of readdirSync(VECTORS).filter((f) => f.endsWith('.json'))) {
      const report = await post(server.url, `/replay${shards ? `?shards=${shards}` : ''}`, readFileSync(join(VECTORS, f), 'utf8'))
      assert.deepEqual(report.failures, [], f)
      assert.equal(report.failed, 0, f)
      passed += report.passed
      suites += report.suites
    }
    // The golden file alone has 54 ops; a replay that skipped everything would pass vacuously.
    assert.ok(suites > 50 && passed > 1000, `${suites} suites, ${passed} ops`)
  })
}

test("the object's sweep (its alarm's work) drops the states an hour past their deadline, and only those", async () => {
  const past = Date.now() - 3 * 3_600_000
  // Exhausted 3 hours ago: its deadline (1 hour later) passed 2 hours ago.
  const old = await post(server.url, '/burst', { spec: SPEC, key: 'sweep-old', n: 10, now: past })
  assert.equal(old.filter((d) => d.allowed).length, 10)
  await post(server.url, '/burst', { spec: SPEC, key: 'sweep-live', n: 1 })
  // Read at the old time, the state is there until the sweep.
  assert.equal((await post(server.url, '/burst', { spec: SPEC, key: 'sweep-old', n: 0, now: past }))[0].remaining, 0)
  for (const key of ['sweep-old', 'sweep-live']) await post(server.url, '/sweep', { key })
  assert.equal((await post(server.url, '/burst', { spec: SPEC, key: 'sweep-old', n: 0, now: past }))[0].remaining, 10, 'swept')
  assert.equal((await post(server.url, '/burst', { spec: SPEC, key: 'sweep-live', n: 0 }))[0].remaining, 9, 'kept')
})

const GRACE_MS = 3_600_000 // core/src/store/held.rs GRACE_MS: a state is kept this long past its deadline

/** Polls `key`'s alarm until `done(at)` holds (the alarm fires on workerd's own schedule), for 10 s at most. */
async function alarmUntil(key, done) {
  const deadline = Date.now() + 10_000
  for (;;) {
    const { at } = await post(server.url, '/alarm', { key })
    if (done(at)) return at
    assert.ok(Date.now() < deadline, `${key}: the alarm is still ${at}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

test("the first write plans the object's alarm at the state's retention, and later writes leave it", async () => {
  const before = Date.now()
  await post(server.url, '/burst', { spec: SPEC, key: 'alarm-plan', n: 1 })
  const after = Date.now()
  const { at } = await post(server.url, '/alarm', { key: 'alarm-plan' })
  // One check of 10 per hour: the state's deadline is 6 minutes out, kept an hour past it.
  assert.ok(at >= before + 360_000 + GRACE_MS && at <= after + 360_000 + GRACE_MS, `alarm at now + ${at - after} ms`)
  await post(server.url, '/burst', { spec: SPEC, key: 'alarm-plan', n: 3 })
  assert.equal((await post(server.url, '/alarm', { key: 'alarm-plan' })).at, at, 'one alarm, not moved by later writes')
})

test('the alarm, when it fires, sweeps the expired states and plans the next sweep only while a state is left', async () => {
  const past = Date.now() - 3 * 3_600_000
  await post(server.url, '/burst', { spec: SPEC, key: 'alarm-old', n: 10, now: past })
  await post(server.url, '/burst', { spec: SPEC, key: 'alarm-live', n: 1 })
  for (const key of ['alarm-old', 'alarm-live']) {
    const { at } = await post(server.url, '/alarm', { key })
    assert.ok(at > Date.now() + GRACE_MS, `${key}: a sweep is planned`)
    await post(server.url, '/alarm', { key, inMs: 20 })
  }
  // The old state's object is left empty: no alarm after its sweep.
  await alarmUntil('alarm-old', (at) => at === null)
  assert.equal((await post(server.url, '/burst', { spec: SPEC, key: 'alarm-old', n: 0, now: past }))[0].remaining, 10, 'swept')
  // The live state is kept, and the next sweep is planned a grace period out.
  const fired = Date.now()
  const next = await alarmUntil('alarm-live', (at) => at === null || at > fired + GRACE_MS / 2)
  assert.ok(next !== null && next >= fired - 10_000 + GRACE_MS && next <= Date.now() + GRACE_MS, `next sweep at now + ${next - Date.now()} ms`)
  assert.equal((await post(server.url, '/burst', { spec: SPEC, key: 'alarm-live', n: 0 }))[0].remaining, 9, 'kept')
  // A write after a sweep that left nothing plans a sweep again.
  await post(server.url, '/burst', { spec: SPEC, key: 'alarm-old', n: 1 })
  assert.ok((await post(server.url, '/alarm', { key: 'alarm-old' })).at > Date.now() + GRACE_MS, 'planned again')
})

test('a DurableObjectStore refuses what is not a namespace, and the sync methods', () => {
  assert.throws(() => new wasm.DurableObjectStore({ namespace: {} }), { code: 'config_invalid', message: /durableObjectStore.namespace must be a Durable Object namespace/ })
  assert.throws(() => new wasm.DurableObjectStore({}), { code: 'config_invalid' })
  const namespace = { idFromName: () => 0, get: () => ({}) }
  assert.throws(() => new wasm.DurableObjectStore({ namespace, shards: 0 }), { code: 'config_invalid' })
  const store = new wasm.DurableObjectStore({ namespace, shards: 4, timeoutMs: 50 })
  assert.equal(store.shards, 4)
  const l = new wasm.Limiter({ strategy: SPEC, store })
  assert.throws(() => l.checkSync('k'), { code: 'not_implemented' })
  assert.throws(() => new wasm.MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: SPEC }], store }), { code: 'config_invalid' })
})

test('an object that never answers is store_unavailable through the fail policy, in bounded time', async () => {
  const namespace = { idFromName: (n) => n, get: () => ({ decide: () => new Promise(() => {}) }) }
  const store = new wasm.DurableObjectStore({ namespace, timeoutMs: 50 })
  const started = Date.now()
  const closed = await new wasm.Limiter({ strategy: SPEC, store, failPolicy: 'fail_closed' }).check('k')
  assert.equal(closed.allowed, false)
  assert.equal(closed.fallback, true)
  const open = await new wasm.Limiter({ strategy: SPEC, store, failPolicy: 'fail_open' }).check('k')
  assert.equal(open.allowed, true)
  assert.equal(open.fallback, true, 'fail_open is flagged, never silent')
  await assert.rejects(new wasm.Limiter({ strategy: SPEC, store, failPolicy: 'raise' }).check('k'), { code: 'store_unavailable', message: /no answer within 50 ms/ })
  assert.ok(Date.now() - started < 2000)
})

test('the state outlives a restart of workerd when the storage is on disk', async () => {
  const disk = mkdtempSync(join(tmpdir(), 'tk-do-disk-'))
  try {
    let s = await startWorkerd(WORKER, { disk })
    try {
      const first = await post(s.url, '/burst', { spec: SPEC, key: 'durable', n: 12 })
      assert.equal(first.filter((d) => d.allowed).length, 10)
    } finally {
      await s.stop()
    }
    s = await startWorkerd(WORKER, { disk })
    try {
      const after = await post(s.url, '/burst', { spec: SPEC, key: 'durable', n: 1 })
      assert.equal(after[0].allowed, false, 'the exhausted key is still exhausted after the restart')
      assert.equal(after[0].remaining, 0)
    } finally {
      await s.stop()
    }
  } finally {
    rmSync(disk, { recursive: true, force: true })
  }
})
