// The README's JavaScript examples run as written, against the package as installed by name.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
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
const readme = readFileSync(join(pkg, 'README.md'), 'utf8')
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
const tsBlocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])

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

test('the README has the quick start, the Redis example, the connecting example and five HTTP quick starts', () => {
  assert.equal(blocks.length, 7)
  assert.equal(tsBlocks.length, 1) // NestJS: TypeScript, as Nest apps are written
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
  assert.equal(stdout.trim(), 'cluster true true\nstandalone true false') // a cluster: event-loop sockets; TLS: the core's
})

/**
 * Runs an HTTP quick start as written (PORT=0: the kernel picks a free port), waits for its
 * "listening on URL" line, runs `body(base)`, and stops it by PID.
 */
async function serveBlock(file, code, body, cwd = project) {
  writeFileSync(join(cwd, file), code)
  // The quick starts require express, fastify, koa and @hono/node-server: the package's devDependencies.
  const env = { ...process.env, PORT: '0', NODE_PATH: join(pkg, 'node_modules') }
  const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise((r) => child.once('exit', r))
  try {
    const base = await new Promise((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d) => {
        out += d
        const m = /listening on (http:\/\/[^\s]+)/.exec(out)
        if (m) resolve(m[1].replace(/\/$/, ''))
      })
      child.once('exit', (code) => reject(new Error(`${file} exited (${code}) before listening: ${out}`)))
    })
    await body(base)
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}

/** What every HTTP quick start does: /limited allows 5 then denies; /healthz is never limited. */
async function limitedAndHealthz(base) {
  const statuses = []
  for (let n = 0; n < 6; n++) {
    const res = await fetch(`${base}/limited`)
    statuses.push(res.status)
    if (n === 0) assert.equal(res.headers.get('ratelimit'), '"default";r=4;t=12')
    if (n === 5) {
      assert.ok(Number(res.headers.get('retry-after')) >= 1)
      assert.match(res.headers.get('content-type'), /^application\/problem\+json/)
    }
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429])
  for (let n = 0; n < 3; n++) {
    const res = await fetch(`${base}/healthz`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('ratelimit'), null)
  }
}

for (const [i, name] of [[3, 'express'], [4, 'fastify'], [5, 'fetch'], [6, 'koa']]) {
  test(`HTTP quick start: ${name}`, async () => {
    await serveBlock(`http-${name}.js`, blocks[i], limitedAndHealthz)
  })
}

test('HTTP quick start: NestJS, compiled by tsc in an ES module project, then run', { timeout: 120_000 }, async () => {
  // A project of its own: `"type": "module"`, the package and Nest's packages linked in (the
  // package's devDependencies), and the tsconfig Nest's decorators need.
  const nest = mkdtempSync(join(tmpdir(), 'tk-readme-nest-'))
  writeFileSync(join(nest, 'package.json'), JSON.stringify({ name: 'nest-quick-start', private: true, type: 'module' }))
  const compilerOptions = { module: 'nodenext', target: 'es2022', strict: true, experimentalDecorators: true, emitDecoratorMetadata: true, types: ['node'] }
  writeFileSync(join(nest, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['main.ts'] }))
  mkdirSync(join(nest, 'node_modules', '@throttlekit'), { recursive: true })
  symlinkSync(pkg, join(nest, 'node_modules', '@throttlekit', 'core'), 'dir')
  for (const dep of ['@nestjs', '@types', 'reflect-metadata', 'rxjs']) symlinkSync(join(pkg, 'node_modules', dep), join(nest, 'node_modules', dep), 'dir')
  writeFileSync(join(nest, 'main.ts'), tsBlocks[0])
  await run(process.execPath, [join(pkg, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', nest], { cwd: nest }).catch((e) => {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`)
  })
  await serveBlock('main.js', readFileSync(join(nest, 'main.js'), 'utf8'), async (base) => {
    await limitedAndHealthz(base)
    const login = await fetch(`${base}/login`)
    assert.equal(login.status, 200)
    assert.equal(login.headers.get('ratelimit'), '"login";r=0;t=60')
    const denied = await fetch(`${base}/login`)
    assert.equal(denied.status, 429)
    assert.equal((await denied.json()).status, 429)
  }, nest)
})
