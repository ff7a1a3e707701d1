// @throttlekit/core/fetch and @throttlekit/core/hono on the WebAssembly build: the same
// statuses, header lines, bodies and hook events as the native addon's fetch wrapper for the
// same requests at the same instants (every family, shadow mode, a multi limiter, the Redis
// REST store), the fail policies on a store that cannot answer, and the same `config_invalid`
// codes and messages for bad options.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, test } from 'node:test'

import { Hono } from 'hono'

import * as native from '../../bindings-node/index.mjs'
import { problemContentType } from '../../bindings-node/wasm/pkg/throttlekit.js'
import * as wasm from '../../bindings-node/wasm/node.mjs'
import { withRateLimit } from '../../bindings-node/wasm/http/fetch.mjs'
import { rateLimit } from '../../bindings-node/wasm/http/hono.mjs'
import { startRestFront } from './support/restfront.mjs'

const require = createRequire(import.meta.url)
const nativeFetch = require('../../bindings-node/lib/http/fetch.js')

const START = 1_700_000_040_000
const PEER = '203.0.113.7'
const info = { remoteAddr: { hostname: PEER } }
const ok = () => new Response('ok', { headers: { 'content-type': 'text/plain' } })

/** Everything a client sees of `res`, and its body. */
async function seen(res) {
  return { status: res.status, headers: [...res.headers.entries()].sort(), body: await res.text() }
}

/** A limiter of `tk` on its own manual clock; `store` a RedisRestStore's options (wasm only). */
function limiterOf(tk, { multi = false, store } = {}) {
  const clock = new tk.ManualClock(START)
  const strategy = tk.Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 3 })
  const prefix = `edge-http:${process.pid}:${Math.random()}`
  const limiter = multi
    ? new tk.MultiLimiter({
        rule: 'all',
        clock,
        store,
        prefix,
        dimensions: [
          { name: 'ip', strategy },
          { name: 'route', strategy: tk.Strategy.fixedWindow({ limit: 4, windowMs: 10_000 }) },
        ],
      })
    : new tk.Limiter({ strategy, clock, store, prefix })
  return { limiter, clock }
}

/** Six requests at one instant, then one 12.5 s later, through `handle(request)`. */
async function timeline(handle, clock) {
  const out = []
  for (let i = 0; i < 7; i++) {
    if (i === 6) clock.advance(12_500)
    out.push(await seen(await handle(new Request('http://example.test/limited'))))
  }
  return out
}

const CASES = [
  { family: 'draft-10', policyName: 'default' },
  { family: 'draft-7' },
  { family: 'draft-6' },
  { family: 'legacy' },
  { family: 'draft-10', partitionKeySecret: 's3cret' },
  { family: 'draft-10', shadow: true },
]

for (const options of CASES) {
  test(`fetch: the native wrapper's responses and hook events, ${JSON.stringify(options)}`, async () => {
    const runs = []
    for (const [tk, wrap] of [
      [native, nativeFetch.withRateLimit],
      [wasm, withRateLimit],
    ]) {
      const { limiter, clock } = limiterOf(tk)
      const events = []
      const limited = wrap(ok, { limiter, ...options, onLimited: (e) => events.push(e) })
      runs.push({ responses: await timeline((r) => limited(r, info), clock), events })
    }
    assert.deepEqual(runs[1], runs[0])
    assert.equal(runs[0].responses.filter((r) => r.status === 429).length, options.shadow ? 0 : 3)
    assert.equal(runs[0].events.length, 3)
  })
}

test('hono: the fetch wrapper\'s responses, and the app\'s own headers kept', async () => {
  const runs = []
  for (const via of ['fetch', 'hono']) {
    const { limiter, clock } = limiterOf(wasm)
    let handle
    if (via === 'fetch') {
      const limited = withRateLimit(ok, { limiter, peer: () => PEER })
      handle = (r) => limited(r)
    } else {
      const app = new Hono()
      app.use('/limited', rateLimit({ limiter, peer: () => PEER }))
      app.get('/limited', (c) => c.text('ok'))
      handle = (r) => app.fetch(r)
    }
    runs.push(await timeline(handle, clock))
  }
  // Hono's c.text answers its own `text/plain;charset=UTF-8`, kept beside the fields;
  // everything else is the same.
  const plain = (rs) => rs.map((r) => ({ ...r, headers: r.headers.filter(([n]) => n !== 'content-type') }))
  assert.deepEqual(plain(runs[1]), plain(runs[0]))
  assert.match(new Map(runs[1][0].headers).get('content-type'), /^text\/plain; ?charset=UTF-8$/)
  assert.ok(new Map(runs[1][0].headers).has('ratelimit'))
})

test('hono: key, cost, skip and denyResponse get the Context', async () => {
  const { limiter } = limiterOf(wasm)
  const app = new Hono()
  app.use(
    '*',
    rateLimit({
      limiter,
      key: (c) => c.req.header('x-user') ?? 'anonymous',
      cost: (c) => Number(c.req.query('cost') ?? 1),
      skip: (c) => c.req.path === '/healthz',
      denyResponse: (c, d) => c.json({ wait: d.retryAfterMs }, 429),
    }),
  )
  app.get('*', (c) => c.text('ok'))
  const get = (path, user) => app.fetch(new Request(`http://example.test${path}`, { headers: user ? { 'x-user': user } : {} }))
  assert.equal((await get('/a?cost=3', 'ann')).status, 200)
  const denied = await get('/a', 'ann')
  assert.equal(denied.status, 429)
  assert.deepEqual(await denied.json(), { wait: 12_000 })
  assert.equal(denied.headers.get('retry-after'), '12')
  assert.equal((await get('/a', 'bob')).status, 200)
  const skipped = await get('/healthz', 'ann')
  assert.equal(skipped.status, 200)
  assert.equal(skipped.headers.get('ratelimit'), null)
})

test('fetch: a multi limiter (the Promise path) answers as the native one', async () => {
  const runs = []
  for (const [tk, wrap] of [
    [native, nativeFetch.withRateLimit],
    [wasm, withRateLimit],
  ]) {
    const { limiter, clock } = limiterOf(tk, { multi: true })
    const events = []
    const limited = wrap(ok, { limiter, onLimited: (e) => events.push(e) })
    runs.push({ responses: await timeline((r) => limited(r, info), clock), events })
  }
  assert.deepEqual(runs[1], runs[0])
  assert.ok(runs[0].responses.some((r) => r.status === 429))
})

let front
before(async () => {
  front = await startRestFront()
})
after(() => front?.stop())

for (const multi of [false, true]) {
  test(`fetch on the Redis REST store: the memory store's responses${multi ? ' (multi limiter)' : ''}`, async () => {
    const runs = []
    for (const store of [undefined, new wasm.RedisRestStore({ url: front.url, token: front.token, timeoutMs: 5000 })]) {
      const { limiter, clock } = limiterOf(wasm, { multi, store })
      const limited = withRateLimit(ok, { limiter })
      runs.push(await timeline((r) => limited(r, info), clock))
    }
    assert.deepEqual(runs[1], runs[0])
  })
}

test('a store that cannot answer: 503, forward or 429 by the fail policy, never a silent admit', async () => {
  const refused = () => Promise.reject(new TypeError('connection refused'))
  const store = new wasm.RedisRestStore({ url: 'http://127.0.0.1:9', token: 't', fetch: refused })
  const { limiter } = limiterOf(wasm, { store })
  const request = () => new Request('http://example.test/limited')
  const events = []
  const answer = (failPolicy) => withRateLimit(ok, { limiter, failPolicy, onLimited: (e) => events.push(e) })(request(), info).then(seen)

  const raised = await answer(undefined)
  assert.equal(raised.status, 503)
  assert.deepEqual(raised.headers, [['content-type', native.PROBLEM_CONTENT_TYPE]])
  assert.equal(raised.body, native.unavailableBody())

  const open = await answer('fail_open')
  assert.deepEqual(open, { status: 200, headers: [['content-type', 'text/plain']], body: 'ok' })

  const closed = await answer('fail_closed')
  assert.equal(closed.status, 429)
  assert.equal(new Map(closed.headers).get('retry-after'), '1')
  assert.equal(events.length, 1)
  assert.equal(events[0].decision.fallback, true)
  assert.equal(closed.body, native.problemBody(events[0].decision))
})

test('bad options: the native wrapper\'s codes and messages', () => {
  const { limiter: nl } = limiterOf(native)
  const { limiter: wl } = limiterOf(wasm)
  const bad = [
    (l) => ({ limiter: l, failPolicy: 'sometimes' }),
    (l) => ({ limiter: l, nope: 1 }),
    (l) => ({ limiter: l, family: 'draft-99' }),
    (l) => ({ limiter: l, trustedProxies: ['not a cidr'] }),
    (l) => ({ limiter: l, ipv6Prefix: 0 }),
    (l) => ({ limiter: l, shadow: 'yes' }),
    (l) => ({ limiter: l, key: 'k' }),
    () => ({ limiter: {} }),
    () => null,
  ]
  for (const make of bad) {
    const error = (wrap, l) => {
      try {
        wrap(ok, make(l))
      } catch (e) {
        return { code: e.code, message: e.message }
      }
      return 'no error'
    }
    const want = error(nativeFetch.withRateLimit, nl)
    assert.equal(want.code, 'config_invalid')
    assert.deepEqual(error(withRateLimit, wl), want)
  }
  // A native limiter is not the WebAssembly build's, and the reverse.
  assert.throws(() => withRateLimit(ok, { limiter: nl }), { code: 'config_invalid', message: 'withRateLimit.limiter must be a Limiter or a MultiLimiter' })
})

test('the exported HTTP values are core\'s and the native package\'s', () => {
  assert.equal(wasm.PROBLEM_CONTENT_TYPE, problemContentType())
  assert.equal(wasm.PROBLEM_CONTENT_TYPE, native.PROBLEM_CONTENT_TYPE)
  assert.equal(wasm.unavailableBody(), native.unavailableBody())
  const d = { allowed: false, limit: 5, remaining: 0, resetAt: START + 60_000, retryAfterMs: 12_000 }
  assert.equal(wasm.problemBody(d), native.problemBody(d))
  const options = { trustedProxies: ['10.0.0.0/8'], ipv6Prefix: 56 }
  for (const [peer, fwd] of [['10.1.2.3', '198.51.100.4, 10.0.0.9'], ['2001:db8:1:2:3::1', undefined], ['192.0.2.1', '1.1.1.1']]) {
    assert.equal(new wasm.ClientIdentity(options).key(peer, fwd), new native.ClientIdentity(options).key(peer, fwd))
  }
})

test('docs/edge.md\'s middleware quick starts are excerpts of the examples the black-box suite serves', () => {
  const doc = readFileSync(new URL('../../docs/edge.md', import.meta.url), 'utf8')
  for (const name of ['wasm-fetch', 'wasm-hono']) {
    const source = readFileSync(new URL(`../../examples/http/${name}/server.mjs`, import.meta.url), 'utf8').split('\n')
    const at = doc.indexOf(`examples/http/${name}/server.mjs`)
    assert.ok(at >= 0, `docs/edge.md names ${name}`)
    const block = /```js\n([\s\S]*?)```/.exec(doc.slice(at))[1].trimEnd().split('\n')
    // Every line of the block, in order, in the example.
    let i = 0
    for (const line of block) {
      while (i < source.length && source[i] !== line) i++
      assert.ok(i < source.length, `${name}: docs/edge.md's line ${JSON.stringify(line)} is not in server.mjs (in order)`)
      i++
    }
  }
})
