// @throttlekit/core/fetch: the fetch-style wrapper (hand-written; checked by
// __test__/http-types.test.mjs).
import type { Decision, MultiDecision } from '../../index'
import type { RateLimitOptions } from './options'

export type { LimitedEvent, RateLimitOptions } from './options'

/** Options of `withRateLimit`; `Ctx` is what the runtime passes after the request. */
export interface FetchRateLimitOptions<Ctx = unknown> extends RateLimitOptions<Request> {
  /** The client's socket address (default: `defaultPeer`). */
  peer?: (request: Request, ctx: Ctx) => string | undefined
  /** The 429 response (the rate-limit fields are added to it). */
  denyResponse?: (request: Request, decision: Decision | MultiDecision) => Response | Promise<Response>
}

/**
 * Deno.serve's `info.remoteAddr.hostname`, Bun.serve's `server.requestIP(request).address`,
 * or a Node adapter's `{ incoming }` socket address; undefined otherwise.
 */
export declare function defaultPeer(request: Request, ctx: unknown): string | undefined

/** `handler`, rate-limited: same arguments, a Promise of its Response or of a 429/503. */
export declare function withRateLimit<Rest extends unknown[] = unknown[]>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: FetchRateLimitOptions<Rest[0]>,
): (request: Request, ...rest: Rest) => Promise<Response>
export default withRateLimit
