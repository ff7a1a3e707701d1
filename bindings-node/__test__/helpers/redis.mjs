// A throwaway redis-server for the tests: $THROTTLEKIT_REDIS_URL if set, else one started with
// the repository's tests/redis-server.sh (or redis-server directly) and stopped by PID.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const script = join(here, '..', '..', '..', 'tests', 'redis-server.sh') // the repository's helper

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/** Starts Redis; resolves to {url, stop()}. Fails (never skips) when no server can be had. */
export async function startRedis() {
  if (process.env.THROTTLEKIT_REDIS_URL) return { url: process.env.THROTTLEKIT_REDIS_URL, stop: async () => {} }
  const dir = mkdtempSync(join(tmpdir(), 'tk-node-redis-'))
  const pidfile = join(dir, 'redis.pid')
  const url = execFileSync('bash', [script, 'start', pidfile], { encoding: 'utf8' }).trim()
  return { url, stop: async () => execFileSync('bash', [script, 'stop', pidfile]) }
}

/**
 * Starts a redis-server of the test's own (extra `args`, e.g. `--requirepass pw`), on `port` or a
 * free one, for tests that stop, freeze or restart it: {url, port, pid, cli(...args), stop()}.
 * Stopped (and continued first, if frozen) by PID.
 */
export async function spawnRedis(args = [], port = undefined) {
  // A port free when asked may be taken before the server binds it (other suites start servers
  // too): without a fixed port, each attempt takes a fresh one.
  for (let attempt = 0; ; attempt++) {
    const server = await trySpawnRedis(args, port ?? (await freePort()))
    if (server) return server
    if (attempt >= 5) throw new Error(`redis-server did not start (port ${port ?? 'any of 6 fresh ones'})`)
    if (port !== undefined) await new Promise((r) => setTimeout(r, 200))
  }
}

/** One attempt: resolves to the server once *our* PID answers on `port`, or null if it exited. */
async function trySpawnRedis(args, port) {
  const dir = mkdtempSync(join(tmpdir(), 'tk-node-redis-own-'))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args], { stdio: 'ignore' })
  const auth = args.includes('--requirepass') ? ['-a', args[args.indexOf('--requirepass') + 1], '--no-auth-warning'] : []
  const cli = (...cmd) => execFileSync('redis-cli', ['-p', String(port), ...auth, ...cmd], { encoding: 'utf8' }).trim()
  const exited = new Promise((r) => child.once('exit', r))
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || child.signalCode !== null) return null
    try {
      if (/^process_id:(\d+)/m.exec(cli('info', 'server'))?.[1] === String(child.pid)) break
    } catch {}
    if (i > 400) {
      process.kill(child.pid, 'SIGKILL')
      await exited
      return null
    }
    await new Promise((r) => setTimeout(r, 25))
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    cli,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      process.kill(child.pid, 'SIGCONT')
      process.kill(child.pid, 'SIGKILL')
      await exited
    },
  }
}

const repoTests = join(here, '..', '..', '..', 'tests')

/**
 * A 3-master cluster: $THROTTLEKIT_REDIS_CLUSTER_URLS if set (test.sh starts one for the whole
 * suite), else one started with tests/redis-cluster.sh and stopped by PID. {urls, pids, stop()}.
 * `replicas`: a cluster of its own whose masters each have that many replicas (for failover
 * tests, which kill a master); `pids()` lists its PIDs (the only processes a test may kill).
 */
export async function startRedisCluster({ replicas = 0 } = {}) {
  const given = process.env.THROTTLEKIT_REDIS_CLUSTER_URLS
  if (given && replicas === 0) return { urls: given, pids: () => [], stop: async () => {} }
  const pidfile = join(mkdtempSync(join(tmpdir(), 'tk-node-cluster-')), 'pids')
  const script = join(repoTests, 'redis-cluster.sh')
  const env = { ...process.env, REPLICAS: String(replicas) }
  const urls = execFileSync('bash', [script, 'start', pidfile], { encoding: 'utf8', env }).trim()
  const pids = () => readFileSync(pidfile, 'utf8').split('\n').filter(Boolean).map(Number)
  return { urls, pids, stop: async () => execFileSync('bash', [script, 'stop', pidfile]) }
}

/**
 * A TLS redis-server with a throwaway CA: $THROTTLEKIT_REDIS_TLS_URL and _DIR if set (test.sh),
 * else one started with tests/redis-tls.sh and stopped by PID. {url, dir (ca.crt, other-ca.crt,
 * client.crt, client.key), stop()}. `mutual`: a server of its own that requires a client certificate.
 */
export async function startRedisTls({ mutual = false } = {}) {
  const { THROTTLEKIT_REDIS_TLS_URL: url, THROTTLEKIT_REDIS_TLS_DIR: dir } = process.env
  if (url && dir && !mutual) return { url, dir, stop: async () => {} }
  const own = join(mkdtempSync(join(tmpdir(), 'tk-node-tls-')), 'pki')
  const script = join(repoTests, 'redis-tls.sh')
  const env = { ...process.env, MUTUAL: mutual ? '1' : '0' } // MUTUAL=1: client certificates required
  const started = execFileSync('bash', [script, 'start', own], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  return { url: started, dir: own, stop: async () => execFileSync('bash', [script, 'stop', own]) }
}

/**
 * A master, a replica and 3 sentinels watching service "tkmain": $THROTTLEKIT_REDIS_SENTINEL_URLS
 * if set (test.sh), else started with tests/redis-sentinels.sh and stopped by PID. {urls, stop()}.
 * `password`: a setup of its own whose sentinels require that password (SENTINEL_PASSWORD).
 */
export async function startRedisSentinels({ password = undefined } = {}) {
  const given = process.env.THROTTLEKIT_REDIS_SENTINEL_URLS
  if (given && password === undefined) return { urls: given, stop: async () => {} }
  const own = join(mkdtempSync(join(tmpdir(), 'tk-node-sentinel-')), 'servers')
  const script = join(repoTests, 'redis-sentinels.sh')
  const env = { ...process.env, SENTINEL_PASSWORD: password ?? '' }
  const urls = execFileSync('bash', [script, 'start', own], { encoding: 'utf8', env }).trim()
  return { urls, stop: async () => execFileSync('bash', [script, 'stop', own]) }
}
