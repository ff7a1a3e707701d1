'use strict'
// Replays the adaptive concurrency vectors (conformance-vectors/adaptive/*.json, format
// throttlekit-adaptive/1; see conformance-vectors/FORMAT.md) through this package's public API:
// `new AdaptiveLimiter(config, new VirtualClock())`, `tryAcquire`, `permit.release` and a permit
// dropped unreleased (a leak). Each event's result is compared with its `expect` (granted or
// released, then `limit()` and `inflight()`) or its `expectError` code; a mismatch names the
// case, the event index, and expected vs got, as the Rust runner does.
const { isDeepStrictEqual } = require('node:util')
const tk = require('../index.js')

const FORMAT = 'throttlekit-adaptive/1'
const FILE_FIELDS = ['format', 'comment', 'cases']
const CASE_FIELDS = ['id', 'comment', 'config', 'expectError', 'events']
const EVENT_FIELDS = ['op', 'permit', 'partition', 'outcome', 'rttUs', 'us', 'expect', 'expectError']
const EXPECT_FIELDS = ['granted', 'released', 'limit', 'inflight']

class VectorsError extends Error {
  constructor(message) {
    super(message)
    this.code = 'config_invalid'
  }
}

function fields(obj, allowed, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new VectorsError(`${where}: must be an object`)
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k))
  if (unknown.length) throw new VectorsError(`${where}: unknown fields ${unknown.join(', ')}`)
  return obj
}

/** Whether `text` is an adaptive vectors file. */
function isAdaptiveVectors(text) {
  try {
    return JSON.parse(text)?.format === FORMAT
  } catch {
    return false
  }
}

/** Parses an adaptive vectors file strictly. */
function parseAdaptive(text, name = 'vectors') {
  const file = fields(JSON.parse(text), FILE_FIELDS, name)
  if (file.format !== FORMAT) throw new VectorsError(`${name}: format must be ${FORMAT}`)
  file.cases.forEach((c, i) => {
    fields(c, CASE_FIELDS, `${name} cases[${i}]`)
    ;(c.events ?? []).forEach((e, j) => {
      fields(e, EVENT_FIELDS, `${c.id} event ${j}`)
      if (e.expect) fields(e.expect, EXPECT_FIELDS, `${c.id} event ${j} expect`)
    })
  })
  return file
}

/** One event: ['ok', state] or ['error', code]. */
function run(limiter, clock, permits, e) {
  const name = e.permit ?? ''
  const state = {}
  try {
    if (e.op === 'advance') clock.advance((e.us ?? 0) * 1000)
    else if (e.op === 'acquire') {
      const answer = limiter.tryAcquire(e.partition)
      state.granted = answer.granted
      if (answer.granted) permits.set(name, answer)
    } else if (e.op === 'release') {
      const permit = permits.get(name)
      if (permit === undefined) return ['error', 'config_invalid']
      state.released = permit.release(e.outcome ?? '', e.rttUs === undefined ? undefined : e.rttUs * 1000)
    } else if (e.op === 'drop') {
      // What the garbage collector does to an unreleased permit, now rather than some time later.
      permits.get(name)?.__forget()
      permits.delete(name)
    } else return ['error', `unknown op ${e.op}`]
  } catch (err) {
    return ['error', err.code]
  }
  return ['ok', { ...state, limit: limiter.limit(), inflight: limiter.inflight() }]
}

/** Replays a parsed file; returns {passed, failed, failures}. */
function replayAdaptive(file) {
  const report = { passed: 0, failed: 0, failures: [] }
  const fail = (line) => {
    report.failed += 1
    report.failures.push(line)
  }
  for (const c of file.cases) {
    const clock = new tk.VirtualClock()
    let limiter
    let built = ['ok', null]
    try {
      limiter = new tk.AdaptiveLimiter(c.config, clock)
    } catch (err) {
      built = ['error', err.code]
    }
    if (c.expectError !== undefined || limiter === undefined) {
      if (isDeepStrictEqual(built, ['error', c.expectError])) report.passed += 1
      else fail(`${c.id}: expected error ${c.expectError}, got ${JSON.stringify(built)}`)
      continue
    }
    const permits = new Map()
    ;(c.events ?? []).forEach((e, i) => {
      const want = e.expectError !== undefined ? ['error', e.expectError] : ['ok', e.expect ?? {}]
      const got = run(limiter, clock, permits, e)
      if (isDeepStrictEqual(got, want)) report.passed += 1
      else fail(`${c.id} event ${i} (${e.op}): expected ${JSON.stringify(want[1])}, got ${JSON.stringify(got[1])}`)
    })
  }
  return report
}

module.exports = { FORMAT, isAdaptiveVectors, parseAdaptive, replayAdaptive }
