// Every conformance-vectors/*.json file, replayed through the public API on both stores, and
// the `throttlekit-conformance` command itself.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { RedisStore } from '../index.mjs'
import { startRedis } from './helpers/redis.mjs'

const require = createRequire(import.meta.url)
const { parse, replay } = require('../lib/conformance.js')
const here = dirname(fileURLToPath(import.meta.url))
const vectorsDir = join(here, '..', '..', 'conformance-vectors')
const files = readdirSync(vectorsDir).filter((f) => f.endsWith('.json')).sort()
const bin = join(here, '..', 'bin', 'throttlekit-conformance.js')
const run = promisify(execFile)

test('there are vectors files, the upstream golden copy among them', () => {
  assert.ok(files.includes('upstream-golden-1.5.2.json'), files.join(', '))
})

describe('vectors on the memory store (sync API)', () => {
  for (const f of files) {
    test(f, async () => {
      const report = await replay(parse(readFileSync(join(vectorsDir, f), 'utf8'), f))
      assert.deepEqual(report.failures, [])
      assert.ok(report.passed > 0)
    })
  }
})

describe('vectors on Redis (Promise API, deterministic replay)', () => {
  let redis
  let store
  before(async () => {
    redis = await startRedis()
    store = await RedisStore.connect({ url: redis.url, deterministicReplay: true })
  })
  after(async () => {
    await store?.close()
    await redis?.stop()
  })
  for (const f of files) {
    test(f, async () => {
      const report = await replay(parse(readFileSync(join(vectorsDir, f), 'utf8'), f), { redis: store })
      assert.deepEqual(report.failures, [])
      assert.ok(report.passed > 0)
    })
  }
})

describe('throttlekit-conformance', () => {
  test('ends with "N passed, 0 failed" and exits 0 on good vectors', async () => {
    const { stdout } = await run(process.execPath, [bin, join(vectorsDir, 'upstream-golden-1.5.2.json')])
    assert.match(stdout.trim().split('\n').at(-1), /^54 passed, 0 failed$/)
  })

  test('prints suite, op, expected and got for a mismatch and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tk-vectors-'))
    const file = join(dir, 'wrong.json')
    const suite = { id: 'wrong/remaining', comment: 'deliberately wrong', strategy: { kind: 'gcra', options: { limit: 1, periodMs: 1000 } }, key: 'k' }
    suite.ops = [
      { now: 0, expect: { allowed: true, remaining: 0 } },
      { now: 0, expect: { allowed: true } },
    ]
    writeFileSync(file, JSON.stringify({ suites: [suite] }))
    await assert.rejects(run(process.execPath, [bin, '--store', 'memory', file]), (e) => {
      assert.equal(e.code, 1)
      assert.match(e.stdout, /wrong\/remaining: op 1 \(now 0\): expected \{"allowed":true\}, got \{"allowed":false/)
      assert.match(e.stdout.trim().split('\n').at(-1), /^1 passed, 1 failed$/)
      return true
    })
  })

  test('rejects an unknown field instead of ignoring it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tk-vectors-'))
    const file = join(dir, 'typo.json')
    writeFileSync(file, JSON.stringify({ suites: [{ id: 's', strategy: { kind: 'gcra', options: { limit: 1, periodMs: 1 } }, ops: [{ now: 0, expcet: {} }] }] }))
    await assert.rejects(run(process.execPath, [bin, file]), (e) => {
      assert.notEqual(e.code, 0)
      assert.match(e.stderr, /unknown field "expcet"/)
      return true
    })
  })

  test('rejects a bad --store', async () => {
    await assert.rejects(run(process.execPath, [bin, '--store', 'mysql', 'x.json']), (e) => e.code === 2)
  })
})
