// node-fetch: @throttlekit/core/fetch's withRateLimit around a standard (Request) => Response
// handler, served by Hono's Node server (which hands the handler `{ incoming }`, where the
// wrapper finds the client's address). The same handler runs on Deno.serve and Bun.serve.
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   node server.mjs PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
import { serve } from '@hono/node-server'
import { Limiter, Strategy } from '@throttlekit/core'
import { withRateLimit } from '@throttlekit/core/fetch'

const port = Number(process.argv[2] ?? 8080)
const host = process.env.HOST ?? '127.0.0.1'
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

const ok = () => new Response('ok', { headers: { 'content-type': 'text/plain' } })
const limited = withRateLimit(ok, { limiter, family: 'draft-10', policyName: 'default' })

function handler(request, env) {
  const { pathname } = new URL(request.url)
  if (request.method === 'GET' && pathname === '/healthz') return ok()
  if (request.method === 'GET' && pathname === '/limited') return limited(request, env)
  return new Response('not found', { status: 404 })
}

serve({ fetch: handler, port, hostname: host }, (info) => console.log(`node-fetch listening on http://${host}:${info.port}`))
