// PostgresStore: the vectors replay on a real Postgres 15 through the conformance runner, limiters
// decide on it through the Promise and sync methods, bad input is a coded error (docs/postgres.md).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import tk from '../index.js'
import { startPostgres } from './helpers/postgres.mjs'
import { startProxy } from './helpers/faultproxy.mjs'
import { assertMultiAllOrNothing } from './helpers/stores.mjs'

const { Limiter, ManualClock, PostgresStore, Strategy } = tk
const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const vectors = readdirSync(join(root, 'conformance-vectors')).filter((f) => f.endsWith('.json')).map((f) => join(root, 'conformance-vectors', f))

let pg
let store
/** For tests: the Postgres socket pool a limiter's Promise calls take (null: the store's own connections). */
const socketOf = tk[Symbol.for('throttlekit.postgresSocket')]
const prefix = () => `node-pg:${process.pid}:${Math.random().toString(36).slice(2)}`
/**
 * A clock that stands still, for tests that count a window's checks across round trips (and
 * reconnections): on the system clock a window boundary between two checks would start the count
 * over. Postgres judges expiry by the caller's `now`, on read.
 */
const still = () => new ManualClock(Date.now())

describe('PostgresStore', () => {
  before(async () => {
    pg = await startPostgres()
    // 30 s to connect: the logins are not under test, and a loaded machine held them past the
    // 3 s default (the tests of connect's own bound set theirs).
    store = await PostgresStore.connect({ url: pg.url, poolSize: 2, timeoutMs: 3000, connectTimeoutMs: 30_000, sweepIntervalMs: 0 })
  })
  after(async () => {
    await store?.close()
    await pg?.stop()
  })

  test('the conformance runner replays every vectors file on it: 0 failed', () => {
    const r = spawnSync(process.execPath, [join(here, '..', 'bin', 'throttlekit-conformance.js'), '--store', 'postgres', '--postgres-url', pg.url, ...vectors], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    const m = /(\d+) passed, 0 failed/.exec(r.stdout)
    assert.ok(m && Number(m[1]) > 100, r.stdout)
  })

  test('a limiter decides through the Promise and the sync methods', async () => {
    const lim = new Limiter({ strategy: Strategy.fixedWindow({ limit: 3, windowMs: 60_000 }), store, clock: still(), prefix: prefix() })
    assert.deepEqual([(await lim.check('k')).allowed, lim.checkSync('k').allowed, (await lim.check('k')).allowed], [true, true, true])
    const d = await lim.check('k')
    assert.equal(d.allowed, false)
    assert.ok(d.retryAfterMs > 0)
    await lim.reset('k')
    assert.equal((await lim.check('k')).remaining, 2)
  })

  test('a limiter\'s Promise calls take Node\'s own sockets and are counted in its metrics', async () => {
    const lim = new Limiter({ strategy: Strategy.tokenBucket({ capacity: 5, refillPerSec: 0.001 }), store, prefix: prefix(), metrics: true })
    const n = 12
    const decisions = await Promise.all(Array.from({ length: n }, () => lim.check('k')))
    // Exactly the capacity, whichever of the pool's sockets ran each call first.
    assert.equal(decisions.filter((d) => d.allowed).length, 5)
    const many = await lim.checkMany(['a', 'b', 'a'])
    assert.deepEqual(many.map((d) => d.remaining), [4, 4, 3])
    assert.equal((await lim.peek('k')).remaining, 0)
    assert.equal((await lim.forecast('a', 2)).allowed, true)
    const m = lim.metrics()
    assert.deepEqual([m.allowed, m.denied, m.peeks, m.forecasts], [8, n - 5, 1, 1])
    assert.deepEqual(socketOf(lim), { open: 2 }, 'calls in flight spread over the pool (poolSize 2)')
    const leased = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 1000 }), store, lease: { batch: 2 } })
    assert.equal(socketOf(leased), null, 'a tier answers in core')
    await assert.rejects(lim.check('k', -1), { code: 'config_invalid' })
  })

  test('a checkMany larger than one native answer holds decides every key, in order, as single checks do', async () => {
    // 600 calls: their bytes do not fit the shared scratch buffer (they leave through __pgTake),
    // and one read can complete more than the 256 outcomes one __pgFeed hands back (the rest follow).
    const lim = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 60_000 }), store, clock: still(), prefix: prefix() })
    const keys = Array.from({ length: 600 }, (_, i) => `k${i % 300}`)
    const first = await lim.checkMany(keys)
    assert.deepEqual(first.map((d) => [d.allowed, d.remaining]), keys.map((_, i) => [true, i < 300 ? 1 : 0]))
    const again = await lim.checkMany(keys)
    assert.ok(again.every((d) => !d.allowed && d.remaining === 0 && d.retryAfterMs > 0))
    const single = await lim.check('k7')
    assert.deepEqual([single.allowed, single.limit, single.remaining, single.resetAt], [false, 2, 0, again[7].resetAt])
  })

  test('a statement whose reply is lost is store_unavailable and charged once, never resent', async () => {
    const proxy = await startProxy(pg.url)
    try {
      const s = await PostgresStore.connect({ url: proxy.url, poolSize: 1, timeoutMs: 3000, connectTimeoutMs: 30_000, sweepIntervalMs: 0 })
      const p = prefix()
      const strategy = Strategy.fixedWindow({ limit: 5, windowMs: 3_600_000 })
      const clock = still()
      const lim = new Limiter({ strategy, store: s, clock, prefix: p, failPolicy: 'raise' })
      const direct = new Limiter({ strategy, store, clock, prefix: p })
      assert.equal((await lim.check('k')).remaining, 4) // logs in, prepares, charges 1
      proxy.control('set drop_reply scope=BIND times=1')
      await assert.rejects(lim.check('k'), (e) => e.code === 'store_unavailable' && /not resent/.test(e.message))
      await new Promise((r) => setTimeout(r, 300)) // a resend would land meanwhile
      assert.equal((await direct.peek('k')).remaining, 3, 'the lost call committed once')
      proxy.control('clear')
      assert.equal((await lim.check('k')).remaining, 2, 'a later call reconnects')
      await s.close()
    } finally {
      proxy.stop()
    }
  })

  test('a stopped server: calls answer within the timeout through the fail policy', async () => {
    const proxy = await startProxy(pg.url)
    try {
      // A call's deadline covers a new connection's login too (a SCRAM exchange, computed by a
      // debug build, and a Postgres backend forked): the first call and the one after the loss
      // log in, which took longer than a 400 ms timeout on a loaded machine and failed them.
      const timeoutMs = 2000
      const s = await PostgresStore.connect({ url: proxy.url, poolSize: 1, timeoutMs, connectTimeoutMs: 30_000, sweepIntervalMs: 0 })
      const lim = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 1000 }), store: s, prefix: prefix(), failPolicy: 'fail_closed', metrics: true })
      assert.ok((await lim.check('k')).allowed)
      proxy.control('set blackhole')
      const t0 = Date.now()
      const d = await lim.check('k')
      const took = Date.now() - t0
      // Answered at its deadline (5 ms for clock rounding), not held long past it: another whole
      // second is no scheduling delay.
      assert.ok(took >= timeoutMs - 5 && took < timeoutMs + 1000, `answered in ${took} ms`)
      assert.deepEqual([d.allowed, d.fallback], [false, true])
      proxy.control('kill')
      proxy.control('clear')
      assert.equal((await lim.check('k')).allowed, true, 'a new connection after the loss')
      assert.equal(lim.metrics().fallbackDenied, 1)
      await s.close()
    } finally {
      proxy.stop()
    }
  })

  test('a multi limiter charges all or nothing', async () => {
    await assertMultiAllOrNothing(store, prefix())
  })

  test('the store carries its limiters\' defaults; closed, the fail policy decides', async () => {
    const s = await PostgresStore.connect({ url: pg.url, poolSize: 1, serverClock: true, failPolicy: 'fail_open', sweepIntervalMs: 0 })
    assert.equal(s.table, 'throttlekit')
    assert.equal(s.poolSize, 1)
    const lim = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), store: s, prefix: prefix() })
    assert.ok((await lim.check('k')).allowed)
    await s.close()
    assert.ok((await lim.check('k')).allowed) // fail_open
    const strict = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), store: s, failPolicy: 'raise' })
    await assert.rejects(strict.check('k'), { code: 'store_unavailable' })
  })

  test('a bad URL is config_invalid', async () => {
    await assert.rejects(PostgresStore.connect({ url: 'postgres://[nope' }), (e) => e.code === 'config_invalid' && /postgres\.url/.test(e.message))
  })

  test('a wrong password is store_unavailable naming the authentication', async () => {
    const bad = pg.url.replace('throttlekit:throttlekit@', 'throttlekit:wrong@')
    assert.notEqual(bad, pg.url)
    await assert.rejects(PostgresStore.connect({ url: bad, poolSize: 1 }), (e) => e.code === 'store_unavailable' && /auth/i.test(e.message))
  })

  test('an unreachable server is store_unavailable within the timeouts', async () => {
    const port = await new Promise((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = s.address().port
        s.close(() => resolve(p))
      })
    })
    const t0 = Date.now()
    await assert.rejects(PostgresStore.connect({ url: `postgres://u:p@127.0.0.1:${port}/db`, poolSize: 1, connectTimeoutMs: 500, timeoutMs: 500 }), { code: 'store_unavailable' })
    assert.ok(Date.now() - t0 < 5000)
  })

  test('a missing table with migrate off is config_invalid', async () => {
    const table = `tk_node_${process.pid}`
    await assert.rejects(PostgresStore.connect({ url: pg.url, table, migrate: false, poolSize: 1 }), (e) => e.code === 'config_invalid' && e.message.includes(table))
  })

  for (const [options, code] of [
    [{}, 'config_invalid'],
    [{ url: 'postgres://u:p@127.0.0.1:1/db', table: 'Bad-Name' }, 'config_invalid'],
    [{ url: 'postgres://u:p@127.0.0.1:1/db', poolSize: 0 }, 'config_invalid'],
    [{ url: 'postgres://u:p@127.0.0.1:1/db', timeoutMs: 1.5 }, 'config_invalid'],
    [{ url: 'postgres://u:p@127.0.0.1:1/db', migrate: 'yes' }, 'config_invalid'],
    [{ url: 'postgres://u:p@127.0.0.1:1/db', nope: 1 }, 'config_invalid'],
  ]) {
    test(`refuses ${JSON.stringify(options)} with ${code}`, async () => {
      await assert.rejects(PostgresStore.connect(options), { code })
    })
  }
})
