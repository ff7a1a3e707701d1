// The adaptive limiter's tryAcquire + release through the Node binding, against issue #35's
// 1 µs per binding (docs/adaptive.md, "Speed"). Prints a `ROW` line for bench/summarize.py.
//
//   node bindings-node/bench/adaptive.js [N]      (after bench/run.sh's node part built the release addon)
'use strict'
const { AdaptiveLimiter } = require('@throttlekit/core')

const N = Number(process.argv[2] || 500000)
const limiter = new AdaptiveLimiter({ algorithm: 'gradient2', initialLimit: 64, minLimit: 64, minRttUs: 0 })

function perCallUs(fn, n) {
  for (let i = 0; i < n / 10; i++) fn()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) fn()
  return Number(process.hrtime.bigint() - t0) / n / 1000
}

const us = perCallUs(() => limiter.tryAcquire().release('success'), N)
if (limiter.inflight() !== 0) throw new Error(`inflight ${limiter.inflight()} after the loop`)
// Where the time goes, in the same run: a napi-rs method that makes no object (tryAcquire and
// release skip napi-rs: src/adaptive_fast.rs), and tryAcquire and release apart (M permits held
// on a limiter with room for them, then released; the collected Permits' FinalizationRegistry
// callbacks run later, outside both).
const limitUs = perCallUs(() => limiter.limit(), N)
const M = 1000
const wide = new AdaptiveLimiter({ algorithm: 'fixed', initialLimit: M, maxLimit: M })
let acquireNs = 0n
let releaseNs = 0n
const permits = new Array(M)
for (let round = 0; round < N / M; round++) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < M; i++) permits[i] = wide.tryAcquire()
  const t1 = process.hrtime.bigint()
  for (let i = 0; i < M; i++) permits[i].release('success')
  releaseNs += process.hrtime.bigint() - t1
  acquireNs += t1 - t0
}
const ops = Math.floor(N / M) * M
console.log(`node ${process.version}: tryAcquire + release ${us.toFixed(2)} us (N=${N})`)
console.log(`  limit() (a napi-rs method, makes no object)    ${limitUs.toFixed(2)} us`)
console.log(`  tryAcquire alone (a Permit object per call)    ${(Number(acquireNs) / ops / 1000).toFixed(2)} us`)
console.log(`  release('success') alone                       ${(Number(releaseNs) / ops / 1000).toFixed(2)} us`)
console.log(
  `ROW\tadaptive acquire + release through Node (napi)\t1000 ns target\t${(1 / us).toFixed(2)}\t>=1\t${Math.round(us * 1000)} ns per tryAcquire + release`
)
