// The WebAssembly build's declarations (bindings-node/wasm/index.d.ts, hand-written, and
// wasm/http/hono.d.ts) against the build: every value the module exports is declared and
// nothing else is, and typical (and wrong) uses type-check as they should under `tsc --strict`
// (tests/types/), and the stores' declarations on their own.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import * as wasm from '../../bindings-node/wasm/node.mjs'
import * as hono from '../../bindings-node/wasm/http/hono.mjs'

const pkg = fileURLToPath(new URL('../../bindings-node/', import.meta.url))
const run = promisify(execFile)

/** The value names a declaration file exports: its declarations and its `export { ... }` lists. */
function declaredValues(path) {
  const dts = readFileSync(path, 'utf8')
  const names = [...dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)].map((m) => m[1])
  for (const [, list] of dts.matchAll(/^export \{([^}]*)\} from/gm)) {
    names.push(...list.split(',').map((n) => n.trim()).filter(Boolean))
  }
  return names.sort()
}

test('wasm/index.d.ts declares exactly the values the WebAssembly build exports', () => {
  assert.deepEqual(declaredValues(`${pkg}wasm/index.d.ts`), Object.keys(wasm).sort())
  // What the brief of the REST store promised users: it is declared.
  assert.ok(Object.keys(wasm).includes('RedisRestStore'))
})

test('wasm/http/hono.d.ts declares exactly what @throttlekit/core/hono exports', () => {
  assert.deepEqual(declaredValues(`${pkg}wasm/http/hono.d.ts`), Object.keys(hono).filter((n) => n !== 'default').sort())
  assert.equal(hono.default, hono.rateLimit)
})

// The two `tsc` runs below are started together (each is one single-threaded process of many
// seconds), and each test awaits its own.
const tsc = `${pkg}node_modules/typescript/bin/tsc` // bindings-node's devDependency
const tscRun = (args, cwd) => run(process.execPath, [tsc, ...args], { cwd }).then(() => '', (e) => `tsc failed:\n${e.stdout}${e.stderr}`)
const usage = tscRun(['-p', fileURLToPath(new URL('types/tsconfig.json', import.meta.url))])
// The hand-written declarations of the build's own stores (wasm/stores.d.ts, durable-object.d.ts;
// index.d.ts is generated from the native addon), on their own under Node's module resolution,
// with what they import from the package's index.d.ts.
const stores = tscRun(
  ['--noEmit', '--strict', '--lib', 'esnext,dom', '--target', 'esnext', '--module', 'nodenext', '--moduleResolution', 'nodenext', 'wasm/stores.d.ts', 'wasm/durable-object.d.ts', 'wasm/index.d.ts'],
  pkg,
)

test('the declarations type-check typical uses and reject misuse (tsc --strict)', async () => {
  assert.equal(await usage, '')
})

test("the stores' declarations type-check (tsc --strict)", async () => {
  assert.equal(await stores, '')
})
