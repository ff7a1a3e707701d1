// @throttlekit/core/hono: Hono middleware on the WebAssembly build,
// `app.use('/api/*', rateLimit({ limiter }))`, with the Express middleware's name and the fetch
// wrapper's options and answers (./fetch.mjs), in every runtime Hono runs in: Cloudflare
// Workers, Deno, Bun, Vercel's edge, Node (the WebAssembly build; Node's native addon has
// `@throttlekit/core/fetch`, which wraps a Hono app's `fetch` the same way).
import { defaultPeer } from './fetch.mjs'
import { RateLimitCore, invalid, pending, problemResponse, withLines } from './decide.mjs'

/**
 * The middleware. Options: `limiter` (required), `peer(c)` (the client's address; default:
 * `defaultPeer(c.req.raw, c.env)`, which reads what Deno.serve, Bun.serve and Hono's Node
 * server hand the app; a Worker must pass `peer` or `key`), `key(c)`, `cost(c)`, `skip(c)`,
 * `family`, `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`,
 * `forwardedHeader`, `failPolicy`, `shadow`, `onLimited(event)`, and `denyResponse(c, decision)`
 * returning the 429 `Response` (the fields are added to it). `c` is Hono's Context. Bad options
 * throw `config_invalid` here, not per request.
 */
export function rateLimit(options) {
  const core = new RateLimitCore(options, 'rateLimit', ['peer'])
  const peerOf = options.peer ?? ((c) => defaultPeer(c.req.raw, c.env))
  if (typeof peerOf !== 'function') throw invalid('rateLimit.peer', 'must be a function')
  const header = core.forwardedHeader
  return async function throttlekitRateLimit(c, next) {
    const peer = peerOf(c)
    if (peer === undefined && core.keyFn === undefined) {
      throw invalid('rateLimit', 'found no client address for this request: pass a `peer` or a `key` function')
    }
    let verdict = core.decide(c, undefined, peer, c.req.header(header), c.req.method, c.req.path)
    if (pending(verdict)) verdict = await verdict
    if (verdict.kind === 'deny' && core.denyResponse !== undefined) {
      return withLines(await core.denyResponse(c, verdict.decision), verdict.lines)
    }
    if (verdict.kind !== 'forward') return problemResponse(verdict)
    await next()
    const res = withLines(c.res, verdict.lines)
    if (res !== c.res) c.res = res
  }
}

export default rateLimit
