// Which build `@throttlekit/core` resolves to, by export condition (bindings-node/package.json):
// Node gets the native addon unless it asks for `@throttlekit/core/wasm`; the `deno` and `bun`
// conditions get the WebAssembly build; both answer the same API.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'

const pkg = fileURLToPath(new URL('../../bindings-node/', import.meta.url))

/** Imports `specifier` from inside the package (self-reference by name) under `conditions`. */
function probe(specifier, conditions = []) {
  const script = `const m = await import(${JSON.stringify(specifier)});
const l = new m.Limiter({ strategy: m.Strategy.gcra({ limit: 2, periodMs: 1000 }), clock: new m.ManualClock(0) });
console.log(JSON.stringify({ redis: 'RedisStore' in m, d: l.checkSync('k') }))`
  const r = spawnSync(process.execPath, [...conditions.map((c) => `--conditions=${c}`), '--input-type=module', '-e', script], { cwd: pkg, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout)
}

const decision = { allowed: true, limit: 2, remaining: 1, resetAt: 500, retryAfterMs: 0 }

test('Node: the native addon', () => {
  assert.deepEqual(probe('@throttlekit/core'), { redis: true, d: decision })
})

test('Node, forced: @throttlekit/core/wasm', () => {
  assert.deepEqual(probe('@throttlekit/core/wasm'), { redis: false, d: decision })
})

for (const condition of ['deno', 'bun']) {
  test(`the ${condition} condition: the WebAssembly build`, () => {
    assert.deepEqual(probe('@throttlekit/core', [condition]), { redis: false, d: decision })
  })
}
