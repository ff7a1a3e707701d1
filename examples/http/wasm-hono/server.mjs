// wasm-hono: a Hono app with @throttlekit/core/hono's rateLimit middleware, on the WebAssembly
// build, served by `deno serve` (Hono's `app.fetch` gets Deno's `info`, where the middleware
// finds the client's address). The same app is a Cloudflare Worker's default export, with a
// `peer` option (a Worker has no socket address).
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   deno serve --allow-read --port PORT server.mjs      (examples/http/run.sh wasm-hono PORT)
import { Limiter, Strategy } from '@throttlekit/core'
import { rateLimit } from '@throttlekit/core/hono'
import { Hono } from 'hono'

const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

const app = new Hono()
app.get('/healthz', (c) => c.text('ok'))
app.use('/limited', rateLimit({ limiter, family: 'draft-10', policyName: 'default' }))
app.get('/limited', (c) => c.text('ok'))

export default app
