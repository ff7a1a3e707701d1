// Replays vectors files in headless Chromium (Debian's `chromium`): serves page.html, the
// package's files (its `browser` entry fetches the .wasm as application/wasm and compiles it
// while it streams in) and the files from a tiny static server on a free loopback port, opens
// the page headless, waits for the page to post its report, prints failures and
// "N passed, M failed", and stops Chromium by its PID (its process group, which it leads).
//
//   node bindings-wasm/browser/replay.mjs FILE...
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join, resolve, sep } from 'node:path'

const here = import.meta.dirname
const pkg = resolve(here, '../../bindings-node')
const TIMEOUT_MS = 120_000
const TYPES = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' }

/** lib/conformance.js (CommonJS, requiring nothing once given an `api`) as an ES module. */
function conformanceModule() {
  const source = readFileSync(join(pkg, 'lib/conformance.js'), 'utf8')
  return `const module = { exports: {} }
const require = (name) => { throw new Error('no require(' + name + ') in the browser') }
${source}
export default module.exports\n`
}

function serve(paths, onReport) {
  return createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost')
    const send = (status, type, body) => {
      res.writeHead(status, { 'Content-Type': type })
      res.end(body)
    }
    if (req.method === 'POST' && url.pathname === '/result') {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        send(204, 'text/plain', '')
        onReport(body)
      })
      return
    }
    if (url.pathname === '/') return send(200, 'text/html', readFileSync(join(here, 'page.html')))
    if (url.pathname === '/conformance.mjs') return send(200, 'text/javascript', conformanceModule())
    if (url.pathname === '/vectors') return send(200, 'application/json', JSON.stringify(paths))
    const vector = /^\/vectors\/(\d+)$/.exec(url.pathname)
    if (vector && paths[Number(vector[1])] !== undefined) return send(200, 'application/json', readFileSync(paths[Number(vector[1])]))
    if (url.pathname.startsWith('/pkg/wasm/')) {
      const file = resolve(pkg, decodeURIComponent(url.pathname.slice('/pkg/'.length)))
      if (file.startsWith(join(pkg, 'wasm') + sep)) {
        try {
          return send(200, TYPES[extname(file)] ?? 'application/octet-stream', readFileSync(file))
        } catch {}
      }
    }
    send(404, 'text/plain', 'not found')
  })
}

async function main(paths) {
  if (paths.length === 0) {
    console.error('usage: replay.mjs FILE...')
    process.exit(2)
  }
  let done
  const report = new Promise((ok) => (done = ok))
  const server = serve(paths, done)
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok))
  const { port } = server.address()
  const profile = mkdtempSync(join(tmpdir(), 'tk-chromium-'))
  // --no-sandbox: the tests may run as root, where Chromium's sandbox refuses to start.
  const child = spawn(
    process.env.CHROMIUM ?? 'chromium',
    ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, `http://127.0.0.1:${port}/`],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  )
  let stderr = ''
  child.stderr.on('data', (c) => (stderr += c))
  const exited = new Promise((ok) => child.on('exit', ok))
  const timer = new Promise((ok) => setTimeout(ok, TIMEOUT_MS, null))
  let text
  try {
    text = await Promise.race([report, timer, exited.then(() => `error: chromium exited early\n${stderr}`)])
  } finally {
    if (child.exitCode === null) process.kill(-child.pid, 'SIGTERM')
    await Promise.race([exited, new Promise((ok) => setTimeout(ok, 5000))])
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL')
    server.close()
    rmSync(profile, { recursive: true, force: true })
  }
  if (text === null) {
    console.error(`no report from the page within ${TIMEOUT_MS / 1000} s\n${stderr}`)
    process.exit(2)
  }
  console.log(text)
  process.exit(/^\d+ passed, 0 failed$/m.test(text) ? 0 : 1)
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e.message)
  process.exit(2)
})
