// The Node service of tests/adaptive-service.sh: a plain `http` server with a fixed number of
// workers, each request holding one for a lognormal service time (median SERVICE_MS, sigma 0.5,
// a seeded generator), behind throttlekit's shedding middleware (the Express form, which takes
// plain req/res) with the default algorithm, or not, with --no-shed.
//
//   node server.mjs PORT WORKERS SERVICE_MS [--no-shed]
import http from 'node:http'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { AdaptiveLimiter } = require('../../bindings-node/index.js')
const shedding = require('../../bindings-node/lib/http/shedding.js')

const [port, workers, serviceMs] = process.argv.slice(2, 5).map(Number)
let free = workers
const queue = []
const worker = () => (free > 0 ? (free--, Promise.resolve()) : new Promise((r) => queue.push(r)))
const done = () => (queue.length ? queue.shift()() : free++)

// mulberry32, seeded: the same service times on every run.
let seed = 1
function uniform() {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const lognormal = () => serviceMs * Math.exp(0.5 * Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform()))

async function handler(_req, res) {
  await worker()
  await new Promise((r) => setTimeout(r, lognormal()))
  done()
  res.writeHead(200, { 'content-length': '2' }).end('ok')
}

const shed = process.argv.includes('--no-shed')
  ? (_req, _res, next) => next()
  : shedding.express(new AdaptiveLimiter({ windowMinSamples: 20 }))
http.createServer((req, res) => shed(req, res, () => handler(req, res))).listen(port, '127.0.0.1')
