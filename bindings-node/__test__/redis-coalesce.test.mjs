// lib/redis-transport.js coalesces writes: a call made while the server owes us nothing is
// written at once; calls made while replies are due are corked and leave every BATCH calls and
// at the end of the tick. Checked on a recording socket, so the order of the socket calls is
// exact (no Redis needed).
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { test } from 'node:test'

const require = createRequire(import.meta.url)
const { Transport, BATCH } = require('../lib/redis-transport.js')

function recordingTransport() {
  const log = []
  const socket = {
    write: (b) => log.push(`write ${b}`),
    cork: () => log.push('cork'),
    uncork: () => log.push('uncork'),
    ref() {},
    unref() {},
    destroy() {},
  }
  const t = new Transport({ timeoutMs: 60_000, handshakeReplies: 0, preloadReplies: 0, retryReplies: 1 }, Buffer.alloc(0))
  t.socket = socket
  return { t, socket, log }
}

const tick = () => new Promise((resolve) => process.nextTick(resolve))
const call = (t, i) => t.request({ finish: (frame) => `${i}:${frame}`, eval: () => null }, Buffer.from(`c${i}`))
const replies = (n) => Buffer.from(':1\r\n'.repeat(n))

test('a call made while no reply is due is written at once; the calls after it in the tick are corked', async () => {
  const { t, socket, log } = recordingTransport()
  const calls = [0, 1, 2].map((i) => call(t, i))
  assert.deepEqual(log, ['write c0', 'cork', 'write c1', 'write c2'])
  await tick()
  assert.deepEqual(log, ['write c0', 'cork', 'write c1', 'write c2', 'uncork'])
  // Replies are matched in order.
  t.onData(socket, Buffer.from(':7\r\n:8\r\n:9\r\n'))
  assert.deepEqual(await Promise.all(calls), ['0::7\r\n', '1::8\r\n', '2::9\r\n'])
  // Every reply is in: the next call goes at once again, and one made while it is due is corked.
  const later = [3, 4].map((i) => call(t, i))
  await tick()
  assert.deepEqual(log.slice(5), ['write c3', 'cork', 'write c4', 'uncork'])
  t.onData(socket, replies(2))
  assert.deepEqual(await Promise.all(later), ['3::1\r\n', '4::1\r\n'])
})

test('sequential calls (each made after the last reply) never cork', async () => {
  const { t, socket, log } = recordingTransport()
  for (let i = 0; i < 3; i++) {
    const p = call(t, i)
    t.onData(socket, replies(1))
    assert.equal(await p, `${i}::1\r\n`)
  }
  assert.deepEqual(log, ['write c0', 'write c1', 'write c2'])
})

test(`corked calls leave every ${BATCH} calls within a tick, the rest at its end, all in order`, async () => {
  const { t, socket, log } = recordingTransport()
  const n = 1 + 2 * BATCH + 3
  const calls = Array.from({ length: n }, (_, i) => call(t, i))
  const writes = (from, to) => Array.from({ length: to - from }, (_, k) => `write c${from + k}`)
  // c0 at once; then BATCH corked calls per flush (uncork, cork again), and the last three at the tick's end.
  const flushed = ['write c0', 'cork', ...writes(1, 1 + BATCH), 'uncork', 'cork', ...writes(1 + BATCH, 1 + 2 * BATCH), 'uncork', 'cork']
  assert.deepEqual(log, [...flushed, ...writes(1 + 2 * BATCH, n)])
  await tick()
  assert.deepEqual(log, [...flushed, ...writes(1 + 2 * BATCH, n), 'uncork'])
  t.onData(socket, replies(n))
  const answers = await Promise.all(calls)
  assert.deepEqual(answers, Array.from({ length: n }, (_, i) => `${i}::1\r\n`))
})

test("replies are read by the core's scanner: RESP3 pushes are passed over, a split frame waits for its bytes", async () => {
  const { t, socket } = recordingTransport()
  const calls = [0, 1, 2].map((i) => call(t, i))
  const push = '>3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n$0\r\n\r\n'
  const map = '%1\r\n+k\r\n:5\r\n'
  // A push before the first reply, one inside the second read, and a RESP3 map split across reads.
  t.onData(socket, Buffer.from(`${push}:7\r\n${push}%1\r\n+k`))
  t.onData(socket, Buffer.from(`\r\n:5\r\n${push}*2\r\n:1\r\n`))
  t.onData(socket, Buffer.from(`:2\r\n${push}`))
  assert.deepEqual(await Promise.all(calls), ['0::7\r\n', `1:${map}`, '2:*2\r\n:1\r\n:2\r\n'])
  assert.equal(t.buf, null, 'every byte read, the trailing push included')
})

test('bytes that start no RESP frame drop the connection; the calls on it fail', async () => {
  const { t, socket } = recordingTransport()
  let destroyed = null
  socket.destroy = (e) => {
    destroyed = e
    t.lost(socket, 'gone')
  }
  const p = t.request({ finish: (frame, error) => `${frame}|${error}`, eval: () => null }, Buffer.from('c'))
  t.onData(socket, Buffer.from('HTTP/1.1 400 Bad Request\r\n'))
  assert.match(destroyed.message, /no RESP reply/)
  assert.equal(await p, 'null|gone')
})

// A cluster's sockets (lib/redis-cluster.js): a call goes at once only when nothing is due on
// any of them, corked calls leave every BATCH calls as on one server, and the rest at the end of
// the event loop's turn (setImmediate), so the calls that several sockets' replies release in
// one wake-up reach each master in one write.
const { ClusterTransport } = require('../lib/redis-cluster.js')

function recordingCluster(masters) {
  const log = []
  const natives = { node: () => null, handshake: () => Buffer.alloc(0), reroute() {}, lost() {} }
  const c = new ClusterTransport({ timeoutMs: 60_000 }, null, natives)
  const sockets = []
  for (let id = 0; id < masters; id++) {
    const socket = {
      write: (b) => log.push(`${id} write ${b}`),
      cork: () => log.push(`${id} cork`),
      uncork: () => log.push(`${id} uncork`),
      ref() {},
      unref() {},
      destroy() {},
    }
    const t = new Transport({ timeoutMs: 60_000, handshakeReplies: 0, preloadReplies: 0, retryReplies: 1 }, Buffer.alloc(0), c, id)
    t.socket = socket
    c.nodes[id] = t
    sockets.push(socket)
  }
  return { c, log, sockets }
}

const clusterCall = (c, i, node) =>
  c.request({ finish: (frame) => `${i}:${frame}`, follow: () => null, eval: () => null }, Buffer.from(`c${i}`), node, 0)
const turn = () => new Promise((resolve) => setImmediate(resolve))

test('on a cluster, sequential calls (nothing due on any master) never cork', async () => {
  const { c, log, sockets } = recordingCluster(3)
  for (let i = 0; i < 6; i++) {
    const p = clusterCall(c, i, i % 3)
    c.nodes[i % 3].onData(sockets[i % 3], replies(1))
    assert.equal(await p, `${i}::1\r\n`)
  }
  assert.deepEqual(log, ['0 write c0', '1 write c1', '2 write c2', '0 write c3', '1 write c4', '2 write c5'])
  assert.equal(c.pending, 0)
})

test('on a cluster, calls made while any master owes a reply leave at the end of the turn, one write per master', async () => {
  const { c, log, sockets } = recordingCluster(3)
  const first = clusterCall(c, 0, 0) // nothing due anywhere: at once
  // Master 1 owes nothing, but master 0 does: corked, and not flushed at the end of the tick.
  const calls = [first, clusterCall(c, 1, 1), clusterCall(c, 2, 2), clusterCall(c, 3, 1), clusterCall(c, 4, 0)]
  await tick()
  assert.deepEqual(log, ['0 write c0', '1 cork', '1 write c1', '2 cork', '2 write c2', '1 write c3', '0 cork', '0 write c4'])
  await turn()
  assert.deepEqual(log.slice(8), ['1 uncork', '2 uncork', '0 uncork'])
  assert.equal(c.pending, 5)
  // Two masters' replies in one turn (two I/O callbacks, each followed by its continuations):
  // the calls both release reach each master in one write, at the turn's end.
  c.nodes[1].onData(sockets[1], replies(2))
  assert.deepEqual(await Promise.all([calls[1], calls[3]]), ['1::1\r\n', '3::1\r\n'])
  const more = [clusterCall(c, 5, 2), clusterCall(c, 6, 1)]
  await tick()
  c.nodes[2].onData(sockets[2], replies(1))
  assert.equal(await calls[2], '2::1\r\n')
  more.push(clusterCall(c, 7, 2), clusterCall(c, 8, 1))
  await tick()
  assert.deepEqual(log.slice(11), ['2 cork', '2 write c5', '1 cork', '1 write c6', '2 write c7', '1 write c8'])
  await turn()
  assert.deepEqual(log.slice(17), ['2 uncork', '1 uncork'])
  // Every reply in, in order per master; nothing due: the next call goes at once again.
  c.nodes[0].onData(sockets[0], replies(2))
  c.nodes[1].onData(sockets[1], Buffer.from(':6\r\n:8\r\n'))
  c.nodes[2].onData(sockets[2], Buffer.from(':5\r\n:7\r\n'))
  assert.deepEqual(await Promise.all([...calls, ...more]), ['0::1\r\n', '1::1\r\n', '2::1\r\n', '3::1\r\n', '4::1\r\n', '5::5\r\n', '6::6\r\n', '7::7\r\n', '8::8\r\n'])
  assert.equal(c.pending, 0)
  const last = clusterCall(c, 9, 2)
  assert.deepEqual(log.slice(19), ['2 write c9'])
  c.nodes[2].onData(sockets[2], replies(1))
  assert.equal(await last, '9::1\r\n')
})

test(`on a cluster, a master's corked calls leave every ${BATCH} calls within a turn, the rest at its end`, async () => {
  const { c, log, sockets } = recordingCluster(2)
  const n = 1 + BATCH + 2
  const calls = Array.from({ length: n }, (_, i) => clusterCall(c, i, 1))
  const writes = (from, to) => Array.from({ length: to - from }, (_, k) => `1 write c${from + k}`)
  assert.deepEqual(log, ['1 write c0', '1 cork', ...writes(1, 1 + BATCH), '1 uncork', '1 cork', ...writes(1 + BATCH, n)])
  await tick()
  assert.equal(log.at(-1), `1 write c${n - 1}`, 'the rest waits for the turn')
  await turn()
  assert.equal(log.at(-1), '1 uncork')
  c.nodes[1].onData(sockets[1], replies(n))
  assert.deepEqual(await Promise.all(calls), Array.from({ length: n }, (_, i) => `${i}::1\r\n`))
  assert.equal(c.pending, 0)
})

// A standalone socket's sequential calls are written by the native prepare itself
// (Transport#direct hands it the descriptor, src/redis_fast.rs `send_now`), then handed to
// `request` with no bytes. The descriptor is handed out only when the call would go at once
// anyway and the socket is still the connected one with nothing of ours queued.
test('direct(): the descriptor only while nothing is due, queued, corked, closing or destroyed', async () => {
  const { t, socket, log } = recordingTransport()
  Object.assign(socket, { destroyed: false, connecting: false, writableLength: 0 })
  assert.equal(t.direct(), -1, 'no descriptor before the connection is made')
  t.fd = 7
  assert.equal(t.direct(), 7)
  // Written already: a slot on the wire, nothing written through the socket.
  const first = t.request({ finish: (frame) => `0:${frame}`, eval: () => null }, null)
  assert.deepEqual(log, [])
  assert.equal(t.direct(), -1, 'a reply is due')
  // A call made while that reply is due is corked as before, after the direct one.
  const second = call(t, 1)
  assert.deepEqual(log, ['cork', 'write c1'])
  assert.equal(t.direct(), -1)
  await tick()
  t.onData(socket, replies(2))
  assert.deepEqual(await Promise.all([first, second]), ['0::1\r\n', '1::1\r\n'])
  assert.equal(t.direct(), 7, 'every reply in')
  for (const [field, value] of [['writableLength', 3], ['destroyed', true], ['connecting', true]]) {
    socket[field] = value
    assert.equal(t.direct(), -1, field)
    socket[field] = field === 'writableLength' ? 0 : false
  }
  t.corked = true
  assert.equal(t.direct(), -1, 'corked')
  t.corked = false
  t.close()
  assert.equal(t.direct(), -1, 'closing')
})

test('a reply split across two reads of the shared read buffer is copied out before the next read', async () => {
  const { t, socket } = recordingTransport()
  const p = [call(t, 0), call(t, 1)]
  const shared = Buffer.alloc(16)
  const read = (text) => {
    shared.fill(0x78) // whatever the last read left
    const n = shared.write(text, 'latin1')
    t.onData(socket, shared.subarray(0, n), true)
  }
  read(':11\r\n:2') // the second frame incomplete
  read('2\r\n') // overwrites the buffer the first read used
  assert.deepEqual(await Promise.all(p), ['0::11\r\n', '1::22\r\n'])
})
