// The stores of the WebAssembly build whose state lives outside the isolate, in a Durable
// Object or a Deno KV database (docs/edge.md). Hand-written: index.d.ts is generated from the
// native addon, which has neither.

/** Options of `DurableObjectStore`. */
export interface DurableObjectStoreOptions {
  /** A Durable Object namespace binding whose class is `ThrottlekitObject` (`@throttlekit/core/durable-object`). */
  namespace: { idFromName(name: string): unknown; get(id: any): any }
  /**
   * Spread the keys over this many objects (`idFromName('shard-<i>')`, integer >= 1); default:
   * one object per key (`idFromName(<prefix>:<key>)`).
   */
  shards?: number
  /** How long one RPC may take before it is `store_unavailable` (ms, integer >= 1; default 1000). */
  timeoutMs?: number
}

/**
 * A Worker's store whose state lives in Durable Objects: one RPC per decision to the object
 * that holds the key, where the core decides on the object's storage. Only the Promise
 * methods of a `Limiter` run on it; a `MultiLimiter` or a `Shaper` does not.
 */
export declare class DurableObjectStore {
  constructor(options: DurableObjectStoreOptions)
  get namespace(): DurableObjectStoreOptions['namespace']
  /** `undefined`: one object per key. */
  get shards(): number | undefined
  get timeoutMs(): number
}

/** Options of `DenoKvStore`. */
export interface DenoKvStoreOptions {
  /** The database (`await Deno.openKv()`). */
  kv: { get(key: unknown[]): Promise<unknown>; atomic(): unknown; delete(key: unknown[]): Promise<void> }
  /** Prepended to every key: `[...keyPrefix, '<prefix>:<key>']` (default `['throttlekit']`). */
  keyPrefix?: unknown[]
  /**
   * How many times a decision retries a commit that met a conflict or a locked KV file (integer
   * >= 0, default 16); past that it is `store_unavailable`, through the limiter's fail policy.
   */
  maxRetries?: number
}

/**
 * A store in Deno KV: each decision reads the key, the core decides, and the new state is
 * committed atomically, checked on the versionstamp read (retried on a conflict). Only the
 * Promise methods of a `Limiter` run on it; a `MultiLimiter` or a `Shaper` does not.
 */
export declare class DenoKvStore {
  constructor(options: DenoKvStoreOptions)
  get kv(): DenoKvStoreOptions['kv']
  get keyPrefix(): unknown[]
  get maxRetries(): number
  /**
   * Commits that met a conflict or a KV file locked by another process (retried, or given up
   * past `maxRetries`) since the store was made.
   */
  get conflicts(): number
}
