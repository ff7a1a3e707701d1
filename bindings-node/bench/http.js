'use strict'
// Middleware overhead per request, ours against the usual peer in the same app, same run:
// @throttlekit/core/express vs express-rate-limit 8 and @throttlekit/core/fastify vs
// @fastify/rate-limit 11 (all pinned in package.json). Both sides use their in-memory stores,
// admit every request (limits far above the load), key by client IP over 1000 clients and send
// their rate-limit fields (ours: draft-10's RateLimit-Policy and RateLimit; express-rate-limit:
// draft-8's two fields; @fastify/rate-limit: its three draft-7 fields).
//
// Added time per request = a limited route's time minus the same app's unlimited route, so the
// framework's own cost cancels out. Measured three ways:
//   in process: the framework's own request handling with no sockets: each request is a real
//               `http.IncomingMessage` and `http.ServerResponse` on a dummy socket (a Writable
//               that drops the bytes), handed to the Express app or to Fastify's own request
//               listener (`fastify.server`'s 'request' handler after `ready()`), which run
//               their whole stack: router, hooks, middleware, header writing, `res.end`.
//               Nothing else is in the loop, and nothing is retained between requests (the
//               earlier `fastify.inject`/light-my-request harness grew the heap ~10 KB a
//               request). This is the row with the target.
//   sockets:    the same apps on loopback, driven over keep-alive HTTP; added times are small
//               differences of large numbers that swing with the machine's load, so this line
//               carries its spread and no target.
//   alone:      the Express middlewares called directly on plain stand-in objects.
//
// Noise: in process, each route's time is the process's CPU time (not wall time, which on a
// loaded machine counts the waits for a core), and the routes run in interleaved blocks of 100
// requests (a rotating order), so a change of load during a round hits all three alike; a
// round's added times are its mean per route minus the unlimited route's. Rounds repeat (at least ROUNDS, at
// most 3x ROUNDS) until the middle half of the per-round ratios lies within 20 % of the median;
// the line prints the ratio of the median added times with the min-max of the per-round ratios.
// Prints `ROW` lines for bench/summarize.py (ratio = their added time / ours, > 1: we add less).
//   node http.js            (../bench/run.sh builds the release addon first)
const http = require('node:http')
const { Writable } = require('node:stream')
const express = require('express')
const { rateLimit: expressRateLimit } = require('express-rate-limit')
const fastify = require('fastify')
const fastifyRateLimit = require('@fastify/rate-limit')
const { Limiter, Strategy } = require('@throttlekit/core')
const { rateLimit } = require('@throttlekit/core/express')
const { rateLimitPlugin } = require('@throttlekit/core/fastify')

const ROUNDS = Number(process.env.ROUNDS || 5)
const CLIENTS = Array.from({ length: 1000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)
const TARGET = '>=1.5'
const ROUTES = ['none', 'ours', 'theirs']
const PATHS = { none: '/none', ours: '/tk', theirs: '/peer' }

function tkLimiter() {
  return new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000, burst: 1e12 }) })
}

function erlMiddleware() {
  // `validate: false`: its one-time configuration checks would warn about the stand-ins.
  return expressRateLimit({ windowMs: 60_000, limit: 1e12, standardHeaders: 'draft-8', legacyHeaders: false, validate: false })
}

// Every route answers with `res.end('ok')` (Express's `res.send` adds an ETag hash and content
// negotiation, tens of µs of noise here that is no middleware's), and the unlimited route has a
// pass-through middleware (Fastify: a pass-through `onRequest` hook) in the limiter's place, so
// "added time" is the limiter's own work, not the framework's cost of one more layer.
const passThrough = (_req, _res, next) => next()
const ok = (_req, res) => res.end('ok')

/**
 * One Express app per route, identical but for the middleware in front of its one route
 * (`PATHS[route]`): Express's router tries its routes in order, so three routes in one app
 * would make the third pay two more route matches than the first.
 */
function expressApps() {
  const app = (path, middleware) => express().get(path, middleware, ok)
  return {
    none: app(PATHS.none, passThrough),
    ours: app(PATHS.ours, rateLimit({ limiter: tkLimiter() })),
    theirs: app(PATHS.theirs, erlMiddleware()),
  }
}

/** One Fastify app; each limiter registered in its own encapsulated context, around one route. */
async function fastifyApp() {
  const app = fastify()
  await app.register(async (scope) => {
    scope.addHook('onRequest', (_request, _reply, next) => next())
    scope.get(PATHS.none, async () => 'ok')
  })
  await app.register(async (scope) => {
    await scope.register(rateLimitPlugin, { limiter: tkLimiter() })
    scope.get(PATHS.ours, async () => 'ok')
  })
  await app.register(async (scope) => {
    await scope.register(fastifyRateLimit, { max: 1e12, timeWindow: 60_000, enableDraftSpec: true, addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false } })
    scope.get(PATHS.theirs, async () => 'ok')
  })
  await app.ready()
  return app
}

/** The socket a request arrives on: its peer address, and a sink for the response bytes. */
class DummySocket extends Writable {
  constructor(ip) {
    super()
    this.remoteAddress = ip
    this.remotePort = 40000
    this.encrypted = false
  }

  _write(_chunk, _encoding, callback) {
    callback()
  }

  setTimeout() {}
  setNoDelay() {}
  setKeepAlive() {}
  ref() {}
  unref() {}
}

/**
 * One GET of `url` from `ip` through `handler(req, res)` (the app's request listener): Node's own
 * request and response objects on a dummy socket. Resolves with the response once it finished.
 */
function request(handler, url, ip) {
  return new Promise((resolve, reject) => {
    const socket = new DummySocket(ip)
    const req = new http.IncomingMessage(socket)
    req.method = 'GET'
    req.url = url
    req.httpVersionMajor = 1
    req.httpVersionMinor = 1
    req.httpVersion = '1.1'
    req.headers = { host: 'bench' }
    req.rawHeaders = ['Host', 'bench']
    req.complete = true
    req.push(null)
    const res = new http.ServerResponse(req)
    res.assignSocket(socket)
    res.on('finish', () => {
      res.detachSocket(socket)
      resolve(res)
    })
    res.on('error', reject)
    handler(req, res)
  })
}

/**
 * One in-process round: `n` requests per route (through `handlers[route]`), in blocks of BLOCK requests of one route, the
 * routes' blocks interleaved in a rotating order; mean CPU ns per request of each route.
 * `ok[route](res)` checks each response, outside the timed block.
 *
 * CPU time, not wall time: on a loaded machine a request's wall time includes the time this
 * process waited for a core, which grows with the load and with how much it runs, so wall-clock
 * added times swung by several times between rounds here. The process's CPU time
 * (`process.cpuUsage()`: user + system of every thread, GC helpers included, which Linux counts
 * to the nanosecond in total) counts only the work done.
 */
const BLOCK = 100
async function inProcessRound(handlers, n, ok, turn) {
  const total = { none: 0, ours: 0, theirs: 0 }
  const responses = new Array(BLOCK)
  for (let b = 0; b * BLOCK < n; b++) {
    for (let j = 0; j < 3; j++) {
      const route = ROUTES[(b + j + turn) % 3]
      const c0 = process.cpuUsage()
      for (let k = 0; k < BLOCK; k++) {
        responses[k] = await request(handlers[route], PATHS[route], CLIENTS[(b * BLOCK + k) % CLIENTS.length])
      }
      const c = process.cpuUsage(c0)
      total[route] += (c.user + c.system) * 1000
      // Checked after the block's clock stopped: the harness's own regex over each response's
      // header block is no middleware's work (it ran for the limited routes only, adding the
      // same ~0.1-0.2 us to ours and theirs and pulling every ratio toward 1).
      for (const res of responses) {
        if (res.statusCode !== 200 || !ok[route](res)) throw new Error(`${route}: ${res.statusCode} ${res._header}`)
      }
    }
  }
  const count = Math.ceil(n / BLOCK) * BLOCK
  return { none: total.none / count, ours: total.ours / count, theirs: total.theirs / count }
}

/** A request/response pair with what both Express middlewares read and write. */
function standIns(ip) {
  const headers = {}
  const req = { ip, socket: { remoteAddress: ip }, headers: {}, method: 'GET', url: '/limited', app: { get: () => false } }
  const res = {
    statusCode: 200,
    headersSent: false,
    setHeader: (n, v) => {
      headers[n.toLowerCase()] = v
    },
    getHeader: (n) => headers[n.toLowerCase()],
    append: (n, v) => {
      headers[n.toLowerCase()] = v
    },
    headers,
  }
  return { req, res }
}

async function alone(mw, n) {
  const pairs = CLIENTS.map(standIns)
  const t = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const { req, res } = pairs[i % pairs.length]
    await new Promise((resolve, reject) => mw(req, res, (err) => (err ? reject(err) : resolve())))
  }
  return Number(process.hrtime.bigint() - t) / n
}

/** `n` sequential GETs of `path` on one keep-alive connection; ns per request. */
function drive(port, path, n, check) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  return new Promise((resolve, reject) => {
    let done = 0
    const t = process.hrtime.bigint()
    const one = () => {
      const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
        if (res.statusCode !== 200 || !check(res)) reject(new Error(`${path}: ${res.statusCode} ${JSON.stringify(res.headers)}`))
        res.resume()
        res.on('end', () => {
          if (++done === n) {
            agent.destroy()
            resolve(Number(process.hrtime.bigint() - t) / n)
          } else one()
        })
      })
      req.on('error', reject)
    }
    one()
  })
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const us = (ns) => `${(ns / 1000).toFixed(2)} us`

/**
 * Rounds of `round(turn)` (each resolves with ns per request of `none`, `ours`, `theirs`); per
 * round the added times and their ratio. Repeats until the middle half of the ratios is within
 * 20 % of their median (at least ROUNDS, at most 3x ROUNDS rounds).
 */
async function compare(round) {
  const rounds = []
  const steady = () => {
    if (rounds.length < ROUNDS) return false
    const r = rounds.map((x) => x.ratio).sort((a, b) => a - b)
    const q1 = r[Math.floor(r.length / 4)]
    const q3 = r[Math.ceil((3 * r.length) / 4) - 1]
    const m = median(r)
    return q1 >= m * 0.8 && q3 <= m * 1.2
  }
  while (!steady() && rounds.length < 3 * ROUNDS) {
    const t = await round(rounds.length)
    const ours = t.ours - t.none
    const theirs = t.theirs - t.none
    rounds.push({ ...t, ours, theirs, ratio: ours > 0 ? theirs / ours : Infinity })
  }
  // Rounds where the load swamped an added time (<= 0) give no ratio; the spread covers the rest.
  const ratios = rounds.map((x) => x.ratio).filter((r) => Number.isFinite(r) && r > 0)
  const ours = median(rounds.map((x) => x.ours))
  const theirs = median(rounds.map((x) => x.theirs))
  return {
    n: rounds.length,
    none: median(rounds.map((x) => x.none)),
    ours,
    theirs,
    // The ratio of the median added times (0 when ours or theirs drowned in the noise).
    ratio: ours > 0 && theirs > 0 ? theirs / ours : 0,
    lo: ratios.length ? Math.min(...ratios) : 0,
    hi: ratios.length ? Math.max(...ratios) : 0,
    steady: steady(),
  }
}

/** Socket rounds: each route driven in turn (a rotating order), `m` requests each. */
function socketRounds(ports, m, ok) {
  return async (turn) => {
    const t = {}
    for (let j = 0; j < 3; j++) {
      const route = ROUTES[(turn + j) % 3]
      t[route] = await drive(ports[route], PATHS[route], m, ok[route])
    }
    return t
  }
}

function spreadOf(c) {
  return `spread ${c.lo.toFixed(2)}-${c.hi.toFixed(2)}x over ${c.n} rounds${c.steady ? '' : ', not steady within 3x ROUNDS'}`
}

function report(label, peer, c, target) {
  console.log(
    `${label.padEnd(58)} none ${us(c.none)}, ours +${us(c.ours)}, theirs +${us(c.theirs)}   ratio ${c.ratio.toFixed(2)}x (${spreadOf(c)})`,
  )
  console.log(['ROW', `node: ${label}`, peer, c.ratio.toFixed(3), target, `ours +${us(c.ours)}, theirs +${us(c.theirs)}, ${spreadOf(c)}`].join('\t'))
}

function sockets(label, c) {
  console.log(
    `${label.padEnd(58)} none ${us(c.none)}, ours +${us(c.ours)}, theirs +${us(c.theirs)}   their added time / ours ${c.ratio.toFixed(2)} (${spreadOf(c)}; no target: socket noise)`,
  )
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))

async function main() {
  if (!process.env.HTTP_BENCH_CHILD) {
    console.log(`node ${process.version}, ${require('node:os').cpus().length} CPUs, median of >= ${ROUNDS} rounds`)
  }
  // Whether the response carried field `name`: over sockets from the parsed headers; in process
  // from the header block the response wrote (Fastify writes its fields through `writeHead`).
  const has = (name) => {
    const line = new RegExp(`\\r\\n${name}:`, 'i')
    return (res) => (res.headers ? res.headers[name] !== undefined : line.test(res._header))
  }
  const N = Number(process.env.BENCH_N || 10_000)
  const M = Number(process.env.BENCH_M || 3000)
  // ONLY=express or ONLY=fastify runs one framework's rows, SOCKETS=0 skips the socket rows (to
  // repeat the in-process rows and state their spread). Without ONLY each framework runs in a
  // process of its own (this script again, with ONLY set): in one process the Fastify rows ran
  // after Express's (50 us requests, a large heap, Node's http code warmed on Express's
  // header path) and every Fastify route got slower, unevenly: the same build read 1.08-1.23x
  // there against 1.32-1.50x alone. Each framework's peer still runs in the same process, app
  // and rounds as ours.
  const only = process.env.ONLY
  if (only === 'express') await expressRows(N, M, has)
  // A Fastify request costs ~5 us in process against Express's ~50 us: 4x the requests give its
  // rounds about the same length (0.1-0.2 s of CPU per route and round at 10 000 were short
  // enough for one burst of load to move a round's ratio by 2x).
  else if (only === 'fastify') await fastifyRows(process.env.BENCH_N ? N : 4 * N, M, has)
  else {
    for (const framework of ['express', 'fastify']) {
      const r = require('node:child_process').spawnSync(process.execPath, [__filename], {
        env: { ...process.env, ONLY: framework, HTTP_BENCH_CHILD: '1' },
        stdio: 'inherit',
      })
      if (r.status !== 0) throw new Error(`${framework} rows failed (${r.status ?? r.signal})`)
    }
  }
}

async function expressRows(N, M, has) {
  // Express: three apps alike but for the middleware.
  const apps = expressApps()
  const expressOk = { none: () => true, ours: has('ratelimit'), theirs: has('ratelimit') }
  await inProcessRound(apps, 2000, expressOk, 0) // warm up: every client's state exists, the JIT has run
  report('Express middleware, added time per request (in process)', 'express-rate-limit 8.7.5',
    await compare((turn) => inProcessRound(apps, N, expressOk, turn)), TARGET)
  if (process.env.SOCKETS !== '0') await expressSockets(apps, M, expressOk)

  // The Express middlewares alone, on stand-ins.
  const tk = rateLimit({ limiter: tkLimiter() })
  const erl = erlMiddleware()
  await alone(tk, 20_000)
  await alone(erl, 20_000)
  const a = await compare(async () => ({ none: 0, ours: await alone(tk, 100_000), theirs: await alone(erl, 100_000) }))
  console.log(`Express middleware alone (stand-in objects)   ours ${us(a.ours)}, theirs ${us(a.theirs)}   their time / ours ${a.ratio.toFixed(2)} (spread ${a.lo.toFixed(2)}-${a.hi.toFixed(2)})`)
}

async function expressSockets(apps, M, expressOk) {
  const servers = {}
  const ports = {}
  for (const route of ROUTES) {
    servers[route] = await listen(http.createServer(apps[route]))
    ports[route] = servers[route].address().port
  }
  await socketRounds(ports, 500, expressOk)(0)
  sockets('Express app over loopback HTTP', await compare(socketRounds(ports, M, expressOk)))
  for (const route of ROUTES) servers[route].close()
}

async function fastifyRows(N, M, has) {
  // Fastify: one app, three routes (its router is a radix tree: no route pays for another);
  // in process through its own request listener.
  const f = await fastifyApp()
  const listener = f.server.listeners('request')[0]
  const listeners = { none: listener, ours: listener, theirs: listener }
  const fastifyOk = { none: () => true, ours: has('ratelimit'), theirs: has('ratelimit-limit') }
  await inProcessRound(listeners, 2000, fastifyOk, 0)
  report('Fastify plugin, added time per request (in process)', '@fastify/rate-limit 11.2.0',
    await compare((turn) => inProcessRound(listeners, N, fastifyOk, turn)), TARGET)
  if (process.env.SOCKETS !== '0') await fastifySockets(f, M, fastifyOk)
  await f.close()
}

async function fastifySockets(f, M, fastifyOk) {
  await f.listen({ port: 0, host: '127.0.0.1' })
  const fport = f.server.address().port
  const fports = { none: fport, ours: fport, theirs: fport }
  await socketRounds(fports, 500, fastifyOk)(0)
  sockets('Fastify app over loopback HTTP', await compare(socketRounds(fports, M, fastifyOk)))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
