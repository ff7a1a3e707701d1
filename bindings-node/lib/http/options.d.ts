// The options every @throttlekit/core HTTP middleware shares (express, fastify, fetch). Names
// follow the Rust tower layer's (throttlekit-tower) in JavaScript's camelCase.
import type { Decision, FailPolicy, HeaderFamily, Limiter, MultiDecision, MultiLimiter } from '../../index'

/** What `onLimited` is told about each denied request (in shadow mode too). */
export interface LimitedEvent {
  /** The key the request counted against (a multi limiter's first key). */
  key: string
  /** A multi limiter's keys, one per dimension. */
  keys?: string[]
  /** The decision (a multi limiter's, with `binding` and `dimensions`). */
  decision: Decision | MultiDecision
  /** The binding dimension's name, for a multi limiter. */
  binding?: string
  /** True when shadow mode let the request through anyway. */
  shadow: boolean
  /** The request's method. */
  method: string
  /** The request's path (with the query, as the framework gives it; the fetch wrapper's has none). */
  path: string
}

/** Options of every middleware; `Req` is the framework's request. */
export interface RateLimitOptions<Req> {
  /** The limiter; a `MultiLimiter` gets one header list member per dimension. */
  limiter: Limiter | MultiLimiter
  /**
   * The request's key (default: the client IP, from the socket peer and trusted proxies). For
   * a multi limiter, a string is used for every dimension; an array gives one per dimension.
   * A throw fails the request (the framework's error path), never the process.
   */
  key?: (req: Req) => string | string[]
  /** The request's cost (default 1). */
  cost?: (req: Req) => number
  /** Requests for which this returns true are neither counted nor given fields. */
  skip?: (req: Req) => boolean
  /** The header family (default `'draft-10'`). */
  family?: HeaderFamily
  /** A single limiter's policy name in the fields (default `'default'`). */
  policyName?: string
  /** When set, `draft-10` fields carry `pk`, an HMAC of the key under this secret. */
  partitionKeySecret?: string
  /** CIDRs or addresses of proxies whose forwarding header is believed (default none). */
  trustedProxies?: string[]
  /** IPv6 clients are grouped by this prefix (1-128, default 64). */
  ipv6Prefix?: number
  /** The header trusted proxies write (default `'x-forwarded-for'`). */
  forwardedHeader?: 'x-forwarded-for' | 'forwarded'
  /**
   * When the limiter's store cannot answer (and the limiter itself raises): `'raise'` (the
   * default) answers 503 with a problem body, `'fail_open'` forwards without fields,
   * `'fail_closed'` answers 429 with `Retry-After: 1`.
   */
  failPolicy?: FailPolicy
  /** Decide, send the fields and call `onLimited`, but never block (default false). */
  shadow?: boolean
  /** Called for every denied request, also in shadow mode. */
  onLimited?: (event: LimitedEvent) => void
}
