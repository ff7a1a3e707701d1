// The shipped module's size budget: at most 150 KB gzipped (level 9), the target for a
// Worker's script (which may be 3 MB on the free plan). bindings-wasm/build.sh prints the size
// of each build; `make bench` reports it as a row.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { gzipSync } from 'node:zlib'

const BUDGET = 150 * 1024

test('the release module is at most 150 KB gzipped', () => {
  const bytes = readFileSync(new URL('../../bindings-node/wasm/pkg/throttlekit_bg.wasm', import.meta.url))
  const gz = gzipSync(bytes, { level: 9 }).length
  assert.ok(gz <= BUDGET, `${gz} bytes gzipped (${(gz / 1024).toFixed(1)} KB) > the ${BUDGET}-byte budget`)
})
