// @throttlekit/core/fetch for the WebAssembly build (the `workerd`, `edge-light`, `deno`, `bun`
// and `browser` export conditions): `withRateLimit(handler, { limiter })` turns a
// `(request, ...rest) => Response` handler into a rate-limited one, with the Node wrapper's
// names, options and answers (../../lib/http/fetch.js). That is the handler shape of Cloudflare
// Workers (`fetch(request, env, ctx)`), Deno.serve, Bun.serve, Vercel's edge functions and a
// service worker; it uses only the standard `Request`, `Response` and `Headers`.
import { RateLimitCore, invalid, pending, problemResponse, withLines } from './decide.mjs'

/**
 * The client's address, from what the runtime hands a handler next to the request:
 * Deno.serve's `info.remoteAddr.hostname`, Bun.serve's `server.requestIP(request).address`, or
 * a Node adapter's `{ incoming }`. A Worker gets no socket address: pass `peer` (on Cloudflare,
 * `(request) => request.headers.get('cf-connecting-ip')`, which Cloudflare's edge sets) or
 * `key`. Undefined when none is there: then the wrapper refuses the request (`config_invalid`)
 * rather than guess a key.
 */
export function defaultPeer(request, ctx) {
  if (ctx === null || typeof ctx !== 'object') return undefined
  if (typeof ctx.remoteAddr?.hostname === 'string') return ctx.remoteAddr.hostname
  if (typeof ctx.requestIP === 'function') return ctx.requestIP(request)?.address
  return ctx.incoming?.socket?.remoteAddress
}

/**
 * Options: `limiter` (required), `peer(request, ctx)` (the client's address; see
 * `defaultPeer`), `key(request, ctx)`, `cost(request, ctx)`, `skip(request, ctx)`, `family`,
 * `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`, `forwardedHeader`,
 * `failPolicy`, `shadow`, `onLimited(event)`, and `denyResponse(request, decision)` returning
 * the 429 `Response` (the fields are added to it). Bad options throw `config_invalid` here.
 */
export function withRateLimit(handler, options) {
  if (typeof handler !== 'function') throw invalid('withRateLimit handler', 'must be a function (request, ...rest) => Response')
  const core = new RateLimitCore(options, 'withRateLimit', ['peer'])
  const peerOf = options.peer ?? defaultPeer
  if (typeof peerOf !== 'function') throw invalid('withRateLimit.peer', 'must be a function')
  const header = core.forwardedHeader
  return async function rateLimited(request, ...rest) {
    const ctx = rest[0]
    const path = new URL(request.url).pathname
    const peer = peerOf(request, ctx)
    if (peer === undefined && core.keyFn === undefined) {
      throw invalid('withRateLimit', 'found no client address for this request: pass a `peer` or a `key` function')
    }
    let verdict = core.decide(request, ctx, peer, request.headers.get(header), request.method, path)
    if (pending(verdict)) verdict = await verdict
    if (verdict.kind === 'deny' && core.denyResponse !== undefined) {
      return withLines(await core.denyResponse(request, verdict.decision), verdict.lines)
    }
    if (verdict.kind !== 'forward') return problemResponse(verdict)
    return withLines(await handler(request, ...rest), verdict.lines)
  }
}

export default withRateLimit
