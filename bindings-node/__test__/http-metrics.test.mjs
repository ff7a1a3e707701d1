// The HTTP middleware counts through the limiter's metrics: on each framework (Express, Fastify,
// the fetch wrapper), over a Redis limiter on the event loop's own socket, each 200 is one
// allowed decision, a 429 one denied, and a 503 (Redis gone, fail policy raise) one
// store_unavailable error; nothing else moves.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '@throttlekit/core'
import { FRAMEWORKS, serve } from './helpers/http.mjs'
import { spawnRedis } from './helpers/redis.mjs'

describe('HTTP middleware metrics', () => {
  let redis
  before(async () => {
    redis = await spawnRedis()
  })
  after(async () => {
    await redis?.stop()
  })

  test('a 200, a 429 and a 503 are each counted once, on every framework', async () => {
    const servers = []
    const stores = []
    try {
      for (const framework of FRAMEWORKS) {
        const store = await RedisStore.connect({ url: redis.url, timeoutMs: 500 })
        stores.push(store)
        const strategy = Strategy.gcra({ limit: 2, periodMs: 3_600_000, burst: 2 })
        const limiter = new Limiter({ strategy, store, prefix: `http-metrics-${framework}`, failPolicy: 'raise', metrics: true })
        servers.push({ framework, limiter, server: await serve(framework, { limiter, failPolicy: 'raise' }) })
      }
      for (const { framework, server } of servers) {
        const got = []
        for (let i = 0; i < 3; i++) got.push((await fetch(server.url())).status)
        assert.deepEqual(got, [200, 200, 429], framework)
      }
      await redis.stop()
      for (const { framework, limiter, server } of servers) {
        assert.equal((await fetch(server.url())).status, 503, framework)
        const m = limiter.metrics()
        assert.deepEqual([m.allowed, m.denied, m.fallbackAllowed + m.fallbackDenied, m.errors.store_unavailable], [2, 1, 0, 1], framework)
        assert.equal(Object.values(m.errors).reduce((a, b) => a + b, 0), 1, framework)
      }
    } finally {
      for (const { server } of servers) await server.close()
      for (const s of stores) await s.close()
    }
  })
})
