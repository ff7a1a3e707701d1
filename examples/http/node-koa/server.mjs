// node-koa: @throttlekit/core/koa on Koa 3.
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   node server.mjs PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
import Koa from 'koa'
import { Limiter, Strategy } from '@throttlekit/core'
import { rateLimit } from '@throttlekit/core/koa'

const port = Number(process.argv[2] ?? 8080)
const host = process.env.HOST ?? '127.0.0.1'
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

const app = new Koa()
app.use(rateLimit({ limiter, family: 'draft-10', policyName: 'default', skip: (ctx) => ctx.path === '/healthz' }))
app.use((ctx) => {
  if (ctx.method !== 'GET' || (ctx.path !== '/healthz' && ctx.path !== '/limited')) return // Koa's 404
  ctx.type = 'text/plain'
  ctx.body = 'ok'
})
const server = app.listen(port, host, () => console.log(`node-koa listening on http://${host}:${server.address().port}`))
