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
