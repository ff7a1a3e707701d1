// @throttlekit/core/nest as an ES module: the same classes and functions as nest.js.
import { createRequire } from 'node:module'

export const {
  ThrottlekitGuard,
  ThrottlekitModule,
  RateLimit,
  SkipRateLimit,
  RateLimitExceededException,
  THROTTLEKIT_OPTIONS,
  RATE_LIMIT,
  SKIP_RATE_LIMIT,
} = createRequire(import.meta.url)('./nest.js')
