'use strict'
// Replays the HTTP vectors (conformance-vectors/http/*.json, format throttlekit-http/1; see
// conformance-vectors/FORMAT.md) through this package's public API, twice per case:
//
// - "data": the request object as is, through `rateLimitHeaders` / `clientKey`;
// - "bound": through what the middleware calls per request, a `RateLimitFields` bound to a
//   `Limiter` (a `MultiLimiter` for several limits) and a `ClientIdentity`.
//
// A case passes only when both give the expected lines (or key, or error code).
const tk = require('../index.js')

const FORMAT = 'throttlekit-http/1'
const FILE_FIELDS = ['format', 'description', 'headerCases', 'clientKeyCases']
const CASE_FIELDS = ['id', 'comment', 'request', 'expect', 'expectError']

class VectorsError extends Error {
  constructor(message) {
    super(message)
    this.code = 'config_invalid'
  }
}

/** Whether `text` is an HTTP vectors file (its top level says `"format": "throttlekit-http/1"`). */
function isHttpVectors(text) {
  try {
    return JSON.parse(text)?.format === FORMAT
  } catch {
    return false
  }
}

/** Parses an HTTP vectors file strictly. */
function parseHttp(text, name = 'vectors') {
  let file
  try {
    file = JSON.parse(text)
  } catch (e) {
    throw new VectorsError(`${name}: not JSON: ${e.message}`)
  }
  if (file === null || typeof file !== 'object' || file.format !== FORMAT) throw new VectorsError(`${name}: format must be ${FORMAT}`)
  for (const k of Object.keys(file)) if (!FILE_FIELDS.includes(k)) throw new VectorsError(`${name}: unknown field "${k}"`)
  for (const c of [...(file.headerCases ?? []), ...(file.clientKeyCases ?? [])]) {
    for (const k of Object.keys(c)) if (!CASE_FIELDS.includes(k)) throw new VectorsError(`${name}: case ${c.id}: unknown field "${k}"`)
    if ((c.expect === undefined) === (c.expectError === undefined)) {
      throw new VectorsError(`${name}: case ${c.id} needs exactly one of expect, expectError`)
    }
  }
  return file
}

/** `f()`'s value, or the error's code. */
function attempt(f) {
  try {
    return { value: f() }
  } catch (e) {
    return { error: e.code ?? 'uncoded', message: e.message }
  }
}

/** Header lines through a RateLimitFields bound to a limiter built from the case's limits. */
function boundHeaders({ options, nowMs, limits }) {
  const clock = new tk.ManualClock(nowMs)
  const flat = (() => {
    if (limits.length === 1 && limits[0].name === undefined) {
      const [l] = limits
      const limiter = new tk.Limiter({ strategy: l.strategy, clock })
      return new tk.RateLimitFields(limiter, options).lines(l.decision, l.key)
    }
    // Several limits: a multi limiter whose dimensions are the limits in the listed order, and
    // its decision with the first (binding) limit's numbers.
    const multi = new tk.MultiLimiter({ rule: 'all', dimensions: limits.map((l) => ({ name: l.name, strategy: l.strategy })), clock })
    const decision = { ...limits[0].decision, binding: limits[0].name, dimensions: limits.map((l) => l.decision) }
    const keys = limits.every((l) => l.key !== undefined) ? limits.map((l) => l.key) : undefined
    return new tk.RateLimitFields(multi, options).lines(decision, keys)
  })()
  const pairs = []
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]])
  return pairs
}

/** The client key through a ClientIdentity and the configured header's values. */
function boundKey({ peer, headers = [], options }) {
  const identity = new tk.ClientIdentity(options)
  // Picking the configured header out of the request is the framework's part (Node lower-cases
  // names); reading it is core's.
  const values = headers.filter(([n]) => n.trim().toLowerCase() === identity.forwardedHeader).map(([, v]) => v)
  return identity.key(peer, values)
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** Replays a parsed HTTP vectors file; resolves to {passed, failed, failures}. */
async function replayHttp(file) {
  const report = { passed: 0, failed: 0, failures: [] }
  const run = (kind, c, paths) => {
    const problems = []
    for (const [path, f] of paths) {
      const got = attempt(f)
      if (c.expectError !== undefined) {
        if (got.error !== c.expectError) problems.push(`${path}: expected error ${c.expectError}, got ${got.error ? `error ${got.error} (${got.message})` : JSON.stringify(got.value)}`)
      } else if (got.error !== undefined) {
        problems.push(`${path}: expected ${JSON.stringify(c.expect)}, got error ${got.error} (${got.message})`)
      } else if (!same(got.value, c.expect)) {
        problems.push(`${path}: expected ${JSON.stringify(c.expect)}, got ${JSON.stringify(got.value)}`)
      }
    }
    if (problems.length === 0) report.passed += 1
    else {
      report.failed += 1
      report.failures.push(`${kind} ${c.id}: ${problems.join('; ')}`)
    }
  }
  for (const c of file.headerCases ?? []) {
    const paths = [['data', () => tk.rateLimitHeaders(c.request)]]
    // A request the data path must refuse for its shape (no limits, a bad strategy) has no
    // limiter to bind; its options errors are the bound path's to reproduce.
    if (Array.isArray(c.request.limits) && c.request.limits.length > 0 && c.expectError === undefined) {
      paths.push(['bound', () => boundHeaders(c.request)])
    } else if (c.expectError !== undefined && c.request.options !== undefined) {
      paths.push(['bound', () => boundHeadersOptionsOnly(c.request)])
    }
    run('header', c, paths)
  }
  for (const c of file.clientKeyCases ?? []) {
    run('clientKey', c, [
      ['data', () => tk.clientKey(c.request)],
      ['bound', () => boundKey(c.request)],
    ])
  }
  return report
}

/**
 * For a case that must fail: binds its options to a valid limiter (its own strategy when that
 * builds), so an options error surfaces from `RateLimitFields` exactly as from the data path.
 */
function boundHeadersOptionsOnly({ options, limits = [] }) {
  // A strategy that does not build is itself the expected error.
  const strategy = limits[0] ? tk.Strategy.fromSpec(limits[0].strategy) : tk.Strategy.fixedWindow({ limit: 1, windowMs: 1000 })
  return new tk.RateLimitFields(new tk.Limiter({ strategy }), options).lines({ allowed: true, limit: 1, remaining: 0, resetAt: 0, retryAfterMs: 0 })
}

module.exports = { FORMAT, isHttpVectors, parseHttp, replayHttp }
