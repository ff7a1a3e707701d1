'use strict'
// The one decision path of every Node middleware (Express/Connect, Fastify, fetch handlers),
// so the three adapters differ only in how they read a request and write a response.
//
// It holds no arithmetic, formats nothing and decides nothing: the client key comes from core's
// ClientIdentity; the decision, what to do with it (core's HTTP edge settles the fail policy and
// shadow mode into an action: forward, shadow, deny, unavailable) and its header lines from core
// through RateLimitFields#check; and the problem bodies from core. What lives here is calling
// the user's functions in order, as the Rust tower layer (throttlekit-tower) does:
// skip → key → cost → check → hook (on a denial, shadow included) → forward or answer.
const tk = require('../../index.js')

const parts = tk[Symbol.for('throttlekit.fieldsParts')]

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
/** How many peers' client keys a middleware remembers (see RateLimitCore#clientKey). */
const KEY_MEMO = 4096

/** A `config_invalid` error, as the native code throws them. */
function invalid(field, problem) {
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

class RateLimitCore {
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
    if (!(limiter instanceof tk.Limiter) && !(limiter instanceof tk.MultiLimiter)) {
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
    this.fields = new tk.RateLimitFields(limiter, {
      family: options.family,
      policyName: options.policyName,
      partitionKeySecret: options.partitionKeySecret,
      failPolicy: this.failPolicy,
      shadow: this.shadow,
    })
    this.identity = new tk.ClientIdentity({
      trustedProxies: options.trustedProxies,
      ipv6Prefix: options.ipv6Prefix,
      forwardedHeader: options.forwardedHeader,
    })
    this.forwardedHeader = this.identity.forwardedHeader
    this.keys = new Map() // peer address -> core's key for it (clientKey)
    this.lastNames = null // the names of decideValues' last allowed request
    this.dimensions = this.fields.dimensions
    this.sync = this.fields.inProcess
    this.keyFn = optionalFunction(options, 'key', where)
    this.costFn = optionalFunction(options, 'cost', where)
    this.skipFn = optionalFunction(options, 'skip', where)
    this.onLimited = optionalFunction(options, 'onLimited', where)
    this.denyResponse = optionalFunction(options, 'denyResponse', where)
  }

  /**
   * Decides one request. `req` is what the user's functions receive, with `ctx` (the fetch
   * handler's second argument); `peer` is the socket's remote address and `forwarded` the
   * value of the configured forwarding header (read by the adapter, parsed by core).
   *
   * Returns a verdict, or a Promise of one when the limiter is not in-process (Redis, multi):
   * `{kind: 'forward', lines}`, `{kind: 'deny', lines, decision}` or `{kind: 'unavailable'}`
   * (core's action; a shadowed denial is `'forward'`), with `status` (core's: 429, 503, 0 to
   * forward). `lines` is `[name, value, ...]`. Errors (a key function's, a bad cost) throw or
   * reject; an unavailable store is never one (core settled it).
   */
  decide(req, ctx, peer, forwarded, method, path) {
    if (this.skipFn !== undefined && this.skipFn(req, ctx)) return SKIPPED
    const key = this.keyFn === undefined ? this.clientKey(peer, forwarded) : this.keyFn(req, ctx)
    const cost = this.costFn === undefined ? 1 : this.costFn(req, ctx)
    // One native call checks and renders the lines at the same reading of the limiter's
    // clock, as the Rust layer does.
    if (this.sync) return this.finish(this.fields.checkSync(key, cost), key, method, path)
    const keys = this.dimensions === null || Array.isArray(key) ? key : this.dimensions.map(() => key)
    return this.fields.check(keys, cost).then((checked) => this.finish(checked, keys, method, path))
  }

  /**
   * `decide`, with no object made for an allowed request of an in-process limiter (the usual
   * case, and most of a middleware's own cost per request after the native call): such a
   * request comes back as its lines' values joined by '\n' (`value\nvalue...`, see
   * forEachValue), their names in `this.lastNames` (`raw` as core writes them, `lower`
   * lowercased; read them at once); anything else as `decide`'s verdict or Promise of one. The
   * same steps, calls, errors and hooks as `decide`, in the same order.
   */
  decideValues(req, ctx, peer, forwarded, method, path) {
    if (!this.sync) return this.decide(req, ctx, peer, forwarded, method, path)
    if (this.skipFn !== undefined && this.skipFn(req, ctx)) return SKIPPED
    const key = this.keyFn === undefined ? this.clientKey(peer, forwarded) : this.keyFn(req, ctx)
    const cost = this.costFn === undefined ? 1 : this.costFn(req, ctx)
    const values = parts.values(this.fields, key, cost)
    // `fields` is always a RateLimitFields, but never trust that blindly: the method answers.
    if (values === null) return this.finish(this.fields.checkSync(key, cost), key, method, path)
    const id = parts.namesId()
    const action = parts.action()
    // No names id (core never has that many lists of names): the lines came back joined.
    if (id < 0) return this.parted(action, values === '' ? [] : values.split('\n'), key, method, path)
    const names = namesOf(id)
    if (action === 'forward') {
      this.lastNames = names
      return values
    }
    const lines = []
    forEachValue(values, names.raw, lines, pushLine)
    return this.parted(action, lines, key, method, path)
  }

  /** `finish` for a fast-path check (fieldsParts), whose decision is read from the parts. */
  parted(action, lines, key, method, path) {
    return this.finish({ action, status: parts.status(), decision: parts.decision(), lines }, key, method, path)
  }

  /**
   * Core's client key for `peer` (ClientIdentity#key). A request without the forwarding header
   * (the usual case) has a key that depends on its peer address only, and the options are fixed
   * at construction, so core's answer is remembered per peer (up to KEY_MEMO peers, forgotten all
   * at once when full): one Map lookup instead of a native call (~1.4 µs a request measured on
   * the Express middleware: reading the string, parsing the address, a new JS string). A peer
   * core rejects throws every time and is never remembered.
   */
  clientKey(peer, forwarded) {
    if (forwarded !== undefined || typeof peer !== 'string') return this.identity.key(peer, forwarded)
    let key = this.keys.get(peer)
    if (key === undefined) {
      key = this.identity.key(peer, undefined)
      // Core's key for an IPv4 peer is the address itself: the memo then keeps the peer string
      // it is keyed by as the value too, so the native call's copy of the key reads the string
      // the lookup just compared (one cache miss fewer a request, in an app with many peers).
      if (key === peer) key = peer
      if (this.keys.size >= KEY_MEMO) this.keys.clear()
      this.keys.set(peer, key)
    }
    return key
  }

  /**
   * The verdict for core's answer `checked` (RateLimitFields#check: its action, status,
   * decision and lines): the hook is told of a denial (`'deny'`, and `'shadow'`, which then
   * forwards), and nothing else is decided here.
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

/**
 * The names of decideValues' lines with names id `id` (parts.namesId: one id per list of names
 * core writes, for the life of the process): `raw` as core writes them, and `lower` for a
 * framework that lowercases names, lowercased and internalized. Fastify's `reply.header`
 * lowercases each name and stores it as a property key of the reply's headers: a name read
 * afresh from each response's lines cost a slice, a new lowercased string and a string-table
 * lookup there, twice a request (~5 % of a request's CPU in `node --cpu-prof`); the same
 * lowercase, internalized string lowercases to itself and is found by pointer.
 */
const NAMES = []
function namesOf(id) {
  let names = NAMES[id]
  if (names === undefined) {
    const joined = parts.names(id)
    const raw = joined === '' ? [] : joined.split('\n')
    // A property key is internalized: the key read back is the string-table entry.
    const lower = raw.map((name) => Object.keys({ [name.toLowerCase()]: 0 })[0])
    names = Object.freeze({ raw: Object.freeze(raw), lower: Object.freeze(lower) })
    NAMES[id] = names
  }
  return names
}

/**
 * Calls `set(target, names[i], value i)` for each value of `values` (decideValues' string:
 * `value\nvalue...`, one per name; no header value holds a line break), in order, as a loop
 * over `[name, value, ...]` lines would: no array made.
 */
function forEachValue(values, names, target, set) {
  const last = names.length - 1
  let start = 0
  for (let i = 0; i < last; i++) {
    let end = values.indexOf('\n', start)
    if (end < 0) end = values.length
    set(target, names[i], values.slice(start, end))
    start = end + 1
  }
  // The last value runs to the end: no search for a line break that is not there.
  if (last >= 0) set(target, names[last], values.slice(start))
}

function pushLine(lines, name, value) {
  lines.push(name, value)
}

/** Whether `v` is a Promise-like verdict (the limiter is not in-process). */
function pending(v) {
  return typeof v.then === 'function'
}

module.exports = {
  RateLimitCore,
  forEachValue,
  pending,
  PROBLEM_CONTENT_TYPE: tk.PROBLEM_CONTENT_TYPE,
  problemBody: tk.problemBody,
  unavailableBody: tk.unavailableBody,
}
