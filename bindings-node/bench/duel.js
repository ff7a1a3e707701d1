'use strict'
// Paired rounds and CPU per call for the Node Redis benches (bench.js, bench/cluster/node_cluster.js),
// as core/benches/support/placement.rs measures the Rust rows:
//
// - Every side of a row runs once off the clock (connections, scripts, JIT), then in rounds; in
//   each round every side runs back to back, who goes first rotating with the round, so a drift
//   over the run or a neighbour's burst favours no side. The row's ratio is the median of the
//   rounds' ratios, printed with each round's and their spread ((max - min) / median).
// - Beside each rate, the CPU a call cost the client (this process, every thread:
//   `process.cpuUsage`) and the Redis servers (every thread: `/proc/PID/task/*/schedstat`, when
//   their pid files are known). On a shared machine the rates move with the neighbours, the CPU
//   per call much less; pinned to one CPU (placement.sh), a row's rate is about one over the sum.
const fs = require('node:fs')

/** The PIDs in the pid files `files` (one or more PIDs a file, blank-separated); [] without. */
function pidsOf(...files) {
  const pids = []
  for (const f of files) {
    if (!f) continue
    pids.push(...fs.readFileSync(f, 'utf8').split(/\s+/).filter(Boolean))
  }
  return pids
}

/** The run time of every thread of the processes `pids`, in ns. */
function serversNs(pids) {
  let ns = 0
  for (const p of pids) {
    for (const t of fs.readdirSync(`/proc/${p}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${p}/task/${t}/schedstat`, 'utf8').split(' ')[0])
      } catch {} // a thread that ended between the listing and the read
    }
  }
  return ns
}

/** Runs `run` (which makes `calls` calls) once: calls/s, and µs of CPU per call of client and servers. */
async function sample(run, calls, pids) {
  const s0 = serversNs(pids)
  const u0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await run()
  const secs = Number(process.hrtime.bigint() - t0) / 1e9
  const u = process.cpuUsage(u0)
  const s1 = serversNs(pids)
  return { rate: calls / secs, client: (u.user + u.system) / calls, server: pids.length ? (s1 - s0) / 1e3 / calls : NaN }
}

function median(v) {
  const s = [...v].sort((a, b) => a - b)
  const n = s.length
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
}

/**
 * Measures the sides of one row: `sides` is {name: run}, each run making `calls` calls; returns
 * {name: [sample per round]}, after one warm-up run of each off the clock.
 */
async function duel(sides, { calls, rounds, pids = [] }) {
  const names = Object.keys(sides)
  for (const n of names) await sides[n]()
  const out = Object.fromEntries(names.map((n) => [n, []]))
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < names.length; i++) {
      const n = names[(i + r) % names.length]
      out[n].push(await sample(sides[n], calls, pids))
    }
  }
  return out
}

/** Each round's ratio of side `a`'s rate over side `b`'s. */
function ratios(d, a, b) {
  return d[a].map((s, i) => s.rate / d[b][i].rate)
}

/** "1.04x, median of 7 paired rounds [1.01 1.04 ...], spread 6%". */
function ratioText(d, a, b) {
  const r = ratios(d, a, b)
  const spread = (Math.max(...r) - Math.min(...r)) / median(r)
  return `${median(r).toFixed(2)}x, median of ${r.length} paired rounds [${r.map((x) => x.toFixed(2)).join(' ')}], spread ${(100 * spread).toFixed(0)}%`
}

/**
 * "1.30x by CPU per call (client + servers)": the median over the rounds of side `b`'s CPU per
 * call (client plus servers) over side `a`'s, the ratio of `a`'s rate over `b`'s when both are
 * pinned to one CPU and nothing else runs there; on a loaded machine much steadier than the rates.
 */
function cpuRatioText(d, a, b) {
  const cpu = (s) => s.client + (Number.isNaN(s.server) ? 0 : s.server)
  return `${median(d[a].map((s, i) => cpu(d[b][i]) / cpu(s))).toFixed(2)}x by CPU per call (client + servers)`
}

/** "8.7 k calls/s, CPU per call client 52.1 + server 20.3 us" (medians over the rounds). */
function sideText(d, name) {
  const m = (f) => median(d[name].map(f))
  const rate = m((s) => s.rate)
  const server = m((s) => s.server)
  const rateText = rate >= 1e6 ? `${(rate / 1e6).toFixed(2)} M` : `${(rate / 1e3).toFixed(1)} k`
  const cpu = Number.isNaN(server) ? `client ${m((s) => s.client).toFixed(1)} us` : `client ${m((s) => s.client).toFixed(1)} + server ${server.toFixed(1)} us`
  return `${rateText} calls/s, CPU per call ${cpu}`
}

module.exports = { pidsOf, duel, ratios, ratioText, cpuRatioText, sideText, median }
