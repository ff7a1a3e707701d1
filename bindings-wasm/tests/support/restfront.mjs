// A throwaway redis-server and the REST front end (tests/restfront/restfront.py) in front of it,
// on free loopback ports, for the REST store's tests; `stop()` ends both by PID.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { spawnRedis } from '../../../bindings-node/__test__/helpers/redis.mjs'

const FRONT = fileURLToPath(new URL('../../../tests/restfront/restfront.py', import.meta.url))
export const TOKEN = 'tk-test-token'

/** Starts redis-server (unless `redisPort` is given) and one front end; resolves with { url, token, redisPort, stop }. */
export async function startRestFront({ fault, redisPort } = {}) {
  const children = []
  let redis
  if (redisPort === undefined) {
    redis = await spawnRedis()
    redisPort = redis.port
  }
  const args = [FRONT, '--redis-port', String(redisPort), '--token', TOKEN]
  if (fault) args.push('--fault', fault)
  const front = spawn('python3', args, { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(front)
  const port = await new Promise((resolve, reject) => {
    let out = ''
    front.stdout.on('data', (d) => {
      out += d
      const m = /^listening (\d+)/m.exec(out)
      if (m) resolve(Number(m[1]))
    })
    front.once('exit', (code) => reject(new Error(`restfront exited with ${code}`)))
  })
  const stop = () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
    redis?.stop()
  }
  return { url: `http://127.0.0.1:${port}`, token: TOKEN, redisPort, stop }
}
