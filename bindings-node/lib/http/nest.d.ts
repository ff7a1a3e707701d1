// @throttlekit/core/nest: a NestJS guard, module and decorators (hand-written; checked by
// __test__/http-types.test.mjs). The Nest types come from @nestjs/common and @nestjs/core.
import type { CanActivate, DynamicModule, ExecutionContext, HttpException, ModuleMetadata } from '@nestjs/common'
import type { Reflector } from '@nestjs/core'
import type { Decision, MultiDecision } from '../../index'
import type { RateLimitOptions } from './options'

export type { LimitedEvent, RateLimitOptions } from './options'

/** The guard's options; `key`, `cost` and `skip` get the platform's request and the context. */
export interface NestRateLimitOptions<Req = any> extends Omit<RateLimitOptions<Req>, 'key' | 'cost' | 'skip'> {
  key?: (req: Req, context: ExecutionContext) => string | string[]
  cost?: (req: Req, context: ExecutionContext) => number
  skip?: (req: Req, context: ExecutionContext) => boolean
  /** Returns the exception the guard throws for a denial (the fields are already set). */
  denyResponse?: (context: ExecutionContext, decision: Decision | MultiDecision) => unknown
}

/** The injection token of the options `ThrottlekitModule` provides. */
export declare const THROTTLEKIT_OPTIONS: 'THROTTLEKIT_OPTIONS'
/** The metadata key of `@RateLimit`. */
export declare const RATE_LIMIT: string
/** The metadata key of `@SkipRateLimit`. */
export declare const SKIP_RATE_LIMIT: string

/** Rate-limits HTTP requests (other contexts pass); bind it with APP_GUARD or `@UseGuards`. */
export declare class ThrottlekitGuard implements CanActivate {
  /** No options: only routes with `@RateLimit` are limited. Bad options throw `config_invalid`. */
  constructor(options?: NestRateLimitOptions, reflector?: Reflector)
  canActivate(context: ExecutionContext): boolean | Promise<boolean>
}

/** What `forRootAsync` takes, as Nest's own modules do. */
export interface ThrottlekitModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  inject?: any[]
  useFactory: (...args: any[]) => NestRateLimitOptions | Promise<NestRateLimitOptions>
}

/** Provides the guard's options app-wide (a global module). */
export declare class ThrottlekitModule {
  static forRoot(options: NestRateLimitOptions): DynamicModule
  static forRootAsync(options: ThrottlekitModuleAsyncOptions): DynamicModule
}

/** A route's or controller's own limit (`limiter` required); other options default to the global ones. */
export declare function RateLimit(options: Partial<NestRateLimitOptions> & Pick<NestRateLimitOptions, 'limiter'>): MethodDecorator & ClassDecorator
/** Neither counts nor limits the route or controller; `false` undoes a controller's. */
export declare function SkipRateLimit(skip?: boolean): MethodDecorator & ClassDecorator

/** The 429 the guard throws, with core's problem body as its response. */
export declare class RateLimitExceededException extends HttpException {
  constructor(decision: Decision | MultiDecision)
  readonly decision: Decision | MultiDecision
}
