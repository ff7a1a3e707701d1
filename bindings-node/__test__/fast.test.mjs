// The checkSync fast path (src/fast.rs, src/handles.rs, index.js). It finds its limiter by a
// numeric handle and reads short ASCII keys its own way.
// These tests hold it to its promises: a forged, stale or foreign handle is `config_invalid`
// (never another object's memory), finalizing a Limiter frees its slot, and worker threads
// have tables of their own.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, test } from 'node:test'
import { setImmediate as tick } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import v8 from 'node:v8'
import vm from 'node:vm'
import { Worker } from 'node:worker_threads'

import { Limiter, ManualClock, RateLimitFields, Strategy } from '../index.mjs'

const require = createRequire(import.meta.url)
const pkgDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const { bindingFile } = require('../lib/platform.js')
// The raw addon: the same module instance index.js loaded, so the same handle table.
const raw = require(path.join(pkgDir, bindingFile()))
const fastPath = require('../index.js')[Symbol.for('throttlekit.fastPath')]
const { liveHandles } = fastPath
/** A fast-path call with a raw handle, as checkSync makes it; the decision's six slots. */
const rawCheck = (h, key = 'k', cost = 1) => fastPath.call(h, key, cost)

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')

function throwsCode(fn, what) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, `${what}: not an Error: ${e}`)
    assert.equal(e.code, 'config_invalid', `${what}: ${e.code}: ${e.message}`)
    return true
  })
}

const gcra = () => Strategy.gcra({ limit: 2, periodMs: 1000 })

/** Collects garbage until `done()` holds (napi finalizers run on a later turn of the loop). */
async function collectUntil(done) {
  for (let i = 0; i < 100 && !done(); i++) {
    gc()
    await tick()
  }
  return done()
}

describe('handles', () => {
  test('a forged handle is config_invalid', () => {
    const keep = new Limiter({ strategy: gcra() })
    const h = raw.__handle(keep)
    assert.equal(typeof h, 'number')
    assert.equal(raw.__handle(keep), h, 'one handle per limiter')
    const slots = rawCheck(h) // a real handle works through the raw call too
    assert.deepEqual(slots, [1, 2, 1, slots[3], 0, 0], 'the decision was written')
    assert.ok(slots[3] > 0, 'resetAt')
    for (const forged of [0, -0, 1, -1, h + 1, h - 1, h + 0.5, h + 2 ** 32, 2 ** 53, NaN, Infinity, -Infinity]) {
      throwsCode(() => rawCheck(forged), `handle ${String(forged)}`)
    }
  })

  test('the shared buffer cannot be had twice, and bad costs or keys through it are config_invalid', () => {
    throwsCode(() => raw.__bindIo(), 'a second __bindIo')
    const h = raw.__handle(new Limiter({ strategy: gcra() }))
    for (const cost of [0, -1, 1.5, NaN, Infinity, 2 ** 53 + 2]) throwsCode(() => rawCheck(h, 'k', cost), `cost ${cost}`)
    for (const cost of [null, '1', 1n, {}]) throwsCode(() => raw.__checkSync('k', cost), `cost argument ${String(cost)}`)
    throwsCode(() => rawCheck(h, 1), 'key not a string')
    throwsCode(() => rawCheck(h, 'x'.repeat(65) + '\u{1F600}', 0), 'cost checked before a long key')
  })

  test('only a constructed Limiter gets a handle', () => {
    const l = new Limiter({ strategy: gcra() })
    for (const [what, o] of Object.entries({
      'plain object': {},
      'a strategy': gcra(),
      'Object.create(Limiter.prototype)': Object.create(Limiter.prototype),
      'Object.create(limiter)': Object.create(l),
      'a Proxy of a limiter': new Proxy(l, {}),
      undefined,
      null: null,
      number: 1,
    })) {
      throwsCode(() => raw.__handle(o), `__handle(${what})`)
      throwsCode(() => Limiter.prototype.checkSync.call(o, 'k'), `checkSync.call(${what})`)
    }
    assert.equal(l.checkSync('k').allowed, true, 'the limiter itself still works')
  })

  test('an object inheriting from a limiter does not borrow its handle', () => {
    const l = new Limiter({ strategy: gcra() })
    l.checkSync('k') // the limiter now carries its handle
    throwsCode(() => Limiter.prototype.checkSync.call(Object.create(l), 'k'), 'inherited')
    assert.deepEqual(Object.getOwnPropertySymbols(l), [], 'nothing visible to reflection')
  })

  test('finalizing limiters frees their slots, and their handles go stale', async () => {
    assert.ok(await collectUntil(() => true))
    const before = liveHandles()
    let handle
    ;(() => {
      const clock = new ManualClock(0)
      for (let i = 0; i < 2000; i++) new Limiter({ strategy: gcra(), clock }).checkSync('k')
      handle = raw.__handle(new Limiter({ strategy: gcra(), clock }))
    })()
    assert.ok(liveHandles() >= before + 2001, `${liveHandles()} live after registering 2001`)
    assert.ok(await collectUntil(() => liveHandles() <= before), `${liveHandles()} still live (was ${before})`)
    throwsCode(() => rawCheck(handle), 'stale handle')
  })

  test('cost undefined means 1; null is not a cost', () => {
    const clock = new ManualClock(0)
    const a = new Limiter({ strategy: gcra(), clock })
    const b = new Limiter({ strategy: gcra(), clock })
    assert.deepEqual(a.checkSync('k'), b.checkSync('k', 1))
    assert.deepEqual(a.checkSync('k', undefined), b.checkSync('k', 1))
    throwsCode(() => a.checkSync('k', null), 'null cost')
  })

  test('worker threads have their own table and limiters', async () => {
    const script = `
      const { parentPort } = require('node:worker_threads')
      const tk = require(${JSON.stringify(path.join(pkgDir, 'index.js'))})
      const live = tk[Symbol.for('throttlekit.fastPath')].liveHandles
      const clock = new tk.ManualClock(0)
      const ls = Array.from({ length: 3 }, () => new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 2, periodMs: 1000 }), clock }))
      const allowed = ls.map((l) => [0, 1, 2].map(() => l.checkSync('k').allowed))
      parentPort.postMessage({ allowed, live: live() })`
    const l = new Limiter({ strategy: gcra(), clock: new ManualClock(0) })
    const mainBefore = liveHandles()
    const runs = await Promise.all(
      [0, 1].map(
        () =>
          new Promise((resolve, reject) => {
            const w = new Worker(script, { eval: true })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
    )
    for (const r of runs) {
      assert.deepEqual(r.allowed, [[true, true, false], [true, true, false], [true, true, false]])
      assert.equal(r.live, 3, "a worker's table lists only its own limiters")
    }
    assert.deepEqual([0, 1, 2].map(() => l.checkSync('k').allowed), [true, true, false])
    assert.equal(liveHandles(), mainBefore + 1, 'the workers registered nothing here')
  })
})

describe('fast path keys', () => {
  // Short ASCII keys are read as UTF-16 and narrowed (src/fast.rs); everything else through
  // UTF-8. Both must name the same keys as the native method does.
  const native = require('../index.js')[Symbol.for('throttlekit.nativeCheckSync')]
  const keys = [
    '',
    'a',
    'user:1',
    'x'.repeat(61),
    'x'.repeat(62),
    'x'.repeat(63),
    'x'.repeat(64),
    'x'.repeat(65),
    'é',
    'e\u0301',
    'ÿ',
    '\u0100',
    '\u0141', // low byte 0x41 ('A'): must not be read as 'A'
    'A',
    '\u{1F600}',
    '\ud800', // a lone surrogate is U+FFFD in the native path too
    '\ufffd',
    'x'.repeat(62) + 'é',
    'a\u0000b',
  ]

  test('every key is the key the native method sees', () => {
    const clock = new ManualClock(0)
    const strategy = Strategy.fixedWindow({ limit: 100, windowMs: 1000 })
    const fast = new Limiter({ strategy, clock })
    const slow = new Limiter({ strategy, clock })
    keys.forEach((k, i) => {
      for (let n = 0; n <= i % 3; n++) assert.deepEqual(fast.checkSync(k), native.call(slow, k), `key #${i} check ${n}`)
    })
    keys.forEach((k, i) => assert.deepEqual(fast.peekSync(k), slow.peekSync(k), `key #${i} after`))
  })

  test('keys that differ only above ASCII stay apart', () => {
    const l = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }), clock: new ManualClock(0) })
    assert.equal(l.checkSync('A').allowed, true)
    assert.equal(l.checkSync('\u0141').allowed, true, 'U+0141 is not A')
    assert.equal(l.checkSync('\u0100').allowed, true)
    assert.equal(l.checkSync('\u0000').allowed, true, 'U+0100 is not NUL')
    assert.equal(l.checkSync('A').allowed, false)
  })

  test('replaced builtins never see a key copy or the shared buffer', () => {
    const TypedArrayProto = Object.getPrototypeOf(Float64Array.prototype)
    const saved = []
    const seen = []
    const spy = (obj, name) => {
      const d = Object.getOwnPropertyDescriptor(obj, name)
      if (!d || !d.configurable || typeof d.value !== 'function') return
      saved.push([obj, name, d])
      Object.defineProperty(obj, name, { ...d, value: function (...a) { seen.push(name); return d.value.apply(this, a) } })
    }
    for (const name of Object.getOwnPropertyNames(TypedArrayProto)) if (name !== 'constructor') spy(TypedArrayProto, name)
    spy(String.prototype, 'charCodeAt')
    try {
      const clock = new ManualClock(0)
      const l = new Limiter({ strategy: gcra(), clock })
      assert.deepEqual([0, 1, 2].map(() => l.checkSync('user:1').allowed), [true, true, false])
      assert.deepEqual(seen, [])
    } finally {
      for (const [obj, name, d] of saved) Object.defineProperty(obj, name, d)
    }
  })
})

// RateLimitFields#checkSync's fast path (`__fieldsCheck`) finds its fields by a handle from a
// table of their own, with the same promises.
describe('fields handles', () => {
  const fieldsOf = () => new RateLimitFields(new Limiter({ strategy: gcra(), clock: new ManualClock(0) }))

  test('a real handle decides and renders; a forged one is config_invalid', () => {
    const f = fieldsOf()
    const h = fastPath.fieldsHandle(f)
    assert.equal(typeof h, 'number')
    assert.equal(fastPath.fieldsHandle(f), h, 'one handle per fields object')
    const [joined, slots] = fastPath.fieldsCall(h, 'k', 1)
    assert.equal(joined, 'RateLimit-Policy\n"default";q=2;w=1\nRateLimit\n"default";r=1;t=1')
    assert.deepEqual(slots, [1, 2, 1, 500, 0, 0])
    for (const forged of [0, -0, 1, -1, h + 1, h - 1, h + 0.5, h + 2 ** 32, 2 ** 53, NaN, Infinity]) {
      throwsCode(() => fastPath.fieldsCall(forged, 'k', 1), `fields handle ${String(forged)}`)
    }
  })

  test('only a RateLimitFields has a fields handle', () => {
    const f = fieldsOf()
    for (const other of [{}, null, 1, 'k', new Limiter({ strategy: gcra() }), Object.create(f)]) {
      assert.equal(fastPath.fieldsHandle(other), null, String(other))
    }
    const parts = require('../index.js')[Symbol.for('throttlekit.fieldsParts')]
    f.checkSync('k') // f now carries its handle
    assert.equal(parts.checkSync(Object.create(f), 'k', 1), null, 'an heir does not borrow it')
    assert.deepEqual(Object.getOwnPropertySymbols(f), [], 'nothing visible to reflection')
  })

  test('finalizing RateLimitFields frees their slots, and their handles go stale', async () => {
    assert.ok(await collectUntil(() => true))
    const before = liveHandles('fields')
    let handle
    ;(() => {
      const l = new Limiter({ strategy: gcra(), clock: new ManualClock(0) })
      for (let i = 0; i < 500; i++) new RateLimitFields(l).checkSync('k')
      handle = fastPath.fieldsHandle(new RateLimitFields(l))
    })()
    assert.ok(liveHandles('fields') >= before + 501, `${liveHandles('fields')} live after registering 501`)
    assert.ok(
      await collectUntil(() => liveHandles('fields') <= before),
      `${liveHandles('fields')} still live (was ${before})`,
    )
    throwsCode(() => fastPath.fieldsCall(handle, 'k', 1), 'stale fields handle')
  })
})
