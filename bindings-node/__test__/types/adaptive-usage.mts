// Compiled (never run) by __test__/http-types.test.mjs: the adaptive limiter's uses from
// docs/adaptive.md type-check under `strict`, `using` included, and misuse does not.
import { AdaptiveLimiter, Permit } from '@throttlekit/core'
import { express, fastify, koa } from '@throttlekit/core/shedding'

const limiter = new AdaptiveLimiter({ algorithm: 'gradient2', partitions: [{ name: 'live', percent: 90 }] })

export function handle(): string {
  const answer = limiter.tryAcquire('live')
  if (!(answer instanceof Permit)) return `shed: ${answer.inflight} of ${answer.limit}, retry in ${answer.retryAfterSecs} s`
  using permit = answer
  permit.release('success')
  return 'ok'
}

export async function wait(): Promise<boolean> {
  const answer = await limiter.acquire({ timeoutMs: 50 })
  return answer.granted
}

export const middleware = [express(limiter, { timeoutMs: 10 }), fastify(limiter), koa(limiter, { partition: () => 'live' })]

// @ts-expect-error: an unknown algorithm
new AdaptiveLimiter({ algorithm: 'tcp' })
// @ts-expect-error: outcomes are success, ignore or dropped
limiter.tryAcquire().granted && (limiter.tryAcquire() as Permit).release('fine')
