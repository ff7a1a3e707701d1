// A Redis Cluster on the event loop's own sockets (lib/redis-cluster.js): one socket per
// master, each call sent where the core says (src/cluster.rs, `throttlekit::redis::routed`).
// Decisions equal the core's own path's, a slot moved behind the store's back (MOVED) and one
// mid-migration (ASK) are followed and the call runs once, on the right node, and a killed
// master's slots are served again by its promoted replica, every call answered within its
// timeout. One cluster of 3 masters and 3 replicas of its own (a master is killed), stopped by PID.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'

import { Limiter, RedisStore, Strategy } from '../index.mjs'
import { startRedisCluster } from './helpers/redis.mjs'

const ns = `tk-node-cl:${process.pid}:${Date.now()}`
let cluster
let ports

before(async () => {
  cluster = await startRedisCluster({ replicas: 1 })
  ports = cluster.urls.split(',').map((u) => Number(new URL(u).port))
})
after(async () => {
  await cluster?.stop()
})

const cli = (port, ...args) => execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).trim()

/** Script executions a node has run (EVALSHA, EVAL, FCALL; refused calls are not counted). */
function executions(port) {
  let n = 0
  for (const line of cli(port, 'info', 'commandstats').split('\n')) {
    const m = /^cmdstat_(evalsha|eval|fcall):calls=(\d+)/.exec(line)
    if (m) n += Number(m[2])
  }
  return n
}

function calls(port, command) {
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(cli(port, 'info', 'commandstats'))
  return m ? Number(m[1]) : 0
}

/** The live masters: [{id, port, slots: [[a, b]...]}]. */
function masters() {
  for (const p of ports) {
    let out
    try {
      out = cli(p, 'cluster', 'nodes')
    } catch {
      continue // a killed node
    }
    return out
      .split('\n')
      .map((l) => l.split(' '))
      // `fail` exactly: a master another node has not heard from for a moment is flagged
      // `fail?` (PFAIL) on a loaded machine, and it still owns its slots.
      .filter((f) => f[2].split(',').includes('master') && !f[2].split(',').includes('fail'))
      .map((f) => ({
        id: f[0],
        port: Number(f[1].split(/[:@]/)[1]),
        slots: f.slice(8).filter((r) => !r.startsWith('[')).map((r) => r.split('-').map(Number)),
      }))
  }
  throw new Error('no node answers')
}

function ownerAndOther(slot) {
  const ms = masters()
  const owner = ms.find((m) => m.slots.some(([a, b = a]) => a <= slot && slot <= b))
  return [owner, ms.find((m) => m.id !== owner.id)]
}

const keyslot = (key) => Number(cli(ports[0], 'cluster', 'keyslot', key))

/**
 * CLUSTER SETSLOT on the node at `port`, which must answer OK: redis-cli exits 0 on an error reply,
 * and a refused SETSLOT left the slot where it was (the test then read as a misrouted call).
 */
function setslot(port, ...args) {
  assert.equal(cli(port, 'cluster', 'setslot', ...args), 'OK', `SETSLOT ${args.join(' ')} on ${port}`)
}

function beginMigration(slot, from, to) {
  setslot(to.port, String(slot), 'importing', from.id)
  setslot(from.port, String(slot), 'migrating', to.id)
}

/** As the cluster spec says: the importing node first, then every other master. */
function endMigration(slot, to) {
  setslot(to.port, String(slot), 'node', to.id)
  for (const m of masters().filter((m) => m.port !== to.port)) setslot(m.port, String(slot), 'node', to.id)
}

/**
 * A key of `prefix` whose slot holds no key yet: SETSLOT NODE refuses to hand away a slot its
 * owner still holds keys in, and an earlier test's keys (about 50) share a slot with a given
 * name about once in 300 runs.
 */
function keyInEmptySlot(prefix, base) {
  for (let i = 0; ; i++) {
    const slot = keyslot(`${prefix}:${base}${i}`)
    const [owner] = ownerAndOther(slot)
    if (cli(owner.port, 'cluster', 'countkeysinslot', String(slot)) === '0') return `${base}${i}`
  }
}

/**
 * Fixed windows align to the epoch: a 60 s window can end between two calls of a test that counts
 * across them (the MOVED test expects remaining 4 then 3, and would read 4 twice). A day's window ends only at
 * midnight UTC.
 */
const DAY = 86_400_000

const connect = (options = {}) => RedisStore.connect({ urls: cluster.urls, mode: 'cluster', timeoutMs: 3000, ...options })

describe('a cluster store on the event loop\'s sockets', () => {
  test('takes the event-loop path and decides exactly as the core\'s own path', async () => {
    const store = await connect()
    assert.equal(store.eventLoopTransport, true)
    const strategy = Strategy.fixedWindow({ limit: 4, windowMs: DAY })
    const viaLoop = new Limiter({ strategy, store, prefix: `${ns}:eq1` })
    const viaCore = new Limiter({ strategy, store, prefix: `${ns}:eq2` })
    const keys = Array.from({ length: 24 }, (_, i) => `user:${i}`) // slots of all three masters
    const pick = (d) => [d.allowed, d.limit, d.remaining, d.fallback ?? false]
    for (let round = 0; round < 6; round++) {
      const loop = await Promise.all(keys.map((k) => viaLoop.check(k)))
      const core = keys.map((k) => viaCore.checkSync(k)) // the core's routed connections
      assert.deepEqual(loop.map(pick), core.map(pick), `round ${round}`)
      assert.deepEqual(await viaLoop.peek(keys[0]).then(pick), pick(viaCore.peekSync(keys[0])))
    }
    // Both paths share each key: the sync path sees what the Promise path charged.
    assert.equal(viaLoop.checkSync(keys[3]).allowed, false)
    await store.close()
    await assert.rejects(viaLoop.check('x'), { code: 'store_unavailable' })
  })

  test('MOVED (a slot handed to another master) and ASK (mid-migration) are followed; the call runs once, on the right node', async () => {
    const store = await connect()
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 5, windowMs: DAY }), store, prefix: `${ns}:r` })
    assert.equal((await l.check('warm')).allowed, true) // the map is read; sockets are open

    const movedKey = keyInEmptySlot(`${ns}:r`, 'moved')
    const moved = `${ns}:r:${movedKey}`
    let slot = keyslot(moved)
    let [from, to] = ownerAndOther(slot)
    beginMigration(slot, from, to)
    endMigration(slot, to)
    let [f0, t0] = [executions(from.port), executions(to.port)]
    let d = await l.check(movedKey)
    assert.deepEqual([d.allowed, d.remaining, d.fallback], [true, 4, undefined])
    assert.deepEqual([executions(from.port) - f0, executions(to.port) - t0], [0, 1], 'ran once, on the new owner')
    assert.equal(cli(to.port, 'exists', moved), '1')
    d = await l.check(movedKey) // the map learnt it: straight there
    assert.equal(d.remaining, 3)

    const askKey = keyInEmptySlot(`${ns}:r`, 'ask')
    slot = keyslot(`${ns}:r:${askKey}`)
    ;[from, to] = ownerAndOther(slot)
    beginMigration(slot, from, to)
    const asking = calls(to.port, 'asking')
    ;[f0, t0] = [executions(from.port), executions(to.port)]
    d = await l.check(askKey)
    assert.deepEqual([d.allowed, d.remaining, d.fallback], [true, 4, undefined])
    assert.deepEqual([executions(from.port) - f0, executions(to.port) - t0], [0, 1], 'ran once, on the target')
    assert.equal(calls(to.port, 'asking') - asking, 1)
    endMigration(slot, to)
    assert.equal((await l.check(askKey)).remaining, 3)
    await store.close()
  })

  test('a killed master: every call answers within its timeout, and its replica serves the slot once promoted', async () => {
    const timeoutMs = 2000
    const store = await connect({ timeoutMs })
    const l = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1e9, windowMs: DAY }), store, prefix: `${ns}:f` })
    const slot = keyslot(`${ns}:f:victim`)
    const [owner] = ownerAndOther(slot)
    assert.equal((await l.check('victim')).fallback, undefined)
    const pid = Number(/process_id:(\d+)/.exec(cli(owner.port, 'info', 'server'))[1])
    assert.ok(cluster.pids().includes(pid), 'only a node this test started is killed')
    process.kill(pid, 'SIGKILL')
    const started = Date.now()
    let served = null
    let slowest = 0
    let failed = 0
    while (Date.now() - started < 30_000) {
      const t0 = Date.now()
      const d = await l.check('victim').catch((e) => {
        assert.equal(e.code, 'store_unavailable') // the fail policy ('raise') answers, nothing else
        return null
      })
      slowest = Math.max(slowest, Date.now() - t0)
      if (d !== null) {
        served = d
        break
      }
      failed++
      await new Promise((r) => setTimeout(r, 50))
    }
    // The calls made before the replica was promoted failed fast (the socket to the dead master
    // was refused, the map still named it); the first after it went to the new master.
    assert.ok(failed > 0, 'the dead master was noticed')
    assert.ok(served !== null, 'the promoted replica serves the slot')
    assert.ok(slowest < timeoutMs + 1000, `every call answered within its timeout (slowest ${slowest} ms)`)
    const [now] = ownerAndOther(slot)
    assert.notEqual(now.port, owner.port)
    assert.equal(cli(now.port, 'exists', `${ns}:f:victim`), '1')
    await store.close()
  })
})
