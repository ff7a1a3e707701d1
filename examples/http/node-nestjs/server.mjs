// node-nestjs: @throttlekit/core/nest on NestJS 12 (Express platform), the guard global.
// GET /healthz is never limited (@SkipRateLimit); GET /limited is limited by client IP with
// GCRA 5 per 60 s, burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   node server.mjs PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
// Plain JavaScript: `Reflect.decorate` applies the decorators as TypeScript's output does
// (`@Controller() class AppController { @Get('limited') limited() {} }` in a TypeScript app).
import 'reflect-metadata'
import { Controller, Get, Header, Module } from '@nestjs/common'
import { APP_GUARD, NestFactory } from '@nestjs/core'
import { Limiter, Strategy } from '@throttlekit/core'
import { SkipRateLimit, ThrottlekitGuard, ThrottlekitModule } from '@throttlekit/core/nest'

const port = Number(process.argv[2] ?? 8080)
const host = process.env.HOST ?? '127.0.0.1'
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })

class AppController {
  healthz() {
    return 'ok'
  }

  limited() {
    return 'ok'
  }
}
const method = (name, decorators) =>
  Reflect.decorate(decorators, AppController.prototype, name, Object.getOwnPropertyDescriptor(AppController.prototype, name))
method('healthz', [Get('healthz'), Header('Content-Type', 'text/plain'), SkipRateLimit()])
method('limited', [Get('limited'), Header('Content-Type', 'text/plain')])
Reflect.decorate([Controller()], AppController)

class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [ThrottlekitModule.forRoot({ limiter, family: 'draft-10', policyName: 'default' })],
      controllers: [AppController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlekitGuard }],
    }),
  ],
  AppModule,
)

const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] })
await app.listen(port, host)
console.log(`node-nestjs listening on http://${host}:${app.getHttpServer().address().port}`)
