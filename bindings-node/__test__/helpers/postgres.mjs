// A throwaway Postgres 15 for the tests: $THROTTLEKIT_POSTGRES_URL if set, else one started with
// the repository's tests/postgres-server.sh (initdb into a temp dir, a free port) and stopped by PID.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const script = join(here, '..', '..', '..', 'tests', 'postgres-server.sh')

/**
 * Starts Postgres; resolves to {url, stop()}. Fails (never skips) when no server can be had.
 * `{ tls: true }`: a server of its own with TLS on, its certificate from a throwaway CA (`caFile`)
 * naming `localhost` only.
 */
export async function startPostgres({ tls = false } = {}) {
  if (process.env.THROTTLEKIT_POSTGRES_URL && !tls) return { url: process.env.THROTTLEKIT_POSTGRES_URL, stop: async () => {} }
  const dir = mkdtempSync(join(tmpdir(), 'tk-node-pg-'))
  const pidfile = join(dir, 'postgres.pid')
  const env = { ...process.env, TLS: tls ? '1' : '0' }
  const url = execFileSync('bash', [script, 'start', pidfile], { encoding: 'utf8', env }).trim()
  const serverDir = readFileSync(pidfile, 'utf8').trim().split(/\s+/)[1]
  return { url, caFile: tls ? join(serverDir, 'tls', 'ca.crt') : null, stop: async () => execFileSync('bash', [script, 'stop', pidfile]) }
}
