'use strict'
// NestJS: a guard (`ThrottlekitGuard`), a module that configures it (`ThrottlekitModule.forRoot`,
// `forRootAsync`), and the decorators `@RateLimit({...})` (a route's or controller's own limit)
// and `@SkipRateLimit()`, shaped like @nestjs/throttler's. Plain JavaScript: Nest's decorators
// are applied as functions here, so no TypeScript build step is needed to use or ship it.
//
// The guard decides through the same core path as the other middleware (decide.js); what is
// Nest's own is where the options come from (DI, route metadata) and how a denial leaves: as an
// exception (`RateLimitExceededException`, a 429 `HttpException` carrying core's problem body)
// that Nest's exception filters answer, so an app's own filter can reshape it.
const { HttpException, Inject, Injectable, Module, Optional, ServiceUnavailableException, SetMetadata } = require('@nestjs/common')
const { Reflector } = require('@nestjs/core')
const { RateLimitCore, pending, PROBLEM_CONTENT_TYPE, problemBody, unavailableBody } = require('./decide.js')

/** The injection token of the options `ThrottlekitModule` provides to the guard. */
const THROTTLEKIT_OPTIONS = 'THROTTLEKIT_OPTIONS'
/** The metadata keys of the decorators (read with Nest's `Reflector`). */
const RATE_LIMIT = 'throttlekit:rate-limit'
const SKIP_RATE_LIMIT = 'throttlekit:skip-rate-limit'

/**
 * A route's (on a method) or a controller's (on a class) own limit: `options` are the guard's
 * options (`limiter` required: the limit it stands for), each replacing the global one of the
 * same name; the options it leaves out (key, family, fail policy, ...) are the global ones.
 * A request of such a route counts against this limiter only. Bad options throw
 * `config_invalid` here, when the class is defined.
 */
function RateLimit(options) {
  // Validated whole now; merged with the global options (validated by the module or the guard,
  // each option on its own: none depends on another) when the route first answers.
  new RateLimitCore(options, 'RateLimit')
  return SetMetadata(RATE_LIMIT, Object.freeze({ ...options }))
}

/** Neither counts nor limits the route (method) or controller (class); `false` undoes a class's. */
function SkipRateLimit(skip = true) {
  if (typeof skip !== 'boolean') throw invalid('SkipRateLimit', 'takes a boolean')
  return SetMetadata(SKIP_RATE_LIMIT, skip)
}

function invalid(field, problem) {
  return Object.assign(new Error(`${field} ${problem}`), { code: 'config_invalid' })
}

/** The 429 the guard throws: core's problem body, and the decision. */
class RateLimitExceededException extends HttpException {
  constructor(decision) {
    super(JSON.parse(problemBody(decision)), 429)
    this.decision = decision
  }
}

/**
 * The guard. `options` are every middleware's (see options.d.ts; `key`, `cost` and `skip` get
 * `(request, context)`, `denyResponse(context, decision)` returns the exception to throw), or
 * none: then only routes with `@RateLimit` are limited. Bad options throw `config_invalid` when
 * Nest makes the guard (at start-up, for a global one).
 */
class ThrottlekitGuard {
  constructor(options, reflector) {
    this.options = options ?? undefined
    this.core = this.options === undefined ? undefined : new RateLimitCore(this.options, 'ThrottlekitGuard')
    this.reflector = reflector ?? new Reflector()
    /** A route's options (its `@RateLimit`'s frozen object) -> its core, merged once. */
    this.routes = new WeakMap()
  }

  canActivate(context) {
    if (context.getType() !== 'http') return true
    const targets = [context.getHandler(), context.getClass()]
    if (this.reflector.getAllAndOverride(SKIP_RATE_LIMIT, targets) === true) return true
    const route = this.reflector.getAllAndOverride(RATE_LIMIT, targets)
    const core = route === undefined ? this.core : this.routeCore(route)
    if (core === undefined) return true
    const http = context.switchToHttp()
    const req = http.getRequest()
    const res = http.getResponse()
    const verdict = core.decide(req, context, req.socket.remoteAddress, req.headers[core.forwardedHeader], req.method, req.originalUrl ?? req.url)
    if (pending(verdict)) return verdict.then((v) => answer(core, v, context, res))
    return answer(core, verdict, context, res)
  }

  routeCore(route) {
    let core = this.routes.get(route)
    if (core === undefined) {
      core = new RateLimitCore({ ...this.options, ...route }, 'RateLimit')
      this.routes.set(route, core)
    }
    return core
  }
}
Injectable()(ThrottlekitGuard)
Inject(THROTTLEKIT_OPTIONS)(ThrottlekitGuard, undefined, 0)
Optional()(ThrottlekitGuard, undefined, 0)
Inject(Reflector)(ThrottlekitGuard, undefined, 1)

/** Sets the fields; admits (true), or throws the denial for Nest's exception filters. */
function answer(core, verdict, context, res) {
  const { lines } = verdict
  for (let i = 0; i < lines.length; i += 2) setHeader(res, lines[i], lines[i + 1])
  if (verdict.kind === 'forward') return true
  if (verdict.kind === 'deny' && core.denyResponse !== undefined) throw core.denyResponse(context, verdict.decision)
  // Nest's filters keep a JSON-family type already on the response (`+json` included).
  setHeader(res, 'Content-Type', PROBLEM_CONTENT_TYPE)
  if (verdict.kind === 'unavailable') throw new ServiceUnavailableException(JSON.parse(unavailableBody()))
  throw new RateLimitExceededException(verdict.decision)
}

/** Express's (and Node's) `res.setHeader`, or a Fastify reply's `header`. */
function setHeader(res, name, value) {
  if (typeof res.setHeader === 'function') res.setHeader(name, value)
  else res.header(name, value)
}

/**
 * Provides the guard's options app-wide (a global module). Bind the guard yourself: globally
 * with `{ provide: APP_GUARD, useClass: ThrottlekitGuard }`, or `@UseGuards(ThrottlekitGuard)`
 * on a controller or route.
 */
class ThrottlekitModule {
  /** Options known now; bad ones throw `config_invalid` here. */
  static forRoot(options) {
    new RateLimitCore(options, 'ThrottlekitModule.forRoot')
    return dynamicModule({ provide: THROTTLEKIT_OPTIONS, useValue: options }, [])
  }

  /**
   * Options made by `useFactory(...inject)` at start-up (e.g. after `await RedisStore.connect`);
   * bad ones throw `config_invalid` when the guard is made from them.
   */
  static forRootAsync({ imports = [], inject = [], useFactory } = {}) {
    if (typeof useFactory !== 'function') throw invalid('ThrottlekitModule.forRootAsync.useFactory', 'must be a function')
    return dynamicModule({ provide: THROTTLEKIT_OPTIONS, useFactory, inject }, imports)
  }
}
Module({})(ThrottlekitModule)

function dynamicModule(provider, imports) {
  return { module: ThrottlekitModule, global: true, imports, providers: [provider], exports: [THROTTLEKIT_OPTIONS] }
}

module.exports = {
  ThrottlekitGuard,
  ThrottlekitModule,
  RateLimit,
  SkipRateLimit,
  RateLimitExceededException,
  THROTTLEKIT_OPTIONS,
  RATE_LIMIT,
  SKIP_RATE_LIMIT,
}
