// @throttlekit/core/fastify: the Fastify plugin (hand-written; checked by
// __test__/http-types.test.mjs).
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import type { Decision, MultiDecision } from '../../index'
import type { RateLimitOptions } from './options'

export type { LimitedEvent, RateLimitOptions } from './options'

/** Options of `rateLimitPlugin`. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Answers a denial yourself: send the reply (the rate-limit fields are already on it). */
  denyResponse?: (request: FastifyRequest, reply: FastifyReply, decision: Decision | MultiDecision) => unknown
}

/** The plugin: `await app.register(rateLimitPlugin, { limiter })`. Not encapsulated. */
export declare const rateLimitPlugin: FastifyPluginCallback<FastifyRateLimitOptions>
export default rateLimitPlugin
