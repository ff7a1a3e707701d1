// `npm install ./bindings-node` into a fresh project gives a package that works from CommonJS and
// ESM, with its `throttlekit-conformance` command on the PATH of npm scripts.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const vectors = join(pkg, '..', 'conformance-vectors', 'upstream-golden-1.5.2.json')
const run = promisify(execFile)
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

test('npm install into a fresh project, then require, import and npx', { timeout: 120_000 }, async () => {
  const project = mkdtempSync(join(tmpdir(), 'tk-install-'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh', version: '1.0.0', private: true }))
  await run(npm, ['install', '--no-audit', '--no-fund', '--offline', '--loglevel=error', pkg], { cwd: project })
  const cjs = await run(process.execPath, ['-e', "const t = require('@throttlekit/core'); console.log(new t.Limiter({ strategy: t.Strategy.gcra({ limit: 1, periodMs: 1000 }) }).checkSync('k').allowed)"], { cwd: project })
  assert.equal(cjs.stdout.trim(), 'true')
  const esm = await run(process.execPath, ['--input-type=module', '-e', "import { Limiter, Strategy } from '@throttlekit/core'; console.log(new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }) }).checkSync('k').remaining)"], { cwd: project })
  assert.equal(esm.stdout.trim(), '1')
  // The HTTP subpaths resolve from an installed copy too, in both module systems.
  const subCjs = await run(process.execPath, ['-e', "console.log(['express', 'fastify', 'fetch', 'koa'].map((s) => Object.keys(require('@throttlekit/core/' + s)).join('+')).join(' '))"], { cwd: project })
  assert.equal(subCjs.stdout.trim(), 'rateLimit rateLimitPlugin+default withRateLimit+defaultPeer rateLimit')
  const subEsm = await run(process.execPath, ['--input-type=module', '-e', "import { withRateLimit } from '@throttlekit/core/fetch'; import rl from '@throttlekit/core/express'; console.log(typeof withRateLimit, typeof rl)"], { cwd: project })
  assert.equal(subEsm.stdout.trim(), 'function function')
  const npx = await run(npm, ['exec', '--offline', '--', 'throttlekit-conformance', vectors], { cwd: project })
  assert.match(npx.stdout.trim().split('\n').at(-1), /^54 passed, 0 failed$/)
})
