'use strict'
// A fetch-style wrapper: `withRateLimit(handler, { limiter })` turns a
// `(request, ...rest) => Response` handler into a rate-limited one. That is the handler shape of
// Hono (`c.req.raw`), Next.js route handlers, Bun.serve, Deno.serve and Cloudflare-style
// workers; it uses only the standard `Request`, `Response` and `Headers`.
const { RateLimitCore, pending, PROBLEM_CONTENT_TYPE, problemBody, unavailableBody } = require('./decide.js')

/**
 * The client's address, from what the runtime hands a handler next to the request:
 * Deno.serve's `info.remoteAddr.hostname`, Bun.serve's `server.requestIP(request).address`,
 * or a Node adapter's `{ incoming }` (Hono's node-server `c.env`). Undefined when none is
 * there: then core refuses the request (`config_invalid`) rather than guess a key.
 */
function defaultPeer(_request, ctx) {
  if (ctx === null || typeof ctx !== 'object') return undefined
  if (typeof ctx.remoteAddr?.hostname === 'string') return ctx.remoteAddr.hostname
  if (typeof ctx.requestIP === 'function') return ctx.requestIP(_request)?.address
  return ctx.incoming?.socket?.remoteAddress
}

/**
 * Options: `limiter` (required), `peer(request, ctx)` (the socket's address; see
 * `defaultPeer`), `key(request, ctx)`, `cost(request, ctx)`, `skip(request, ctx)`, `family`,
 * `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`, `forwardedHeader`,
 * `failPolicy`, `shadow`, `onLimited(event)`, and `denyResponse(request, decision)` returning
 * the 429 `Response` (the fields are added to it). Bad options throw `config_invalid` here.
 */
function withRateLimit(handler, options) {
  if (typeof handler !== 'function') {
    const e = new Error('withRateLimit handler must be a function (request, ...rest) => Response')
    e.code = 'config_invalid'
    throw e
  }
  const core = new RateLimitCore(options, 'withRateLimit', ['peer'])
  const peerOf = options.peer ?? defaultPeer
  if (typeof peerOf !== 'function') {
    const e = new Error('withRateLimit.peer must be a function')
    e.code = 'config_invalid'
    throw e
  }
  const header = core.forwardedHeader
  return async function rateLimited(request, ...rest) {
    const ctx = rest[0]
    const path = new URL(request.url).pathname
    const peer = peerOf(request, ctx)
    if (peer === undefined && core.keyFn === undefined) {
      const e = new Error('withRateLimit found no client address for this request: pass a `peer` or a `key` function')
      e.code = 'config_invalid'
      throw e
    }
    let verdict = core.decide(request, ctx, peer, request.headers.get(header), request.method, path)
    if (pending(verdict)) verdict = await verdict
    if (verdict.kind === 'unavailable') return problem(verdict.status, unavailableBody(), [])
    if (verdict.kind === 'deny') {
      if (core.denyResponse !== undefined) return withLines(await core.denyResponse(request, verdict.decision), verdict.lines)
      return problem(verdict.status, problemBody(verdict.decision), verdict.lines)
    }
    return withLines(await handler(request, ...rest), verdict.lines)
  }
}

function problem(status, body, lines) {
  const headers = new Headers({ 'Content-Type': PROBLEM_CONTENT_TYPE })
  for (let i = 0; i < lines.length; i += 2) headers.set(lines[i], lines[i + 1])
  return new Response(body, { status, headers })
}

/** `response` with the lines set; a copy when its headers are immutable (a `fetch()` reply). */
function withLines(response, lines) {
  if (lines.length === 0) return response
  try {
    for (let i = 0; i < lines.length; i += 2) response.headers.set(lines[i], lines[i + 1])
    return response
  } catch {
    const copy = new Response(response.body, response)
    for (let i = 0; i < lines.length; i += 2) copy.headers.set(lines[i], lines[i + 1])
    return copy
  }
}

module.exports = { withRateLimit, defaultPeer }
