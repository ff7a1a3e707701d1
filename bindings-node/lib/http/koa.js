'use strict'
// Koa middleware: `app.use(rateLimit({ limiter }))`. Koa's own idiom: an async `(ctx, next)`
// that sets the fields with `ctx.set`, awaits `next()` for an admitted request, and answers a
// denial with `ctx.status` and `ctx.body`. The request's user functions (`key`, `cost`, `skip`)
// get the Koa context.
const { RateLimitCore, pending, PROBLEM_CONTENT_TYPE, problemBody, unavailableBody } = require('./decide.js')

/**
 * The middleware. Options: `limiter` (required), `key(ctx)`, `cost(ctx)`, `skip(ctx)`,
 * `family`, `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`,
 * `forwardedHeader`, `failPolicy`, `shadow`, `onLimited(event)`, and
 * `denyResponse(ctx, decision)` to answer a denial yourself (the fields are already set on
 * `ctx`; it may be async). Bad options throw `config_invalid` here, not per request. An error
 * of a user function rejects, so it reaches Koa's error handling (`app.on('error')`, a 500).
 */
function rateLimit(options) {
  const core = new RateLimitCore(options, 'rateLimit')
  const header = core.forwardedHeader
  return async function throttlekitRateLimit(ctx, next) {
    // The socket's peer and the raw header, as every adapter reads them: Koa's `ctx.ip` already
    // applies its own `app.proxy` rules, and core applies `trustedProxies`.
    let verdict = core.decide(ctx, undefined, ctx.req.socket.remoteAddress, ctx.req.headers[header], ctx.method, ctx.url)
    if (pending(verdict)) verdict = await verdict
    const { lines } = verdict
    for (let i = 0; i < lines.length; i += 2) ctx.set(lines[i], lines[i + 1])
    if (verdict.kind === 'forward') return next()
    if (verdict.kind === 'unavailable') return send(ctx, verdict.status, unavailableBody())
    if (core.denyResponse !== undefined) return core.denyResponse(ctx, verdict.decision)
    return send(ctx, verdict.status, problemBody(verdict.decision))
  }
}

/** The status, then the type, then the body: Koa keeps a Content-Type set before the body. */
function send(ctx, status, body) {
  ctx.status = status
  ctx.set('Content-Type', PROBLEM_CONTENT_TYPE)
  ctx.body = body
}

module.exports = { rateLimit }
