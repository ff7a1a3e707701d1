// Serves a Worker of bindings-wasm/workerd/ with workerd on a free loopback port, with the
// package's WebAssembly entry for Workers, its Durable Object class and lib/conformance.js as
// modules, and a namespace of `ThrottlekitObject`s bound as `env.LIMITER` whose storage is in
// memory or, with `disk`, in that directory (so it outlives a restart). `stop()` ends it by PID.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'

const here = import.meta.dirname
const pkg = resolve(here, '../../../bindings-node')
const workerd = resolve(here, '../../node_modules/.bin/workerd')

/** A free loopback port (also workerd/replay.mjs's). */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => ok(port))
    })
    s.on('error', fail)
  })
}

function modules(dir, main) {
  const at = (path) => JSON.stringify(relative(dir, path))
  const list = [`(name = "worker.mjs", esModule = embed ${at(main)})`]
  list.push(`(name = "lib/conformance.js", commonJsModule = embed ${at(join(pkg, 'lib/conformance.js'))})`)
  const built = readdirSync(join(pkg, 'wasm/pkg'), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(pkg, join(d.parentPath, d.name)))
  for (const f of ['wasm/workerd.mjs', 'wasm/api.mjs', 'wasm/fast.mjs', 'wasm/durable-object.mjs', ...built]) {
    if (f.endsWith('.wasm')) list.push(`(name = "${f}", wasm = embed ${at(join(pkg, f))})`)
    else if (f.endsWith('.js') || f.endsWith('.mjs')) list.push(`(name = "${f}", esModule = embed ${at(join(pkg, f))})`)
  }
  return list.join(',\n    ')
}

/** Starts workerd serving `worker` (a path); resolves with { url, stop }. */
export async function startWorkerd(worker, { disk } = {}) {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'tk-workerd-do-'))
  const config = join(dir, 'config.capnp')
  const services = ['(name = "main", worker = .worker)']
  if (disk) services.push(`(name = "disk", disk = (path = ${JSON.stringify(disk)}, writable = true))`)
  writeFileSync(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [${services.join(', ')}],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [
    ${modules(dir, worker)}
  ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [(name = "LIMITER", durableObjectNamespace = "ThrottlekitObject")],
  durableObjectNamespaces = [(className = "ThrottlekitObject", uniqueKey = "throttlekit-test", enableSql = true)],
  durableObjectStorage = ${disk ? '(localDisk = "disk")' : '(inMemory = void)'},
);
`,
  )
  const child = spawn(workerd, ['serve', config], { stdio: ['ignore', 'inherit', 'inherit'] })
  const exited = new Promise((r) => child.once('exit', r))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      await fetch(url)
      return { url, stop }
    } catch (e) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop()
        throw new Error(`workerd did not start: ${e.message}`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}
