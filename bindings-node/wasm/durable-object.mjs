// @throttlekit/core/durable-object: the Durable Object class whose instances hold a
// `DurableObjectStore`'s state (docs/edge.md, "The Durable Object store"). Export it from the
// Worker's main module and bind a namespace of it:
//
//   export { ThrottlekitObject } from '@throttlekit/core/durable-object'
//
// Each RPC is one decision: the state is read from the object's storage, the core decides on it
// (`heldStep`: the memory store's step, expiry included) and the new state is written back.
// Nothing runs between the read and the write: the object's input gate holds every other event
// while a storage read is in flight, and the rest of a decision is synchronous. The response
// leaves only once the write is durable (the output gate). An alarm drops states an hour past
// their deadline.
import { DurableObject } from 'cloudflare:workers'

import './workerd.mjs'
import { heldGraceMs, heldStep, heldSweepable } from './pkg/throttlekit.js'

/** How many keys one sweep reads (and deletes, 128 at a time) per storage call. */
const PAGE = 1000

export class ThrottlekitObject extends DurableObject {
  #sweepPlanned = false

  /**
   * One decision: `{op, key, cost, now, strategy}` from a `DurableObjectStore` (`now` null: this
   * object's clock); answers the decision.
   */
  async decide(request) {
    const storage = this.ctx.storage
    const held = await storage.get(request.key)
    const out = heldStep(request.strategy, request.op, request.cost, request.now ?? Date.now(), held)
    if (out.write === 'put') {
      storage.put(request.key, out.bytes)
      if (!this.#sweepPlanned) await this.#planSweep(out.retainMs)
    } else if (out.write === 'delete') {
      storage.delete(request.key)
    }
    return out.decision
  }

  /** Forgets `key`'s state. */
  async reset(key) {
    await this.ctx.storage.delete(key)
  }

  /** The alarm: a sweep. */
  async alarm() {
    await this.sweep()
  }

  /** Drops the states an hour past their deadline; plans the next sweep while any state is left. */
  async sweep() {
    const storage = this.ctx.storage
    const now = Date.now()
    let kept = 0
    let startAfter
    for (;;) {
      const page = await storage.list(startAfter === undefined ? { limit: PAGE } : { limit: PAGE, startAfter })
      const dead = []
      for (const [key, held] of page) {
        if (heldSweepable(held, now)) dead.push(key)
        else kept++
        startAfter = key
      }
      for (let i = 0; i < dead.length; i += 128) await storage.delete(dead.slice(i, i + 128))
      if (page.size < PAGE) break
    }
    this.#sweepPlanned = false
    if (kept > 0) await this.#planSweep(heldGraceMs())
  }

  async #planSweep(afterMs) {
    this.#sweepPlanned = true
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + afterMs)
  }
}
