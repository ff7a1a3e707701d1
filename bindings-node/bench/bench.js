'use strict'
// @throttlekit/core against rate-limiter-flexible 11 (peers pinned in package.json).
//
//   memory: Limiter#checkSync         vs RateLimiterMemory#consume (awaited: its only API)
//   Redis:  Limiter#check on RedisStore vs RateLimiterRedis#consume on ioredis, same server,
//           sequentially and with 64 calls in flight, with the peer's algorithm (a fixed window,
//           same points and window; GCRA, the default, beside it without a target); and
//           Limiter#checkSync against Limiter#check on the same RedisStore (its time / check's
//           time, target <= 1.2x); and ioredis PING, the floor of a sequential round trip.
//
// Both sides admit every request (limits far above the load), so neither pays for denials.
// Memory: the best of a few interleaved rounds. Redis: paired rounds, the median of their ratios,
// with the CPU per call of client and server (duel.js). Ratios are throttlekit / peer.
// Run with ./run.sh (release build, throwaway Redis, placement.sh's pinning), or:
//   REDIS_PIDFILE=FILE node bench.js REDIS_URL
// Environment: ROUNDS (paired rounds a Redis row, default 7), CALLS (calls a run, 20000),
// MEMORY=0 (skip the memory row), TK_BENCH_BASELINE (see `redis`).
const { Limiter, RedisStore, Strategy } = require('@throttlekit/core')
const { RateLimiterMemory, RateLimiterRedis } = require('rate-limiter-flexible')
const Redis = require('ioredis')
const path = require('node:path')
const { pidsOf, duel, ratioText, cpuRatioText, sideText } = require('./duel.js')

const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`)
const ROUNDS = Number(process.env.ROUNDS || 7)

async function best(name, fn, ops) {
  let top = 0
  for (let r = 0; r < 3; r++) {
    const t = process.hrtime.bigint()
    await fn()
    const s = Number(process.hrtime.bigint() - t) / 1e9
    top = Math.max(top, ops / s)
  }
  return top
}

function fmt(n) {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(1)} k`
}

async function memory() {
  const N = 2_000_000
  const tk = new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000 }), prefix: 'bench' })
  const rl = new RateLimiterMemory({ points: 1e12, duration: 60, keyPrefix: 'bench' })
  const runTk = async () => {
    let allowed = 0
    for (let i = 0; i < N; i++) if (tk.checkSync(KEYS[i % 1000]).allowed) allowed++
    if (allowed !== N) throw new Error('throttlekit denied')
  }
  const runRl = async () => {
    for (let i = 0; i < N; i++) await rl.consume(KEYS[i % 1000])
  }
  let a = 0
  let b = 0
  for (let r = 0; r < 2; r++) {
    a = Math.max(a, await best('tk', runTk, N))
    b = Math.max(b, await best('rl', runRl, N))
  }
  return { tk: a, rl: b }
}

/**
 * Like for like: RateLimiterRedis is a fixed-window counter (its script: `SET NX EX` the
 * window, `INCRBY`, `PTTL`), so the rows with targets run our fixed window with the same
 * points and the same 60 s window, each key living the whole window on both sides. GCRA (the
 * default strategy) is printed beside them without a target: at a limit this far above the load
 * its TAT is never more than 1 ms ahead, so every call writes a key that expires 1 ms later and
 * the next call on it finds it gone (Redis deletes and recreates a key per call), work the peer's
 * counter never does. The PING side is the floor of any sequential Node client here: one write,
 * one wake-up each way, no script.
 *
 * Each row is a duel (duel.js): paired rounds, who goes first rotating, the median of the
 * rounds' ratios, the CPU per call of this process and of the server (REDIS_PIDFILE). With
 * TK_BENCH_BASELINE=DIR (another build's bindings-node directory, its addon built), that build's
 * check is a third side of the check rows, same store server, same rounds: an A/B of two builds
 * on one machine at one time.
 */
async function redis(url, pids, out) {
  const N = Number(process.env.CALLS || 20_000)
  const rounds = ROUNDS
  const fwOptions = { limit: 1e12, windowMs: 60_000 }
  const gcraOptions = { limit: 1e12, periodMs: 1000 }
  // Calls wait up to 30 s (default 1 s): on a loaded shared machine a process pinned to one CPU
  // can stall past 1 s, and a bench measures rates, not the fail policy (ioredis waits forever).
  const connect = (Store) => Store.connect({ url, timeoutMs: 30_000 })
  const store = await connect(RedisStore)
  const fw = new Limiter({ strategy: Strategy.fixedWindow(fwOptions), store, prefix: 'bench-fw' })
  const gcra = new Limiter({ strategy: Strategy.gcra(gcraOptions), store, prefix: 'bench-tk' })
  const client = new Redis(url, { enableOfflineQueue: true, lazyConnect: false })
  await client.ping()
  const rl = new RateLimiterRedis({ storeClient: client, points: 1e12, duration: 60, keyPrefix: 'bench-rl' })
  let base = null
  if (process.env.TK_BENCH_BASELINE) {
    const b = require(path.resolve(process.env.TK_BENCH_BASELINE))
    const bstore = await connect(b.RedisStore)
    base = {
      fw: new b.Limiter({ strategy: b.Strategy.fixedWindow(fwOptions), store: bstore, prefix: 'bench-fw-base' }),
      gcra: new b.Limiter({ strategy: b.Strategy.gcra(gcraOptions), store: bstore, prefix: 'bench-tk-base' }),
    }
  }
  const seq = (check) => async () => {
    for (let i = 0; i < N; i++) await check(KEYS[i % 1000])
  }
  const inFlight = (check, width) => async () => {
    let next = 0
    const worker = async () => {
      while (next < N) await check(KEYS[next++ % 1000])
    }
    await Promise.all(Array.from({ length: width }, worker))
  }
  const sync = (limiter) => async () => {
    for (let i = 0; i < N; i++) if (!limiter.checkSync(KEYS[i % 1000]).allowed) throw new Error('throttlekit denied')
  }
  const rlCheck = (k) => rl.consume(k)
  const opts = { calls: N, rounds, pids }
  const peer = 'RateLimiterRedis.consume'
  const rows = [
    ['check, sequential, fixed window', fw, seq, base && base.fw, ' (target >= 1.1x)'],
    ['check, 64 in flight, fixed window', fw, (c) => inFlight(c, 64), base && base.fw, ' (target >= 1.0x)'],
    ['GCRA check, sequential (default strategy)', gcra, seq, base && base.gcra, " (no target: not the peer's algorithm)"],
    ['GCRA check, 64 in flight (default strategy)', gcra, (c) => inFlight(c, 64), base && base.gcra, " (no target: not the peer's algorithm)"],
  ]
  for (const [what, limiter, shape, baseLimiter, tail] of rows) {
    const sides = { ours: shape((k) => limiter.check(k)), peer: shape(rlCheck) }
    if (baseLimiter) sides.baseline = shape((k) => baseLimiter.check(k))
    const d = await duel(sides, opts)
    out(`redis   ${what}  ratio ${ratioText(d, 'ours', 'peer')}${tail}`)
    out(`          ours ${sideText(d, 'ours')}; ${peer} ${sideText(d, 'peer')}; ${cpuRatioText(d, 'ours', 'peer')}`)
    if (baseLimiter) {
      out(`          this build / baseline build (${process.env.TK_BENCH_BASELINE}) ${ratioText(d, 'ours', 'baseline')}; ` +
        `${cpuRatioText(d, 'ours', 'baseline')}; baseline / ${peer} ${ratioText(d, 'baseline', 'peer')}`)
      out(`          baseline ${sideText(d, 'baseline')}`)
    }
  }
  // checkSync (a blocking round trip on the core's own connection) against check (the event
  // loop's socket): time ratios, checkSync's time over check's, so the target reads "<=".
  for (const [what, limiter] of [['fixed window', fw], ['GCRA', gcra]]) {
    const d = await duel({ check: seq((k) => limiter.check(k)), checkSync: sync(limiter) }, opts)
    out(`redis   checkSync vs check, sequential, ${what}  ratio (checkSync time / check time) ${ratioText(d, 'check', 'checkSync')} (target <= 1.2x)`)
    out(`          checkSync ${sideText(d, 'checkSync')}; check ${sideText(d, 'check')}; checkSync / check ${cpuRatioText(d, 'check', 'checkSync')}`)
  }
  // Not a ratio row: how close each side comes to a bare round trip (its rate / PING's).
  const d = await duel({ ping: seq(() => client.ping()), ours: seq((k) => fw.check(k)), peer: seq(rlCheck) }, opts)
  out(`redis   floor: ioredis PING, sequential, ${sideText(d, 'ping')}`)
  out(`          fixed window check / PING ${ratioText(d, 'ours', 'ping')}; ${peer} / PING ${ratioText(d, 'peer', 'ping')}`)
  await fw.close()
  if (base) await base.fw.close()
  client.disconnect()
}

async function main() {
  const url = process.argv[2] || process.env.THROTTLEKIT_REDIS_URL
  const out = (line) => console.log(line)
  console.log(`node ${process.version}, ${require('node:os').cpus().length} CPUs, ${ROUNDS} rounds; ${process.env.TK_BENCH_PLACEMENT || 'placement: as started'}`)
  if (process.env.MEMORY !== '0') {
    const m = await memory()
    console.log(`memory  checkSync            ${fmt(m.tk)} ops/s   RateLimiterMemory.consume ${fmt(m.rl)} ops/s   ratio ${(m.tk / m.rl).toFixed(2)}x (target >= 3x)`)
  }
  if (!url) {
    console.log('redis   skipped: pass a Redis URL (./run.sh starts one)')
    return
  }
  await redis(url, pidsOf(process.env.REDIS_PIDFILE), out)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
