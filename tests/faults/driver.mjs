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
// time and records how late it woke, in tenths of a ms, in shared memory. Each run reports the
// worst (stall_ms), so the orchestrator bounds a call by its timeout + slack + the stall this
// driver saw. The main event loop's own lateness is not counted: the binding could be what
// blocks it, and that must not widen its own bound.
const stall = new Int32Array(new SharedArrayBuffer(4))
new Worker(
  `const { workerData } = require('node:worker_threads')
   const a = new Int32Array(workerData)
   const tick = () => {
     const t = performance.now()
     setTimeout(() => {
       const late = Math.round((performance.now() - t - 10) * 10)
       if (late > Atomics.load(a, 0)) Atomics.store(a, 0, late)
       tick()
     }, 10)
   }
   tick()`,
  { eval: true, workerData: stall.buffer },
).unref()
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
  Atomics.store(stall, 0, 0)
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
  out.stall_ms = Atomics.exchange(stall, 0, 0) / 10
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
  } else if (cmd.cmd === 'close') {
    await store.close()
    reply = { ok: true }
  } else if (cmd.cmd === 'quit') break
  else reply = { error: `unknown command ${cmd.cmd}` }
  process.stdout.write(JSON.stringify(reply) + '\n')
}
process.exit(0)
