'use strict'
// @throttlekit/core's PostgresStore against rate-limiter-flexible 11's RateLimiterPostgres (on
// pg 8, both pinned in package.json), on one throwaway local Postgres 15:
//
//   check, sequential and 64 in flight: Limiter#check (a fixed window, 60 s) vs
//     RateLimiterPostgres#consume (its fixed window, same points and duration), 1000 keys;
//   the ceiling: pgbench running a bare one-row INSERT ... ON CONFLICT DO UPDATE on 1000 keys
//     with 64 clients (the least any one-statement store can cost), vs our 64 in flight;
//   one hot key, 8 connections (a store of poolSize 8), 8 in flight: strict and leased (no
//     targets: the row lock serialises strict).
//
// Every limit is far above the load, so neither side pays for denials. Each measurement is the
// best of ROUNDS interleaved rounds; ratios are throttlekit / peer. Run with ./postgres-run.sh
// (release build, throwaway Postgres), or: PGBENCH=/path/to/pgbench node postgres.js URL
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Limiter, PostgresStore, Strategy } = require('@throttlekit/core')
const { RateLimiterPostgres } = require('rate-limiter-flexible')
const { Pool } = require('pg')

const KEYS = Array.from({ length: 1000 }, (_, i) => `user:${i}`)
const ROUNDS = Number(process.env.ROUNDS || 3)
const N = Number(process.env.N || 5000)

const fmt = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(1)} k`)

const seq = (check) => async () => {
  for (let i = 0; i < N; i++) await check(KEYS[i % 1000])
}
const inFlight = (check, width, key) => async () => {
  let next = 0
  const lane = async () => {
    while (next < N) {
      const i = next++
      await check(key ?? KEYS[i % 1000])
    }
  }
  await Promise.all(Array.from({ length: width }, lane))
}

/**
 * pgbench's TPS for one upsert per transaction, `clients` connections, `seconds` long; null when
 * it ran no transaction (on a loaded 2-core machine its 64 SCRAM logins can outlast `seconds`).
 */
function pgbench(url, clients, seconds) {
  const bin = process.env.PGBENCH || '/usr/lib/postgresql/15/bin/pgbench'
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tk-pgbench-')), 'upsert.sql')
  fs.writeFileSync(
    file,
    "\\set k random(0, 999)\nINSERT INTO tk_ceiling (key, n) VALUES ('user:' || :k, 1) ON CONFLICT (key) DO UPDATE SET n = tk_ceiling.n + 1;\n",
  )
  const r = spawnSync(bin, ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(os.cpus().length), '-T', String(seconds), '-f', file, url], { encoding: 'utf8' })
  const m = /tps = ([\d.]+)/.exec(r.stdout)
  if (m) return Number(m[1])
  if (/number of transactions actually processed: 0\b/.test(r.stdout)) return null
  throw new Error(`pgbench failed: ${r.stdout}${r.stderr}`)
}

async function main() {
  const url = process.argv[2] || process.env.THROTTLEKIT_POSTGRES_URL
  if (!url) throw new Error('usage: node postgres.js POSTGRES_URL (./postgres-run.sh starts a server)')
  console.log(`node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, best of ${ROUNDS} rounds of ${N}`)
  const store = await PostgresStore.connect({ url, sweepIntervalMs: 0 })
  const fw = new Limiter({ strategy: Strategy.fixedWindow({ limit: 1e12, windowMs: 60_000 }), store, prefix: 'bench-fw' })
  const hotStore = await PostgresStore.connect({ url, poolSize: 8, sweepIntervalMs: 0 })
  const hot = { strategy: Strategy.gcra({ limit: 1e9, periodMs: 1000 }), store: hotStore }
  const strict = new Limiter({ ...hot, prefix: 'bench-hot' })
  const leased = new Limiter({ ...hot, prefix: 'bench-hot-leased', mode: 'leased' })
  const pool = new Pool({ connectionString: url, max: 64 })
  const rl = await new Promise((resolve, reject) => {
    const limiter = new RateLimiterPostgres({ storeClient: pool, points: 1e9, duration: 60, tableName: 'rlflx', keyPrefix: 'bench-rl' }, (e) => (e ? reject(e) : resolve(limiter)))
  })
  await pool.query('CREATE TABLE IF NOT EXISTS tk_ceiling (key text PRIMARY KEY, n bigint NOT NULL)')

  const fwCheck = (k) => fw.check(k)
  const rlCheck = (k) => rl.consume(k)
  const runs = {
    seqFw: seq(fwCheck),
    seqRl: seq(rlCheck),
    parFw: inFlight(fwCheck, 64),
    parRl: inFlight(rlCheck, 64),
    hotStrict: inFlight((k) => strict.check(k), 8, 'hot'),
    hotLeased: inFlight((k) => leased.check(k), 8, 'hot'),
  }
  for (const name in runs) {
    if (process.env.VERBOSE) console.error(`warm-up: ${name}`)
    await runs[name]() // warm up (connections, statements, JIT)
  }
  const out = {}
  const cpu = {} // this process's user + system CPU per call, the least of the rounds
  for (let r = 0; r < ROUNDS; r++) {
    for (const name in runs) {
      const c = process.cpuUsage()
      const t = process.hrtime.bigint()
      await runs[name]()
      out[name] = Math.max(out[name] || 0, N / (Number(process.hrtime.bigint() - t) / 1e9))
      const used = process.cpuUsage(c)
      cpu[name] = Math.min(cpu[name] ?? Infinity, (used.user + used.system) / N)
    }
  }
  await store.close()
  await hotStore.close()
  await pool.end()
  const ceilings = Array.from({ length: ROUNDS }, () => pgbench(url, 64, 5)).filter((t) => t !== null)
  if (ceilings.length === 0) throw new Error(`pgbench ran no transaction in ${ROUNDS} rounds`)
  const ceiling = Math.max(...ceilings)

  const peer = 'RateLimiterPostgres.consume'
  const row = (what, ours, theirs, target) =>
    console.log(`postgres ${what.padEnd(36)} ${fmt(ours)} ops/s   ${peer} ${fmt(theirs)} ops/s   ratio ${(ours / theirs).toFixed(2)}x (target >= ${target}x)`)
  row('check, sequential, fixed window', out.seqFw, out.seqRl, '1.2')
  row('check, 64 in flight, fixed window', out.parFw, out.parRl, '1.5')
  console.log(`postgres ceiling: check, 64 in flight ${fmt(out.parFw)} ops/s   pgbench one-row upsert, 64 clients ${fmt(ceiling)} tps   ratio ${(out.parFw / ceiling).toFixed(2)}x (target >= 0.8x)`)
  // What the sequential ratio is made of besides the two wake-ups per round trip both sides
  // wait for: the client's CPU per call (the server's is in bench/postgres-cost.sh). Steadier
  // than the ratio on a loaded machine, where the wake-ups' waits move by up to 2x.
  console.log(`postgres client CPU per sequential check (user + system, least of ${ROUNDS} rounds): throttlekit ${cpu.seqFw.toFixed(1)} us   ${peer} ${cpu.seqRl.toFixed(1)} us`)
  console.log(`postgres one hot key, 8 connections, 8 in flight: strict ${fmt(out.hotStrict)} decisions/s, leased ${fmt(out.hotLeased)} decisions/s (no target)`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
