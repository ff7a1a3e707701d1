// @throttlekit/core/hono: Hono middleware on the WebAssembly build (hand-written; checked by
// bindings-wasm/tests/dts.test.mjs).
import type { Context, MiddlewareHandler } from 'hono'
import type { Decision, MultiDecision } from '../index'
import type { RateLimitOptions } from '../../lib/http/options'

export type { LimitedEvent, RateLimitOptions } from '../../lib/http/options'

/** Options of `rateLimit`: every middleware's, with Hono's Context as the request. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context> {
  /** The client's address (default: what Deno.serve, Bun.serve or Hono's Node server hand the app). */
  peer?: (c: Context) => string | undefined
  /** The 429 response (the rate-limit fields are added to it). */
  denyResponse?: (c: Context, decision: Decision | MultiDecision) => Response | Promise<Response>
}

/** Hono middleware that rate-limits every request it sees. */
export declare function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler
export default rateLimit
