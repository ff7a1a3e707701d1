#!/usr/bin/env node
'use strict'
// throttlekit-conformance [--store memory|redis] [--redis-url URL] FILE...
//
// Replays conformance vectors (decision vectors, and the HTTP vectors of conformance-vectors/http/)
// through @throttlekit/core's public API and ends with
// "N passed, M failed"; the exit status is 0 only when M is 0. On Redis (default URL
// $THROTTLEKIT_REDIS_URL or redis://127.0.0.1:6379) the store runs in deterministic-replay mode.
const fs = require('node:fs')
const path = require('node:path')
const { parse, replay } = require('../lib/conformance.js')
const { isHttpVectors, parseHttp, replayHttp } = require('../lib/http-conformance.js')
const { RedisStore } = require('../index.js')

function usage(message) {
  if (message) console.error(message)
  console.error('usage: throttlekit-conformance [--store memory|redis] [--redis-url URL] FILE...')
  process.exit(2)
}

async function main(argv) {
  let store = 'memory'
  let url = process.env.THROTTLEKIT_REDIS_URL || 'redis://127.0.0.1:6379'
  const files = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--store') store = argv[++i]
    else if (a.startsWith('--store=')) store = a.slice(8)
    else if (a === '--redis-url') url = argv[++i]
    else if (a.startsWith('--redis-url=')) url = a.slice(12)
    else if (a === '-h' || a === '--help') usage()
    else if (a.startsWith('-')) usage(`unknown option ${a}`)
    else files.push(a)
  }
  if (store !== 'memory' && store !== 'redis') usage(`--store must be memory or redis, not ${store}`)
  if (url === undefined) usage('--redis-url needs a URL')
  if (files.length === 0) usage('no vectors files given')

  const redis = store === 'redis' ? await RedisStore.connect({ url, deterministicReplay: true }) : undefined
  let passed = 0
  let failed = 0
  try {
    for (const file of files) {
      let report
      try {
        const text = fs.readFileSync(file, 'utf8')
        // HTTP vectors (format throttlekit-http/1) involve no store: the same on either.
        report = isHttpVectors(text)
          ? await replayHttp(parseHttp(text, path.basename(file)))
          : await replay(parse(text, path.basename(file)), { redis })
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
    if (redis) await redis.close()
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
