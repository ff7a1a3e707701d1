'use strict'
// One Node worker of tests/postgres_fleet.py: waits for the start instant, checks `attempts`
// times (8 in flight) on one PostgresStore, prints {"admitted": N, "errors": M, "late": whether it was ready after the start instant}.
const path = require('node:path')
const tk = require(path.join(__dirname, '..', 'bindings-node', 'index.js'))

async function main() {
  const spec = JSON.parse(process.argv[2])
  const store = await tk.PostgresStore.connect({ url: spec.url, poolSize: 2, timeoutMs: 5000, sweepIntervalMs: 0 })
  const serverClock = spec.serverClock ?? false
  let check
  if (spec.dimensions) {
    const multi = new tk.MultiLimiter({ rule: 'all', dimensions: spec.dimensions, store, prefix: spec.prefix, serverClock, failPolicy: 'raise' })
    check = () => multi.check(spec.keys)
  } else {
    const lim = new tk.Limiter({ strategy: spec.strategy, store, prefix: spec.prefix, serverClock, failPolicy: 'raise' })
    check = () => lim.check(spec.key)
  }
  const late = Date.now() > spec.startAt
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, spec.startAt - Date.now())))
  let admitted = 0
  let errors = 0
  let left = spec.attempts
  const lane = async () => {
    while (left > 0) {
      left -= 1
      try {
        if ((await check()).allowed) admitted += 1
      } catch (e) {
        errors += 1
        console.error(`node worker: ${e.code}: ${e.message}`)
      }
    }
  }
  await Promise.all(Array.from({ length: 8 }, lane))
  await store.close()
  console.log(JSON.stringify({ admitted, errors, late }))
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
