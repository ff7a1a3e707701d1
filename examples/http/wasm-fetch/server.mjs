// wasm-fetch: @throttlekit/core/fetch's withRateLimit around a standard (Request) => Response
// handler, on the WebAssembly build, served by `deno serve` (which hands the handler
// `info.remoteAddr`, where the wrapper finds the client's address). The same module is a
// Cloudflare Worker's default export, with a `peer` option (a Worker has no socket address).
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   deno serve --allow-read --port PORT server.mjs      (examples/http/run.sh wasm-fetch PORT)
import { Limiter, Strategy } from '@throttlekit/core'
import { withRateLimit } from '@throttlekit/core/fetch'

const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

const ok = () => new Response('ok', { headers: { 'content-type': 'text/plain' } })
const limited = withRateLimit(ok, { limiter, family: 'draft-10', policyName: 'default' })

export default {
  fetch(request, info) {
    const { pathname } = new URL(request.url)
    if (request.method === 'GET' && pathname === '/healthz') return ok()
    if (request.method === 'GET' && pathname === '/limited') return limited(request, info)
    return new Response('not found', { status: 404 })
  },
}
