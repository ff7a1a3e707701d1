// `make bench`'s WebAssembly rows, measured side by side in one Node process: the memory-store
// `checkSync` of the WebAssembly build against the native addon's (target: within 2x, i.e.
// native time / WebAssembly time >= 0.5x), and the module's gzipped size against the 150 KB
// budget. Prints summarize.py's `ROW` lines. Needs bindings-wasm/build.sh's release module and
// the release addon (bindings-node/bench/run.sh builds it).
import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'

import * as native from '../bindings-node/index.mjs'
import * as wasm from '../bindings-node/wasm/node.mjs'

const ROUNDS = Number(process.env.ROUNDS ?? 5)
const N = 200_000

/**
 * ns per `checkSync` over `N` calls on `keys` distinct keys, wall and this process's CPU time
 * (the best of ROUNDS slices each): CPU time leaves out what a loaded machine's scheduler takes.
 */
function nsPerCheck(tk, keys) {
  const l = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 1_000_000_000, periodMs: 1000 }) })
  const names = Array.from({ length: keys }, (_, i) => `user:${i}`)
  for (let i = 0; i < 20_000; i++) l.checkSync(names[i % keys])
  let wall = Infinity
  let cpu = Infinity
  for (let r = 0; r < ROUNDS; r++) {
    const c = process.cpuUsage()
    const t = process.hrtime.bigint()
    for (let i = 0; i < N; i++) l.checkSync(names[i % keys])
    wall = Math.min(wall, Number(process.hrtime.bigint() - t) / N)
    const used = process.cpuUsage(c)
    cpu = Math.min(cpu, ((used.user + used.system) * 1000) / N)
  }
  return { wall, cpu }
}

for (const keys of [1, 10_000]) {
  // Interleaved, so both see the same machine load.
  const n = []
  const w = []
  for (let i = 0; i < 2; i++) {
    n.push(nsPerCheck(native, keys))
    w.push(nsPerCheck(wasm, keys))
  }
  const best = (m, k) => Math.min(...m.map((x) => x[k]))
  const [ns, ws] = [best(n, 'wall'), best(w, 'wall')]
  const cpu = `CPU ${best(w, 'cpu').toFixed(0)} vs ${best(n, 'cpu').toFixed(0)} ns`
  console.log(`wasm checkSync, ${keys} key(s): ${ws.toFixed(0)} ns vs native ${ns.toFixed(0)} ns: ${(ns / ws).toFixed(2)}x (target >= 0.5x); ${cpu}`)
  console.log(['ROW', `WebAssembly checkSync, memory, ${keys === 1 ? '1 key' : '10k keys'} (Node)`, 'native addon checkSync, same process', (ns / ws).toFixed(2), '>=0.5', `${ws.toFixed(0)} vs ${ns.toFixed(0)} ns (${cpu})`].join('\t'))
}

const bytes = readFileSync(new URL('../bindings-node/wasm/pkg/throttlekit_bg.wasm', import.meta.url))
const gz = gzipSync(bytes, { level: 9 }).length
console.log(`wasm module: ${bytes.length} bytes, ${gz} gzipped${gz > 150 * 1024 ? ': OVER the 150 KB budget' : ''}`)
console.log(['ROW', 'WebAssembly module size, gzipped', '150 KB budget', ((150 * 1024) / gz).toFixed(2), '>=1.0', `${(gz / 1024).toFixed(1)} KB gzipped, ${(bytes.length / 1024).toFixed(1)} KB raw`].join('\t'))
