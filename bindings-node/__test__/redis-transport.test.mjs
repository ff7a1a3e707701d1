// The Promise methods' own socket (lib/redis-transport.js): AUTH and database selection from
// the URL, NOSCRIPT recovery, time-outs through the fail policy (a call timed out is never
// sent again, and its late reply is not mistaken for the next call's), reconnection after a
// restart, the order of un-awaited calls, closing, and an idle socket not holding the process.
// Each test runs its own redis-server, frozen and stopped by PID.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { Limiter, ManualClock, MultiLimiter, RedisStore, Shaper, Strategy } from '../index.mjs'
import { spawnRedis } from './helpers/redis.mjs'

const run = promisify(execFile)
const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'index.js')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
/**
 * A day: the windows and periods of tests that count checks on the system clock (Redis expires
 * keys on its own) across a frozen or restarted server. A window boundary between two checks
 * would start the count over; a test of a few seconds meets one with a probability of about 1 in
 * 20,000.
 */
const DAY = 86_400_000

/** `INFO commandstats` as {command: {calls, failed}} (names as Redis spells them: fcall, evalsha, function|load). */
function commandStats(redis) {
  const out = {}
  for (const m of redis.cli('info', 'commandstats').matchAll(/^cmdstat_([a-z|]+):calls=(\d+).*?failed_calls=(\d+)/gm)) {
    out[m[1]] = { calls: Number(m[2]), failed: Number(m[3]) }
  }
  return out
}

/** Redis >= 7 (functions), where `scripting: 'auto'` makes every path send FCALL. */
function hasFunctions(redis) {
  return Number(/^redis_version:(\d+)/m.exec(redis.cli('info', 'server'))?.[1]) >= 7
}

async function withRedis(args, fn) {
  const redis = await spawnRedis(args)
  try {
    await fn(redis)
  } finally {
    await redis.stop()
  }
}

describe('the Promise methods on their own socket', () => {
  test('AUTH and the database come from the URL', async () => {
    await withRedis(['--requirepass', 'pw'], async (redis) => {
      for (const [url, db] of [
        [`redis://:pw@127.0.0.1:${redis.port}/3`, '3'],
        [`redis://default:pw@127.0.0.1:${redis.port}/5`, '5'],
      ]) {
        const store = await RedisStore.connect({ url })
        // An hour per token: a slow machine must not refill one between the checks below.
        const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 3_600_000 }), store, prefix: `auth${db}` })
        assert.equal((await l.check('k')).remaining, 9)
        assert.equal((await l.peek('k')).remaining, 9)
        assert.equal(redis.cli('-n', db, 'exists', `auth${db}:k`), '1')
        assert.equal(redis.cli('-n', '0', 'exists', `auth${db}:k`), '0')
        // The sync path (the store's own connection) sees the same state.
        assert.equal(l.peekSync('k').remaining, 9)
        await store.close()
      }
    })
  })

  test('a ?protocol=resp3 URL logs in with HELLO 3 (AUTH inside), as the store does; RESP3 replies decide alike', async () => {
    await withRedis(['--requirepass', 'pw'], async (redis) => {
      const store = await RedisStore.connect({ url: `redis://:pw@127.0.0.1:${redis.port}/3?protocol=resp3`, scripting: 'eval' })
      assert.equal(store.eventLoopTransport, true)
      const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 3_600_000 }), store, prefix: 'r3' })
      assert.equal((await l.check('k')).remaining, 9)
      // Every client of the server speaks RESP3 now: the store's own connection and our socket.
      const clients = redis.cli('client', 'list').split('\n')
      assert.ok(clients.length >= 2, clients.join('\n'))
      for (const c of clients.filter((c) => !/ cmd=client\|list /.test(c))) assert.match(c, / resp=3( |$)/, c)
      assert.equal(redis.cli('-n', '3', 'exists', 'r3:k'), '1')
      // NOSCRIPT (a blob or simple error) is still read as the core reads it: one EVAL each.
      assert.equal(redis.cli('script', 'flush'), 'OK')
      const ds = await Promise.all([l.check('k'), l.forecast('k'), l.peek('k')])
      assert.deepEqual(
        ds.map((d) => d.remaining),
        [8, 7, 8],
      )
      // A multi limiter's and a shaper's replies (arrays of arrays) too.
      const strategy = Strategy.gcra({ limit: 5, periodMs: 3_600_000 })
      const m = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }], store, prefix: 'r3m' })
      assert.deepEqual((await Promise.all([m.check(['x']), m.check(['x'])])).map((d) => d.allowed), [true, true])
      const sh = new Shaper({ ratePerSec: 10, maxQueueMs: 250, store, prefix: 'r3s' })
      const rs = await Promise.all([sh.reserve('q'), sh.reserve('q')])
      assert.deepEqual(rs.map((r) => r.accepted), [true, true])
      assert.ok(rs[0].delayMs < rs[1].delayMs, JSON.stringify(rs))
      assert.equal(l.peekSync('k').remaining, 8)
      await store.close()
    })
  })

  test('a Unix socket URL, with its database', async () => {
    const sock = path.join(mkdtempSync(path.join(tmpdir(), 'tk-node-sock-')), 'redis.sock')
    await withRedis(['--unixsocket', sock, '--unixsocketperm', '700'], async (redis) => {
      const store = await RedisStore.connect({ url: `redis+unix://${sock}?db=4` })
      // An hour per token: the key lives until its last token is due back, and a slow machine must
      // not see it expire (100 ms at 10 a second) before redis-cli looks.
      const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 3_600_000 }), store, prefix: 'unix' })
      assert.equal((await l.check('k')).remaining, 9)
      assert.equal(redis.cli('-n', '4', 'exists', 'unix:k'), '1')
      await store.close()
    })
  })

  test('NOSCRIPT after SCRIPT FLUSH is answered by EVAL, once', async () => {
    await withRedis([], async (redis) => {
      // scripting 'eval': EVALSHA (under 'auto' on Redis >= 7 the socket sends FCALL, below).
      const store = await RedisStore.connect({ url: redis.url, scripting: 'eval' })
      const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 60000 }), store, prefix: 'ns' })
      assert.equal((await l.check('k')).remaining, 9)
      assert.equal(redis.cli('script', 'flush'), 'OK')
      // Several in flight: each gets NOSCRIPT and is sent again as EVAL, exactly once.
      const ds = await Promise.all([l.check('k'), l.check('k'), l.check('k')])
      assert.deepEqual(ds.map((d) => d.remaining).sort(), [6, 7, 8])
      assert.equal((await l.check('k')).remaining, 5)
      await store.close()
    })
  })

  test("under scripting 'auto' the socket sends FCALL, as checkSync does (INFO commandstats)", async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      if (!hasFunctions(redis)) return // Redis < 7: no functions, every path sends EVALSHA
      const strategy = Strategy.gcra({ limit: 100, periodMs: 3_600_000 })
      const l = new Limiter({ strategy, store, prefix: 'fc' })
      const m = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }], store, prefix: 'fc' })
      const sh = new Shaper({ ratePerSec: 1000, maxQueueMs: 1000, store, prefix: 'fc' })
      await l.check('warm') // the socket is open and preloaded before the counts start
      assert.equal(redis.cli('config', 'resetstat'), 'OK')
      for (let i = 0; i < 5; i++) await l.check('k')
      for (let i = 0; i < 5; i++) l.checkSync('k')
      await m.check(['mk'])
      await sh.reserve('sk')
      await l.checkMany(['a', 'b'])
      const stats = commandStats(redis)
      assert.equal(stats.evalsha?.calls ?? 0, 0, JSON.stringify(stats))
      assert.equal(stats.eval?.calls ?? 0, 0, JSON.stringify(stats))
      assert.equal(stats.fcall?.calls, 14, JSON.stringify(stats))
      assert.equal((await l.check('k')).remaining, 89)
      await store.close()
    })
  })

  test('a flushed function library is loaded again with the call, once per call', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      if (!hasFunctions(redis)) return
      const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 3_600_000 }), store, prefix: 'ff' })
      const m = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy: Strategy.fixedWindow({ limit: 5, windowMs: 600000 }) }], store, prefix: 'ff' })
      assert.equal((await l.check('k')).remaining, 9)
      assert.equal(redis.cli('function', 'flush'), 'OK')
      assert.equal(redis.cli('config', 'resetstat'), 'OK')
      // Several in flight: each meets "Function not found" and is sent again (FUNCTION LOAD
      // REPLACE + FCALL) exactly once, its decision read from the second reply.
      const ds = await Promise.all([l.check('k'), l.check('k'), l.check('k')])
      assert.deepEqual(ds.map((d) => d.remaining).sort(), [6, 7, 8])
      assert.equal((await l.check('k')).remaining, 5)
      assert.equal(redis.cli('function', 'flush'), 'OK')
      assert.equal((await m.check(['x'])).dimensions[0].remaining, 4)
      const stats = commandStats(redis)
      assert.equal(stats.evalsha?.calls ?? 0, 0, JSON.stringify(stats))
      // Four calls met the missing function, each once; five FCALLs answered (3 resent, 1
      // plain, the multi's resent); four library loads went with the resends.
      assert.equal(stats.fcall?.failed, 4, JSON.stringify(stats))
      assert.equal(stats.fcall?.calls - stats.fcall?.failed, 5, JSON.stringify(stats))
      assert.equal(stats['function|load']?.calls, 4, JSON.stringify(stats))
      await store.close()
    })
  })

  test('a time-out goes through the fail policy; the call is not resent, its late reply not misread', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url, timeoutMs: 200 })
      const strategy = Strategy.gcra({ limit: 10, periodMs: 600000 })
      const raise = new Limiter({ strategy, store, prefix: 'to', failPolicy: 'raise' })
      const open = new Limiter({ strategy, store, prefix: 'to', failPolicy: 'fail_open' })
      const closed = new Limiter({ strategy, store, prefix: 'to', failPolicy: 'fail_closed' })
      assert.equal((await raise.check('once')).remaining, 9)
      process.kill(redis.pid, 'SIGSTOP')
      try {
        const t = Date.now()
        await assert.rejects(raise.check('once'), (e) => e.code === 'store_unavailable' && /timed out/.test(e.message))
        assert.ok(Date.now() - t >= 190, `gave up after ${Date.now() - t} ms`)
        const o = await open.check('other')
        assert.equal(o.allowed, true)
        assert.equal(o.fallback, true)
        const c = await closed.check('other')
        assert.equal(c.allowed, false)
        assert.equal(c.fallback, true)
      } finally {
        process.kill(redis.pid, 'SIGCONT')
      }
      // Each time-out dropped its connection; Redis now runs what was already sent (once each)
      // on those closed connections, and the next call reads its own reply on a new one.
      const fresh = await raise.check('fresh')
      assert.equal(fresh.remaining, 9)
      assert.equal((await raise.peek('once')).remaining, 8, 'the timed-out check ran once, and only once')
      assert.equal((await raise.peek('other')).remaining, 8)
      await store.close()
    })
  })

  test('after a restart, waiting calls fail and the next one reconnects', async () => {
    const first = await spawnRedis([])
    const port = first.port
    let second
    try {
      const store = await RedisStore.connect({ url: first.url, timeoutMs: 500 })
      const l = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 60000 }), store, prefix: 'rc', failPolicy: 'raise' })
      const fo = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 60000 }), store, prefix: 'rc', failPolicy: 'fail_open' })
      assert.equal((await l.check('k')).remaining, 9)
      await first.stop()
      await assert.rejects(l.check('k'), (e) => e.code === 'store_unavailable')
      assert.equal((await fo.check('k')).fallback, true)
      second = await spawnRedis([], port)
      let d
      for (let i = 0; i < 20 && d === undefined; i++) {
        d = await l.check('k').catch(() => undefined)
        if (d === undefined) await sleep(50)
      }
      // A fresh server: empty state, and an empty script cache (NOSCRIPT, then EVAL).
      assert.equal(d?.remaining, 9)
      assert.equal((await l.check('k')).remaining, 8)
      await store.close()
    } finally {
      await first.stop()
      await second?.stop()
    }
  })

  test('check, peek and forecast read keys and costs as checkSync does, and count alike (src/redis_fast.rs)', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 100, windowMs: DAY }), store, prefix: 'args' })
      const outcome = async (f) => {
        try {
          const d = await f()
          return ['ok', d.allowed, d.remaining]
        } catch (e) {
          return ['error', e.code, e.message]
        }
      }
      // Keys that travel in the shared buffer (short ASCII) and as arguments (long, not ASCII,
      // empty), costs in the buffer (numbers, undefined) and as arguments (anything else).
      const keys = ['k', 'user:1', 'x'.repeat(64), 'y'.repeat(65), 'ü-key', '\u{1F600}', '', 'x'.repeat(5000), undefined, 5, {}, null, '\ud800']
      const costs = [undefined, 1, 2, 0, -1, 1.5, NaN, 2 ** 53, '1', null, {}, 1n]
      let n = 0
      for (const key of keys) {
        for (const cost of costs) {
          for (const op of ['check', 'forecast', 'peek']) {
            // The Promise path against checkSync / forecastSync / peekSync on a twin key.
            const twin = typeof key === 'string' ? `twin-${n}-${key}` : key
            const sync = { check: 'checkSync', forecast: 'forecastSync', peek: 'peekSync' }[op]
            const got = await outcome(() => l[op](typeof key === 'string' ? `pair-${n}-${key}` : key, cost))
            const want = await outcome(async () => l[sync](twin, cost))
            if (got[0] === 'error' && want[0] === 'error') {
              assert.deepEqual(got.slice(0, 2), want.slice(0, 2), `${op}(${String(key).slice(0, 20)}, ${String(cost)})`)
              // The same words (a key in them is the twin's, of the same length).
              assert.equal(got[2].replace(/pair-/g, 'twin-'), want[2], `${op}(${String(key).slice(0, 20)}, ${String(cost)})`)
            } else {
              assert.deepEqual(got, want, `${op}(${String(key).slice(0, 20)}, ${String(cost)})`)
            }
            n++
          }
        }
      }
      // Counting: ten checks of 3 on one key over the socket leave what ten checkSyncs leave.
      for (let i = 0; i < 10; i++) await l.check('count-a', 3)
      for (let i = 0; i < 10; i++) l.checkSync('count-b', 3)
      assert.deepEqual([(await l.peek('count-a')).remaining, (await l.peek('count-b')).remaining], [70, 70])
      // Not a Limiter: the native method answers (napi-rs refuses the receiver), as before.
      await assert.rejects(async () => Limiter.prototype.check.call({}, 'k'), /Illegal invocation/)
      await assert.rejects(async () => Limiter.prototype.peek.call(Object.create(l), 'k'), /Illegal invocation/)
      await store.close()
    })
  })

  test("a fixed window's check goes in count mode (one integer back) and decides as checkSync and the memory store", async () => {
    await withRedis([], async (redis) => {
      // What the server runs, from MONITOR: each script call's mode (`count`, `check`, ...).
      const monitor = net.createConnection({ port: redis.port, host: '127.0.0.1' })
      let seen = ''
      monitor.on('data', (b) => {
        seen += b.toString('latin1')
      })
      monitor.write('MONITOR\r\n')
      await new Promise((resolve) => {
        const wait = () => (seen.includes('+OK') ? resolve() : setTimeout(wait, 5))
        wait()
      })
      let markers = 0
      const modes = async (from) => {
        // MONITOR lines come on their own connection, after the replies: a marker sent now runs
        // after every call already answered, so once its line is in, so are theirs.
        const marker = `tk-monitor-marker-${++markers}`
        assert.equal(redis.cli('echo', marker), marker)
        const deadline = Date.now() + 10_000
        while (!seen.includes(marker, from)) {
          assert.ok(Date.now() < deadline, `MONITOR never showed ${marker}`)
          await sleep(5)
        }
        return [...seen.slice(from).matchAll(/"(?:FCALL|EVALSHA|EVAL)" "[^"]+" "1" "([^"]+)" "[^"]+" "([a-z]+)"/gi)].map((m) => [m[1], m[2]])
      }
      for (const scripting of ['auto', 'eval']) {
        const store = await RedisStore.connect({ url: redis.url, scripting })
        // Redis expires a window's key on its own clock, at the window's end as the ManualClock
        // has it: a minute's window, stepped 9 s at a time, keeps every key for seconds, so a
        // loaded machine's pause between two calls cannot expire it early.
        const clock = new ManualClock(1_700_000_040_000)
        const strategy = Strategy.fixedWindow({ limit: 5, windowMs: 60_000 })
        const p = `cm-${scripting}`
        const l = new Limiter({ strategy, store, clock, prefix: p })
        const twin = new Limiter({ strategy, store, clock, prefix: `${p}-sync` })
        const memory = new Limiter({ strategy, clock })
        const from = seen.length
        let refused = 0
        for (let i = 0; i < 12; i++) {
          if (i === 6) assert.equal(redis.cli('script', 'flush'), 'OK') // NOSCRIPT: EVAL, in count mode
          if (i === 7 && hasFunctions(redis)) assert.equal(redis.cli('function', 'flush'), 'OK')
          const cost = 1 + (i % 3)
          const got = await l.check('k', cost)
          assert.deepEqual(got, twin.checkSync('k', cost), `${scripting} check ${i}`)
          assert.deepEqual(got, memory.checkSync('k', cost), `${scripting} check ${i}: memory`)
          refused += got.allowed ? 0 : 1
          assert.deepEqual(await l.peek('k'), memory.peekSync('k'))
          assert.deepEqual(await l.forecast('k', 2), memory.forecastSync('k', 2))
          clock.advance(9_000)
        }
        assert.ok(refused > 0, 'no refused check to compare')
        assert.deepEqual(await l.checkMany(['x', 'y', 'x'], 2), memory.checkManySync(['x', 'y', 'x'], 2))
        const ours = (await modes(from)).filter(([key]) => key.startsWith(`${p}:`))
        const checks = ours.filter(([, mode]) => mode !== 'peek' && mode !== 'forecast')
        // 12 checks (one sent twice after NOSCRIPT or a flushed library), 3 of checkMany: all counted.
        assert.ok(checks.length >= 15, JSON.stringify(ours))
        assert.deepEqual([...new Set(checks.map(([, mode]) => mode))], ['count'], JSON.stringify(ours))
        await store.close()
      }
      // On Redis's clock the caller does not know `now`: the six-integer check stays.
      const store = await RedisStore.connect({ url: redis.url })
      const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 5, windowMs: 60000 }), store, prefix: 'srv', serverClock: true })
      const from = seen.length
      assert.equal((await l.check('k', 2)).remaining, 3)
      assert.deepEqual((await modes(from)).filter(([key]) => key === 'srv:k'), [['srv:k', 'check']])
      await store.close()
      monitor.destroy()
    })
  })

  test('un-awaited calls run in the order they were made', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 5, windowMs: DAY }), store, prefix: 'ord' })
      const calls = []
      for (let i = 0; i < 7; i++) calls.push(l.check('k'))
      calls.push(l.reset('k'))
      calls.push(l.check('k'))
      calls.push(l.forecast('k', 5))
      calls.push(l.checkMany(['k', 'k'], 2))
      const out = await Promise.all(calls)
      assert.deepEqual(out.slice(0, 7).map((d) => [d.allowed, d.remaining]), [[true, 4], [true, 3], [true, 2], [true, 1], [true, 0], [false, 0], [false, 0]])
      assert.equal(out[7], undefined)
      assert.deepEqual([out[8].allowed, out[8].remaining], [true, 4])
      assert.equal(out[9].allowed, false)
      assert.deepEqual(out[10].map((d) => [d.allowed, d.remaining]), [[true, 2], [true, 0]])
      await store.close()
    })
  })

  test('a multi limiter shares the socket: in order with limiters, NOSCRIPT, time-outs, reset', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url, timeoutMs: 200 })
      const strategy = Strategy.fixedWindow({ limit: 3, windowMs: DAY })
      const m = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }, { name: 'b', strategy }], store, prefix: 'mt' })
      const l = new Limiter({ strategy, store, prefix: 'mt' })
      const mOpen = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'a', strategy }], store, prefix: 'mt', failPolicy: 'fail_open' })
      // Un-awaited: multi, multi, reset, multi run in that order.
      const out = await Promise.all([m.check(['x', 'y']), m.check(['x', 'y']), m.reset(['x', 'y']), m.check(['x', 'y']), l.check('k')])
      assert.deepEqual([out[0].dimensions[0].remaining, out[1].dimensions[0].remaining, out[3].dimensions[0].remaining], [2, 1, 2])
      assert.equal(out[2], undefined)
      assert.equal(out[3].binding, 'a')
      assert.equal(redis.cli('script', 'flush'), 'OK')
      assert.equal((await m.check(['x', 'y'])).dimensions[1].remaining, 1)
      await assert.rejects(m.check(['x']), (e) => e.code === 'config_invalid')
      process.kill(redis.pid, 'SIGSTOP')
      try {
        await assert.rejects(m.check(['x', 'y']), (e) => e.code === 'store_unavailable' && /timed out/.test(e.message))
        const d = await mOpen.check(['z'])
        assert.equal(d.allowed, true)
        assert.equal(d.fallback, true)
      } finally {
        process.kill(redis.pid, 'SIGCONT')
      }
      // The timed-out check ran once on Redis (late), and was not sent again.
      assert.equal((await m.check(['x', 'y'])).dimensions[0].remaining, 0)
      await store.close()
      await assert.rejects(m.check(['x', 'y']), (e) => e.code === 'store_unavailable')
    })
  })

  test('a shaper shares the socket: reserve, schedule, queue_full, reset, time-outs', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url, timeoutMs: 200 })
      // The queue's time stands still (a ManualClock): on the system clock a loaded machine
      // could let the queue drain between the awaits below (a schedule accepted, a delay of 0).
      // Redis still expires the queue's key on its own clock, as far ahead as the queue's tail:
      // departures a second apart keep it while a loaded machine comes back to the next call.
      const s = new Shaper({ ratePerSec: 1, maxQueueMs: 2500, store, prefix: 'sh', clock: new ManualClock(Date.now()) })
      // Un-awaited reservations queue up in call order: 0, 1000, 2000 ms; then the queue is full.
      const rs = await Promise.all([s.reserve('q'), s.reserve('q'), s.reserve('q'), s.reserve('q')])
      assert.deepEqual(rs.map((r) => r.accepted), [true, true, true, false])
      assert.deepEqual(rs.map((r) => r.delayMs), [0, 1000, 2000, 500], JSON.stringify(rs))
      await assert.rejects(s.schedule('q'), (e) => e.code === 'queue_full' && e.retryAfterMs > 0)
      await s.reset('q')
      assert.equal((await s.reserve('q')).delayMs, 0)
      const t = Date.now()
      const r = await s.schedule('q')
      assert.deepEqual(r, { accepted: true, delayMs: 1000 })
      assert.ok(Date.now() - t >= r.delayMs - 5, `resolved after ${Date.now() - t} ms for ${r.delayMs}`)
      await assert.rejects(s.reserve('q', 0), (e) => e.code === 'config_invalid')
      process.kill(redis.pid, 'SIGSTOP')
      try {
        await assert.rejects(s.reserve('other'), (e) => e.code === 'store_unavailable' && /timed out/.test(e.message))
      } finally {
        process.kill(redis.pid, 'SIGCONT')
      }
      await store.close()
      await assert.rejects(s.reserve('q'), (e) => e.code === 'store_unavailable')
    })
  })

  test("an error reply is decided in the read as the native method decides it: the fail policy's error or fallback", async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      const strategy = Strategy.fixedWindow({ limit: 10, windowMs: DAY })
      const l = new Limiter({ strategy, store, prefix: 'wt', failPolicy: 'raise' })
      const open = new Limiter({ strategy, store, prefix: 'wt', failPolicy: 'fail_open' })
      assert.equal((await l.check('k')).remaining, 9)
      // Every script call now meets an error reply (OOM: Redis refuses writes past maxmemory).
      redis.cli('config', 'set', 'maxmemory', '1')
      let sync
      assert.throws(() => l.checkSync('k'), (e) => (sync = e).code === 'store_unavailable')
      assert.match(sync.message, /fixed_window\.lua failed: OOM /)
      // Several in flight: every reply decided in the read that brings them, each rejected with
      // the native method's words.
      const results = await Promise.allSettled([l.check('k'), l.check('k'), l.check('k')])
      for (const r of results) {
        assert.equal(r.status, 'rejected')
        assert.equal(r.reason.code, 'store_unavailable')
        assert.equal(r.reason.message, sync.message)
      }
      const d = await open.check('k')
      assert.equal(d.fallback, true)
      assert.equal(d.allowed, true)
      redis.cli('config', 'set', 'maxmemory', '0')
      // The socket stays in step: the next replies answer the next calls.
      assert.deepEqual((await Promise.all([l.check('k'), l.check('k')])).map((x) => x.remaining), [8, 7])
      await store.close()
    })
  })

  test('closing: later calls are store_unavailable, through the fail policy', async () => {
    await withRedis([], async (redis) => {
      const store = await RedisStore.connect({ url: redis.url })
      const strategy = Strategy.gcra({ limit: 10, periodMs: 1000 })
      const l = new Limiter({ strategy, store, failPolicy: 'raise' })
      const open = new Limiter({ strategy, store, failPolicy: 'fail_open' })
      const inFlight = l.check('k')
      await store.close()
      assert.equal((await inFlight).allowed, true, 'a call made before close() is answered')
      await assert.rejects(l.check('k'), (e) => e.code === 'store_unavailable')
      await assert.rejects(l.reset('k'), (e) => e.code === 'store_unavailable')
      assert.equal((await open.check('k')).fallback, true)
      // Closing through a limiter closes the store for every limiter on it.
      const s2 = await RedisStore.connect({ url: redis.url })
      const a = new Limiter({ strategy, store: s2, failPolicy: 'raise' })
      const b = new Limiter({ strategy, store: s2, failPolicy: 'raise' })
      await b.check('k')
      await a.close()
      await assert.rejects(b.check('k'), (e) => e.code === 'store_unavailable')
      await assert.rejects(b.checkMany(['k']), (e) => e.code === 'store_unavailable')
      await assert.rejects(b.peek('k'), (e) => e.code === 'store_unavailable')

    })
  })

  test('an idle socket does not keep the process alive; a pending call does', async () => {
    await withRedis([], async (redis) => {
      // An hour's period (one credit back every 12 minutes): the second check counts 3 however
      // long a loaded machine holds the child between the two.
      const script = `
        const tk = require(${JSON.stringify(entry)})
        tk.RedisStore.connect({ url: ${JSON.stringify(redis.url)} }).then((store) => {
          const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 5, periodMs: 3_600_000 }), store, prefix: 'life' })
          l.check('k').then((d) => { console.log('checked', d.remaining); l.check('k').then((d) => console.log('again', d.remaining)) })
        })`
      const t = Date.now()
      const { stdout } = await run(process.execPath, ['-e', script], { timeout: 10000 })
      assert.deepEqual(stdout.trim().split('\n'), ['checked 4', 'again 3'])
      assert.ok(Date.now() - t < 8000)
    })
  })
})
