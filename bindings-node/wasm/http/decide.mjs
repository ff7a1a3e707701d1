// The one decision path of the WebAssembly build's middleware (fetch.mjs, hono.mjs): the Node
// middleware's (../../lib/http/decide.js) in an ES module, which a Worker, Deno or a browser can
// load (the Node file is CommonJS and requires the native addon).
//
// It holds no arithmetic, formats nothing and decides nothing: the client key comes from core's
// ClientIdentity; the decision, what to do with it (core's HTTP edge settles the fail policy and
// shadow mode into an action: forward, shadow, deny, unavailable) and its header lines come from
// core through RateLimitFields#check; the problem bodies from core. What lives here is calling
// the user's functions in order, as the Rust tower layer does:
// skip → key → cost → check → hook (on a denial, shadow included) → forward or answer.
import { ClientIdentity, Limiter, MultiLimiter, RateLimitFields, problemBody, problemContentType, unavailableBody } from '../pkg/throttlekit.js'

/** The option names of every middleware (the Node middleware's list). */
const OPTIONS = [
  'limiter',
  'key',
  'cost',
  'skip',
  'family',
  'policyName',
  'partitionKeySecret',
  'trustedProxies',
  'ipv6Prefix',
  'forwardedHeader',
  'failPolicy',
  'shadow',
  'onLimited',
  'denyResponse',
]
const FAIL_POLICIES = ['raise', 'fail_open', 'fail_closed']

/** A `config_invalid` error, as the module throws them. */
export function invalid(field, problem) {
  const e = new Error(`${field} ${problem}`)
  e.code = 'config_invalid'
  return e
}

function optionalFunction(options, name, where) {
  const f = options[name]
  if (f !== undefined && typeof f !== 'function') throw invalid(`${where}.${name}`, 'must be a function')
  return f
}

/** The verdict for a request that is not limited at all (skipped). */
const SKIPPED = Object.freeze({ kind: 'forward', status: 0, lines: Object.freeze([]), decision: undefined })

export class RateLimitCore {
  /**
   * Validates `options` (see OPTIONS; `extra` names the adapter's own options) once, at
   * construction: a bad option throws `config_invalid` naming it, never at request time.
   */
  constructor(options, where, extra = []) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw invalid(where, 'options must be an object with at least `limiter`')
    }
    for (const name of Object.keys(options)) {
      if (options[name] !== undefined && !OPTIONS.includes(name) && !extra.includes(name)) {
        throw invalid(`${where}.${name}`, `is not an option (expected one of: ${OPTIONS.concat(extra).join(', ')})`)
      }
    }
    const { limiter } = options
    if (!(limiter instanceof Limiter) && !(limiter instanceof MultiLimiter)) {
      throw invalid(`${where}.limiter`, 'must be a Limiter or a MultiLimiter')
    }
    this.failPolicy = options.failPolicy ?? 'raise'
    if (!FAIL_POLICIES.includes(this.failPolicy)) {
      throw invalid(`${where}.failPolicy`, `must be one of ${FAIL_POLICIES.join(', ')}`)
    }
    if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
      throw invalid(`${where}.shadow`, 'must be a boolean')
    }
    this.shadow = options.shadow === true
    this.fields = new RateLimitFields(limiter, {
      family: options.family,
      policyName: options.policyName,
      partitionKeySecret: options.partitionKeySecret,
      failPolicy: this.failPolicy,
      shadow: this.shadow,
    })
    this.identity = new ClientIdentity({
      trustedProxies: options.trustedProxies,
      ipv6Prefix: options.ipv6Prefix,
      forwardedHeader: options.forwardedHeader,
    })
    this.forwardedHeader = this.identity.forwardedHeader
    this.dimensions = this.fields.dimensions ?? null
    this.sync = this.fields.inProcess
    this.keyFn = optionalFunction(options, 'key', where)
    this.costFn = optionalFunction(options, 'cost', where)
    this.skipFn = optionalFunction(options, 'skip', where)
    this.onLimited = optionalFunction(options, 'onLimited', where)
    this.denyResponse = optionalFunction(options, 'denyResponse', where)
  }

  /**
   * Decides one request. `req` is what the user's functions receive, with `ctx` (what the
   * runtime passes after the request); `peer` is the client's socket address and `forwarded`
   * the value of the configured forwarding header (read by the adapter, parsed by core).
   *
   * Returns a verdict, or a Promise of one when the limiter is not in this module (REST, multi):
   * `{kind: 'forward' | 'deny' | 'unavailable', status, lines, decision}` (core's action and
   * status; a shadowed denial is `'forward'`; `lines` is `[name, value, ...]`). A key
   * function's error or a bad cost throws or rejects; an unavailable store never does (core
   * settled it).
   */
  decide(req, ctx, peer, forwarded, method, path) {
    if (this.skipFn !== undefined && this.skipFn(req, ctx)) return SKIPPED
    const key = this.keyFn === undefined ? this.identity.key(peer, forwarded ?? undefined) : this.keyFn(req, ctx)
    const cost = this.costFn === undefined ? 1 : this.costFn(req, ctx)
    if (this.sync) return this.finish(this.fields.checkSync(key, cost), key, method, path)
    const keys = this.dimensions === null || Array.isArray(key) ? key : this.dimensions.map(() => key)
    return this.fields.check(keys, cost).then((checked) => this.finish(checked, keys, method, path))
  }

  /**
   * The verdict for core's answer `checked`: the hook is told of a denial (`'deny'`, and
   * `'shadow'`, which then forwards), and nothing else is decided here.
   */
  finish(checked, key, method, path) {
    const { action, status, decision, lines } = checked
    if (action === 'unavailable') return { kind: 'unavailable', status, lines, decision: undefined }
    if (action !== 'forward' && this.onLimited !== undefined) {
      this.onLimited({
        key: Array.isArray(key) ? key[0] : key,
        keys: Array.isArray(key) ? key : undefined,
        decision,
        binding: decision.binding,
        shadow: this.shadow,
        method,
        path,
      })
    }
    return { kind: action === 'deny' ? 'deny' : 'forward', status, lines, decision }
  }
}

/** Whether `v` is a Promise-like verdict (the limiter is not in this module). */
export function pending(v) {
  return typeof v.then === 'function'
}

/** Core's 429 or 503 answer for `verdict` (`'deny'` or `'unavailable'`), with its lines. */
export function problemResponse(verdict) {
  const body = verdict.kind === 'unavailable' ? unavailableBody() : problemBody(verdict.decision)
  const headers = new Headers({ 'Content-Type': problemContentType() })
  for (let i = 0; i < verdict.lines.length; i += 2) headers.set(verdict.lines[i], verdict.lines[i + 1])
  return new Response(body, { status: verdict.status, headers })
}

/** `response` with the lines set; a copy when its headers are immutable (a `fetch()` reply). */
export function withLines(response, lines) {
  if (lines.length === 0) return response
  try {
    for (let i = 0; i < lines.length; i += 2) response.headers.set(lines[i], lines[i + 1])
    return response
  } catch {
    const copy = new Response(response.body, response)
    for (let i = 0; i < lines.length; i += 2) copy.headers.set(lines[i], lines[i + 1])
    return copy
  }
}
