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
// Each measurement is the best of several interleaved rounds; ratios are throttlekit / peer.
// Run with ./run.sh (release build, throwaway Redis), or: node bench.js REDIS_URL
const { Limiter, RedisStore, Strategy } = require('@throttlekit/core')
const { RateLimiterMemory, RateLimiterRedis } = require('rate-limiter-flexible')
const Redis = require('ioredis')

const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`)
const ROUNDS = Number(process.env.ROUNDS || 5)

async function best(name, fn, ops) {
  let top = 0
  for (let r = 0; r < ROUNDS; r++) {
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
 * counter never does. The PING row is the floor of any sequential Node client here: one write,
 * one wake-up each way, no script.
 */
async function redis(url) {
  const N = 20_000
  const store = await RedisStore.connect({ url })
  const fw = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1e12, windowMs: 60_000 }), store, prefix: 'bench-fw' })
  const gcra = new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000 }), store, prefix: 'bench-tk' })
  const client = new Redis(url, { enableOfflineQueue: true, lazyConnect: false })
  await client.ping()
  const rl = new RateLimiterRedis({ storeClient: client, points: 1e12, duration: 60, keyPrefix: 'bench-rl' })
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
  const fwCheck = (k) => fw.check(k)
  const gcraCheck = (k) => gcra.check(k)
  const rlCheck = (k) => rl.consume(k)
  // checkSync: a blocking round trip on the core's own connection; check: the event loop's socket.
  const runs = {
    seqFw: seq(fwCheck),
    seqRl: seq(rlCheck),
    seqGcra: seq(gcraCheck),
    syncFw: sync(fw),
    syncGcra: sync(gcra),
    ping: seq(() => client.ping()),
    parFw: inFlight(fwCheck, 64),
    parRl: inFlight(rlCheck, 64),
    parGcra: inFlight(gcraCheck, 64),
  }
  for (const name in runs) await runs[name]() // warm up (script loading, connections, JIT)
  // Rounds interleaved, so a neighbour's load spreads over every side alike; best round each.
  const out = {}
  for (let r = 0; r < ROUNDS; r++) {
    for (const name in runs) {
      const t = process.hrtime.bigint()
      await runs[name]()
      const rate = N / (Number(process.hrtime.bigint() - t) / 1e9)
      out[name] = Math.max(out[name] || 0, rate)
    }
  }
  await fw.close()
  client.disconnect()
  return out
}

async function main() {
  const url = process.argv[2] || process.env.THROTTLEKIT_REDIS_URL
  console.log(`node ${process.version}, ${require('node:os').cpus().length} CPUs, best of ${ROUNDS} rounds`)
  const m = await memory()
  console.log(`memory  checkSync            ${fmt(m.tk)} ops/s   RateLimiterMemory.consume ${fmt(m.rl)} ops/s   ratio ${(m.tk / m.rl).toFixed(2)}x (target >= 3x)`)
  if (!url) {
    console.log('redis   skipped: pass a Redis URL (./run.sh starts one)')
    return
  }
  const r = await redis(url)
  const peer = 'RateLimiterRedis.consume'
  const row = (what, ours, theirs, tail) =>
    console.log(`redis   ${what.padEnd(44)} ${fmt(ours)} ops/s   ${peer} ${fmt(theirs)} ops/s   ratio ${(ours / theirs).toFixed(2)}x${tail}`)
  row('check, sequential, fixed window', r.seqFw, r.seqRl, ' (target >= 1.1x)')
  row('check, 64 in flight, fixed window', r.parFw, r.parRl, ' (target >= 1.0x)')
  row('GCRA check, sequential (default strategy)', r.seqGcra, r.seqRl, ' (no target: not the peer\'s algorithm)')
  row('GCRA check, 64 in flight (default strategy)', r.parGcra, r.parRl, ' (no target: not the peer\'s algorithm)')
  // Time ratios (ours / reference), so the target reads "<=".
  console.log(`redis   checkSync vs check, sequential, fixed window  ${fmt(r.syncFw)} ops/s   check ${fmt(r.seqFw)} ops/s   checkSync time / check time ${(r.seqFw / r.syncFw).toFixed(2)}x (target <= 1.2x)`)
  console.log(`redis   checkSync vs check, sequential, GCRA          ${fmt(r.syncGcra)} ops/s   check ${fmt(r.seqGcra)} ops/s   checkSync time / check time ${(r.seqGcra / r.syncGcra).toFixed(2)}x (target <= 1.2x)`)
  // Not a ratio row: how close each side comes to a bare round trip (its rate / PING's).
  const pct = (v) => `${((100 * v) / r.ping).toFixed(0)} %`
  console.log(`redis   floor: ioredis PING, sequential ${fmt(r.ping)} ops/s; fixed window check at ${pct(r.seqFw)} of it, GCRA check ${pct(r.seqGcra)}, ${peer} ${pct(r.seqRl)}`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
