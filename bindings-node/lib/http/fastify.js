'use strict'
// The Fastify plugin: `await fastify.register(rateLimitPlugin, { limiter })`. It adds one
// `onRequest` hook. Like plugins wrapped in `fastify-plugin`, it is not encapsulated, so it
// limits every route of the instance it is registered on; register it inside your own plugin
// to limit only that plugin's routes, or use `skip`.
const { RateLimitCore, forEachValue, pending, PROBLEM_CONTENT_TYPE, problemBody, unavailableBody } = require('./decide.js')

/**
 * Options: `limiter` (required), `key(request)`, `cost(request)`, `skip(request)`, `family`,
 * `policyName`, `partitionKeySecret`, `trustedProxies`, `ipv6Prefix`, `forwardedHeader`,
 * `failPolicy`, `shadow`, `onLimited(event)`, and `denyResponse(request, reply, decision)` to
 * answer a denial yourself (it must send the reply; the fields are already on it).
 * Bad options fail the registration with `config_invalid`.
 */
function rateLimitPlugin(fastify, options, done) {
  let core
  try {
    core = new RateLimitCore(options, 'rateLimitPlugin')
  } catch (e) {
    done(e)
    return
  }
  const header = core.forwardedHeader
  fastify.addHook('onRequest', function throttlekitRateLimit(request, reply, next) {
    let verdict
    try {
      verdict = core.decideValues(request, undefined, request.socket.remoteAddress, request.headers[header], request.method, request.url)
    } catch (e) {
      next(e)
      return
    }
    // An allowed request of an in-process limiter: its values, joined (no verdict object),
    // under names that are already lowercase (what `reply.header` makes of them anyway).
    if (typeof verdict === 'string') {
      forEachValue(verdict, core.lastNames.lower, reply, setHeader)
      next()
    } else if (pending(verdict)) verdict.then((v) => answer(core, v, request, reply, next), next)
    else answer(core, verdict, request, reply, next)
  })
  done()
}

function setHeader(reply, name, value) {
  reply.header(name, value)
}

function answer(core, verdict, request, reply, next) {
  const { lines } = verdict
  for (let i = 0; i < lines.length; i += 2) reply.header(lines[i], lines[i + 1])
  if (verdict.kind === 'forward') {
    next()
    return
  }
  // Answering from a callback hook: send, and do not call `next`.
  if (verdict.kind === 'unavailable') {
    reply.code(verdict.status).type(PROBLEM_CONTENT_TYPE).send(unavailableBody())
    return
  }
  if (core.denyResponse !== undefined) {
    try {
      core.denyResponse(request, reply, verdict.decision)
    } catch (e) {
      next(e)
    }
    return
  }
  reply.code(verdict.status).type(PROBLEM_CONTENT_TYPE).send(problemBody(verdict.decision))
}

// What `fastify-plugin` sets: no encapsulation, and a name in Fastify's plugin tree.
rateLimitPlugin[Symbol.for('skip-override')] = true
rateLimitPlugin[Symbol.for('fastify.display-name')] = '@throttlekit/core/fastify'
rateLimitPlugin[Symbol.for('plugin-meta')] = { name: '@throttlekit/core/fastify', fastify: '>=4' }

module.exports = { rateLimitPlugin, default: rateLimitPlugin }
