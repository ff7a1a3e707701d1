// Checks every shared store (Postgres, SQLite) must pass the same way.
import assert from 'node:assert/strict'

import tk from '../../index.js'

/**
 * A multi limiter (`all` of 2 and 3 a minute) on `store` charges all or nothing: a request
 * the first dimension denies charges the second nothing. Returns the multi limiter, on a clock
 * that stands still: on the system clock a minute boundary between two checks would start the
 * counts over (both stores judge expiry by the caller's `now`).
 */
export async function assertMultiAllOrNothing(store, prefix) {
  const { ManualClock, MultiLimiter, Strategy } = tk
  const multi = new MultiLimiter({
    rule: 'all',
    dimensions: [
      { name: 'a', strategy: Strategy.fixedWindow({ limit: 2, windowMs: 60_000 }) },
      { name: 'b', strategy: Strategy.fixedWindow({ limit: 3, windowMs: 60_000 }) },
    ],
    store,
    clock: new ManualClock(Date.now()),
    prefix,
  })
  assert.ok((await multi.check(['x', 'y'])).allowed)
  assert.ok((await multi.check(['x', 'y'])).allowed)
  assert.ok(!(await multi.check(['x', 'y'])).allowed) // a is full
  assert.ok((await multi.check(['other', 'y'])).allowed) // the denial charged b nothing
  assert.ok(!(await multi.check(['third', 'y'])).allowed)
  return multi
}
