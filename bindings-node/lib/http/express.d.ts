// @throttlekit/core/express: Express / Connect middleware (hand-written; checked by
// __test__/http-types.test.mjs).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Decision, MultiDecision } from '../../index'
import type { RateLimitOptions } from './options'

export type { LimitedEvent, RateLimitOptions } from './options'

/** Options of `rateLimit`; `Req`/`Res` default to Node's (Express's extend them). */
export interface ExpressRateLimitOptions<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>
  extends RateLimitOptions<Req> {
  /** Answers a denial yourself (the rate-limit fields are already set on `res`). */
  denyResponse?: (req: Req, res: Res, decision: Decision | MultiDecision) => void
}

/** Express / Connect middleware that rate-limits every request it sees. */
export declare function rateLimit<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
  options: ExpressRateLimitOptions<Req, Res>,
): (req: Req, res: Res, next: (err?: unknown) => void) => void
export default rateLimit
