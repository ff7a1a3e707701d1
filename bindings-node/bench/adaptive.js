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
console.log(`node ${process.version}: tryAcquire + release ${us.toFixed(2)} us (N=${N})`)
console.log(
  `ROW\tadaptive acquire + release through Node (napi)\t1000 ns target\t${(1 / us).toFixed(2)}\t>=1\t${Math.round(us * 1000)} ns per tryAcquire + release`
)
