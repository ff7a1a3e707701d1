// PostgresStore over TLS with libpq's sslmode (docs/postgres.md, "TLS"), against a Postgres whose
// certificate is from a private CA and names `localhost` only: prefer and require connect and
// decide without verifying (on the store's own connections and on Node's sockets, both TLS on the
// server's side), verify-full with the CA connects on `localhost` and is store_unavailable on
// 127.0.0.1, a missing sslrootcert is config_invalid.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, test } from 'node:test'

import tk from '../index.js'
import { startPostgres } from './helpers/postgres.mjs'

const { Limiter, ManualClock, PostgresStore, Strategy } = tk
const socketOf = tk[Symbol.for('throttlekit.postgresSocket')]

let pg
let n = 0

/** The URL on `host` with `params`, tagged with a fresh application_name (returned too). */
function url(host, params) {
  const name = `tk-node-tls-${process.pid}-${n++}`
  return [`${pg.url.replace('@127.0.0.1:', `@${host}:`)}?application_name=${name}${params ? `&${params}` : ''}`, name]
}

/** How many of the connections named `name` the server sees, and how many of them are TLS. */
function sslOf(name) {
  const sql = `SELECT count(*) FILTER (WHERE s.ssl) || '/' || count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '${name}'`
  return execFileSync('psql', [`${pg.url}?sslmode=require`, '-tAc', sql], { encoding: 'utf8' }).trim()
}

/** Connects, decides through the Promise (Node's sockets) and sync (the store's) paths. */
async function connectAndDecide(u, name) {
  const store = await PostgresStore.connect({ url: u, poolSize: 1, connectTimeoutMs: 30_000, timeoutMs: 10_000, sweepIntervalMs: 0 })
  try {
    // Time stands still: the second check opens a TLS connection, which can take seconds on a
    // loaded machine, and on the system clock a minute boundary between the checks would start a
    // new window and admit the third. Postgres judges expiry by the caller's `now` on read.
    const clock = new ManualClock(Date.now())
    const lim = new Limiter({ strategy: Strategy.fixedWindow({ limit: 2, windowMs: 60_000 }), store, clock, prefix: name })
    assert.equal((await lim.check('k')).allowed, true)
    assert.deepEqual(socketOf(lim), { open: 1 }, 'the Promise call took a socket')
    assert.equal(lim.checkSync('k').allowed, true)
    assert.equal((await lim.check('k')).allowed, false)
    assert.equal(sslOf(name), '2/2', `both connections are TLS (${u})`)
  } finally {
    await store.close()
  }
}

describe('PostgresStore over TLS (sslmode)', () => {
  before(async () => {
    pg = await startPostgres({ tls: true })
  })
  after(async () => {
    await pg?.stop()
  })

  for (const params of ['', 'sslmode=prefer', 'sslmode=require']) {
    test(`${params || 'the default (prefer)'} encrypts without verifying the private CA`, async () => {
      for (const host of ['localhost', '127.0.0.1']) await connectAndDecide(...url(host, params))
    })
  }

  test('verify-full with the CA connects on the certificate\'s name', async () => {
    await connectAndDecide(...url('localhost', `sslmode=verify-full&sslrootcert=${pg.caFile}`))
    await connectAndDecide(...url('127.0.0.1', `sslmode=verify-ca&sslrootcert=${pg.caFile}`))
  })

  test('verify-full on a name the certificate does not hold, or without the CA, is store_unavailable', async () => {
    for (const [host, params] of [['127.0.0.1', `sslmode=verify-full&sslrootcert=${pg.caFile}`], ['localhost', 'sslmode=verify-full']]) {
      const [u] = url(host, params)
      await assert.rejects(PostgresStore.connect({ url: u, poolSize: 1, connectTimeoutMs: 30_000 }), (e) => e.code === 'store_unavailable' && /certificate/.test(e.message))
    }
  })

  test('a missing sslrootcert or an unknown sslmode is config_invalid', async () => {
    for (const params of ['sslmode=verify-ca&sslrootcert=/nonexistent/ca.crt', 'sslmode=verify']) {
      const [u] = url('localhost', params)
      await assert.rejects(PostgresStore.connect({ url: u }), (e) => e.code === 'config_invalid' && /postgres\.url/.test(e.message))
    }
  })
})
