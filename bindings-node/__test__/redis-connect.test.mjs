// Connecting: Redis Cluster from seed nodes, Sentinel, TLS with a throwaway CA and an ACL user,
// through the Promise and sync APIs and the conformance runner, and every bad option refused
// with config_invalid. One cluster, one Sentinel setup and one TLS server serve the whole suite
// (test.sh starts them; see helpers).
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { Limiter, MultiLimiter, RedisStore, Strategy } from '../index.mjs'
import { startRedis, startRedisCluster, startRedisSentinels, startRedisTls } from './helpers/redis.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const vectorsDir = join(here, '..', '..', 'conformance-vectors')
const vectors = readdirSync(vectorsDir).filter((f) => f.endsWith('.json')).map((f) => join(vectorsDir, f))
const runner = join(here, '..', 'bin', 'throttlekit-conformance.js')
const ns = `tk-node-connect:${process.pid}:${Date.now()}`
/**
 * The fixed windows below are a day long: they run on the system clock (Redis expires keys on its
 * own), and a window boundary between two checks of a test would start the count over. A test
 * of a few seconds meets one with a probability of about 1 in 20,000.
 */
const DAY = 86_400_000

let cluster
let sentinels
let tls
let plain

before(async () => {
  ;[cluster, sentinels, tls, plain] = await Promise.all([startRedisCluster(), startRedisSentinels(), startRedisTls(), startRedis()])
})
after(async () => {
  await cluster?.stop()
  await sentinels?.stop()
  await tls?.stop()
  await plain?.stop()
})

/** Runs the runner on every vectors file: {status, passed, failed, stderr}. */
function run(...args) {
  const r = spawnSync(process.execPath, [runner, ...args, ...vectors], { encoding: 'utf8', timeout: 300_000 })
  const m = /(\d+) passed, (\d+) failed\s*$/.exec(r.stdout)
  return { status: r.status, passed: m && Number(m[1]), failed: m && Number(m[2]), out: r.stdout.slice(-3000) + r.stderr }
}

describe('the runner', () => {
  test('replays every vectors file on a cluster and over TLS with no mismatch', () => {
    const memory = run('--store', 'memory')
    assert.equal(memory.status, 0, memory.out)
    assert.ok(memory.passed > 0)
    const onCluster = run('--store', 'redis-cluster', '--redis-url', cluster.urls)
    assert.deepEqual([onCluster.status, onCluster.passed, onCluster.failed], [0, memory.passed, 0], onCluster.out)
    const overTls = run('--store', 'redis', '--redis-url', tls.url, '--redis-tls-ca', join(tls.dir, 'ca.crt'))
    assert.deepEqual([overTls.status, overTls.passed, overTls.failed], [0, memory.passed, 0], overTls.out)
  })

  test('replays every vectors file through sentinels with no mismatch', () => {
    const memory = run('--store', 'memory')
    const r = run('--store', 'redis-sentinel', '--redis-url', sentinels.urls, '--redis-service-name', 'tkmain')
    assert.deepEqual([r.status, r.passed, r.failed], [0, memory.passed, 0], r.out)
  })

  test('exits 2 with config_invalid on a bad flag combination', () => {
    const r = run('--store', 'redis', '--redis-url', plain.url, '--redis-tls-ca', join(tls.dir, 'ca.crt'))
    assert.equal(r.status, 2, r.out)
    assert.match(r.out, /config_invalid: redis\.tls_ca_file/)
  })
})

describe('RedisStore.connect', () => {
  test('a cluster store shares each limit over every master, on the Promise and sync paths', async () => {
    const store = await RedisStore.connect({ urls: cluster.urls.split(','), mode: 'cluster', timeoutMs: 5000 })
    assert.equal(store.mode, 'cluster')
    assert.equal(store.url, cluster.urls)
    assert.equal(store.eventLoopTransport, true) // one event-loop socket per master, routed by the core
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 3, windowMs: DAY }), store, prefix: `${ns}:c` })
    const keys = Array.from({ length: 30 }, (_, i) => `user:${i}`) // slots of all three masters
    const ds = await Promise.all(keys.flatMap((k) => Array.from({ length: 5 }, () => l.check(k))))
    assert.equal(ds.filter((d) => d.allowed).length, 3 * keys.length)
    assert.equal(l.checkSync('user:0').allowed, false)
    assert.equal(l.checkSync('other').allowed, true)
    const m = new MultiLimiter({
      rule: 'all',
      dimensions: [
        { name: 'a', strategy: Strategy.fixedWindow({ limit: 2, windowMs: DAY }) },
        { name: 'b', strategy: Strategy.fixedWindow({ limit: 5, windowMs: DAY }) },
      ],
      store,
      prefix: `${ns}:m`,
    })
    const md = []
    for (let i = 0; i < 3; i++) md.push((await m.check(['x', 'y'])).allowed)
    assert.deepEqual(md, [true, true, false])
    await store.close()
  })

  test('TLS verifies against tlsCaFile; another CA is store_unavailable naming the certificate', async () => {
    const store = await RedisStore.connect({ url: tls.url, tlsCaFile: join(tls.dir, 'ca.crt'), timeoutMs: 5000 })
    assert.equal(store.eventLoopTransport, false) // verified by the core's rustls
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1, windowMs: DAY }), store, prefix: `${ns}:t` })
    assert.equal((await l.check('k')).allowed, true)
    assert.equal((await l.check('k')).allowed, false)
    await store.close()
    await assert.rejects(
      RedisStore.connect({ url: tls.url, tlsCaFile: join(tls.dir, 'other-ca.crt'), timeoutMs: 5000 }),
      (e) => e.code === 'store_unavailable' && /certificate/.test(e.message),
    )
    await assert.rejects(RedisStore.connect({ url: tls.url, timeoutMs: 5000 }), { code: 'store_unavailable' })
  })

  test('a Sentinel store finds the master, on the core\'s connections', async () => {
    const store = await RedisStore.connect({ urls: sentinels.urls, mode: 'sentinel', serviceName: 'tkmain', timeoutMs: 5000 })
    assert.equal(store.mode, 'sentinel')
    assert.equal(store.eventLoopTransport, false)
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: DAY }), store, prefix: `${ns}:s` })
    const ds = await Promise.all([l.check('k'), l.check('k'), l.check('k')])
    assert.deepEqual(ds.map((d) => d.allowed).sort(), [false, true, true])
    await store.close()
  })

  test('mutual TLS: tlsCertFile and tlsKeyFile are presented; without them the server refuses', async () => {
    const mtls = await startRedisTls({ mutual: true })
    try {
      const files = { tlsCaFile: join(mtls.dir, 'ca.crt'), tlsCertFile: join(mtls.dir, 'client.crt'), tlsKeyFile: join(mtls.dir, 'client.key') }
      const store = await RedisStore.connect({ url: mtls.url, ...files, timeoutMs: 5000 })
      const strategy = Strategy.fixedWindow({ limit: 1, windowMs: DAY })
      const l = new Limiter({ strategy, store, prefix: `${ns}:mtls` })
      assert.deepEqual([(await l.check('k')).allowed, (await l.check('k')).allowed], [true, false])
      await store.close()
      await assert.rejects(async () => {
        const bare = await RedisStore.connect({ url: mtls.url, tlsCaFile: files.tlsCaFile, timeoutMs: 5000 })
        await new Limiter({ strategy, store: bare, prefix: `${ns}:mtls` }).check('k')
      }, { code: 'store_unavailable' })
    } finally {
      await mtls.stop()
    }
  })

  test('a standalone plaintext store keeps the event-loop transport', async () => {
    const store = await RedisStore.connect({ urls: plain.url })
    assert.equal(store.mode, 'standalone')
    assert.equal(store.eventLoopTransport, true)
    await store.close()
  })

  for (const [options, named] of [
    [{ url: 'redis://127.0.0.1:1', mode: 'Cluster' }, 'redis.mode'],
    [{ url: 'redis://127.0.0.1:1', scripting: 'lua' }, 'redis.scripting'],
    [{ url: 'redis://127.0.0.1:1', tlsCaFile: '/etc/hostname' }, 'redis.tls_ca_file'],
    [{ url: 'rediss://127.0.0.1:1', tlsCaFile: '/nonexistent.pem' }, 'redis.tls_ca_file'],
    [{ url: 'rediss://127.0.0.1:1', tlsCertFile: '/etc/hostname' }, 'redis.tls_key_file'],
    [{ url: 'redis://127.0.0.1:1', mode: 'sentinel' }, 'redis.service_name'],
    [{ url: 'redis://127.0.0.1:1', serviceName: 'main' }, 'redis.service_name'],
    [{ urls: ['redis://u:secret@127.0.0.1:1', 'redis://127.0.0.1:2'] }, 'redis.urls'],
    [{ urls: [], mode: 'cluster' }, 'redis.urls'],
    [{ url: 'http://127.0.0.1:1' }, 'redis.urls'],
    [{ url: 'redis://127.0.0.1:1', urls: 'redis://127.0.0.1:1' }, 'redisStore.urls'],
    [{}, 'redisStore.urls'],
    [{ urls: 5 }, 'redisStore.urls'],
    [{ url: 'redis://127.0.0.1:1', mode: 1 }, 'redisStore.mode'],
    [{ url: 'redis://127.0.0.1:1', tlsCa: 'x' }, 'redisStore.tlsCa'],
  ]) {
    test(`refuses ${JSON.stringify(options)} with config_invalid naming ${named}`, async () => {
      await assert.rejects(RedisStore.connect(options), (e) => {
        assert.equal(e.code, 'config_invalid', e.message)
        assert.ok(e.message.includes(named), `${e.message} should name ${named}`)
        assert.ok(!e.message.includes('secret'), e.message)
        return true
      })
    })
  }
})

/** The smallest ACL of docs/redis.md (scripting auto), for `prefix` and `password`. */
function documentedAclRules(prefix, password) {
  const text = readFileSync(join(here, '..', '..', 'docs', 'redis.md'), 'utf8')
  const line = text.split('\n').find((l) => l.startsWith('ACL SETUSER throttlekit >PASSWORD '))
  const rules = line.split(/\s+/).slice(3)
  assert.ok(rules.includes('~api:*'), line)
  return [`>${password}`, ...rules.map((r) => (r === '~api:*' ? `~${prefix}:*` : r))]
}

/** The same for `scripting: 'functions'`: the page says to drop `+evalsha +eval`. */
function documentedFunctionsOnlyAclRules(prefix, password) {
  const rules = documentedAclRules(prefix, password)
  assert.ok(rules.includes('+evalsha') && rules.includes('+eval'))
  return rules.filter((r) => r !== '+evalsha' && r !== '+eval')
}

describe('an ACL user', () => {
  test('with exactly the documented rules runs limiters on both Promise paths and sync', async () => {
    const port = new URL(plain.url).port
    const user = `tk-node-${process.pid}`
    const password = `pw${Date.now()}`
    const prefix = `${ns}:acl`
    execFileSync('redis-cli', ['-p', port, 'ACL', 'SETUSER', user, ...documentedAclRules(prefix, password)])
    try {
      const url = `redis://${user}:${password}@127.0.0.1:${port}`
      const store = await RedisStore.connect({ url, timeoutMs: 5000 })
      assert.equal(store.eventLoopTransport, true) // AUTH in the event-loop socket's handshake
      const strategy = Strategy.fixedWindow({ limit: 2, windowMs: DAY })
      const l = new Limiter({ strategy, store, prefix })
      const ds = await Promise.all([l.check('k'), l.check('k'), l.check('k')])
      assert.deepEqual(ds.map((d) => d.allowed).sort(), [false, true, true])
      assert.equal(l.checkSync('k').allowed, false)
      const outside = new Limiter({ strategy, store, prefix: 'not-granted' })
      await assert.rejects(outside.check('k'), { code: 'store_unavailable' }) // NOPERM
      await store.close()
      await assert.rejects(RedisStore.connect({ url: `redis://${user}:wrong@127.0.0.1:${port}`, timeoutMs: 5000 }), { code: 'store_unavailable' })
    } finally {
      execFileSync('redis-cli', ['-p', port, 'ACL', 'DELUSER', user])
    }
  })

  test("allowed functions only, with scripting: 'functions' the Promise methods send FCALL", async () => {
    const port = new URL(plain.url).port
    const user = `tk-node-fn-${process.pid}`
    const password = `pw${Date.now()}`
    const prefix = `${ns}:aclfn`
    execFileSync('redis-cli', ['-p', port, 'ACL', 'SETUSER', user, ...documentedFunctionsOnlyAclRules(prefix, password)])
    try {
      const store = await RedisStore.connect({ url: `redis://${user}:${password}@127.0.0.1:${port}`, scripting: 'functions', timeoutMs: 5000 })
      assert.equal(store.eventLoopTransport, false) // the event-loop socket would send EVALSHA
      const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: DAY }), store, prefix })
      const ds = await Promise.all([l.check('k'), l.check('k'), l.check('k')])
      assert.deepEqual(ds.map((d) => d.allowed).sort(), [false, true, true])
      await l.reset('k')
      await store.close()
    } finally {
      execFileSync('redis-cli', ['-p', port, 'ACL', 'DELUSER', user])
    }
  })
})
