'use strict'
// Express / Connect middleware: `app.use(rateLimit({ limiter }))`. It uses only Node's own
// `req`/`res` API (`req.socket`, `req.headers`, `res.setHeader`, `res.end`), so it works with
// Express 4 and 5, Connect, and a bare `http.createServer` handler alike.
const { RateLimitCore, pending, PROBLEM_CONTENT_TYPE, problemBody, unavailableBody } = require('./decide.js')

/**
 * The middleware. Options: `limiter` (required), `key(req)`, `cost(req)`, `skip(req)`,
 * `family`, `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`,
 * `forwardedHeader`, `failPolicy`, `shadow`, `onLimited(event)`, and
 * `denyResponse(req, res, decision)` to answer a denial yourself (the rate-limit fields are
 * already set on `res`). Bad options throw `config_invalid` here, not per request.
 */
function rateLimit(options) {
  const core = new RateLimitCore(options, 'rateLimit')
  const header = core.forwardedHeader
  return function throttlekitRateLimit(req, res, next) {
    let verdict
    try {
      verdict = core.decide(req, undefined, req.socket.remoteAddress, req.headers[header], req.method, req.url)
    } catch (e) {
      next(e)
      return
    }
    if (pending(verdict)) verdict.then((v) => answer(core, v, req, res, next), next)
    else answer(core, verdict, req, res, next)
  }
}

function answer(core, verdict, req, res, next) {
  const { lines } = verdict
  for (let i = 0; i < lines.length; i += 2) res.setHeader(lines[i], lines[i + 1])
  if (verdict.kind === 'forward') {
    next()
    return
  }
  if (verdict.kind === 'unavailable') {
    send(res, verdict.status, unavailableBody())
    return
  }
  if (core.denyResponse !== undefined) {
    try {
      core.denyResponse(req, res, verdict.decision)
    } catch (e) {
      next(e)
    }
    return
  }
  send(res, verdict.status, problemBody(verdict.decision))
}

function send(res, status, body) {
  res.statusCode = status
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE)
  res.setHeader('Content-Length', Buffer.byteLength(body))
  res.end(body)
}

module.exports = { rateLimit }
