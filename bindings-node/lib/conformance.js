'use strict'
// Replays conformance vectors (conformance-vectors/FORMAT.md) through the public JavaScript API —
// Limiter, MultiLimiter, Shaper and ManualClock — so a pass proves what a Node caller gets.
// In-memory suites use the sync methods (checkSync, ...); Redis and Postgres suites the Promise
// methods, on one shared store (Redis's in deterministic-replay mode so that expiry follows each
// op's `now`; Postgres judges expiry by the caller's `now` as it is).
// The API under test: the native addon, loaded on first use, unless `replay` is given another
// build of the same API (the WebAssembly build's runner, bindings-node/wasm/conformance.mjs).
let native
const nativeApi = () => (native ??= require('../index.js'))

const FIELDS = {
  file: ['contractVersion', 'generatedFrom', 'frozen', 'decisionFields', 'note', 'description', 'suites'],
  suite: ['id', 'name', 'comment', 'primitive', 'strategy', 'shaper', 'rule', 'dimensions', 'key', 'keys', 'prefix', 'expectError', 'ops', 'primitiveVersion'],
  op: ['now', 'op', 'cost', 'key', 'keys', 'expect', 'expectError', 'comment'],
  expect: ['allowed', 'limit', 'remaining', 'resetAt', 'retryAfterMs', 'binding', 'accepted', 'delayMs'],
}
const DECISION_FIELDS = ['allowed', 'limit', 'remaining', 'resetAt', 'retryAfterMs']
const RESERVATION_FIELDS = ['accepted', 'delayMs']

class VectorsError extends Error {
  constructor(message) {
    super(message)
    this.code = 'config_invalid'
  }
}

function strict(obj, allowed, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new VectorsError(`${where} must be an object`)
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw new VectorsError(`${where}: unknown field "${k}"`)
  }
}

/** Parses a vectors file strictly: an unknown field anywhere is an error, not ignored. */
function parse(text, name = 'vectors') {
  let file
  try {
    file = JSON.parse(text)
  } catch (e) {
    throw new VectorsError(`${name}: not JSON: ${e.message}`)
  }
  strict(file, FIELDS.file, name)
  if (!Array.isArray(file.suites)) throw new VectorsError(`${name}: "suites" must be an array`)
  file.suites.forEach((suite, i) => {
    const where = `${name}: suite ${suite?.id ?? suite?.name ?? '#' + i}`
    strict(suite, FIELDS.suite, where)
    if (!['rateLimit', 'multi', 'shaper', undefined].includes(suite.primitive)) throw new VectorsError(`${where}: unknown primitive "${suite.primitive}"`)
    if (suite.ops !== undefined && !Array.isArray(suite.ops)) throw new VectorsError(`${where}: "ops" must be an array`)
    for (const d of suite.dimensions ?? []) strict(d, ['name', 'strategy', 'costMultiplier'], `${where}: dimension`)
    ;(suite.ops ?? []).forEach((op, j) => {
      strict(op, FIELDS.op, `${where}: op ${j}`)
      if (op.expect !== undefined) strict(op.expect, FIELDS.expect, `${where}: op ${j}: expect`)
    })
  })
  return file
}

/** What an op produced: a decision (with `binding` for multi), a reservation, done, or an error. */
function got(kind, value) {
  return { kind, value }
}

function show(g) {
  if (g.kind === 'error') return `error ${g.value.code} (${g.value.message})`
  if (g.kind === 'done') return 'done'
  return JSON.stringify(g.value)
}

function matches(expect, g) {
  if (g.kind === 'decision') {
    if ('accepted' in expect || 'delayMs' in expect) return false
    if ('binding' in expect && expect.binding !== g.value.binding) return false
    return DECISION_FIELDS.every((f) => !(f in expect) || expect[f] === g.value[f])
  }
  if (g.kind === 'reservation') {
    if (Object.keys(expect).some((f) => !RESERVATION_FIELDS.includes(f))) return false
    return RESERVATION_FIELDS.every((f) => !(f in expect) || expect[f] === g.value[f])
  }
  return false
}

function passes(op, g) {
  if (op.expectError !== undefined) return g.kind === 'error' && g.value.code === op.expectError
  if (op.expect !== undefined) return matches(op.expect, g)
  return g.kind !== 'error'
}

function decision(d, binding) {
  const v = { allowed: d.allowed, limit: d.limit, remaining: d.remaining, resetAt: d.resetAt, retryAfterMs: d.retryAfterMs }
  if (binding !== undefined) v.binding = binding
  return got('decision', v)
}

/** Builds the suite's subject with the public constructors. Throws what they throw. */
function build(tk, suite, store, clock, prefix) {
  const common = { store, clock }
  if (prefix) common.prefix = prefix
  switch (suite.primitive ?? 'rateLimit') {
    case 'rateLimit':
      return { kind: 'rateLimit', subject: new tk.Limiter({ strategy: suite.strategy, ...common }) }
    case 'shaper':
      return { kind: 'shaper', subject: new tk.Shaper({ ...suite.shaper, ...common }) }
    case 'multi':
      return { kind: 'multi', subject: new tk.MultiLimiter({ rule: suite.rule, dimensions: suite.dimensions, ...common }) }
  }
  throw new VectorsError(`unknown primitive ${suite.primitive}`)
}

function notImplemented(what) {
  const e = new Error(`${what} is not implemented`)
  e.code = 'not_implemented'
  return e
}

/** Runs one op; `sync` picks the sync methods (memory) or the Promise methods (Redis). */
async function runOp({ kind, subject }, suite, op, clock, sync) {
  clock.set(op.now)
  const cost = op.cost // undefined means the API's default of 1
  if (kind === 'rateLimit') {
    const key = op.key ?? suite.key ?? ''
    switch (op.op ?? 'check') {
      case 'check':
        return decision(sync ? subject.checkSync(key, cost) : await subject.check(key, cost))
      case 'peek':
        return decision(sync ? subject.peekSync(key) : await subject.peek(key))
      case 'forecast':
        return decision(sync ? subject.forecastSync(key, cost) : await subject.forecast(key, cost))
      case 'reset':
        sync ? subject.resetSync(key) : await subject.reset(key)
        return got('done')
    }
  } else if (kind === 'shaper') {
    const key = op.key ?? suite.key ?? ''
    switch (op.op ?? 'reserve') {
      case 'reserve':
        return got('reservation', { ...(sync ? subject.reserveSync(key, cost) : await subject.reserve(key, cost)) })
      case 'reset':
        sync ? subject.resetSync(key) : await subject.reset(key)
        return got('done')
    }
  } else {
    const keys = op.keys ?? suite.keys ?? []
    switch (op.op ?? 'check') {
      case 'check': {
        const m = sync ? subject.checkSync(keys, cost) : await subject.check(keys, cost)
        return decision(m, m.binding)
      }
      case 'reset':
        sync ? subject.resetSync(keys) : await subject.reset(keys)
        return got('done')
    }
  }
  throw notImplemented(`${op.op} on a ${kind} suite`)
}

/** Forgets every key a suite used (Redis only: keeps a shared server clean). */
async function cleanup({ kind, subject }, suite) {
  try {
    if (kind === 'multi') {
      const tuples = [suite.keys, ...(suite.ops ?? []).map((o) => o.keys)].filter(Array.isArray)
      for (const keys of tuples) await subject.reset(keys).catch(() => {})
    } else {
      const keys = new Set([suite.key ?? '', ...(suite.ops ?? []).map((o) => o.key).filter((k) => typeof k === 'string')])
      for (const key of keys) await subject.reset(key).catch(() => {})
    }
  } catch {
    // Best effort: leftovers live under this run's unique namespace.
  }
}

/**
 * Replays a parsed vectors file. `shared` (or its older name `redis`): a RedisStore in
 * deterministic-replay mode or a PostgresStore, every suite under a namespace of its own; or
 * undefined for a fresh MemoryStore per suite; `api`: the module to replay through (default: the
 * native addon). Returns {passed, failed, failures}.
 */
async function replay(file, { redis, shared = redis, api } = {}) {
  const tk = api ?? nativeApi()
  const report = { passed: 0, failed: 0, failures: [] }
  // Only a shared store needs the run's namespace (and `process`, which a Worker may not have).
  const run = shared ? `tk-conformance-node:${process.pid}-${Date.now()}` : ''
  let n = 0
  for (const [index, suite] of file.suites.entries()) {
    const label = suite.id ?? suite.name ?? `#${index}`
    const ops = suite.ops ?? []
    const clock = new tk.ManualClock(0)
    // On a shared store every suite gets its own namespace, so suites (and other users of the server)
    // never share keys; key names play no part in any decision.
    const prefix = shared ? [run, n++, suite.prefix].filter((p) => p !== undefined && p !== '').join(':') : suite.prefix
    let subject
    try {
      subject = build(tk, suite, shared ?? new tk.MemoryStore(), clock, prefix)
    } catch (e) {
      if (suite.expectError !== undefined && e.code === suite.expectError) {
        report.passed += 1
      } else {
        report.failed += Math.max(ops.length, 1)
        report.failures.push(`${label}: setup: expected ${suite.expectError ?? 'a limiter'}, got error ${e.code} (${e.message})`)
      }
      continue
    }
    if (suite.expectError !== undefined) {
      report.failed += 1
      report.failures.push(`${label}: setup: expected error ${suite.expectError}, got a limiter`)
      continue
    }
    for (const [i, op] of ops.entries()) {
      let g
      try {
        g = await runOp(subject, suite, op, clock, !shared)
      } catch (e) {
        g = got('error', e)
      }
      if (passes(op, g)) {
        report.passed += 1
        continue
      }
      report.failed += 1
      const want = op.expectError !== undefined ? `error ${op.expectError}` : op.expect !== undefined ? JSON.stringify(op.expect) : 'no error'
      report.failures.push(`${label}: op ${i} (now ${op.now}): expected ${want}, got ${show(g)}`)
    }
    if (shared) await cleanup(subject, suite)
  }
  return report
}

module.exports = { parse, replay, VectorsError }
