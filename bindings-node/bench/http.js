'use strict'
// Middleware overhead per request, ours against the usual peer in the same app, same run:
// @throttlekit/core/express vs express-rate-limit 8 (pinned in package.json). Both sides use
// their in-memory stores, send the IETF fields (ours draft-10, theirs draft-8: two fields each),
// admit every request (limits far above the load), and key by client IP over 1000 clients.
// (A Fastify row is not here yet: fastify.inject grew the heap by about 10 KB per request, with
// or without a limiter, and exhausted it over the rounds; see docs/bench-bindings.md.)
//
// Three measurements, each as "added time per request" = a limited route's time minus the same
// app's unlimited route, so the framework's own cost cancels out:
//   in process: the framework's own request objects, no sockets: the Express app through
//               light-my-request (Fastify's inject engine: real http.IncomingMessage /
//               ServerResponse subclasses through the whole Express stack). This is the number
//               with the target: it is what the middleware
//               costs, and it is steady on a loaded machine.
//   sockets:    the same apps served on loopback and driven over keep-alive HTTP; the
//               overheads are small differences of large, noisy numbers, so the ratio is
//               printed with its spread and without a target.
//   alone:      the Express middlewares called directly on plain stand-in objects.
//
// Rounds interleave the routes. A ratio is their median added time / ours; the spread (min-max
// of the per-round ratios) is printed with it. Rounds repeat (up to 3x ROUNDS) until the middle
// half of the per-round ratios lies within 20 % of the median, and the line says how many ran.
// Prints `ROW` lines for bench/summarize.py (ratio = their added time / ours, > 1: we add less).
//   node http.js            (./run.sh builds the release addon first)
const http = require('node:http')
const express = require('express')
const { rateLimit: expressRateLimit } = require('express-rate-limit')
const inject = require('light-my-request')
const { Limiter, Strategy } = require('@throttlekit/core')
const { rateLimit } = require('@throttlekit/core/express')

const ROUNDS = Number(process.env.ROUNDS || 5)
const CLIENTS = Array.from({ length: 1000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)
const TARGET = '>=1.5'

function tkLimiter() {
  return new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000, burst: 1e12 }) })
}

function erlMiddleware() {
  // `validate: false`: its one-time configuration checks would warn about the stand-ins.
  return expressRateLimit({ windowMs: 60_000, limit: 1e12, standardHeaders: 'draft-8', legacyHeaders: false, validate: false })
}

function expressApp() {
  const app = express()
  app.get('/none', (_req, res) => res.send('ok'))
  app.get('/tk', rateLimit({ limiter: tkLimiter() }), (_req, res) => res.send('ok'))
  app.get('/erl', erlMiddleware(), (_req, res) => res.send('ok'))
  return app
}

/** `n` sequential injected requests; ns per request. `send(ip)` resolves with a response. */
async function timeInjected(send, n, check) {
  const t = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const res = await send(CLIENTS[i % CLIENTS.length])
    if (res.statusCode !== 200 || !check(res)) throw new Error(`injected: ${res.statusCode} ${JSON.stringify(res.headers)}`)
  }
  return Number(process.hrtime.bigint() - t) / n
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
 * Interleaved rounds of `time(route)` for the routes `none`, `ours`, `theirs`; per round the
 * added times and their ratio. Repeats until the middle half of the ratios is within 20 % of
 * their median (at least ROUNDS, at most 3x ROUNDS rounds).
 */
async function compare(time) {
  const names = ['none', 'ours', 'theirs']
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
    const t = {}
    for (let j = 0; j < names.length; j++) {
      const name = names[(rounds.length + j) % names.length] // each round starts with another route
      t[name] = await time(name)
    }
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
  }
}

function report(label, peer, c, target) {
  const spread = `spread ${c.lo.toFixed(2)}-${c.hi.toFixed(2)}x over ${c.n} rounds`
  console.log(
    `${label.padEnd(44)} none ${us(c.none)}, ours +${us(c.ours)}, theirs +${us(c.theirs)}   ratio ${c.ratio.toFixed(2)}x (${spread})`,
  )
  console.log(['ROW', `node: ${label}`, peer, c.ratio.toFixed(3), target, `ours +${us(c.ours)}, theirs +${us(c.theirs)}, ${spread}`].join('\t'))
}

async function main() {
  console.log(`node ${process.version}, ${require('node:os').cpus().length} CPUs, median of >= ${ROUNDS} interleaved rounds`)
  const has = (name) => (res) => res.headers[name] !== undefined
  const app = expressApp()
  const ok = { none: () => true, ours: has('ratelimit'), theirs: has('ratelimit') }
  const paths = { none: '/none', ours: '/tk', theirs: '/erl' }

  // Over loopback sockets, the same apps.
  const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
  const s = await listen(http.createServer(app))
  const M = Number(process.env.BENCH_M || 5000)
  const { port } = s.address()
  for (const name of ['none', 'ours', 'theirs']) {
    await drive(port, paths[name], 1000, ok[name])
  }
  const sock = (label, peer, c) => {
    console.log(`${label.padEnd(44)} none ${us(c.none)}, ours +${us(c.ours)}, theirs +${us(c.theirs)}   their added time / ours ${c.ratio.toFixed(2)} (spread ${c.lo.toFixed(2)}-${c.hi.toFixed(2)} over ${c.n} rounds; no target: socket noise)`)
  }
  sock('Express app over loopback HTTP', 'express-rate-limit', await compare((name) => drive(port, paths[name], M, ok[name])))
  s.close()

  // In process: Express through light-my-request. Last: light-my-request leaves Express's
  // shared response prototype patched, which breaks later real sockets.
  const expressInject = (name, n) =>
    timeInjected((ip) => inject(app, { method: 'GET', url: paths[name], remoteAddress: ip }), n, ok[name])
  const N = Number(process.env.BENCH_N || 20_000)
  for (const name of ['none', 'ours', 'theirs']) {
    await expressInject(name, 4000) // warm up: every client's state exists, the JIT has run
  }
  report('Express middleware, added time per request (in process)', 'express-rate-limit 8.7.5',
    await compare((name) => expressInject(name, N)), TARGET)

  // The Express middlewares alone, on stand-ins.
  const tk = rateLimit({ limiter: tkLimiter() })
  const erl = erlMiddleware()
  await alone(tk, 20_000)
  await alone(erl, 20_000)
  const a = await compare(async (name) => (name === 'none' ? 0 : alone(name === 'ours' ? tk : erl, 100_000)))
  console.log(`Express middleware alone (stand-in objects)   ours ${us(a.ours)}, theirs ${us(a.theirs)}   their time / ours ${a.ratio.toFixed(2)} (spread ${a.lo.toFixed(2)}-${a.hi.toFixed(2)})`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
