// SqliteStore: the vectors replay on a file through the conformance runner, limiters, multi
// limiters and shapers decide on it through the Promise and sync methods, two processes on one
// file share one limit exactly, and bad input is a coded error (docs/sqlite.md).
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import tk from '../index.js'
import { assertMultiAllOrNothing } from './helpers/stores.mjs'

const { Limiter, ManualClock, Shaper, SqliteStore, Strategy } = tk
const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const vectors = readdirSync(join(root, 'conformance-vectors')).filter((f) => f.endsWith('.json')).map((f) => join(root, 'conformance-vectors', f))
const dir = mkdtempSync(join(tmpdir(), 'tk-node-sqlite-'))

describe('SqliteStore', () => {
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('the conformance runner replays every vectors file on it: 0 failed', () => {
    const r = spawnSync(process.execPath, [join(here, '..', 'bin', 'throttlekit-conformance.js'), '--store', 'sqlite', '--sqlite-path', join(dir, 'vectors.db'), ...vectors], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    const m = /(\d+) passed, 0 failed/.exec(r.stdout)
    assert.ok(m && Number(m[1]) > 100, r.stdout)
  })

  test('the constructor docs/sqlite.md shows (verbatim, between the markers) works', async () => {
    const path = join(dir, 'docs.db')
    // docs/sqlite.md begins
    const store = SqliteStore.open({ path, busyTimeoutMs: 2000 }) // a bad path throws config_invalid
    const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 2, periodMs: 60_000 }), store, prefix: 'api' })
    const d = await limiter.check('user:42') // or limiter.checkSync('user:42')
    // docs/sqlite.md ends
    assert.deepEqual([d.allowed, limiter.checkSync('user:42').allowed, (await limiter.check('user:42')).allowed], [true, true, false])
    const source = readFileSync(fileURLToPath(import.meta.url), 'utf8')
    const code = source
      .slice(source.indexOf('// docs/sqlite.md begins\n') + '// docs/sqlite.md begins\n'.length, source.indexOf('    // docs/sqlite.md ends'))
      .replace(/^    /gm, '')
    assert.ok(readFileSync(join(root, 'docs', 'sqlite.md'), 'utf8').includes('```js\n' + code + '```'), `docs/sqlite.md does not show:\n${code}`)
  })

  test('a limiter decides through the Promise and the sync methods, and a second store on the file sees its state', async () => {
    const path = join(dir, 'limiter.db')
    const store = SqliteStore.open({ path, table: 'limits', busyTimeoutMs: 2000, synchronous: 'full' })
    assert.equal(store.path, path)
    assert.equal(store.table, 'limits')
    // Time stands still: on the system clock a minute boundary between the checks (the second
    // store opens the file in between) would start the window's count over.
    const clock = new ManualClock(Date.now())
    const lim = new Limiter({ strategy: Strategy.fixedWindow({ limit: 3, windowMs: 60_000 }), store, clock, prefix: 'p' })
    assert.deepEqual([(await lim.check('k')).allowed, lim.checkSync('k').allowed, (await lim.check('k')).allowed], [true, true, true])
    const d = await lim.check('k')
    assert.equal(d.allowed, false)
    assert.ok(d.retryAfterMs > 0)
    const other = new Limiter({ strategy: Strategy.fixedWindow({ limit: 3, windowMs: 60_000 }), store: SqliteStore.open({ path, table: 'limits' }), clock, prefix: 'p' })
    assert.equal(other.peekSync('k').remaining, 0)
    await lim.reset('k')
    assert.equal(other.checkSync('k').remaining, 2)
    await store.close()
  })

  test('a multi limiter charges all or nothing, a shaper spaces departures', async () => {
    const store = SqliteStore.open({ path: join(dir, 'multi.db') })
    const multi = await assertMultiAllOrNothing(store, 'p')
    assert.deepEqual([multi.checkSync(['x2', 'y2']).allowed, multi.checkSync(['x2', 'y2']).allowed, multi.checkSync(['x2', 'y2']).allowed], [true, true, false])
    const clock = new ManualClock(1_000_000)
    const shaper = new Shaper({ ratePerSec: 10, maxQueueMs: 150, store, clock })
    assert.deepEqual([shaper.reserveSync('s').delayMs, (await shaper.reserve('s')).delayMs], [0, 100])
    assert.equal((await shaper.reserve('s')).accepted, false) // 200 ms > maxQueueMs: refused
    clock.advance(100)
    assert.equal(shaper.reserveSync('s').delayMs, 100) // the refused reservation charged nothing
  })

  test('closed, the store\'s fail policy decides', async () => {
    const store = SqliteStore.open({ path: join(dir, 'closed.db'), failPolicy: 'fail_open' })
    const lim = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), store })
    assert.ok((await lim.check('k')).allowed)
    await store.close()
    const d = await lim.check('k')
    assert.deepEqual([d.allowed, d.fallback], [true, true]) // fail_open
    const strict = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), store, failPolicy: 'raise' })
    assert.throws(() => strict.checkSync('k'), { code: 'store_unavailable' })
  })

  test('two processes on one file and one key of limit K admit exactly K', async () => {
    const K = 25
    const path = join(dir, 'shared.db')
    const child = `
      const { Limiter, SqliteStore, Strategy } = require(${JSON.stringify(join(here, '..', 'index.js'))})
      const lim = new Limiter({ strategy: Strategy.gcra({ limit: ${K}, periodMs: 86_400_000 }), store: SqliteStore.open({ path: process.argv[1] }) })
      let admitted = 0
      for (let i = 0; i < 40; i++) if (lim.checkSync('shared').allowed) admitted++
      console.log(admitted)`
    const run = () =>
      new Promise((resolve, reject) => {
        const p = spawn(process.execPath, ['-e', child, path], { stdio: ['ignore', 'pipe', 'inherit'] })
        let out = ''
        p.stdout.on('data', (b) => (out += b))
        p.on('error', reject)
        p.on('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`child exited ${code}: ${out}`))))
      })
    const counts = await Promise.all([run(), run()])
    assert.equal(counts[0] + counts[1], K, `admitted ${counts}`)
  })

  const corrupt = join(dir, 'corrupt.db')
  for (const [name, options, message] of [
    ['a directory as path', () => ({ path: dir }), /sqlitePath/],
    ['a path in a missing directory', () => ({ path: join(dir, 'missing', 'x.db') }), /missing/],
    ['a file that is not a database', () => (writeFileSync(corrupt, 'not a database, just text. '.repeat(200)), { path: corrupt }), /corrupt\.db/],
    ['a missing table with migrate off', () => ({ path: join(dir, 'fresh.db'), migrate: false }), /throttlekit/],
    ['a bad table name', () => ({ path: join(dir, 'ok.db'), table: 'Bad-Name' }), /table/],
    ['a bad synchronous', () => ({ path: join(dir, 'ok.db'), synchronous: 'sometimes' }), /synchronous/],
    ['a fractional busyTimeoutMs', () => ({ path: join(dir, 'ok.db'), busyTimeoutMs: 1.5 }), /busyTimeoutMs/],
    ['maxKeyLength 0', () => ({ path: join(dir, 'ok.db'), maxKeyLength: 0 }), /maxKeyLength/],
    ['an unknown option', () => ({ path: join(dir, 'ok.db'), nope: 1 }), /nope/],
    ['no path', () => ({}), /path/],
  ]) {
    test(`${name} is config_invalid`, () => {
      assert.throws(() => SqliteStore.open(options()), (e) => e.code === 'config_invalid' && message.test(e.message))
    })
  }

  test('the runner exits 2 with config_invalid on a directory as --sqlite-path', () => {
    const r = spawnSync(process.execPath, [join(here, '..', 'bin', 'throttlekit-conformance.js'), '--store', 'sqlite', '--sqlite-path', dir, vectors[0]], { encoding: 'utf8' })
    assert.equal(r.status, 2, r.stdout + r.stderr)
    assert.match(r.stderr, /config_invalid/)
  })
})
