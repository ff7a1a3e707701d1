// Run by rest.test.mjs under Deno and Bun: a fixed sequence on the REST store (THROTTLEKIT_REST_URL,
// THROTTLEKIT_REST_TOKEN, PROBE_PREFIX), printed as JSON, which must equal Node's.
import process from 'node:process'

import * as tk from '../../../bindings-node/wasm/node.mjs'

const store = new tk.RedisRestStore({ url: process.env.THROTTLEKIT_REST_URL, token: process.env.THROTTLEKIT_REST_TOKEN, timeoutMs: 5000 })
const clock = new tk.ManualClock(1_700_000_040_000)
const prefix = process.env.PROBE_PREFIX
const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 3, periodMs: 60_000 }), store, clock, prefix })
const m = new tk.MultiLimiter({ rule: 'any', store, clock, prefix, dimensions: [{ name: 'a', strategy: tk.Strategy.fixedWindow({ limit: 2, windowMs: 60_000 }) }] })
const out = []
for (let i = 0; i < 5; i++) {
  clock.advance(100)
  out.push(await l.check('k', 1), await l.peek('k'), await m.check(['x']))
}
out.push(await l.checkMany(['p', 'q'], 2))
await l.reset('k')
out.push(await l.forecast('k', 3))
const bad = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 3, periodMs: 60_000 }), store: new tk.RedisRestStore({ url: 'http://127.0.0.1:1', token: 't', timeoutMs: 300 }), failPolicy: 'fail_open' })
const f = await bad.check('k')
// A fallback's resetAt is read from the host's clock: only what it decided is compared.
out.push({ allowed: f.allowed, fallback: f.fallback })
console.log(JSON.stringify(out))
