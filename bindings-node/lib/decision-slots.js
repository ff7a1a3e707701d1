'use strict'
/**
 * The decision the native fast paths write as six numbers into a Float64Array:
 * `[allowed, limit, remaining, resetAt, retryAfterMs, fallback]` (the Rust side's
 * `http::decided`). One reader for every array that carries them: the addon's shared `io`, a
 * socket's verdicts, `__redisFinish`'s output.
 */

/** The decision at `a[k..k + 6]`, as an object (`fallback` present only when true). */
function decisionAt(a, k) {
  const d = { allowed: a[k] === 1, limit: a[k + 1], remaining: a[k + 2], resetAt: a[k + 3], retryAfterMs: a[k + 4] }
  if (a[k + 5] === 1) d.fallback = true
  return d
}

module.exports = { decisionAt }
