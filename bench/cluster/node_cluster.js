// Node `check` over a 3-master Redis Cluster against the same binding on one standalone server,
// in one run (not part of the tests):
//
//   SINGLE_PIDFILE=F CLUSTER_PIDFILE=G node bench/cluster/node_cluster.js STANDALONE_URL CLUSTER_SEEDS
//
// `bench/cluster/run.sh node` builds the release addon, starts both (tests/redis-server.sh,
// tests/redis-cluster.sh), places the servers and node as bindings-node/bench/placement.sh says
// (one CPU for all by default; TK_BENCH_PIN=off leaves it to the scheduler) and stops them by
// PID. On the standalone server the binding writes on its own event-loop socket; on a cluster on
// one event-loop socket per master, each call sent where the core routes it
// (bindings-node/lib/redis-cluster.js). Every side runs in the same paired rounds
// (bindings-node/bench/duel.js), with the CPU per call of node and of the servers. Prints `ROW`
// lines for bench/summarize.py (ratio: cluster over standalone, the median of the rounds'), and
// for comparison the hop path and the cluster on one master. ROUNDS and CALLS as bench.js.
'use strict'
const path = require('node:path')
const { pidsOf, duel, ratios, ratioText, cpuRatioText, sideText, median } = require(path.join(__dirname, '../../bindings-node/bench/duel.js'))

const N = Number(process.env.CALLS || 20_000)
const ROUNDS = Number(process.env.ROUNDS || 7)
const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`)

/** A GCRA limiter of binding `tk` on a store of `options`, its keys `keys`. */
async function side(tk, options, keys = KEYS) {
  // Calls wait up to 30 s (default 1 s), as in bindings-node/bench/bench.js: a pinned process on a
  // loaded machine can stall past 1 s, and a bench measures rates, not the fail policy.
  const store = await tk.RedisStore.connect({ timeoutMs: 30_000, ...options })
  const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 1e12, periodMs: 1000 }), store, prefix: 'bench-cl' })
  const seq = async () => {
    for (let i = 0; i < N; i++) await l.check(keys[i % 1000])
  }
  const par = async () => {
    let next = 0
    const worker = async () => {
      while (next < N) await l.check(keys[next++ % 1000])
    }
    await Promise.all(Array.from({ length: 64 }, worker))
  }
  return { seq, par, close: () => l.close() }
}

async function main() {
  const [single, seeds] = process.argv.slice(2)
  const pids = pidsOf(process.env.SINGLE_PIDFILE, process.env.CLUSTER_PIDFILE)
  const tk = require(path.join(__dirname, '../../bindings-node'))
  const cluster = { urls: seeds.split(','), mode: 'cluster' }
  const sides = {
    single: await side(tk, { url: single }),
    cluster: await side(tk, cluster),
    // For comparison: the same standalone server with the calls on core's connections (what
    // `scripting: 'functions'` selects, and the path cluster calls took before they had sockets
    // of their own: a hop from the event loop to a Tokio thread and back per call).
    hop: await side(tk, { url: single, scripting: 'functions' }),
    // The floor of the routing itself: the cluster with every key in one slot (one hash tag), so
    // every call goes to the same master, as on one server: the same client work (slot, map,
    // redirect check per reply), without three server processes taking turns on the cores.
    oneMaster: await side(tk, cluster, KEYS.map((k) => `{one}${k}`)),
  }
  // TK_BENCH_BASELINE=DIR: another build's bindings-node (its addon built), both rows again
  // in the same rounds: an A/B of two builds on one machine at one time.
  const baseDir = process.env.TK_BENCH_BASELINE
  if (baseDir) {
    const b = require(path.resolve(baseDir))
    sides.baseSingle = await side(b, { url: single })
    sides.baseCluster = await side(b, cluster)
  }
  console.log(`node ${process.version}, ${ROUNDS} paired rounds of ${N} calls; ${process.env.TK_BENCH_PLACEMENT || 'placement: as started'}; ` +
    `server CPU is every server's (${pids.length} pids)`)
  for (const [k, label] of [['seq', 'sequential await check'], ['par', '64 in flight']]) {
    const d = await duel(Object.fromEntries(Object.entries(sides).map(([n, s]) => [n, s[k]])), { calls: N, rounds: ROUNDS, pids })
    const ratio = median(ratios(d, 'cluster', 'single'))
    const row = ['ROW', `node redis cluster (3 masters), ${label}`, 'the same on one standalone server',
      ratio.toFixed(2), '>=0.9', `${median(d.cluster.map((s) => s.rate)).toFixed(0)} vs ${median(d.single.map((s) => s.rate)).toFixed(0)} checks/s`]
    console.log(row.join('\t'))
    console.log(`  cluster / standalone ${ratioText(d, 'cluster', 'single')}; ${cpuRatioText(d, 'cluster', 'single')}`)
    console.log(`  standalone ${sideText(d, 'single')}; cluster ${sideText(d, 'cluster')}`)
    console.log(`  hop path (one standalone server through core's connections, the path cluster calls took before): ${sideText(d, 'hop')}; ` +
      `${ratioText(d, 'hop', 'single')} of the event-loop socket`)
    console.log(`  one master (the cluster with every key in one slot: the routing's own cost): ${sideText(d, 'oneMaster')}; ` +
      `${ratioText(d, 'oneMaster', 'single')} of one standalone server`)
    if (baseDir) {
      console.log(`  baseline build (${baseDir}): standalone ${sideText(d, 'baseSingle')}; cluster ${sideText(d, 'baseCluster')}; ` +
        `its cluster / standalone ${ratioText(d, 'baseCluster', 'baseSingle')}`)
      console.log(`  this build / baseline: standalone ${ratioText(d, 'single', 'baseSingle')}, ${cpuRatioText(d, 'single', 'baseSingle')}; ` +
        `cluster ${ratioText(d, 'cluster', 'baseCluster')}, ${cpuRatioText(d, 'cluster', 'baseCluster')}`)
    }
  }
  for (const s of Object.values(sides)) await s.close()
}

main().catch((e) => { console.error(e); process.exit(1) })
