// Every vectors file replayed through the WebAssembly build's REST store in deterministic-replay
// mode (expiry on the vectors' clock), against the test front end (tests/restfront/) and a
// throwaway redis-server, with 0 mismatches: the conformance runner's `--store redis-rest`,
// under Node, Deno and Bun: every op of every file, the Shaper's included, none left out. The
// native REST and RESP stores pass the same files (core/tests/redis_rest.rs compares their
// decisions byte for byte).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { startRestFront } from './support/restfront.mjs'

const root = fileURLToPath(new URL('../../', import.meta.url))
const runner = root + 'bindings-node/wasm/conformance.mjs'
const bin = root + 'bindings-wasm/node_modules/.bin/'
const vectors = readdirSync(root + 'conformance-vectors')
  .filter((f) => f.endsWith('.json'))
  .map((f) => root + 'conformance-vectors/' + f)

let front
before(async () => {
  front = await startRestFront()
})
after(() => front?.stop())

function replay(cmd, args) {
  const env = { ...process.env, THROTTLEKIT_REST_URL: front.url, THROTTLEKIT_REST_TOKEN: front.token, DENO_NO_UPDATE_CHECK: '1' }
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args, runner, '--store', 'redis-rest', ...vectors], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.once('error', reject)
    child.once('exit', (status) => resolve({ status, out, err }))
  })
}

const RUNTIMES = [
  ['node', process.execPath, []],
  ['deno', bin + 'deno', ['run', '--quiet', '--allow-read', '--allow-env', '--allow-net=127.0.0.1']],
  ['bun', bin + 'bun', []],
]

// The three replays run side by side (each waits on its HTTP round trips most of the time, and
// each run keeps its keys under a namespace of its own), started by whichever test comes first.
let runs
const runOf = (name) => {
  // (A spawn that fails rejects when its own test awaits it, not before as an unhandled rejection.)
  runs ??= new Map(RUNTIMES.map(([n, cmd, args]) => [n, replay(cmd, args).catch((e) => ({ status: -1, out: '', err: String(e) }))]))
  return runs.get(name)
}

for (const [name] of RUNTIMES) {
  test(`${name}: --store redis-rest replays every vectors file with 0 mismatches`, async () => {
    const { status, out, err } = await runOf(name)
    const last = out.trim().split('\n').at(-1)
    const m = /^(\d+) passed, (\d+) failed$/.exec(last ?? '')
    assert.ok(m, `${name}: no summary line:\n${out.slice(-2000)}\n${err.slice(-2000)}`)
    assert.equal(Number(m[2]), 0, `${name}:\n${out.split('\n').filter((l) => l.startsWith('FAIL')).slice(0, 20).join('\n')}`)
    // Every op was replayed: as many results as the files have ops (a suite without ops is one).
    const suites = vectors.flatMap((f) => JSON.parse(readFileSync(f, 'utf8')).suites ?? [])
    assert.ok(suites.some((s) => s.primitive === 'shaper'), 'no shaper suite in the vectors')
    assert.equal(Number(m[1]), suites.reduce((n, s) => n + Math.max((s.ops ?? []).length, 1), 0), `${name}: ops left out`)
    assert.equal(status, 0)
  })
}
