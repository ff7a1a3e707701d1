// The HTTP subpaths: ESM and CommonJS give the same functions, the hand-written .d.ts files
// declare exactly what each module exports, and typical (and wrong) uses type-check as they
// should under `tsc --strict` (__test__/types/).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const require = createRequire(import.meta.url)
const run = promisify(execFile)

for (const sub of ['express', 'fastify', 'fetch', 'koa', 'nest']) {
  test(`@throttlekit/core/${sub}: ESM and CommonJS export the same functions, and the .d.ts declares them`, async () => {
    const esm = await import(`@throttlekit/core/${sub}`)
    const cjs = require(`@throttlekit/core/${sub}`)
    const names = Object.keys(cjs).filter((n) => n !== 'default').sort()
    assert.ok(names.length > 0)
    for (const n of names) assert.equal(esm[n], cjs[n], n)
    // One function each, the default export too; NestJS's module, guard and decorators have none.
    assert.equal(typeof esm.default, sub === 'nest' ? 'undefined' : 'function')
    const dts = readFileSync(join(pkg, 'lib', 'http', `${sub}.d.ts`), 'utf8')
    const declared = [...dts.matchAll(/^export declare (?:function|const|class) (\w+)/gm)].map((m) => m[1]).sort()
    assert.deepEqual(declared, names)
  })
}

test('the root entry points export the native HTTP functions, in ESM and CommonJS alike', async () => {
  const esm = await import('@throttlekit/core')
  const cjs = require('@throttlekit/core')
  for (const n of ['RateLimitFields', 'ClientIdentity', 'rateLimitHeaders', 'clientKey', 'problemBody', 'unavailableBody', 'PROBLEM_CONTENT_TYPE']) {
    assert.ok(cjs[n] !== undefined, n)
    assert.equal(esm[n], cjs[n], n)
  }
})

test('the declarations type-check typical uses and reject misuse (tsc --strict)', async () => {
  const tsc = join(pkg, 'node_modules', 'typescript', 'bin', 'tsc')
  await run(process.execPath, [tsc, '-p', join(here, 'types', 'tsconfig.json')], { cwd: pkg }).catch((e) => {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`)
  })
})
