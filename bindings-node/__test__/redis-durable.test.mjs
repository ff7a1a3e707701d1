// Durable charges (`durableReplicas`, `durableTimeoutMs`) and passworded sentinels
// (`sentinelPassword`, `sentinelUsername`): the options reach core and core's answers reach
// JavaScript. The semantics are core's (core/tests/redis_durable.rs, redis_sentinel.rs); these
// tests prove the mapping against real servers: a private server with no replica, and a Sentinel
// setup of its own (master + replica) whose sentinels require a password.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '../index.mjs'
import { spawnRedis, startRedisSentinels } from './helpers/redis.mjs'

const ns = `tk-node-durable:${process.pid}:${Date.now()}`
// A day's window on the system clock: a window boundary between a test's checks (around a
// sentinel's failover or a replica's acknowledgement) would start the count over; a test of a few
// seconds meets one with a probability of about 1 in 20,000.
const strategy = Strategy.fixedWindow({ limit: 3, windowMs: 86_400_000 })

let lonely
let sentinels

before(async () => {
  ;[lonely, sentinels] = await Promise.all([spawnRedis(), startRedisSentinels({ password: 'spw' })])
})
after(async () => {
  await lonely?.stop()
  await sentinels?.stop()
})

describe('durable charges and passworded sentinels', () => {
  test('without a replica a durable charge is store_unavailable within its timeout, on both paths', async () => {
    const store = await RedisStore.connect({ url: lonely.url, timeoutMs: 1000, durableReplicas: 1, durableTimeoutMs: 100 })
    // WAIT rides after core's script call: the event loop's own socket is not used.
    assert.equal(store.eventLoopTransport, false)
    const l = new Limiter({ strategy, store, prefix: `${ns}:lonely`, failPolicy: 'raise' })
    for (const call of [() => l.checkSync('k'), () => l.check('k')]) {
      const start = performance.now()
      await assert.rejects(async () => call(), (e) => {
        assert.equal(e.code, 'store_unavailable', e.message)
        assert.ok(e.message.includes('0 of 1 replicas') && e.message.includes('durable_replicas'), e.message)
        return true
      })
      const took = performance.now() - start
      assert.ok(took >= 100 && took < 1000 + 100, `took ${took} ms`)
    }
    const open = new Limiter({ strategy, store, prefix: `${ns}:lonely`, failPolicy: 'fail_open' })
    const d = await open.check('k')
    assert.ok(d.allowed && d.fallback)
    // The script ran twice for the raising limiter and once more here: charged, not durable.
    assert.match(lonely.cli('info', 'commandstats'), /cmdstat_wait:calls=3,/)
    await store.close()
  })

  test('passworded sentinels need sentinelPassword; with a replica a durable charge is admitted', async () => {
    const base = { urls: sentinels.urls, mode: 'sentinel', serviceName: 'tkmain', timeoutMs: 2000 }
    await assert.rejects(RedisStore.connect(base), (e) => {
      assert.equal(e.code, 'store_unavailable', e.message)
      assert.ok(/NOAUTH|uthentication/.test(e.message), e.message)
      assert.ok(!e.message.includes('spw'), e.message)
      return true
    })
    await assert.rejects(RedisStore.connect({ ...base, sentinelPassword: 'nope' }), (e) => e.code === 'store_unavailable')
    // A generous WAIT timeout: on a loaded machine the replica's acknowledgement can take a while.
    const store = await RedisStore.connect({ ...base, timeoutMs: 5000, sentinelPassword: 'spw', durableReplicas: 1, durableTimeoutMs: 4000 })
    const l = new Limiter({ strategy, store, prefix: `${ns}:sentinel`, failPolicy: 'raise' })
    const got = []
    for (let i = 0; i < 4; i++) got.push((await l.check('k')).allowed)
    assert.deepEqual(got, [true, true, true, false])
    assert.equal(l.checkSync('k2').allowed, true)
    const named = await RedisStore.connect({ ...base, sentinelUsername: 'default', sentinelPassword: 'spw' })
    assert.equal(new Limiter({ strategy, store: named, prefix: `${ns}:sentinel` }).checkSync('k').allowed, false)
    await store.close()
    await named.close()
  })

  for (const [options, named] of [
    [{ durableReplicas: 65 }, 'redis.durable_replicas'],
    [{ durableReplicas: 2 ** 40 }, 'redis.durable_replicas'],
    [{ durableReplicas: -1 }, 'durableReplicas'],
    [{ durableReplicas: 1.5 }, 'durableReplicas'],
    [{ durableReplicas: 1, durableTimeoutMs: 0 }, 'redis.durable_timeout_ms'],
    [{ durableReplicas: 1, timeoutMs: 100, durableTimeoutMs: 100 }, 'redis.durable_timeout_ms'],
    [{ durableReplicas: 1, deterministicReplay: true }, 'redis.durable_replicas'],
    [{ durableReplicas: '1' }, 'durableReplicas'],
    [{ sentinelPassword: 'pw' }, 'redis.sentinel_password'],
    [{ sentinelPassword: 5 }, 'sentinelPassword'],
    [{ mode: 'sentinel', serviceName: 'm', sentinelUsername: 'u' }, 'redis.sentinel_password'],
  ]) {
    test(`refuses ${JSON.stringify(options)} with config_invalid naming ${named}`, async () => {
      await assert.rejects(RedisStore.connect({ url: 'redis://127.0.0.1:1', ...options }), (e) => {
        assert.equal(e.code, 'config_invalid', e.message)
        assert.ok(e.message.includes(named), `${e.message} should name ${named}`)
        return true
      })
    })
  }
})
