// Promise methods settle through one threadsafe function per environment (src/promise.rs).
// These tests hold it to napi-rs's behaviour: many calls in flight all settle with the right
// value or error, a pending call keeps the process alive and an idle package does not, and a
// worker torn down with calls still pending takes nothing down with it.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Worker } from 'node:worker_threads'

import { Limiter, ManualClock, Shaper, Strategy } from '../index.mjs'

const run = promisify(execFile)
const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'index.js')

describe('promises', () => {
  test('a thousand calls in flight all settle, errors as errors', async () => {
    const clock = new ManualClock(0)
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 500, windowMs: 1000 }), clock })
    const calls = Array.from({ length: 1000 }, (_, i) => (i % 10 === 9 ? l.check('k', 0) : l.check('k')))
    const settled = await Promise.allSettled(calls)
    const allowed = settled.filter((s) => s.status === 'fulfilled' && s.value.allowed).length
    const denied = settled.filter((s) => s.status === 'fulfilled' && !s.value.allowed).length
    const errors = settled.filter((s) => s.status === 'rejected')
    assert.equal(errors.length, 100)
    for (const e of errors) assert.equal(e.reason.code, 'config_invalid')
    assert.equal(allowed, 500)
    assert.equal(denied, 400)
  })

  test('a pending call keeps the process alive; an idle one exits', async () => {
    const script = `
      const tk = require(${JSON.stringify(entry)})
      const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 5, periodMs: 1000 }) })
      l.check('k').then((d) => console.log('checked', d.allowed))
      const s = new tk.Shaper({ ratePerSec: 5, maxQueueMs: 10000 })
      // Read before the first reservation: the second departs 200 ms after it, so at least 200 ms
      // after this reading, however long this process then goes unscheduled.
      const t = performance.now()
      s.reserveSync('q')
      s.schedule('q').then(() => console.log('scheduled after', performance.now() - t >= 150))`
    const { stdout } = await run(process.execPath, ['-e', script], { timeout: 10000 })
    assert.deepEqual(stdout.trim().split('\n').sort(), ['checked true', 'scheduled after true'])
  })

  test('a worker terminated with calls pending does not take the process down', async () => {
    const script = `
      const { parentPort } = require('node:worker_threads')
      const tk = require(${JSON.stringify(entry)})
      const s = new tk.Shaper({ ratePerSec: 20, maxQueueMs: 60000 })
      const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 1e9, periodMs: 1000 }) })
      for (let i = 0; i < 200; i++) { s.schedule('q').catch(() => {}); l.check('k' + i) }
      l.check('k').then(() => parentPort.postMessage('busy'))`
    for (let round = 0; round < 3; round++) {
      const w = new Worker(script, { eval: true })
      await new Promise((resolve, reject) => {
        w.once('message', resolve)
        w.once('error', reject)
      })
      await w.terminate()
    }
    // The queued shaper calls finish on the runtime after their environment is gone.
    await new Promise((r) => setTimeout(r, 300))
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 2, periodMs: 1000 }), clock: new ManualClock(0) })
    assert.deepEqual((await Promise.all([l.check('k'), l.check('k'), l.check('k')])).map((d) => d.allowed).sort(), [false, true, true])
  })

  test('shapers and limiters in workers and here, all at once', async () => {
    const script = `
      const { parentPort } = require('node:worker_threads')
      const tk = require(${JSON.stringify(entry)})
      const l = new tk.Limiter({ strategy: tk.Strategy.fixedWindow({ limit: 100, windowMs: 60000 }), clock: new tk.ManualClock(0) })
      Promise.all(Array.from({ length: 150 }, () => l.check('k'))).then((ds) => parentPort.postMessage(ds.filter((d) => d.allowed).length))`
    const here = new Limiter({ strategy: Strategy.fixedWindow({ limit: 100, windowMs: 60000 }), clock: new ManualClock(0) })
    const [a, b, mine] = await Promise.all([
      ...[0, 1].map(
        () =>
          new Promise((resolve, reject) => {
            const w = new Worker(script, { eval: true })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
      Promise.all(Array.from({ length: 150 }, () => here.check('k'))).then((ds) => ds.filter((d) => d.allowed).length),
    ])
    assert.deepEqual([a, b, mine], [100, 100, 100])
    const s = new Shaper({ ratePerSec: 1000, maxQueueMs: 1000 })
    assert.equal((await s.reserve('q')).accepted, true)
  })
})
