// The Deno KV store (`deno test`, run by bindings-wasm/test.sh): decisions equal the memory
// store's (random timelines of every strategy, and the rate-limit suites of every vectors file);
// concurrent checks of one key admit exactly the limit, in one process and in two processes on
// one file, with the commits that met a conflict retried (the counter moves); a conflict past
// `maxRetries` is `store_unavailable` through the fail policy, never a silent admit.
import { assert, assertEquals, assertRejects, assertThrows } from './support/assert.ts'
import { createRequire } from 'node:module'

import * as tk from '../../bindings-node/wasm/node.mjs'
import { rng } from './support/rng.mjs'

const require = createRequire(import.meta.url)
const conformance = require('../../bindings-node/lib/conformance.js')

const SPEC = { kind: 'gcra', options: { limit: 10, periodMs: 3_600_000, burst: 10 } }
const SPECS = [
  { kind: 'gcra', options: { limit: 7, periodMs: 1000, burst: 3 } },
  { kind: 'tokenBucket', options: { capacity: 5, refillPerSec: 4 } },
  { kind: 'fixedWindow', options: { limit: 4, windowMs: 700 } },
  { kind: 'slidingWindow', options: { limit: 5, windowMs: 900, buckets: 3 } },
  { kind: 'slidingWindowLog', options: { limit: 4, windowMs: 800 } },
  { kind: 'quota', options: { limit: 6, resetCadence: 'fixed', periodMs: 1500 } },
]

Deno.test('random timelines decide as the memory store, through the bytes in KV', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    for (const [i, spec] of SPECS.entries()) {
      const next = rng(1000 + i)
      const clock = new tk.ManualClock(1_700_000_000_000)
      const onKv = new tk.Limiter({ strategy: spec, clock, store: new tk.DenoKvStore({ kv }), failPolicy: 'raise' })
      const onMemory = new tk.Limiter({ strategy: spec, clock })
      for (let op = 0; op < 300; op++) {
        clock.set(clock.now() + Math.floor(next() * 200) - (next() < 0.05 ? 500 : 0))
        const key = `k${Math.floor(next() * 3)}`
        const cost = 1 + Math.floor(next() * 3)
        const pick = next()
        const [got, want] = pick < 0.7
          ? [await onKv.check(key, cost), onMemory.checkSync(key, cost)]
          : pick < 0.8
          ? [await onKv.peek(key), onMemory.peekSync(key)]
          : pick < 0.9
          ? [await onKv.forecast(key, cost), onMemory.forecastSync(key, cost)]
          : [await onKv.checkMany([key, 'other'], cost), onMemory.checkManySync([key, 'other'], cost)]
        assertEquals(got, want, `${spec.kind} op ${op}`)
        if (next() < 0.02) {
          await onKv.reset(key)
          onMemory.resetSync(key)
        }
      }
    }
  } finally {
    kv.close()
  }
})

Deno.test("the vectors' rate-limit suites replay through Deno KV with 0 mismatches", async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    let passed = 0
    const dir = new URL('../../conformance-vectors/', import.meta.url)
    for (const entry of Deno.readDirSync(dir)) {
      if (!entry.name.endsWith('.json')) continue
      const file = conformance.parse(Deno.readTextFileSync(new URL(entry.name, dir)), entry.name)
      file.suites = file.suites.filter((s: { primitive?: string }) => (s.primitive ?? 'rateLimit') === 'rateLimit')
      const report = await conformance.replay(file, { shared: new tk.DenoKvStore({ kv }), api: tk })
      assertEquals(report.failures, [], entry.name)
      passed += report.passed
    }
    assert(passed > 1000, `${passed} ops`)
  } finally {
    kv.close()
  }
})

/** `n` concurrent checks of one key, all at one instant (a Worker's frozen clock): each one's
 * `remaining` then says only how many commits came before it. */
async function burst(kv: Deno.Kv, n: number, options: Record<string, unknown> = {}) {
  const store = new tk.DenoKvStore({ kv, ...options })
  const clock = new tk.ManualClock(Date.now())
  const limiter = new tk.Limiter({ strategy: SPEC, store, failPolicy: 'raise', clock })
  const decisions = await Promise.all(Array.from({ length: n }, () => limiter.check('shared')))
  return { decisions, conflicts: store.conflicts, limiter }
}

for (const where of [':memory:', 'file']) {
  Deno.test(`40 concurrent checks of one key admit exactly 10, conflicts retried (${where})`, async () => {
    const dir = Deno.makeTempDirSync()
    const kv = await Deno.openKv(where === 'file' ? `${dir}/kv.sqlite` : where)
    try {
      const { decisions, conflicts, limiter } = await burst(kv, 40, { maxRetries: 1000 })
      assertEquals(decisions.filter((d) => d.allowed).length, 10)
      assert(decisions.every((d) => !d.fallback))
      assertEquals(decisions.filter((d) => d.allowed).map((d) => d.remaining).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      assert(conflicts > 0, 'the concurrent commits met conflicts and were retried')
      assertEquals((await limiter.check('shared')).allowed, false)
    } finally {
      kv.close()
      Deno.removeSync(dir, { recursive: true })
    }
  })
}

Deno.test('two processes on one KV file admit exactly 10 between them', async () => {
  const dir = Deno.makeTempDirSync()
  try {
    const child = new URL('./support/deno-kv-child.ts', import.meta.url).pathname
    // The file and its schema exist before the processes open it (two first opens at once race
    // on creating the schema: "database is locked" from Deno.openKv itself).
    ;(await Deno.openKv(`${dir}/kv.sqlite`)).close()
    const startAt = Date.now() + 1500
    const run = () =>
      new Deno.Command(Deno.execPath(), {
        args: ['run', '--quiet', '--unstable-kv', '--allow-read', '--allow-write', '--allow-env', child, `${dir}/kv.sqlite`, '20', String(startAt), JSON.stringify(SPEC)],
        stdout: 'piped',
        stderr: 'piped',
        env: { DENO_NO_UPDATE_CHECK: '1' },
      }).output()
    const outs = await Promise.all([run(), run()])
    const reports = outs.map((o) => {
      assert(o.success, `the child process failed: ${new TextDecoder().decode(o.stderr)}`)
      return JSON.parse(new TextDecoder().decode(o.stdout))
    })
    const decisions = reports.flatMap((r) => r.decisions)
    assertEquals(decisions.length, 40)
    assertEquals(decisions.filter((d: { allowed: boolean }) => d.allowed).length, 10)
    assert(reports.every((r) => r.conflicts > 0), 'each process retried commits')
  } finally {
    Deno.removeSync(dir, { recursive: true })
  }
})

Deno.test('a conflict past maxRetries is store_unavailable through the fail policy, never a silent admit', async () => {
  const kv = await Deno.openKv(':memory:')
  try {
    const store = new tk.DenoKvStore({ kv, maxRetries: 0 })
    const raise = new tk.Limiter({ strategy: SPEC, store, failPolicy: 'raise' })
    const settled = await Promise.allSettled(Array.from({ length: 20 }, () => raise.check('k')))
    const failed = settled.filter((s) => s.status === 'rejected')
    assert(failed.length > 0, 'some commits lost the race and were not retried')
    for (const f of failed) assertEquals((f as PromiseRejectedResult).reason.code, 'store_unavailable')
    assert(/conflict 1 times \(maxRetries 0\)/.test((failed[0] as PromiseRejectedResult).reason.message))
    const admitted = settled.filter((s) => s.status === 'fulfilled' && s.value.allowed).length
    assert(settled.every((s) => s.status === 'rejected' || !s.value.fallback))
    assert(admitted <= 10)
    assert(store.conflicts >= failed.length)
    const open = new tk.Limiter({ strategy: SPEC, store, failPolicy: 'fail_open', prefix: 'open' })
    const ds = await Promise.all(Array.from({ length: 20 }, () => open.check('k')))
    assert(ds.some((d) => d.fallback), 'a lost race under fail_open is flagged')
    assert(ds.filter((d) => d.allowed && !d.fallback).length <= 10)
  } finally {
    kv.close()
  }
})

Deno.test('a DenoKvStore refuses what is not a Deno.Kv, and the sync methods', async () => {
  assertThrows(() => new tk.DenoKvStore({ kv: {} }), Error, 'denoKvStore.kv must be a Deno.Kv')
  assertThrows(() => new tk.DenoKvStore({ kv: { get() {}, atomic() {}, delete() {} }, keyPrefix: 'x' }), Error, 'keyPrefix')
  const kv = await Deno.openKv(':memory:')
  try {
    const l = new tk.Limiter({ strategy: SPEC, store: new tk.DenoKvStore({ kv }) })
    assertThrows(() => l.checkSync('k'), Error, 'sync methods')
    await assertRejects(() => l.check('k', 0), Error, 'cost')
  } finally {
    kv.close()
  }
})

Deno.test('a KV that fails is store_unavailable through the fail policy', async () => {
  const broken = { get: () => Promise.reject(new Error('database is closed')), atomic() {}, delete() {} }
  const store = new tk.DenoKvStore({ kv: broken })
  const closed = await new tk.Limiter({ strategy: SPEC, store, failPolicy: 'fail_closed' }).check('k')
  assertEquals([closed.allowed, closed.fallback], [false, true])
  await assertRejects(() => new tk.Limiter({ strategy: SPEC, store, failPolicy: 'raise' }).check('k'), Error, 'deno kv: database is closed')
})
