// The NestJS guard's own features, on real Nest apps (Express platform) on loopback ports:
// `@RateLimit` per route and per controller over the global options, `@SkipRateLimit`, the guard
// bound per controller without global options, `forRootAsync`, and bad configuration failing at
// start-up (decoration, `forRoot`, app creation), never at a request. The scenarios every
// middleware shares (families, keys, proxies, fail policy with Redis down...) are in
// http-middleware.test.mjs.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { Controller, Get, UseGuards } from '@nestjs/common'
import { Limiter, ManualClock, Strategy } from '@throttlekit/core'
import { RateLimit, RateLimitExceededException, SkipRateLimit, ThrottlekitGuard, ThrottlekitModule } from '@throttlekit/core/nest'
import { decorate, serveNest } from './helpers/http.mjs'

const T0 = 1_700_000_000_000
const limiterOf = (limit) => new Limiter({ strategy: Strategy.gcra({ limit, periodMs: 60_000, burst: limit }), clock: new ManualClock(T0) })
const get = (url, headers = {}) => fetch(url, { headers })

/** A controller class with one GET route per name (each answers its name), as decorators make it. */
function controller(routes, classDecorators = [], prefix = '') {
  class C {}
  for (const [name, decorators = []] of Object.entries(routes)) {
    C.prototype[name] = () => name
    decorate(C, [Get(name), ...decorators], name)
  }
  decorate(C, [Controller(prefix), ...classDecorators])
  return C
}

async function withNest(app, body) {
  const server = await serveNest(app)
  try {
    return await body(server)
  } finally {
    await server.close()
  }
}

test("a route's @RateLimit replaces the global limit, keeps the global options, and counts apart", async () => {
  const key = (req) => `user:${req.headers['x-user']}`
  const routes = controller({ login: [RateLimit({ limiter: limiterOf(1), policyName: 'login' })], other: [] })
  await withNest({ controllers: [routes], imports: [ThrottlekitModule.forRoot({ limiter: limiterOf(5), key })] }, async (s) => {
    const first = await get(s.url('/login'), { 'x-user': 'a' })
    assert.equal(first.status, 200)
    assert.equal(first.headers.get('ratelimit'), '"login";r=0;t=60')
    assert.equal(first.headers.get('ratelimit-policy'), '"login";q=1;w=60')
    const denied = await get(s.url('/login'), { 'x-user': 'a' })
    assert.equal(denied.status, 429)
    assert.equal(denied.headers.get('retry-after'), '60')
    assert.match(denied.headers.get('content-type'), /^application\/problem\+json/)
    assert.equal((await denied.json()).status, 429)
    // The global key function still applies: another user has a bucket of their own.
    assert.equal((await get(s.url('/login'), { 'x-user': 'b' })).status, 200)
    // Login requests did not count against the global limit, nor did the global policy apply there.
    const other = await get(s.url('/other'), { 'x-user': 'a' })
    assert.equal(other.headers.get('ratelimit'), '"default";r=4;t=12')
  })
})

test("a controller's @RateLimit covers its routes; a method's own wins; @SkipRateLimit exempts", async () => {
  const routes = controller(
    {
      a: [],
      b: [RateLimit({ limiter: limiterOf(3), policyName: 'b' })],
      health: [SkipRateLimit()],
    },
    [RateLimit({ limiter: limiterOf(2), policyName: 'ctl' })],
  )
  await withNest({ controllers: [routes], imports: [ThrottlekitModule.forRoot({ limiter: limiterOf(5) })] }, async (s) => {
    assert.equal((await get(s.url('/a'))).headers.get('ratelimit'), '"ctl";r=1;t=30')
    assert.equal((await get(s.url('/b'))).headers.get('ratelimit'), '"b";r=2;t=20')
    for (let i = 0; i < 4; i++) {
      const res = await get(s.url('/health'))
      assert.equal(res.status, 200)
      assert.equal(await res.text(), 'health')
      assert.equal(res.headers.get('ratelimit'), null)
    }
  })
})

test('@SkipRateLimit on a controller exempts its routes; @SkipRateLimit(false) on a method undoes it', async () => {
  const routes = controller({ free: [], counted: [SkipRateLimit(false)] }, [SkipRateLimit()])
  await withNest({ controllers: [routes], imports: [ThrottlekitModule.forRoot({ limiter: limiterOf(1) })] }, async (s) => {
    for (let i = 0; i < 3; i++) assert.equal((await get(s.url('/free'))).status, 200)
    assert.equal((await get(s.url('/counted'))).status, 200)
    assert.equal((await get(s.url('/counted'))).status, 429)
  })
})

test('@UseGuards on one controller, no module: only its @RateLimit routes are limited', async () => {
  const guarded = controller({ limited: [RateLimit({ limiter: limiterOf(1) })], open: [] }, [UseGuards(ThrottlekitGuard)], 'g')
  const unguarded = controller({ limited: [RateLimit({ limiter: limiterOf(1) })] }, [], 'u')
  await withNest({ controllers: [guarded, unguarded], globalGuard: false }, async (s) => {
    assert.equal((await get(s.url('/g/limited'))).status, 200)
    assert.equal((await get(s.url('/g/limited'))).status, 429)
    for (let i = 0; i < 3; i++) {
      const open = await get(s.url('/g/open'))
      assert.equal(open.status, 200)
      assert.equal(open.headers.get('ratelimit'), null)
    }
    // No guard on this controller: its @RateLimit is metadata nobody reads.
    for (let i = 0; i < 3; i++) assert.equal((await get(s.url('/u/limited'))).status, 200)
  })
})

test('forRootAsync takes options made at start-up; its bad options fail the app creation', async () => {
  const routes = controller({ limited: [] })
  const imports = [ThrottlekitModule.forRootAsync({ useFactory: async () => ({ limiter: limiterOf(2), policyName: 'async' }) })]
  await withNest({ controllers: [routes], imports }, async (s) => {
    assert.equal((await get(s.url('/limited'))).headers.get('ratelimit'), '"async";r=1;t=30')
  })
  const bad = [ThrottlekitModule.forRootAsync({ useFactory: () => ({ limiter: limiterOf(2), famly: 'draft-10' }) })]
  await assert.rejects(serveNest({ controllers: [controller({ limited: [] })], imports: bad }), {
    code: 'config_invalid',
    message: /^ThrottlekitGuard\.famly is not an option/,
  })
})

test('bad configuration throws config_invalid naming the setting, when the app is defined', () => {
  const limiter = limiterOf(1)
  const cases = [
    [() => RateLimit({ limiter, famly: 'draft-10' }), /^RateLimit\.famly is not an option/],
    [() => RateLimit({ limiter, failPolicy: 'ignore' }), /^RateLimit\.failPolicy must be one of/],
    [() => RateLimit({ policyName: 'x' }), /^RateLimit\.limiter must be a Limiter/],
    [() => SkipRateLimit('yes'), /^SkipRateLimit takes a boolean/],
    [() => ThrottlekitModule.forRoot({ limiter, key: 'ip' }), /^ThrottlekitModule\.forRoot\.key must be a function/],
    [() => ThrottlekitModule.forRoot({ limiter, trustedProxies: ['10.0.0.0/33'] }), /trustedProxies/],
    [() => ThrottlekitModule.forRootAsync({}), /^ThrottlekitModule\.forRootAsync\.useFactory must be a function/],
    [() => new ThrottlekitGuard({ limiter, shadow: 'yes' }), /^ThrottlekitGuard\.shadow must be a boolean/],
  ]
  for (const [make, message] of cases) assert.throws(make, { code: 'config_invalid', message })
})

test('the guard passes non-HTTP contexts, and its exception carries the decision', async () => {
  const guard = new ThrottlekitGuard({ limiter: limiterOf(1) })
  assert.equal(guard.canActivate({ getType: () => 'rpc' }), true)
  const limiter = limiterOf(1)
  limiter.checkSync('k')
  const d = limiter.checkSync('k')
  const e = new RateLimitExceededException(d)
  assert.equal(e.getStatus(), 429)
  assert.deepEqual(Object.keys(e.getResponse()).sort(), ['detail', 'status', 'title', 'type'])
  assert.equal(e.getResponse().status, 429)
  assert.equal(e.decision, d)
})
