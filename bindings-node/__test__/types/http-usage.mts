// Compiled (never run) by __test__/http-types.test.mjs: the README's uses of the HTTP subpaths
// type-check under `strict`, and misuse does not.
import express from 'express'
import Fastify from 'fastify'
import { Limiter, MultiLimiter, Strategy, type Decision, type MultiDecision } from '@throttlekit/core'
import { rateLimit } from '@throttlekit/core/express'
import { rateLimitPlugin } from '@throttlekit/core/fastify'
import { defaultPeer, withRateLimit, type LimitedEvent } from '@throttlekit/core/fetch'
import Koa from 'koa'
import { rateLimit as koaRateLimit } from '@throttlekit/core/koa'
import { Controller, Get, Module, UseGuards, type ExecutionContext } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { RateLimit, RateLimitExceededException, SkipRateLimit, ThrottlekitGuard, ThrottlekitModule } from '@throttlekit/core/nest'

const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })
const multi = new MultiLimiter({ rule: 'all', dimensions: [{ name: 'ip', strategy: Strategy.fixedWindow({ limit: 5, windowMs: 1000 }) }] })

const app = express()
app.use(rateLimit({ limiter, family: 'draft-10', policyName: 'default', trustedProxies: ['10.0.0.0/8'] }))
app.use(
  rateLimit<express.Request, express.Response>({
    limiter: multi,
    key: (req) => [req.ip ?? ''],
    denyResponse: (_req, res, d: Decision | MultiDecision) => {
      res.status(429).json({ wait: d.retryAfterMs })
    },
    onLimited: (e: LimitedEvent) => console.log(e.key, e.decision.remaining, e.shadow),
  }),
)

const fastify = Fastify()
await fastify.register(rateLimitPlugin, { limiter, shadow: true, failPolicy: 'fail_open', skip: (r) => r.url === '/healthz' })

const handler = withRateLimit((request: Request) => new Response(request.url), { limiter, cost: () => 2, ipv6Prefix: 56 })
const res: Promise<Response> = handler(new Request('http://localhost/'))
void res
const peer: string | undefined = defaultPeer(new Request('http://localhost/'), {})
void peer

const koa = new Koa()
koa.use(koaRateLimit({ limiter, key: (ctx) => ctx.get('x-api-key'), skip: (ctx) => ctx.path === '/healthz' }))
koa.use(
  koaRateLimit({
    limiter,
    denyResponse: async (ctx, d) => {
      ctx.status = 429
      ctx.body = { wait: d.retryAfterMs }
    },
  }),
)

@Controller('api')
@UseGuards(ThrottlekitGuard)
@RateLimit({ limiter: multi })
class ApiController {
  @Get('a') @SkipRateLimit() a() { return 'a' }
  @Get('b') @RateLimit({ limiter, cost: (_req, context: ExecutionContext) => (context.getType() === 'http' ? 2 : 1) }) b() { return 'b' }
}

@Module({
  imports: [
    ThrottlekitModule.forRoot({ limiter, key: (req: { headers: Record<string, unknown> }) => String(req.headers['x-api-key']) }),
    ThrottlekitModule.forRootAsync({ inject: [], useFactory: async () => ({ limiter, failPolicy: 'fail_open' as const }) }),
  ],
  controllers: [ApiController],
  providers: [{ provide: APP_GUARD, useClass: ThrottlekitGuard }],
})
class AppModule {}
void AppModule
const guard = new ThrottlekitGuard({ limiter, denyResponse: (_context, d) => new RateLimitExceededException(d) })
void guard

// @ts-expect-error @RateLimit needs the limiter its limit stands for
RateLimit({ policyName: 'x' })
// @ts-expect-error Koa's deny handler gets the context, not (req, res)
koaRateLimit({ limiter, denyResponse: (_req: unknown, _res: unknown, _d: unknown) => {} })
// @ts-expect-error an unknown family is a type error
rateLimit({ limiter, family: 'draft-8' })
// @ts-expect-error the limiter is required
withRateLimit(() => new Response(), {})
// @ts-expect-error a fail policy is one of three strings
rateLimit({ limiter, failPolicy: 'ignore' })
