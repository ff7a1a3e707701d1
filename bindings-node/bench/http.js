'use strict'
// Middleware overhead per request: @throttlekit/core/express against express-rate-limit 8
// (pinned in package.json), side by side, both on their in-memory stores, both sending the
// IETF fields (ours draft-10, theirs draft-8: the same two fields), both admitting every request
// (limits far above the load), keyed by client IP over 1000 clients.
//
//   alone:   each middleware called directly, awaited until it calls next(), on the same
//            request/response stand-ins: the time of the middleware itself.
//   express: one Express app with three routes, /none (no limiter), /tk and /erl, served on a
//            loopback port and driven over keep-alive HTTP, interleaved rounds: the overhead
//            is a route's time per request minus /none's.
//
// Prints `ROW` lines for bench/summarize.py (ratio = their time / ours, > 1: we are faster).
//   node http.js            (./run.sh builds the release addon first)
const http = require('node:http')
const express = require('express')
const { rateLimit: expressRateLimit } = require('express-rate-limit')
const { Limiter, Strategy } = require('@throttlekit/core')
const { rateLimit } = require('@throttlekit/core/express')

const ROUNDS = Number(process.env.ROUNDS || 5)
const CLIENTS = Array.from({ length: 1000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`)

function tkMiddleware() {
  const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000, burst: 1e12 }) })
  return rateLimit({ limiter })
}

function erlMiddleware() {
  // `validate: false`: its one-time configuration checks would warn about the stand-ins.
  return expressRateLimit({ windowMs: 60_000, limit: 1e12, standardHeaders: 'draft-8', legacyHeaders: false, validate: false })
}

/** A request/response pair with what both middlewares read and write. */
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
  return Number(process.hrtime.bigint() - t) / n // ns per request
}

function server() {
  const app = express()
  app.get('/none', (_req, res) => res.send('ok'))
  app.get('/tk', tkMiddleware(), (_req, res) => res.send('ok'))
  app.get('/erl', erlMiddleware(), (_req, res) => res.send('ok'))
  return new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
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

function row(scenario, peer, ratio, target, detail) {
  console.log(['ROW', scenario, peer, ratio.toFixed(3), target, detail].join('\t'))
}

async function main() {
  console.log(`node ${process.version}, ${require('node:os').cpus().length} CPUs, best of ${ROUNDS} interleaved rounds`)
  // Alone: interleaved rounds, the best (lowest) time of each.
  const N = 200_000
  const tk = tkMiddleware()
  const erl = erlMiddleware()
  await alone(tk, 20_000)
  await alone(erl, 20_000)
  let aTk = Infinity
  let aErl = Infinity
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      aTk = Math.min(aTk, await alone(tk, N))
      aErl = Math.min(aErl, await alone(erl, N))
    } else {
      aErl = Math.min(aErl, await alone(erl, N))
      aTk = Math.min(aTk, await alone(tk, N))
    }
  }
  console.log(`alone    @throttlekit/core/express ${(aTk / 1000).toFixed(2)} us/request   express-rate-limit ${(aErl / 1000).toFixed(2)} us/request   ratio ${(aErl / aTk).toFixed(2)}x`)
  row('node: Express middleware alone, per request', 'express-rate-limit 8.7.5', aErl / aTk, '>=1', `ours ${(aTk / 1000).toFixed(2)} us, theirs ${(aErl / 1000).toFixed(2)} us`)

  // Through Express over HTTP.
  const s = await server()
  const { port } = s.address()
  const M = 20_000
  const has = (name) => (res) => res.headers[name] !== undefined
  const paths = [
    ['/none', () => true],
    ['/tk', has('ratelimit')],
    ['/erl', has('ratelimit')],
  ]
  for (const [p, c] of paths) await drive(port, p, 2000, c)
  const bestOf = { '/none': Infinity, '/tk': Infinity, '/erl': Infinity }
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts with another route, so none always runs first (or last).
    for (let j = 0; j < paths.length; j++) {
      const [p, c] = paths[(r + j) % paths.length]
      bestOf[p] = Math.min(bestOf[p], await drive(port, p, M, c))
    }
  }
  s.close()
  const oTk = bestOf['/tk'] - bestOf['/none']
  const oErl = bestOf['/erl'] - bestOf['/none']
  const us = (ns) => `${(ns / 1000).toFixed(2)} us`
  console.log(`express  per request: none ${us(bestOf['/none'])}, tk ${us(bestOf['/tk'])} (+${us(oTk)}), express-rate-limit ${us(bestOf['/erl'])} (+${us(oErl)})`)
  if (oTk > 0 && oErl > 0) {
    row('node: Express app over HTTP, middleware overhead per request', 'express-rate-limit 8.7.5', oErl / oTk, '>=1', `ours +${us(oTk)}, theirs +${us(oErl)} over ${us(bestOf['/none'])} without a limiter`)
  } else {
    console.log('NOT MEASURED: an overhead over HTTP was below the noise of the no-limiter route')
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
