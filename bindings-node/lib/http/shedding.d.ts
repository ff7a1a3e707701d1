// Types of @throttlekit/core/shedding (lib/http/shedding.js).
import type { AdaptiveLimiter } from '../../index'

export interface SheddingOptions<Req> {
  /** Names a request's partition (default: none). */
  partition?: (req: Req) => string | undefined
  /** Wait this long for a permit (in the limiter's order) before shedding (default: no wait). */
  timeoutMs?: number
}

/** How a finished response releases its permit: 503 or 504 is `dropped`, anything else `success`. */
export declare function outcome(status: number): 'success' | 'dropped'
/** Express / Connect middleware: sheds with 503 + Retry-After. */
export declare function express(
  limiter: AdaptiveLimiter,
  options?: SheddingOptions<any>,
): (req: any, res: any, next: (err?: unknown) => void) => void
/** A Fastify plugin (an `onRequest` hook): sheds with 503 + Retry-After. */
export declare function fastify(limiter: AdaptiveLimiter, options?: SheddingOptions<any>): any
/** Koa middleware: sheds with 503 + Retry-After. */
export declare function koa(
  limiter: AdaptiveLimiter,
  options?: SheddingOptions<any>,
): (ctx: any, next: () => Promise<unknown>) => Promise<void>
