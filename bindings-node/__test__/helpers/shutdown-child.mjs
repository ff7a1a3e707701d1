// The Node child of the shutdown-hygiene check (tests/shutdown.sh): uses a RedisStore from
// checkSync and Promise checks, closes it, releases it, says `closed`, and exits when told to
// (with nothing keeping the event loop alive, it ends by itself once stdin closes).
import { Limiter, RedisStore, Strategy } from '../../index.mjs'

let store = await RedisStore.connect({ url: process.env.THROTTLEKIT_REDIS_URL })
let limiter = new Limiter({ strategy: Strategy.gcra({ limit: 100, periodMs: 1000 }), store, prefix: 'shutdown' })
for (let i = 0; i < 10; i++) {
  limiter.checkSync('k' + i)
  await limiter.check('k' + i)
}
console.log('working')
const lines = (async function* () {
  let buf = ''
  for await (const chunk of process.stdin) {
    buf += chunk
    while (buf.includes('\n')) {
      yield buf.slice(0, buf.indexOf('\n'))
      buf = buf.slice(buf.indexOf('\n') + 1)
    }
  }
})()
await lines.next()
await store.close()
// close() alone leaves one connection of core's store open (docs/hardening.md); the last
// reference going releases everything: drop them and let the collector run the finalizers.
store = limiter = null
for (let i = 0; i < 5; i++) {
  global.gc()
  await new Promise((resolve) => setTimeout(resolve, 20))
}
console.log('closed')
await lines.next()
