#!/usr/bin/env node
// throttlekit-conformance for the WebAssembly build:
//   [--store memory|redis-rest] [--url URL] [--token TOKEN] FILE...
// (`redis-rest`: an Upstash-protocol REST server, from the flags or THROTTLEKIT_REST_URL and
// THROTTLEKIT_REST_TOKEN)
//
// Replays conformance vectors (conformance-vectors/FORMAT.md) through the WebAssembly build of
// @throttlekit/core's public API, with the native runner's replay (../lib/conformance.js), and
// ends with "N passed, M failed"; the exit status is 0 only when M is 0. Runs unchanged under
// Node, Deno (`deno run --allow-read --allow-env`) and Bun.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import process from 'node:process'

import * as tk from './node.mjs'

const require = createRequire(import.meta.url)
const { parse, replay } = require('../lib/conformance.js')

// What `--store` names: undefined replays on a fresh MemoryStore per suite (sync methods);
// anything else is a store in deterministic-replay mode (Promise methods), as the native
// runner's `redis`.
const STORES = {
  memory: async () => undefined,
  'redis-rest': async ({ url, token }) => {
    url ??= process.env.THROTTLEKIT_REST_URL
    token ??= process.env.THROTTLEKIT_REST_TOKEN
    if (!url || !token) usage('--store redis-rest needs --url and --token (or THROTTLEKIT_REST_URL and THROTTLEKIT_REST_TOKEN)')
    // Expiry on the vectors' clock, as the native runner's `redis` (it needs tests/restfront/).
    return new tk.RedisRestStore({ url, token, timeoutMs: 5000, deterministicReplay: true })
  },
}

function usage(message) {
  if (message) console.error(message)
  console.error('usage: conformance.mjs [--store memory|redis-rest] [--url URL] [--token TOKEN] FILE...')
  process.exit(2)
}

async function main(argv) {
  let store = 'memory'
  const rest = {}
  const files = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--store') store = argv[++i] ?? usage('--store needs a value')
    else if (a.startsWith('--store=')) store = a.slice('--store='.length)
    else if (a === '--url' || a === '--token') rest[a.slice(2)] = argv[++i] ?? usage(`${a} needs a value`)
    else if (a.startsWith('--')) usage(`unknown option ${a}`)
    else files.push(a)
  }
  if (!(store in STORES)) usage(`--store must be one of: ${Object.keys(STORES).join(', ')}`)
  if (files.length === 0) usage('no vectors file given')
  let subject
  try {
    subject = await STORES[store](rest)
  } catch (e) {
    console.error(`${e.code ?? 'error'}: ${e.message}`)
    process.exit(2)
  }
  let passed = 0
  let failed = 0
  for (const f of files) {
    const file = parse(readFileSync(f, 'utf8'), f)
    const report = await replay(file, { redis: subject, api: tk })
    for (const line of report.failures) console.log(`FAIL ${f}: ${line}`)
    passed += report.passed
    failed += report.failed
  }
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e)
  process.exit(2)
})
