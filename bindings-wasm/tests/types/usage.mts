// Compiled (never run) by tests/dts.test.mjs: the uses of docs/edge.md type-check against the
// WebAssembly build's declarations under `strict`, and misuse does not.
import { Limiter, MemoryStore, MultiLimiter, RedisRestStore, Shaper, Strategy, type Decision, type MultiDecision, type Reservation } from '@throttlekit/core'
import { withRateLimit } from '@throttlekit/core/fetch'
import { rateLimit } from '@throttlekit/core/hono'
import { Hono } from 'hono'

const store = new RedisRestStore({ url: 'https://example.upstash.io', token: 't', timeoutMs: 1000, locking: 'keys' })
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 10, periodMs: 1000 }), store, failPolicy: 'fail_closed' })
const local = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }), store: new MemoryStore() })
const multi = new MultiLimiter({ rule: 'all', store, dimensions: [{ name: 'ip', strategy: Strategy.fixedWindow({ limit: 5, windowMs: 1000 }) }] })
const shaper = new Shaper({ ratePerSec: 10, maxQueueMs: 2000, store })
const reserved: Promise<Reservation> = shaper.reserve('user:42')
const url: string = store.url
const timeout: number = store.timeoutMs
void url, timeout, reserved

export default {
  fetch: withRateLimit((_r: Request) => new Response('ok'), { limiter, peer: (r) => r.headers.get('cf-connecting-ip') ?? undefined }),
}

const app = new Hono()
app.use(
  '/api/*',
  rateLimit({
    limiter: multi,
    key: (c) => c.req.header('x-api-key') ?? 'anonymous',
    failPolicy: 'fail_open',
    denyResponse: (c, d: Decision | MultiDecision) => c.json({ wait: d.retryAfterMs }, 429),
  }),
)
app.use(rateLimit({ limiter: local, shadow: true, onLimited: (e) => console.log(e.key, e.shadow) }))

// @ts-expect-error: a RedisRestStore needs a token
new RedisRestStore({ url: 'https://example.upstash.io' })
// @ts-expect-error: locking is 'global' or 'keys'
new RedisRestStore({ url: 'u', token: 't', locking: 'rows' })
// @ts-expect-error: the Hono middleware's key gets a Context, not a Request
rateLimit({ limiter, key: (r: Request) => r.url })
// @ts-expect-error: the failPolicy names
rateLimit({ limiter, failPolicy: 'sometimes' })
