// node-fastify: the @throttlekit/core/fastify plugin on Fastify 5.
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   node server.mjs PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
import Fastify from 'fastify'
import { Limiter, Strategy } from '@throttlekit/core'
import { rateLimitPlugin } from '@throttlekit/core/fastify'

const port = Number(process.argv[2] ?? 8080)
const host = process.env.HOST ?? '127.0.0.1'
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

const app = Fastify()
await app.register(rateLimitPlugin, {
  limiter,
  family: 'draft-10',
  policyName: 'default',
  skip: (request) => request.routeOptions.url === '/healthz',
})
app.get('/healthz', async () => 'ok')
app.get('/limited', async () => 'ok')
await app.listen({ port, host })
console.log(`node-fastify listening on http://${host}:${app.server.address().port}`)
