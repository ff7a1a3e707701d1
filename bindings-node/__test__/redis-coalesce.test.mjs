// lib/redis-transport.js coalesces a tick's writes (cork on the first, uncork on the next tick):
// checked on a recording socket, so the order of the socket calls is exact (no Redis needed).
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { test } from 'node:test'

const require = createRequire(import.meta.url)
const { Transport } = require('../lib/redis-transport.js')

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

test("a tick's calls leave in one corked batch, in order; the next tick starts a new one", async () => {
  const { t, socket, log } = recordingTransport()
  const calls = [0, 1, 2].map((i) => t.request({ finish: (frame) => `${i}:${frame}`, eval: () => null }, Buffer.from(`c${i}`)))
  assert.deepEqual(log, ['cork', 'write c0', 'write c1', 'write c2'])
  await new Promise((resolve) => process.nextTick(resolve))
  assert.deepEqual(log, ['cork', 'write c0', 'write c1', 'write c2', 'uncork'])
  // Replies are matched in order.
  t.onData(socket, Buffer.from(':7\r\n:8\r\n:9\r\n'))
  assert.deepEqual(await Promise.all(calls), ['0::7\r\n', '1::8\r\n', '2::9\r\n'])
  // A later tick corks again, once.
  const later = [3, 4].map((i) => t.request({ finish: () => i, eval: () => null }, Buffer.from(`c${i}`)))
  await new Promise((resolve) => process.nextTick(resolve))
  assert.deepEqual(log.slice(5), ['cork', 'write c3', 'write c4', 'uncork'])
  t.onData(socket, Buffer.from(':1\r\n:1\r\n'))
  assert.deepEqual(await Promise.all(later), [3, 4])
})
