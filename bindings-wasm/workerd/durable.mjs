// A Cloudflare Worker with a namespace of `ThrottlekitObject`s (`env.LIMITER`) for the Durable
// Object store's tests (tests/durable-object.test.mjs, which serves it with workerd):
//   POST /burst  {spec, key, n, shards, now}: n checks of `key` at once (n 0: one peek), through
//                one DurableObjectStore, at `now` if given; answers the decisions (or the first error)
//   POST /sweep  {key}: sweeps `key`'s object (its alarm's work) (one object per key)
//   POST /alarm  {key, inMs}: `key`'s object's alarm time (null: none), after moving it to `inMs`
//                from now if given (so a test need not wait the hour a planned sweep waits)
//   POST /replay?shards=N  a vectors file: its rate-limit suites replayed through the store (the
//                multi and shaper suites need a MemoryStore or Redis); answers {passed, failed,
//                failures, suites}
//   POST /reset  {key, shards}: forgets `key`; answers a peek of it afterwards
import conformance from './lib/conformance.js'
import * as tk from './wasm/workerd.mjs'

import { ThrottlekitObject as Shipped } from './wasm/durable-object.mjs'

/** The package's class, plus a look at (and a hand on) the alarm it plans, for /alarm. */
export class ThrottlekitObject extends Shipped {
  async alarmAt(inMs) {
    if (inMs !== undefined) await this.ctx.storage.setAlarm(Date.now() + inMs)
    return this.ctx.storage.getAlarm()
  }
}

const store = (env, shards) => new tk.DurableObjectStore({ namespace: env.LIMITER, shards: shards ?? undefined })

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    try {
      if (url.pathname === '/burst') {
        const { spec, key, n, shards, now } = await request.json()
        const clock = now === undefined ? undefined : new tk.ManualClock(now)
        const limiter = new tk.Limiter({ strategy: spec, store: store(env, shards), failPolicy: 'raise', clock })
        const op = n === 0 ? () => limiter.peek(key) : () => limiter.check(key)
        return Response.json(await Promise.all(Array.from({ length: Math.max(n, 1) }, op)))
      }
      if (url.pathname === '/sweep') {
        const { key } = await request.json()
        await env.LIMITER.get(env.LIMITER.idFromName(key)).sweep()
        return Response.json({})
      }
      if (url.pathname === '/alarm') {
        const { key, inMs } = await request.json()
        return Response.json({ at: await env.LIMITER.get(env.LIMITER.idFromName(key)).alarmAt(inMs) })
      }
      if (url.pathname === '/reset') {
        const { spec, key, shards } = await request.json()
        const limiter = new tk.Limiter({ strategy: spec, store: store(env, shards), failPolicy: 'raise' })
        await limiter.reset(key)
        return Response.json(await limiter.peek(key))
      }
      if (url.pathname === '/replay') {
        const file = conformance.parse(await request.text(), 'posted')
        file.suites = file.suites.filter((s) => (s.primitive ?? 'rateLimit') === 'rateLimit')
        const shards = url.searchParams.has('shards') ? Number(url.searchParams.get('shards')) : undefined
        const report = await conformance.replay(file, { shared: store(env, shards), api: tk })
        return Response.json({ ...report, suites: file.suites.length })
      }
      return new Response('not found\n', { status: 404 })
    } catch (e) {
      return Response.json({ code: e.code ?? 'error', message: e.message }, { status: 500 })
    }
  },
}
