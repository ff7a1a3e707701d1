'use strict'
// @throttlekit/core against rate-limiter-flexible 11 (peers pinned in package.json).
//
//   memory: Limiter#checkSync         vs RateLimiterMemory#consume (awaited: its only API)
//   Redis:  Limiter#check on RedisStore vs RateLimiterRedis#consume on ioredis, same server,
//           sequentially and with 64 calls in flight; and Limiter#checkSync against
//           Limiter#check on the same RedisStore (its time / check's time, target <= 1.2x).
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

async function redis(url) {
  const N = 20_000
  const store = await RedisStore.connect({ url })
  const tk = new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000 }), store, prefix: 'bench-tk' })
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
  const tkCheck = (k) => tk.check(k)
  const rlCheck = (k) => rl.consume(k)
  const syncRun = async () => {
    for (let i = 0; i < N; i++) if (!tk.checkSync(KEYS[i % 1000]).allowed) throw new Error('throttlekit denied')
  }
  await seq(tkCheck)()
  await seq(rlCheck)() // warm up both (script loading, connections)
  await syncRun()
  const out = {}
  out.seqTk = await best('tk seq', seq(tkCheck), N)
  out.seqRl = await best('rl seq', seq(rlCheck), N)
  // checkSync on the same RedisStore (a blocking round trip on the core's own connection)
  // against check (the event loop's socket), interleaved with it.
  out.sync = await best('tk sync', syncRun, N)
  out.seqTk = Math.max(out.seqTk, await best('tk seq', seq(tkCheck), N))
  out.parTk = await best('tk 64', inFlight(tkCheck, 64), N)
  out.parRl = await best('rl 64', inFlight(rlCheck, 64), N)
  await tk.close()
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
  console.log(`redis   check, sequential    ${fmt(r.seqTk)} ops/s   RateLimiterRedis.consume  ${fmt(r.seqRl)} ops/s   ratio ${(r.seqTk / r.seqRl).toFixed(2)}x (target >= 1.1x)`)
  console.log(`redis   check, 64 in flight  ${fmt(r.parTk)} ops/s   RateLimiterRedis.consume  ${fmt(r.parRl)} ops/s   ratio ${(r.parTk / r.parRl).toFixed(2)}x (target >= 1.0x)`)
  // Time ratio (ours / reference), so the target reads "<=".
  console.log(`redis   checkSync vs check, sequential  ${fmt(r.sync)} ops/s   check ${fmt(r.seqTk)} ops/s   checkSync time / check time ${(r.seqTk / r.sync).toFixed(2)}x (target <= 1.2x)`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
