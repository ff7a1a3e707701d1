// @throttlekit/core/koa: Koa middleware (hand-written; checked by __test__/http-types.test.mjs).
// The context type comes from `koa`'s declarations (@types/koa).
import type { Context } from 'koa'
import type { Decision, MultiDecision } from '../../index'
import type { RateLimitOptions } from './options'

export type { LimitedEvent, RateLimitOptions } from './options'

/** Options of `rateLimit`; `key`, `cost` and `skip` get the Koa context. */
export interface KoaRateLimitOptions<Ctx extends Context = Context> extends RateLimitOptions<Ctx> {
  /** Answers a denial yourself, e.g. with `ctx.status` and `ctx.body` (the fields are already set). */
  denyResponse?: (ctx: Ctx, decision: Decision | MultiDecision) => void | Promise<void>
}

/** Koa middleware that rate-limits every request that reaches it. */
export declare function rateLimit<Ctx extends Context = Context>(
  options: KoaRateLimitOptions<Ctx>,
): (ctx: Ctx, next: () => Promise<unknown>) => Promise<unknown>
export default rateLimit
