#!/usr/bin/env node
'use strict'
// throttlekit-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]
//                         [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE]
//                         [--redis-tls-cert FILE] [--redis-tls-key FILE] [--redis-scripting auto|functions|eval]
//                         [--postgres-url URL] [--sqlite-path FILE] FILE...
//
// Replays conformance vectors (decision vectors, and the HTTP vectors of conformance-vectors/http/)
// through @throttlekit/core's public API and ends with
// "N passed, M failed"; the exit status is 0 only when M is 0. On Redis (default URL
// $THROTTLEKIT_REDIS_URL or redis://127.0.0.1:6379) the store runs in deterministic-replay mode.
// The --redis-* flags are the Rust CLI's: --redis-url takes one URL (redis), seed nodes
// (redis-cluster) or sentinels (redis-sentinel, with --redis-service-name); rediss:// for TLS,
// with --redis-tls-ca naming the CA to trust instead of the system's. Each is one option of
// RedisStore.connect, which checks them (a bad combination exits 2 with config_invalid).
// On Postgres (--postgres-url, default $THROTTLEKIT_POSTGRES_URL) every suite gets a namespace
// of its own on one PostgresStore, its keys reset after it; on SQLite (--sqlite-path, created if
// missing) likewise on one SqliteStore opened with `sweep: false`, so expiry follows only the ops'
// `now`.
const fs = require('node:fs')
const path = require('node:path')
const { parse, replay } = require('../lib/conformance.js')
const { isHttpVectors, parseHttp, replayHttp } = require('../lib/http-conformance.js')
const { isAdaptiveVectors, parseAdaptive, replayAdaptive } = require('../lib/adaptive-conformance.js')
const { RedisStore, PostgresStore, SqliteStore } = require('../index.js')

function usage(message) {
  if (message) console.error(message)
  console.error(
    'usage: throttlekit-conformance [--store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite]\n' +
      '       [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE] [--redis-tls-cert FILE]\n' +
      '       [--redis-tls-key FILE] [--redis-scripting auto|functions|eval] [--postgres-url URL]\n' +
      '       [--sqlite-path FILE] FILE...',
  )
  process.exit(2)
}

async function main(argv) {
  let store = 'memory'
  let url = process.env.THROTTLEKIT_REDIS_URL || 'redis://127.0.0.1:6379'
  let postgresUrl = process.env.THROTTLEKIT_POSTGRES_URL
  let sqlitePath
  const options = {} // RedisStore.connect options named by --redis-* flags
  const flags = {
    '--redis-service-name': 'serviceName',
    '--redis-tls-ca': 'tlsCaFile',
    '--redis-tls-cert': 'tlsCertFile',
    '--redis-tls-key': 'tlsKeyFile',
    '--redis-scripting': 'scripting',
  }
  const files = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const [name, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined]
    const value = () => {
      const v = inline ?? argv[++i]
      if (v === undefined) usage(`${name} needs a value`)
      return v
    }
    if (name === '--store') store = value()
    else if (name === '--redis-url') url = value()
    else if (name === '--postgres-url') postgresUrl = value()
    else if (name === '--sqlite-path') sqlitePath = value()
    else if (name in flags) options[flags[name]] = value()
    else if (a === '-h' || a === '--help') usage()
    else if (a.startsWith('-')) usage(`unknown option ${a}`)
    else files.push(a)
  }
  const modes = { memory: null, redis: 'standalone', 'redis-cluster': 'cluster', 'redis-sentinel': 'sentinel', postgres: null, sqlite: null }
  if (!(store in modes)) usage(`--store must be memory, redis, redis-cluster, redis-sentinel, postgres or sqlite, not ${store}`)
  if (files.length === 0) usage('no vectors files given')
  if (store === 'postgres' && !postgresUrl) usage('--store postgres needs --postgres-url URL (or $THROTTLEKIT_POSTGRES_URL)')
  if (store === 'sqlite' && !sqlitePath) usage('--store sqlite needs --sqlite-path FILE')

  // On Postgres, 30 s to connect and per call: a replay checks decisions, not latency, and both
  // bounds cover new connections' logins (a SCRAM exchange, a backend forked: the pool's four at
  // connect), which a loaded machine held past the defaults (3 s to connect, 1 s a call), failing
  // the run with store_unavailable.
  const shared =
    store === 'postgres'
      ? await PostgresStore.connect({ url: postgresUrl, sweepIntervalMs: 0, timeoutMs: 30_000, connectTimeoutMs: 30_000 })
      : store === 'sqlite'
        ? SqliteStore.open({ path: sqlitePath, sweep: false })
        : modes[store]
        ? await RedisStore.connect({ urls: url, mode: modes[store], deterministicReplay: true, ...options })
        : undefined
  let passed = 0
  let failed = 0
  try {
    for (const file of files) {
      let report
      try {
        const text = fs.readFileSync(file, 'utf8')
        // HTTP vectors (format throttlekit-http/1) and adaptive ones (throttlekit-adaptive/1)
        // involve no store: the same on either.
        if (isHttpVectors(text)) report = await replayHttp(parseHttp(text, path.basename(file)))
        else if (isAdaptiveVectors(text)) report = replayAdaptive(parseAdaptive(text, path.basename(file)))
        else report = await replay(parse(text, path.basename(file)), { shared })
      } catch (e) {
        console.error(`${file}: ${e.message}`)
        failed += 1
        continue
      }
      for (const line of report.failures) console.log(`${path.basename(file)}: ${line}`)
      console.error(`${file}: ${report.passed} passed, ${report.failed} failed`)
      passed += report.passed
      failed += report.failed
    }
  } finally {
    if (shared) await shared.close()
  }
  console.log(`${passed} passed, ${failed} failed`)
  return failed === 0 ? 0 : 1
}

main(process.argv.slice(2)).then(
  (status) => {
    process.exitCode = status
  },
  (e) => {
    console.error(`throttlekit-conformance: ${e.code ? e.code + ': ' : ''}${e.message}`)
    process.exitCode = 2
  },
)
