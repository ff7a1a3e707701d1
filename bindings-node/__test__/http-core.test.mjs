// Core's HTTP functions through napi: the HTTP vectors (both entry points), the CLI on them,
// the two entry points against each other on random input, and every bad input.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { ClientIdentity, Limiter, ManualClock, RateLimitFields, Strategy, clientKey, problemBody, rateLimitHeaders, unavailableBody } from '@throttlekit/core'

const require = createRequire(import.meta.url)
const { parseHttp, replayHttp } = require('../lib/http-conformance.js')
const here = dirname(fileURLToPath(import.meta.url))
const vectors = join(here, '..', '..', 'conformance-vectors', 'http', 'headers.json')
const text = readFileSync(vectors, 'utf8')
const run = promisify(execFile)

test('every HTTP vector passes through both entry points', async () => {
  const file = parseHttp(text, 'headers.json')
  const report = await replayHttp(file)
  assert.deepEqual(report.failures, [])
  assert.equal(report.passed, file.headerCases.length + file.clientKeyCases.length)
  assert.ok(file.headerCases.length >= 40 && file.clientKeyCases.length >= 30)
})

test('a changed expectation fails the replay (the runner can fail)', async () => {
  const file = parseHttp(text, 'headers.json')
  const h = file.headerCases.find((c) => c.expect !== undefined && c.expect.length > 0)
  h.expect[0][1] += ' '
  const k = file.clientKeyCases.find((c) => typeof c.expect === 'string')
  k.expect = '192.0.2.255'
  const e = file.clientKeyCases.find((c) => c.expectError !== undefined)
  e.expectError = 'store_unavailable'
  const report = await replayHttp(file)
  assert.equal(report.failed, 3, report.failures.join('\n'))
})

test('throttlekit-conformance replays the HTTP vectors beside the decision vectors', async () => {
  const bin = join(here, '..', 'bin', 'throttlekit-conformance.js')
  const { stdout } = await run(process.execPath, [bin, vectors, join(here, '..', '..', 'conformance-vectors', 'hand-checked.json')])
  assert.match(stdout, /^\d+ passed, 0 failed$/m)
})

/** A small deterministic PRNG (mulberry32). */
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

test('RateLimitFields gives what rateLimitHeaders gives, on random strategies, costs and times', () => {
  const next = rng(12)
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1))
  const specs = [
    () => ({ kind: 'gcra', options: { limit: int(1, 50), periodMs: int(1, 120) * 1000, burst: int(1, 20) } }),
    () => ({ kind: 'tokenBucket', options: { capacity: int(1, 30), refillPerSec: int(1, 10) } }),
    () => ({ kind: 'fixedWindow', options: { limit: int(1, 30), windowMs: int(1, 3600) * 1000 } }),
    () => ({ kind: 'slidingWindowLog', options: { limit: int(1, 30), windowMs: int(1, 600) * 1000 } }),
  ]
  const families = ['draft-6', 'draft-7', 'draft-10', 'legacy']
  let compared = 0
  for (let i = 0; i < 200; i++) {
    const strategy = specs[int(0, specs.length - 1)]()
    const clock = new ManualClock(1_700_000_000_000 + int(0, 1e9))
    const limiter = new Limiter({ strategy, clock })
    const options = { family: families[int(0, 3)], policyName: `p${i}`, partitionKeySecret: next() < 0.5 ? 'k' : undefined }
    const fields = new RateLimitFields(limiter, options)
    for (let j = 0; j < 8; j++) {
      clock.advance(int(0, 5000))
      const d = limiter.checkSync('client', int(1, 3))
      const flat = fields.lines(d, 'client')
      const pairs = []
      for (let k = 0; k < flat.length; k += 2) pairs.push([flat[k], flat[k + 1]])
      const data = rateLimitHeaders({ options, nowMs: clock.now(), limits: [{ key: 'client', strategy, decision: d }] })
      assert.deepEqual(pairs, data)
      assert.equal(d.allowed, !pairs.some(([n]) => n === 'Retry-After'))
      compared++
    }
  }
  assert.equal(compared, 1600)
})

test('fallback decisions come from core, by fail policy', () => {
  const clock = new ManualClock(5_000)
  const fields = new RateLimitFields(new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000 }), clock }))
  const open = fields.fallback('fail_open')
  assert.equal(open.allowed, true)
  assert.equal(open.fallback, true)
  assert.deepEqual(fields.lines(open), [])
  const closed = fields.fallback('fail_closed')
  assert.equal(closed.allowed, false)
  assert.deepEqual(fields.lines(closed), ['Retry-After', '1'])
  assert.throws(() => fields.fallback('raise'), { code: 'store_unavailable' })
  assert.throws(() => fields.fallback('sometimes'), { code: 'config_invalid' })
})

test("core's edge settles each check: forward, deny 429, or shadow (forwarded) in shadow mode, on both paths", async () => {
  const strategy = Strategy.gcra({ limit: 2, periodMs: 60_000 })
  for (const shadow of [false, true, undefined]) {
    const clock = new ManualClock(1_700_000_000_000)
    const fields = new RateLimitFields(new Limiter({ strategy, clock }), { shadow, failPolicy: 'fail_closed' })
    const seen = []
    for (let i = 0; i < 3; i++) seen.push(fields.checkSync('k'))
    seen.push(await fields.check('k'))
    const denied = shadow === true ? ['shadow', 0] : ['deny', 429]
    assert.deepEqual(seen.map((c) => [c.action, c.status]), [['forward', 0], ['forward', 0], denied, denied], `shadow ${shadow}`)
    // A shadowed denial carries every field a denial does, Retry-After included.
    assert.equal(seen[3].lines.at(-2), 'Retry-After')
  }
  const limiter = new Limiter({ strategy })
  assert.throws(() => new RateLimitFields(limiter, { failPolicy: 'sometimes' }), { code: 'config_invalid' })
  assert.throws(() => new RateLimitFields(limiter, { shadow: 'yes' }), { code: 'config_invalid' })
})

test('problem bodies are RFC 9457 JSON from core', () => {
  const body = JSON.parse(problemBody({ allowed: false, limit: 5, remaining: 0, resetAt: 0, retryAfterMs: 1 }))
  assert.deepEqual(body, { type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', title: 'Too Many Requests', status: 429, detail: 'Rate limit exceeded; retry in 1 second.' })
  assert.equal(JSON.parse(unavailableBody()).status, 503)
})

test('bad input is config_invalid, never a crash', () => {
  const limiter = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1, windowMs: 1000 }) })
  const fields = new RateLimitFields(limiter)
  const d = limiter.checkSync('k')
  const bad = [
    () => new RateLimitFields({}),
    () => new RateLimitFields(Object.create(Limiter.prototype)),
    () => new RateLimitFields(limiter, { family: 'draft-10', colour: 'red' }),
    () => new RateLimitFields(limiter, { partitionKeySecret: '' }),
    () => new RateLimitFields(limiter, { policyName: 'x'.repeat(257) }),
    () => fields.lines(null),
    () => fields.lines({ allowed: 'yes' }),
    () => fields.lines(d, 42),
    () => fields.lines(d, 'k', Number.NaN),
    () => new ClientIdentity({ trustedProxies: ['nope'] }),
    () => new ClientIdentity({ ipv6Prefix: 129 }),
    () => new ClientIdentity({ trustedProxies: '10.0.0.0/8' }),
    () => new ClientIdentity({ via: 'x' }),
    () => new ClientIdentity().key('not an ip'),
    () => new ClientIdentity().key(undefined),
    () => new ClientIdentity().key('127.0.0.1', 42),
    () => rateLimitHeaders({ nowMs: 0, limits: [] }),
    () => rateLimitHeaders('{}'),
    () => clientKey({ peer: '1.2.3.4', options: { ipv6Prefix: 0 } }),
    () => problemBody(undefined),
  ]
  for (const f of bad) assert.throws(f, (e) => e.code === 'config_invalid', f.toString())
})

test('check and checkSync decide and render at one instant; checkSync is for the memory store only', async () => {
  const { MultiLimiter } = await import('@throttlekit/core')
  const clock = new ManualClock(1_700_000_000_000)
  const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000 }), clock })
  const fields = new RateLimitFields(limiter, { partitionKeySecret: 's' })
  assert.equal(fields.inProcess, true)
  const a = fields.checkSync('k', 2)
  assert.equal(a.decision.remaining, 3)
  assert.deepEqual(a.lines, fields.lines(a.decision, 'k', clock.now()))
  const b = await fields.check('k')
  assert.equal(b.decision.remaining, 2)
  assert.deepEqual(b.lines, fields.lines(b.decision, 'k', clock.now()))
  assert.throws(() => fields.checkSync(['k']), { code: 'config_invalid' })
  assert.throws(() => fields.checkSync('k', 0), { code: 'config_invalid' })

  const multi = new MultiLimiter({ rule: 'all', clock, dimensions: [{ name: 'a', strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }) }, { name: 'b', strategy: Strategy.fixedWindow({ limit: 9, windowMs: 1000 }) }] })
  const mf = new RateLimitFields(multi)
  assert.equal(mf.inProcess, false)
  assert.deepEqual(mf.dimensions, ['a', 'b'])
  assert.throws(() => mf.checkSync(['x', 'y']), { code: 'config_invalid' })
  const m = await mf.check(['x', 'y'])
  assert.equal(m.decision.binding, 'a')
  assert.deepEqual(m.lines, ['RateLimit-Policy', '"a";q=2;w=1, "b";q=9;w=1', 'RateLimit', '"a";r=1;t=1, "b";r=8;t=1'])
  await assert.rejects(mf.check(['x']), { code: 'config_invalid' })
  await assert.rejects(mf.check('x'), { code: 'config_invalid' })
})

test('checkSync (its JavaScript-built answer) equals a check plus lines on a twin limiter, denials included', () => {
  const next = rng(34)
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1))
  const specs = [
    () => ({ kind: 'gcra', options: { limit: int(1, 5), periodMs: int(1, 60) * 1000, burst: int(1, 4) } }),
    () => ({ kind: 'tokenBucket', options: { capacity: int(1, 5), refillPerSec: int(1, 3) } }),
    () => ({ kind: 'fixedWindow', options: { limit: int(1, 5), windowMs: int(1, 60) * 1000 } }),
    () => ({ kind: 'slidingWindowLog', options: { limit: int(1, 5), windowMs: int(1, 60) * 1000 } }),
  ]
  const families = ['draft-6', 'draft-7', 'draft-10', 'legacy']
  let denied = 0
  for (let i = 0; i < 100; i++) {
    const strategy = specs[int(0, specs.length - 1)]()
    const clock = new ManualClock(1_700_000_000_000 + int(0, 1e9))
    const options = { family: families[int(0, 3)], policyName: `p${i}`, partitionKeySecret: next() < 0.5 ? 'k' : undefined }
    const fields = new RateLimitFields(new Limiter({ strategy, clock }), options)
    const twin = new Limiter({ strategy, clock })
    const twinFields = new RateLimitFields(twin, options)
    for (let j = 0; j < 10; j++) {
      clock.advance(int(0, 3000))
      const key = `client-${int(0, 2)}`
      const cost = int(1, 2)
      const got = fields.checkSync(key, cost)
      const d = twin.checkSync(key, cost)
      const lines = twinFields.lines(d, key, clock.now())
      assert.deepEqual(got, { decision: d, lines, action: d.allowed ? 'forward' : 'deny', status: d.allowed ? 0 : 429 })
      if (!d.allowed) denied++
    }
  }
  assert.ok(denied > 50, `only ${denied} denials: the comparison must cover them`)
  // A receiver of another class gets the native method's own error, not a wrong answer.
  assert.throws(() => RateLimitFields.prototype.checkSync.call({}, 'k'))
  assert.throws(() => RateLimitFields.prototype.checkSync.call(new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }) }), 'k'))
})

test('checkSync reads every key and cost the way check does: buffer-copied short ASCII keys, long and non-ASCII keys as arguments', async () => {
  const clock = new ManualClock(1_700_000_000_000)
  const strategy = Strategy.fixedWindow({ limit: 3, windowMs: 60_000 })
  const fields = new RateLimitFields(new Limiter({ strategy, clock }), { partitionKeySecret: 's' })
  const twinFields = new RateLimitFields(new Limiter({ strategy, clock }), { partitionKeySecret: 's' })
  // 64 ASCII bytes fit the shared buffer, 65 do not; 'é' and an emoji are never copied.
  const keys = ['k', 'x'.repeat(64), 'y'.repeat(65), 'é-client', 'client-\u{1F600}', '']
  for (const key of keys) {
    for (const cost of [undefined, 1, 2]) {
      const got = fields.checkSync(key, cost)
      const want = await twinFields.check(key, cost)
      assert.deepEqual(got, want, `key ${JSON.stringify(key)} cost ${cost}`)
    }
  }
  // The first bad input wins, as in check: the key before the cost.
  for (const [key, cost, field] of [[42, 1, /key/], [42, 'x', /key/], ['k', '1', /cost/], ['k', 0, /cost/], ['k', 1.5, /cost/], ['k', null, /cost/], ['x'.repeat(80), -1, /cost/]]) {
    assert.throws(() => fields.checkSync(key, cost), (e) => e.code === 'config_invalid' && field.test(e.message), `${key} ${cost}`)
    await assert.rejects(twinFields.check(key, cost), (e) => e.code === 'config_invalid' && field.test(e.message))
  }
})

test("decideValues answers an allowed request with decide's values and names, and anything else with decide's verdict", () => {
  const { RateLimitCore, forEachValue } = require('../lib/http/decide.js')
  const clock = new ManualClock(1_700_000_000_000)
  const strategy = Strategy.gcra({ limit: 2, periodMs: 60_000 })
  for (const family of [undefined, 'draft-6', 'draft-7', 'draft-10', 'legacy']) {
    const limited = []
    const options = (limiter) => ({ limiter, family, onLimited: (e) => limited.push(e.key) })
    const values = new RateLimitCore(options(new Limiter({ strategy, clock })), 'test')
    const twin = new RateLimitCore(options(new Limiter({ strategy, clock })), 'test')
    let forwarded = 0
    for (let i = 0; i < 4; i++) {
      const got = values.decideValues({}, undefined, '10.0.0.7', undefined, 'GET', '/')
      const want = twin.decide({}, undefined, '10.0.0.7', undefined, 'GET', '/')
      if (want.kind === 'forward') {
        forwarded++
        assert.equal(typeof got, 'string', `${family} ${i}`)
        const lines = []
        forEachValue(got, values.lastNames.raw, lines, (l, name, value) => l.push(name, value))
        assert.deepEqual(lines, want.lines, `${family} ${i}`)
        assert.deepEqual(values.lastNames.lower, want.lines.filter((_, j) => j % 2 === 0).map((n) => n.toLowerCase()))
      } else assert.deepEqual(got, want, `${family} ${i}`)
    }
    assert.equal(forwarded, 2, family)
    assert.deepEqual(limited, ['10.0.0.7', '10.0.0.7', '10.0.0.7', '10.0.0.7'], `${family}: each core's two denials`)
  }
  const skipped = new RateLimitCore({ limiter: new Limiter({ strategy, clock }), skip: () => true }, 'test')
  assert.equal(skipped.decideValues({}, undefined, '10.0.0.7', undefined, 'GET', '/').kind, 'forward')
  const core = new RateLimitCore({ limiter: new Limiter({ strategy, clock }) }, 'test')
  assert.throws(() => core.decideValues({}, undefined, 'not an address', undefined, 'GET', '/'), { code: 'config_invalid' })
  const costly = new RateLimitCore({ limiter: new Limiter({ strategy, clock }), cost: () => 0 }, 'test')
  assert.throws(() => costly.decideValues({}, undefined, '10.0.0.7', undefined, 'GET', '/'), { code: 'config_invalid' })
})

test('a names id names the same lines for the life of the process; an unknown id is config_invalid', () => {
  const parts = require('../index.js')[Symbol.for('throttlekit.fieldsParts')]
  const fields = new RateLimitFields(new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 60_000 }), clock: new ManualClock(0) }))
  assert.equal(parts.values(fields, 'k', 1), '"default";q=1;w=60\n"default";r=0;t=60')
  const allowed = parts.namesId()
  assert.equal(parts.names(allowed), 'RateLimit-Policy\nRateLimit')
  assert.equal(parts.values(fields, 'k', 1), '"default";q=1;w=60\n"default";r=0;t=60\n60')
  const denied = parts.namesId()
  assert.notEqual(denied, allowed)
  assert.equal(parts.names(denied), 'RateLimit-Policy\nRateLimit\nRetry-After')
  parts.values(fields, 'other', 1)
  assert.equal(parts.namesId(), allowed)
  for (const bad of [-1, 0.5, 1e9, NaN, 'x', undefined]) {
    assert.throws(() => parts.names(bad), { code: 'config_invalid' }, String(bad))
  }
})

test("the middleware's remembered client keys are core's, and a forwarding header is never answered from memory", () => {
  const require = createRequire(import.meta.url)
  const { RateLimitCore } = require('../lib/http/decide.js')
  const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }) })
  const options = { trustedProxies: ['10.0.0.0/8'], ipv6Prefix: 64 }
  const core = new RateLimitCore({ limiter, ...options }, 'test')
  const identity = new ClientIdentity(options)
  for (const peer of ['10.1.2.3', '192.0.2.7', '2001:db8::1', '2001:db8::2', '::ffff:192.0.2.9']) {
    for (let i = 0; i < 2; i++) assert.equal(core.clientKey(peer, undefined), identity.key(peer, undefined))
  }
  // The same trusted peer, now behind a forwarding header: core's answer for the header.
  assert.equal(core.clientKey('10.1.2.3', '203.0.113.5'), identity.key('10.1.2.3', '203.0.113.5'))
  assert.notEqual(core.clientKey('10.1.2.3', '203.0.113.5'), core.clientKey('10.1.2.3', undefined))
  // A peer core rejects throws every time (never remembered).
  for (let i = 0; i < 2; i++) assert.throws(() => core.clientKey('not an address', undefined), { code: 'config_invalid' })
  // Past the memo's size, answers stay core's.
  for (let i = 0; i < 5000; i++) {
    const peer = `192.0.${(i >> 8) & 255}.${i & 255}`
    assert.equal(core.clientKey(peer, undefined), identity.key(peer, undefined))
  }
  assert.ok(core.keys.size <= 4096)
})
