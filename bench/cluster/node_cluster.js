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
// standalone server on core's Tokio connections, which cluster calls took before), same run;
// with SINGLE_PIDFILE and CLUSTER_PIDFILE (the servers' pid files, as run.sh passes them), the
// CPU per call of each side at 64 in flight too.
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

// CPU per call, where the servers' PIDs are known (run.sh passes their pid files): the client
// process's CPU (`process.cpuUsage`, every thread) and the servers' (`/proc/PID/schedstat`), over
// every round of a measurement. On a loaded machine the rates swing with the neighbours' work,
// CPU per call much less; on a quiet one it shows where the time goes when a row falls short.
const fs = require('node:fs')
function pidsOf(file) {
  if (!file) return null
  try {
    return fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean)
  } catch {
    return null
  }
}
function serversNs(pids) {
  let ns = 0
  for (const p of pids) ns += Number(fs.readFileSync(`/proc/${p}/schedstat`, 'utf8').split(' ')[0])
  return ns
}
async function withCpu(run, pids, rounds = 3) {
  if (pids) await run() // warm up, off the clock: the first path measured would pay the JIT
  const u0 = process.cpuUsage()
  const s0 = pids ? serversNs(pids) : 0
  const rate = await best(run, rounds)
  const u = process.cpuUsage(u0)
  const calls = N * rounds
  return { rate, client: (u.user + u.system) / calls, servers: pids ? (serversNs(pids) - s0) / 1e3 / calls : NaN }
}

async function measure(options, keys = KEYS, pids = null) {
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
  const sq = await best(seq)
  const p = await withCpu(par, pids)
  const out = { seq: sq, par: p.rate, cpu: p }
  await tk.close()
  return out
}

async function main() {
  const [single, seeds] = process.argv.slice(2)
  const singlePids = pidsOf(process.env.SINGLE_PIDFILE)
  const clusterPids = pidsOf(process.env.CLUSTER_PIDFILE)
  const s = await measure({ url: single }, KEYS, singlePids)
  const c = await measure({ urls: seeds.split(','), mode: 'cluster' }, KEYS, clusterPids)
  // For comparison: the same standalone server with the calls on core's connections (what
  // `scripting: 'functions'` selects, and the path cluster calls took before they had sockets of
  // their own: a hop from the event loop to a Tokio thread and back per call).
  const h = await measure({ url: single, scripting: 'functions' })
  // The floor of the routing itself: the cluster with every key in one slot (one hash tag), so
  // every call goes to the same master, as on one server: the same client work (slot, map,
  // redirect check per reply), without three server processes taking turns on the cores.
  const o = await measure({ urls: seeds.split(','), mode: 'cluster' }, KEYS.map((k) => `{one}${k}`), clusterPids)
  for (const [k, label] of [['seq', 'sequential await check'], ['par', '64 in flight']]) {
    const row = ['ROW', `node redis cluster (3 masters), ${label}`, 'the same on one standalone server',
      (c[k] / s[k]).toFixed(2), '>=0.9', `${c[k].toFixed(0)} vs ${s[k].toFixed(0)} checks/s`]
    console.log(row.join('\t'))
    console.log(`hop path (${label}): one standalone server through core's connections, the path cluster calls took before: ` +
      `${h[k].toFixed(0)} checks/s, ${(h[k] / s[k]).toFixed(2)} of the event-loop socket; the cluster is ${(c[k] / h[k]).toFixed(2)} of that`)
    console.log(`one master (${label}): the cluster with every key in one slot: ${o[k].toFixed(0)} checks/s, ` +
      `${(o[k] / s[k]).toFixed(2)} of one standalone server (the routing's own cost; the rest of the gap is three servers)`)
  }
  if (singlePids && clusterPids) {
    const line = (name, m) => `${name} ${m.cpu.client.toFixed(2)} + ${m.cpu.servers.toFixed(2)} = ${(m.cpu.client + m.cpu.servers).toFixed(2)} us`
    console.log(`cpu per call (64 in flight; client + servers): ${line('standalone', s)}; ${line('cluster', c)}; ${line('one master', o)}; ` +
      `standalone ÷ cluster ${((s.cpu.client + s.cpu.servers) / (c.cpu.client + c.cpu.servers)).toFixed(2)}`)
  }
}

main().catch((e) => { console.error(e); process.exit(1) })
