// The Node side of the fault proofs, chaos and soak (see driver.py for the protocol):
//   node driver.mjs URLS MODE TIMEOUT_MS [async|sync]
// `async` (default) calls the Promise `check` (the event-loop transport), `sync` calls `checkSync`.
import { createInterface } from 'node:readline'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { Worker } from 'node:worker_threads'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const { Limiter, RedisStore, Strategy } = require(path.join(here, '../../bindings-node/index.js'))

const [urls, mode, timeoutMs, api = 'async'] = process.argv.slice(2)
// MODE is `standalone`, `cluster` or `sentinel:SERVICE`.
const [storeMode, serviceName] = mode.split(':')
const open = () =>
  RedisStore.connect({ urls: urls.split(','), mode: storeMode, timeoutMs: Number(timeoutMs), ...(serviceName ? { serviceName } : {}) })

// This process's own scheduling stalls, measured where the calls are made: a worker thread (its
// own event loop, so a blocking checkSync on the main thread does not hold it) sleeps 10 ms at a
// time and records each wake-up that came late, as [woke - late, woke, late] in ms on its own
// clock, in shared memory. Each run reports them (stalls), and the orchestrator adds to a
// call's bound the most of them that overlap one call (tests/faults/stalls.py): a call hit by
// two stalls took both, so the worst single one is not enough. The main event loop's own
// lateness is not counted: the binding could be what blocks it, and that must not widen its
// own bound.
// meterState: [events recorded, wake-ups]. Past CAPACITY events (11 minutes of late wake-ups)
// the last one absorbs the rest, widened to cover them: it still counts whole where it overlaps.
const CAPACITY = 65536
const meterState = new Int32Array(new SharedArrayBuffer(8))
const meterEvents = new Float64Array(new SharedArrayBuffer(CAPACITY * 3 * 8))
new Worker(
  `const { workerData } = require('node:worker_threads')
   const [state, events] = [new Int32Array(workerData.state), new Float64Array(workerData.events)]
   const round = (v) => Math.round(v * 100) / 100
   const tick = () => {
     const t = performance.now()
     setTimeout(() => {
       const woke = performance.now()
       const late = round(woke - t - 10)
       if (late > 0) {
         const n = Atomics.load(state, 0)
         if (n < ${CAPACITY}) {
           events.set([round(woke) - late, round(woke), late], n * 3)
           Atomics.store(state, 0, n + 1)
         } else {
           events[n * 3 - 2] = round(woke)
           events[n * 3 - 1] += late
         }
       }
       Atomics.add(state, 1, 1)
       tick()
     }, 10)
   }
   tick()`,
  { eval: true, workerData: { state: meterState.buffer, events: meterEvents.buffer } },
).unref()

// The stall events since the last take. It first waits (at most 2 s) for two more wake-ups, so a
// stall still going on (the meter not yet awake to record it) is in.
async function takeStalls() {
  const wakes = Atomics.load(meterState, 1)
  const deadline = performance.now() + 2000
  while (Atomics.load(meterState, 1) < wakes + 2 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1))
  }
  const n = Atomics.exchange(meterState, 0, 0)
  return Array.from({ length: n }, (_, i) => Array.from(meterEvents.subarray(i * 3, i * 3 + 3)))
}

// The first connection is set-up, not under test: a loaded machine gets a few tries.
async function openRetrying() {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open()
    } catch (e) {
      if (attempt === 4) throw e
      await new Promise((r) => setTimeout(r, 200))
    }
  }
}

async function run(store, cmd) {
  const limiter = new Limiter({
    strategy: Strategy.gcra({ limit: cmd.limit, periodMs: cmd.window_ms }),
    store,
    prefix: cmd.prefix,
    failPolicy: 'raise',
  })
  const out = { calls: 0, allowed: 0, denied: 0, errors: 0, codes: {}, allowed_by_key: {} }
  Atomics.store(meterState, 0, 0)
  const latencies = []
  const deadline = cmd.seconds ? performance.now() + cmd.seconds * 1000 : null
  let next = 0
  let stop = false
  const worker = async () => {
    for (;;) {
      if (stop || (cmd.calls != null && next >= cmd.calls)) return
      if (deadline !== null && performance.now() >= deadline) return
      const key = cmd.keys[next % cmd.keys.length]
      next++
      const started = performance.now()
      let kind
      try {
        const d = api === 'sync' ? limiter.checkSync(key) : await limiter.check(key)
        kind = d.allowed ? 'allowed' : 'denied'
      } catch (e) {
        kind = e.code ?? `exception:${e.name}`
      }
      latencies.push(performance.now() - started)
      out.calls++
      if (kind === 'allowed') {
        out.allowed++
        out.allowed_by_key[key] = (out.allowed_by_key[key] ?? 0) + 1
      } else if (kind === 'denied') {
        out.denied++
        if (cmd.stop_on_deny) stop = true
      } else {
        out.errors++
        out.codes[kind] = (out.codes[kind] ?? 0) + 1
      }
      if (cmd.pace_ms) await new Promise((r) => setTimeout(r, cmd.pace_ms))
      // Let timers and I/O run between synchronous calls.
      else if (api === 'sync') await new Promise((r) => setImmediate(r))
    }
  }
  await Promise.all(Array.from({ length: cmd.concurrency ?? 1 }, worker))
  latencies.sort((a, b) => a - b)
  out.worst_ms = latencies.length ? Math.round(latencies.at(-1) * 10) / 10 : 0
  out.p99_ms = latencies.length ? Math.round(latencies[Math.floor(latencies.length * 0.99)] * 10) / 10 : 0
  out.stalls = await takeStalls()
  return out
}

let store = await openRetrying()
const lines = createInterface({ input: process.stdin })
for await (const line of lines) {
  const cmd = JSON.parse(line)
  let reply
  if (cmd.cmd === 'run') reply = await run(store, cmd)
  else if (cmd.cmd === 'reopen') {
    await store.close()
    store = await openRetrying()
    reply = { ok: true }
  } else if (cmd.cmd === 'collect') {
    // Before soak.py samples this process's memory. V8 collects when its heap's growth policy says
    // so, not when a store is closed, so between collections resident memory climbs and falls by
    // megabytes with no leak. Two rounds, each followed by a turn of the loop: a first collection
    // queues the closed stores' finalizers, which free their Rust side, and the second takes what
    // those released. (harness.py starts node with --expose-gc.)
    for (let i = 0; i < 2; i++) {
      globalThis.gc()
      await new Promise((resolve) => setImmediate(resolve))
    }
    reply = { ok: true }
  } else if (cmd.cmd === 'close') {
    await store.close()
    reply = { ok: true }
  } else if (cmd.cmd === 'quit') break
  else reply = { error: `unknown command ${cmd.cmd}` }
  process.stdout.write(JSON.stringify(reply) + '\n')
}
process.exit(0)
