// The CommonJS view of the same declarations.
import tk = require('@throttlekit/core')
import ex = require('@throttlekit/core/express')
import fy = require('@throttlekit/core/fastify')
import fe = require('@throttlekit/core/fetch')
import ko = require('@throttlekit/core/koa')
import ne = require('@throttlekit/core/nest')

const limiter = new tk.Limiter({ strategy: tk.Strategy.gcra({ limit: 5, periodMs: 60_000 }) })
const mw: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, next: (err?: unknown) => void) => void = ex.rateLimit({ limiter })
void mw
void fy.rateLimitPlugin
void ko.rateLimit({ limiter })
void ne.ThrottlekitModule.forRoot({ limiter })
void fe.withRateLimit((r: Request) => new Response(r.url), { limiter, peer: () => '127.0.0.1' })
const fields = new tk.RateLimitFields(limiter, { family: 'legacy' })
const lines: string[] = fields.lines(limiter.checkSync('k'), 'k')
void lines
