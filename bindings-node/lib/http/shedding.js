'use strict'
// @throttlekit/core/shedding: load shedding with an AdaptiveLimiter for Express (and Connect or
// plain `http`), Fastify and Koa. Each request holds a permit while it runs; a refused one is
// answered 503 with `Retry-After` (whole seconds, the core's) and never reaches the handler.
//
// A permit is released when the response ends, by the Rust tower layer's rule: 503 or 504 from
// the handler is `dropped` (a congestion signal), any other response `success` (its round trip a
// latency sample, measured by the core); a connection closed before the response finished (the
// client went away) is `ignore`. Options: `partition(req)` names a request's partition, and
// `timeoutMs` makes a request wait that long for a permit (in the limiter's order) before it is
// shed.

/** How a finished response releases its permit. */
function outcome(status) {
  return status === 503 || status === 504 ? 'dropped' : 'success'
}

/** Releases `permit` when `res` (a Node ServerResponse) finishes or its connection closes. */
function holdUntilDone(permit, res) {
  const done = () => {
    res.off('finish', done)
    res.off('close', done)
    permit.release(res.writableFinished ? outcome(res.statusCode) : 'ignore')
  }
  res.on('finish', done)
  res.on('close', done)
}

/** A permit or a rejection for `req`, synchronously when there is no wait. */
function admit(limiter, options, req) {
  const partition = options.partition ? options.partition(req) : undefined
  if (options.timeoutMs === undefined) return limiter.tryAcquire(partition)
  return limiter.acquire({ timeoutMs: options.timeoutMs, partition })
}

function shedRaw(res, rejection) {
  res.statusCode = 503
  res.setHeader('Retry-After', String(rejection.retryAfterSecs))
  res.setHeader('Content-Length', '0')
  res.end()
}

/** Express / Connect middleware. */
function express(limiter, options = {}) {
  return function throttlekitShedding(req, res, next) {
    const go = (answer) => {
      if (!answer.granted) return shedRaw(res, answer)
      holdUntilDone(answer, res)
      next()
    }
    let answer
    try {
      answer = admit(limiter, options, req)
    } catch (err) {
      return next(err)
    }
    if (typeof answer.then === 'function') answer.then(go, next)
    else go(answer)
  }
}

/** A Fastify plugin (`fastify.register(fastify(limiter), opts)`): an `onRequest` hook. */
function fastify(limiter, options = {}) {
  function sheddingPlugin(instance, _opts, done) {
    instance.addHook('onRequest', async function throttlekitShedding(request, reply) {
      const answer = await admit(limiter, options, request)
      if (!answer.granted) {
        reply.code(503).header('Retry-After', String(answer.retryAfterSecs)).send('')
        return reply
      }
      holdUntilDone(answer, reply.raw)
    })
    done()
  }
  sheddingPlugin[Symbol.for('skip-override')] = true
  return sheddingPlugin
}

/** Koa middleware. */
function koa(limiter, options = {}) {
  return async function throttlekitShedding(ctx, next) {
    const answer = await admit(limiter, options, ctx.req)
    if (!answer.granted) {
      ctx.status = 503
      ctx.set('Retry-After', String(answer.retryAfterSecs))
      ctx.body = ''
      return
    }
    holdUntilDone(answer, ctx.res)
    await next()
  }
}

module.exports = { express, fastify, koa, outcome }
