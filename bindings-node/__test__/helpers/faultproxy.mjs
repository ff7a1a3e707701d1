// The repository's fault proxy (tests/faultproxy, Postgres and RESP framing) in front of a
// server, for at-most-once tests: built with cargo, started on a free port, driven
// by its control protocol, stopped by PID.
import { execFileSync, spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

function binary() {
  const target = process.env.CARGO_TARGET_DIR || join(root, 'target')
  const bin = join(target, 'debug', 'throttlekit-faultproxy')
  // Built every time (a no-op when fresh), so a stale binary is never used.
  execFileSync('cargo', ['build', '-q', '-p', 'throttlekit-faultproxy', '--bin', 'throttlekit-faultproxy'], { cwd: root, stdio: 'inherit' })
  return bin
}

/**
 * Starts a proxy in front of the Postgres at `url`; resolves to {url (through the proxy),
 * control(line) (synchronous: the proxy answers before it returns), stop()}.
 */
export async function startProxy(url) {
  const m = /@([^/:]+):(\d+)\//.exec(url)
  const child = spawn(binary(), ['--protocol', 'postgres', '--route', `${m[1]}:${m[2]}`], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = await new Promise((resolve, reject) => {
    let text = ''
    child.stdout.on('data', (b) => {
      text += b
      if (text.includes('ready\n')) resolve(text.split('\n'))
    })
    child.on('exit', (code) => reject(new Error(`the fault proxy exited (${code})`)))
  })
  const listen = lines.find((l) => l.startsWith('route ')).split(' ')[1]
  const controlAddr = lines.find((l) => l.startsWith('control ')).split(' ')[1]
  const [host, port] = controlAddr.split(':')
  const control = (line) => {
    const reply = execFileSync(process.execPath, ['-e', `
      const s = require('node:net').createConnection(${port}, '${host}', () => s.write(${JSON.stringify(line + '\n')}))
      s.on('data', (b) => { process.stdout.write(b); s.end() })`], { encoding: 'utf8' })
    if (!reply.startsWith('ok')) throw new Error(`the fault proxy refused ${JSON.stringify(line)}: ${reply}`)
    return reply
  }
  return { url: url.replace(`@${m[1]}:${m[2]}/`, `@${listen}/`), control, stop: () => child.kill() }
}
