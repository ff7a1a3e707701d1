// The hand-written declarations of the WebAssembly build's own stores (bindings-node/wasm/
// stores.d.ts, durable-object.d.ts, index.d.ts: index.d.ts is generated from the native addon)
// type-check under `tsc --strict`, with what they import from the package's index.d.ts.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const pkg = fileURLToPath(new URL('../../bindings-node/', import.meta.url))

test('the stores\' declarations type-check (tsc --strict)', () => {
  const tsc = `${pkg}node_modules/typescript/bin/tsc`
  const args = ['--noEmit', '--strict', '--lib', 'esnext', '--target', 'esnext', '--module', 'nodenext', '--moduleResolution', 'nodenext']
  const files = ['wasm/stores.d.ts', 'wasm/durable-object.d.ts', 'wasm/index.d.ts']
  const r = spawnSync(process.execPath, [tsc, ...args, ...files], { cwd: pkg, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})
