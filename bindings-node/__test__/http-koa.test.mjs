// The Koa middleware's own idiom, on a real Koa app on a loopback port: user functions get the
// Koa context (state set by earlier middleware included), a limit mounted on one path only, and
// bad options naming the setting when the middleware is made. The scenarios every middleware
// shares (families, keys, proxies, fail policy with Redis down...) are in http-middleware.test.mjs.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { test } from 'node:test'

import Koa from 'koa'
import { Limiter, ManualClock, Strategy } from '@throttlekit/core'
import { rateLimit } from '@throttlekit/core/koa'

const limiterOf = (limit) => new Limiter({ strategy: Strategy.gcra({ limit, periodMs: 60_000, burst: limit }), clock: new ManualClock(1_700_000_000_000) })

async function withKoa(app, body) {
  const server = createServer(app.callback())
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  try {
    return await body(`http://127.0.0.1:${server.address().port}`)
  } finally {
    await new Promise((r) => server.close(r))
  }
}

test('key, cost and skip get the Koa context, with the state earlier middleware set', async () => {
  const app = new Koa()
  app.use((ctx, next) => {
    ctx.state.user = ctx.get('x-user') || 'anonymous'
    return next()
  })
  app.use(
    rateLimit({
      limiter: limiterOf(2),
      key: (ctx) => `user:${ctx.state.user}`,
      cost: (ctx) => (ctx.path === '/heavy' ? 2 : 1),
      skip: (ctx) => ctx.path === '/healthz',
    }),
  )
  app.use((ctx) => {
    ctx.body = ctx.path
  })
  await withKoa(app, async (base) => {
    const heavy = await fetch(`${base}/heavy`, { headers: { 'x-user': 'a' } })
    assert.equal(heavy.status, 200)
    assert.equal(heavy.headers.get('ratelimit'), '"default";r=0;t=30')
    assert.equal((await fetch(`${base}/x`, { headers: { 'x-user': 'a' } })).status, 429)
    assert.equal((await fetch(`${base}/x`, { headers: { 'x-user': 'b' } })).status, 200)
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/healthz`, { headers: { 'x-user': 'a' } })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('ratelimit'), null)
    }
  })
})

test('a limit mounted on one path: the others are neither counted nor given fields', async () => {
  const app = new Koa()
  const limited = rateLimit({ limiter: limiterOf(1) })
  app.use((ctx, next) => (ctx.path.startsWith('/api/') ? limited(ctx, next) : next()))
  app.use((ctx) => {
    ctx.body = 'ok'
  })
  await withKoa(app, async (base) => {
    assert.equal((await fetch(`${base}/api/a`)).status, 200)
    const denied = await fetch(`${base}/api/b`)
    assert.equal(denied.status, 429)
    assert.equal(denied.headers.get('retry-after'), '60')
    assert.equal((await denied.json()).status, 429)
    const free = await fetch(`${base}/static`)
    assert.equal(free.status, 200)
    assert.equal(free.headers.get('ratelimit'), null)
  })
})

test('bad options throw config_invalid naming the setting, when the middleware is made', () => {
  const limiter = limiterOf(1)
  const cases = [
    [undefined, /^rateLimit options must be an object/],
    [{ limiter, famly: 'draft-10' }, /^rateLimit\.famly is not an option/],
    [{ limiter, failPolicy: 'ignore' }, /^rateLimit\.failPolicy must be one of/],
    [{ limiter, denyResponse: 'text' }, /^rateLimit\.denyResponse must be a function/],
    [{ limiter: {} }, /^rateLimit\.limiter must be a Limiter/],
  ]
  for (const [options, message] of cases) assert.throws(() => rateLimit(options), { code: 'config_invalid', message })
})
