// The types of the WebAssembly build (@throttlekit/core under the `workerd`, `edge-light`,
// `deno`, `bun` and `browser` conditions, and @throttlekit/core/wasm): the native package's
// in-process API (../index.d.ts) and the build's own stores: RedisRestStore here, and
// DurableObjectStore and DenoKvStore (./stores.d.ts). Hand-written;
// bindings-wasm/tests/dts.test.mjs checks that its values are the build's exports, no more and
// no fewer, and that it type-checks.
import type { LimiterOptions, MultiLimiterOptions, ShaperOptions } from '../index'
import { Limiter as NativeLimiter, MultiLimiter as NativeMultiLimiter, Shaper as NativeShaper, MemoryStore } from '../index'
import type { DenoKvStore, DurableObjectStore } from './stores'

export type * from '../index'
export {
  ClientIdentity,
  ManualClock,
  MemoryStore,
  PROBLEM_CONTENT_TYPE,
  RateLimitFields,
  Strategy,
  errorCodes,
  problemBody,
  unavailableBody,
  version,
} from '../index'
export type * from './stores'
export { DenoKvStore, DurableObjectStore } from './stores'

/** The stores a multi limiter or a shaper of the WebAssembly build takes. */
export type EdgeStore = MemoryStore | RedisRestStore

/** The stores a limiter of the WebAssembly build takes: those, and the held-state stores. */
export type LimiterEdgeStore = EdgeStore | DurableObjectStore | DenoKvStore

/** `T`'s options with the store `S`. */
export type WithEdgeStore<T, S = EdgeStore> = Omit<T, 'store'> & { store?: S }

/** Options of `new RedisRestStore()`. */
export interface RedisRestStoreOptions {
  /** The server's URL, `http://` or `https://` (Upstash: the database's REST URL). */
  url: string
  /** The Bearer token, sent in the `Authorization` header only. */
  token: string
  /** How long one request may take, in milliseconds (default 1000): then `store_unavailable`. */
  timeoutMs?: number
  /** Which script variant to send: `'global'` (default) or `'keys'` (Upstash's `allow-key-locking` flag). */
  locking?: 'global' | 'keys'
  /** The `fetch` to send with (default: the global one). */
  fetch?: typeof fetch
}

/**
 * A Redis behind an Upstash-protocol REST server: the same Lua scripts as the native Redis
 * store, one HTTP round trip per decision (docs/redis-rest.md). Its limiters answer through the
 * Promise methods only; the sync ones throw `not_implemented`.
 */
export declare class RedisRestStore {
  /** Bad options throw `config_invalid`. */
  constructor(options: RedisRestStoreOptions)
  /** The server's URL (without a trailing `/`). */
  get url(): string
  /** The Bearer token. */
  get token(): string
  /** The timeout of one request, in milliseconds. */
  get timeoutMs(): number
  /** The `fetch` the store sends with (`undefined`: the global one). */
  get fetch(): typeof fetch | undefined
}

/**
 * A rate limiter: one strategy applied per key, on a MemoryStore, a RedisRestStore, a
 * DurableObjectStore or a DenoKvStore (the last two: the Promise methods only).
 */
export declare class Limiter extends NativeLimiter {
  constructor(options: WithEdgeStore<LimiterOptions, LimiterEdgeStore>)
}

/** Several dimensions decided together under `all` or `any`. */
export declare class MultiLimiter extends NativeMultiLimiter {
  constructor(options: WithEdgeStore<MultiLimiterOptions>)
}

/**
 * A shaper (see ../index.d.ts), on a MemoryStore or a RedisRestStore (the latter: `reserve` and
 * `reset` only; the sync ones throw `not_implemented`).
 */
export declare class Shaper extends NativeShaper {
  constructor(options: WithEdgeStore<ShaperOptions>)
}
