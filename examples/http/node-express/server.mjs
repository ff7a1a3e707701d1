// node-express: @throttlekit/core/express on Express 5.
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   node server.mjs PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
import express from 'express'
import { Limiter, Strategy } from '@throttlekit/core'
import { rateLimit } from '@throttlekit/core/express'

const port = Number(process.argv[2] ?? 8080)
const host = process.env.HOST ?? '127.0.0.1'
const limiter = new Limiter({ strategy: Strategy.gcra({ limit: 5, periodMs: 60_000, burst: 5 }) })
const limited = rateLimit({ limiter, family: 'draft-10', policyName: 'default' })

const app = express()
app.get('/healthz', (_req, res) => res.type('text/plain').send('ok'))
app.get('/limited', limited, (_req, res) => res.type('text/plain').send('ok'))
const server = app.listen(port, host, () => console.log(`node-express listening on http://${host}:${server.address().port}`))
