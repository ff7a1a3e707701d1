// The README's JavaScript examples run as written, against the package as installed by name.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { startRedis, startRedisCluster, startRedisTls } from './helpers/redis.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const run = promisify(execFile)
const blocks = [...readFileSync(join(pkg, 'README.md'), 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])

// A project directory where `require('@throttlekit/core')` resolves to this package.
const project = mkdtempSync(join(tmpdir(), 'tk-readme-'))
mkdirSync(join(project, 'node_modules', '@throttlekit'), { recursive: true })
symlinkSync(pkg, join(project, 'node_modules', '@throttlekit', 'core'), 'dir')

let redis
let cluster
let tls
before(async () => {
  ;[redis, cluster, tls] = await Promise.all([startRedis(), startRedisCluster(), startRedisTls()])
})
after(async () => {
  await redis?.stop()
  await cluster?.stop()
  await tls?.stop()
})

test('the README has the quick start, the Redis example and the connecting example', () => {
  assert.equal(blocks.length, 3)
})

test('quick start', async () => {
  writeFileSync(join(project, 'quick.js'), blocks[0])
  const { stdout } = await run(process.execPath, ['quick.js'], { cwd: project })
  assert.match(stdout, /^ok, 9 of 10 left until \d{4}-/)
})

test('Redis example', async () => {
  writeFileSync(join(project, 'redis.js'), `${blocks[1]}\nmain(${JSON.stringify(redis.url)}).catch((e) => { console.error(e); process.exit(1) })\n`)
  const { stdout } = await run(process.execPath, ['redis.js'], { cwd: project })
  assert.equal(stdout.trim(), 'true 18')
})

test('connecting example: a cluster and a TLS server', async () => {
  const args = [cluster.urls, tls.url, join(tls.dir, 'ca.crt')].map((a) => JSON.stringify(a)).join(', ')
  writeFileSync(join(project, 'connect.js'), `${blocks[2]}\nmain(${args}).catch((e) => { console.error(e); process.exit(1) })\n`)
  const { stdout } = await run(process.execPath, ['connect.js'], { cwd: project })
  assert.equal(stdout.trim(), 'cluster true false\nstandalone true false')
})
