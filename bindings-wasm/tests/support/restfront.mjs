// A throwaway redis-server and the REST front end (tests/restfront/restfront.py) in front of it,
// on free loopback ports, for the REST store's tests; `stop()` ends both by PID.
import { spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'

const FRONT = fileURLToPath(new URL('../../../tests/restfront/restfront.py', import.meta.url))
export const TOKEN = 'tk-test-token'

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

async function waitRedis(port) {
  const { createConnection } = await import('node:net')
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((resolve) => {
      const c = createConnection({ port, host: '127.0.0.1' }, () => {
        c.write('PING\r\n')
      })
      c.once('data', (d) => {
        c.destroy()
        resolve(String(d).startsWith('+PONG'))
      })
      c.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`redis-server on ${port} did not start`)
}

/** Starts redis-server (unless `redisPort` is given) and one front end; resolves with { url, token, redisPort, stop }. */
export async function startRestFront({ fault, redisPort } = {}) {
  const children = []
  if (redisPort === undefined) {
    redisPort = await freePort()
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    children.push(redis)
    await waitRedis(redisPort)
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
    for (const c of children.reverse()) if (c.exitCode === null) c.kill('SIGTERM')
  }
  return { url: `http://127.0.0.1:${port}`, token: TOKEN, redisPort, stop }
}
