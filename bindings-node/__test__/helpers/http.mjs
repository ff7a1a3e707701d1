// Real servers for the middleware tests: the same app (every path answers 200 "ok") behind
// Express, Fastify, Koa, NestJS (the guard global; on the Express and on the Fastify platform),
// or a fetch handler served by a small node:http adapter, listening on a free loopback port (port 0: the kernel picks a
// fresh one per server).
import { createServer } from 'node:http'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const express = require('express')
const Fastify = require('fastify')
const { rateLimit } = require('@throttlekit/core/express')
const { rateLimitPlugin } = require('@throttlekit/core/fastify')
const { withRateLimit } = require('@throttlekit/core/fetch')
const Koa = require('koa')
const koa = require('@throttlekit/core/koa')
const { Controller, Get, Module } = require('@nestjs/common')
const { APP_GUARD, NestFactory } = require('@nestjs/core')
const { FastifyAdapter } = require('@nestjs/platform-fastify')
const { ThrottlekitGuard, ThrottlekitModule } = require('@throttlekit/core/nest')

export const FRAMEWORKS = ['express', 'fastify', 'fetch', 'koa', 'nest', 'nest-fastify']

/**
 * Applies decorators to a class (no `key`) or to one of its methods, as TypeScript's emitted
 * code does: plain JavaScript has no decorator syntax on Node 20.
 */
export function decorate(target, decorators, key) {
  if (key === undefined) return Reflect.decorate(decorators, target)
  Reflect.decorate(decorators, target.prototype, key, Object.getOwnPropertyDescriptor(target.prototype, key))
}

/**
 * Starts a Nest app on `host` with `controllers` and `imports`, the guard global (APP_GUARD)
 * unless `globalGuard` is false, on the Express platform (or Fastify's, `fastify`). Errors at
 * start-up reject (no abort) and Nest's logger is off (500s are asserted on).
 */
export async function serveNest({ controllers, imports = [], globalGuard = true, fastify = false }, host = '127.0.0.1') {
  class AppModule {}
  const providers = globalGuard ? [{ provide: APP_GUARD, useClass: ThrottlekitGuard }] : []
  decorate(AppModule, [Module({ imports, controllers, providers })])
  const options = { logger: false, abortOnError: false }
  const app = await (fastify ? NestFactory.create(AppModule, new FastifyAdapter(), options) : NestFactory.create(AppModule, options))
  await app.listen(0, host)
  const base = urlOf(host, app.getHttpServer().address().port)
  return { base, url: (path = '/limited') => base + path, close: () => app.close() }
}

function urlOf(host, port) {
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`
}

/** Serves a fetch handler `(request, {incoming}) => Response` on node:http. */
export function serveFetch(handler, host = '127.0.0.1') {
  const server = createServer(async (incoming, res) => {
    try {
      const headers = new Headers()
      for (let i = 0; i < incoming.rawHeaders.length; i += 2) headers.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1])
      const request = new Request(new URL(incoming.url, 'http://localhost'), { method: incoming.method, headers })
      const response = await handler(request, { incoming })
      res.statusCode = response.status
      for (const [name, value] of response.headers) res.setHeader(name, value)
      res.end(Buffer.from(await response.arrayBuffer()))
    } catch (e) {
      res.statusCode = 500
      res.end(String(e?.code ?? e))
    }
  })
  return listen(server, host)
}

function listen(server, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => {
      const base = urlOf(host, server.address().port)
      resolve({ base, url: (path = '/limited') => base + path, close: () => new Promise((r) => server.close(r)) })
    })
  })
}

/**
 * Starts `framework` with the rate-limit middleware given `options`, on `host`.
 * Resolves to {url(path), close()}.
 */
export async function serve(framework, options, host = '127.0.0.1') {
  if (framework === 'express') {
    const app = express()
    app.use(rateLimit(options))
    app.get('/{*any}', (_req, res) => res.type('text/plain').send('ok'))
    app.use((err, _req, res, _next) => res.status(500).type('text/plain').send(String(err.code ?? err)))
    return listen(createServer(app), host)
  }
  if (framework === 'fastify') {
    const app = Fastify()
    await app.register(rateLimitPlugin, options)
    app.get('/*', async () => 'ok')
    await app.listen({ port: 0, host })
    return { base: urlOf(host, app.server.address().port), url: (path = '/limited') => urlOf(host, app.server.address().port) + path, close: () => app.close() }
  }
  if (framework === 'koa') {
    const app = new Koa()
    app.use(koa.rateLimit(options))
    app.use((ctx) => {
      ctx.type = 'text/plain'
      ctx.body = 'ok'
    })
    app.on('error', () => {}) // a key function's error: Koa answers 500; nothing to log
    return listen(createServer(app.callback()), host)
  }
  if (framework === 'nest' || framework === 'nest-fastify') {
    class Any {
      ok() {
        return 'ok'
      }
    }
    const fastify = framework === 'nest-fastify'
    decorate(Any, [Controller()])
    decorate(Any, [Get(fastify ? '*' : '*path')], 'ok') // each router's catch-all
    return serveNest({ controllers: [Any], imports: [ThrottlekitModule.forRoot(options)], fastify }, host)
  }
  if (framework === 'fetch') {
    return serveFetch(withRateLimit(() => new Response('ok', { headers: { 'content-type': 'text/plain' } }), options), host)
  }
  throw new Error(`unknown framework ${framework}`)
}

const FIELD_NAMES = ['ratelimit', 'ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']

/** The rate-limit fields of a response, as [lower-case name, value] pairs in a fixed order. */
export function fieldsOf(response) {
  return FIELD_NAMES.filter((n) => response.headers.has(n)).map((n) => [n, response.headers.get(n)])
}
