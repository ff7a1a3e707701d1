// Replays vectors files inside workerd: serves worker.mjs (with the package's WebAssembly entry
// for Workers and the replay of lib/conformance.js as its modules) on a free loopback port,
// POSTs each file, prints failures and "N passed, M failed", and stops workerd by its PID.
//
//   node bindings-wasm/workerd/replay.mjs FILE...
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'

import { freePort } from '../tests/support/workerd.mjs'

const here = import.meta.dirname
const pkg = resolve(here, '../../bindings-node')
const workerd = resolve(here, '../node_modules/.bin/workerd')


/** Every file under `dir`, as paths relative to the package. */
function files(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(pkg, join(d.parentPath, d.name)))
}

/** The worker's modules, named as the package lays them out; `embed` paths are relative to `dir`. */
function modules(dir) {
  const at = (path) => JSON.stringify(relative(dir, path))
  const list = [`(name = "worker.mjs", esModule = embed ${at(join(here, 'worker.mjs'))})`]
  list.push(`(name = "lib/conformance.js", commonJsModule = embed ${at(join(pkg, 'lib/conformance.js'))})`)
  for (const f of ['wasm/workerd.mjs', 'wasm/api.mjs', 'wasm/fast.mjs', ...files(join(pkg, 'wasm/pkg'))]) {
    const path = at(join(pkg, f))
    if (f.endsWith('.wasm')) list.push(`(name = "${f}", wasm = embed ${path})`)
    else if (f.endsWith('.js') || f.endsWith('.mjs')) list.push(`(name = "${f}", esModule = embed ${path})`)
  }
  return list.join(',\n    ')
}

async function main(paths) {
  if (paths.length === 0) {
    console.error('usage: replay.mjs FILE...')
    process.exit(2)
  }
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'tk-workerd-'))
  const config = join(dir, 'config.capnp')
  writeFileSync(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .worker)],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [
    ${modules(dir)}
  ],
  compatibilityDate = "2025-09-01",
);
`,
  )
  const child = spawn(workerd, ['serve', config], { stdio: ['ignore', 'inherit', 'inherit'] })
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
  }
  let passed = 0
  let failed = 0
  try {
    const deadline = Date.now() + 30_000
    for (;;) {
      try {
        await fetch(`http://127.0.0.1:${port}/`)
        break
      } catch (e) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`workerd did not start: ${e.message}`)
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    for (const f of paths) {
      const res = await fetch(`http://127.0.0.1:${port}/?name=${encodeURIComponent(f)}`, { method: 'POST', body: readFileSync(f) })
      const report = await res.json()
      if (res.status !== 200) throw new Error(`${f}: ${report.code}: ${report.message}`)
      for (const line of report.failures) console.log(`FAIL ${f}: ${line}`)
      passed += report.passed
      failed += report.failed
    }
  } finally {
    stop()
  }
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e.message)
  process.exit(2)
})
