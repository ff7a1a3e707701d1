// @throttlekit/core/durable-object (wasm/durable-object.mjs): export the class from a Worker's
// main module and bind a Durable Object namespace of it; a `DurableObjectStore` on that
// namespace sends it one RPC per decision.
import type { Decision } from '../index.js'

/** What a `DurableObjectStore` sends per decision. */
export interface HeldRequest {
  op: 'check' | 'peek' | 'forecast'
  /** The full key (`<prefix>:<key>`). */
  key: string
  cost: number
  /** The caller's clock (epoch ms), or null: the object's own (`serverClock`). */
  now: number | null
  /** The strategy's spec, as JSON. */
  strategy: string
}

/** The Durable Object that holds the state of the keys a `DurableObjectStore` sends it. */
export declare class ThrottlekitObject {
  constructor(ctx: unknown, env: unknown)
  /** One decision on the object's storage. */
  decide(request: HeldRequest): Promise<Decision>
  /** Forgets `key`'s state. */
  reset(key: string): Promise<void>
  /** The alarm: a sweep. */
  alarm(): Promise<void>
  /** Drops the states an hour past their deadline; plans the next sweep while any state is left. */
  sweep(): Promise<void>
}
