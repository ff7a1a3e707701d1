// Node `check` over a 3-master Redis Cluster against the same binding on one standalone server,
// in one run (not part of the tests):
//
//   node bench/cluster/node_cluster.js STANDALONE_URL CLUSTER_SEEDS
//
// `bench/cluster/run.sh` builds the release addon, starts both (tests/redis-server.sh,
// tests/redis-cluster.sh) and stops them by PID. On the standalone server the binding writes on
// its own event-loop socket; on a cluster on one event-loop socket per master, each call sent
// where the core routes it (bindings-node/lib/redis-cluster.js). Prints `ROW` lines for
// bench/summarize.py (ratio: cluster over standalone), and for comparison the hop path (the
// standalone server on core's Tokio connections, which cluster calls took before), same run.
'use strict'
const path = require('node:path')
const { Limiter, RedisStore, Strategy } = require(path.join(__dirname, '../../bindings-node'))

const N = 20_000
const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`)

async function best(run, rounds = 3) {
  let top = 0
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    await run()
    top = Math.max(top, N / (Number(process.hrtime.bigint() - t0) / 1e9))
  }
  return top
}

async function measure(options, keys = KEYS) {
  const store = await RedisStore.connect(options)
  const tk = new Limiter({ strategy: Strategy.gcra({ limit: 1e12, periodMs: 1000 }), store, prefix: 'bench-cl' })
  const seq = async () => {
    for (let i = 0; i < N; i++) await tk.check(keys[i % 1000])
  }
  const par = async () => {
    let next = 0
    const worker = async () => {
      while (next < N) await tk.check(keys[next++ % 1000])
    }
    await Promise.all(Array.from({ length: 64 }, worker))
  }
  await seq() // warm up: connections, scripts
  const out = { seq: await best(seq), par: await best(par) }
  await tk.close()
  return out
}

async function main() {
  const [single, seeds] = process.argv.slice(2)
  const s = await measure({ url: single })
  const c = await measure({ urls: seeds.split(','), mode: 'cluster' })
  // For comparison: the same standalone server with the calls on core's connections (what
  // `scripting: 'functions'` selects, and the path cluster calls took before they had sockets of
  // their own: a hop from the event loop to a Tokio thread and back per call).
  const h = await measure({ url: single, scripting: 'functions' })
  // The floor of the routing itself: the cluster with every key in one slot (one hash tag), so
  // every call goes to the same master, as on one server: the same client work (slot, map,
  // redirect check per reply), without three server processes taking turns on the cores.
  const o = await measure({ urls: seeds.split(','), mode: 'cluster' }, KEYS.map((k) => `{one}${k}`))
  for (const [k, label] of [['seq', 'sequential await check'], ['par', '64 in flight']]) {
    const row = ['ROW', `node redis cluster (3 masters), ${label}`, 'the same on one standalone server',
      (c[k] / s[k]).toFixed(2), '>=0.9', `${c[k].toFixed(0)} vs ${s[k].toFixed(0)} checks/s`]
    console.log(row.join('\t'))
    console.log(`hop path (${label}): one standalone server through core's connections, the path cluster calls took before: ` +
      `${h[k].toFixed(0)} checks/s, ${(h[k] / s[k]).toFixed(2)} of the event-loop socket; the cluster is ${(c[k] / h[k]).toFixed(2)} of that`)
    console.log(`one master (${label}): the cluster with every key in one slot: ${o[k].toFixed(0)} checks/s, ` +
      `${(o[k] / s[k]).toFixed(2)} of one standalone server (the routing's own cost; the rest of the gap is three servers)`)
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
