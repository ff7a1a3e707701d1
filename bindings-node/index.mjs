// @throttlekit/core — the ES module entry point: the same native exports as index.js.
import { createRequire } from 'node:module'

const binding = createRequire(import.meta.url)('./index.js')

export const {
  AdaptiveLimiter,
  Permit,
  VirtualClock,
  Limiter,
  MultiLimiter,
  Shaper,
  Strategy,
  MemoryStore,
  RedisStore,
  PostgresStore,
  SqliteStore,
  ManualClock,
  RateLimitFields,
  ClientIdentity,
  HeaderFamily,
  rateLimitHeaders,
  clientKey,
  problemBody,
  unavailableBody,
  PROBLEM_CONTENT_TYPE,
  ErrorCode,
  FailPolicy,
  errorCodes,
  version,
} = binding
export default binding
