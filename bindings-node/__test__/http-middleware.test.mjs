// The Express middleware, the Fastify plugin, the fetch wrapper, the Koa middleware and the
// NestJS guard (on Nest's Express and Fastify platforms), each on a real server on a loopback
// port, driven by Node's fetch: the same scenarios for all of them. Time is a ManualClock, so every number in a header is exact.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'

import { HttpException } from '@nestjs/common'
import { parseList } from 'structured-headers'

import { Limiter, ManualClock, MultiLimiter, RedisStore, Strategy } from '@throttlekit/core'
import { FRAMEWORKS, fieldsOf, serve } from './helpers/http.mjs'
import { spawnRedis } from './helpers/redis.mjs'

const T0 = 1_700_000_000_000
const gcra = (limit = 5) => Strategy.gcra({ limit, periodMs: 60_000, burst: limit })
const limiterAt = (strategy = gcra(), clock = new ManualClock(T0)) => new Limiter({ strategy, clock })

/** Runs `body(server)` against a fresh server, and closes it. */
async function withServer(framework, options, body, host) {
  const server = await serve(framework, options, host)
  try {
    return await body(server)
  } finally {
    await server.close()
  }
}

const get = (url, headers = {}) => fetch(url, { headers })

for (const framework of FRAMEWORKS) {
  describe(framework, () => {
    test('the black-box sequence: five 200s with r = 4..0, then a 429 with Retry-After and a problem body', async () => {
      await withServer(framework, { limiter: limiterAt() }, async (s) => {
        for (let r = 4; r >= 0; r--) {
          const res = await get(s.url())
          assert.equal(res.status, 200)
          assert.equal(await res.text(), 'ok')
          assert.deepEqual(fieldsOf(res), [
            ['ratelimit', `"default";r=${r};t=12`],
            ['ratelimit-policy', '"default";q=5;w=60'],
          ])
          // An independent Structured Fields parser reads what we send.
          const [[name, params]] = parseList(res.headers.get('ratelimit'))
          assert.equal(name, 'default')
          assert.equal(params.get('r'), r)
          assert.equal(parseList(res.headers.get('ratelimit-policy'))[0][1].get('q'), 5)
        }
        const denied = await get(s.url())
        assert.equal(denied.status, 429)
        assert.equal(denied.headers.get('retry-after'), '12')
        assert.equal(denied.headers.get('ratelimit'), '"default";r=0;t=12')
        assert.match(denied.headers.get('content-type'), /^application\/problem\+json/)
        const body = await denied.json()
        assert.deepEqual(Object.keys(body).sort(), ['detail', 'status', 'title', 'type'])
        assert.equal(body.status, 429)
        assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded')
        assert.match(body.detail, /12 seconds/)
      })
    })

    test('every header family sends exactly its own fields', async () => {
      const expected = {
        'draft-10': [
          ['ratelimit', '"api";r=4;t=12'],
          ['ratelimit-policy', '"api";q=5;w=60'],
        ],
        'draft-7': [
          ['ratelimit', 'limit=5, remaining=4, reset=12'],
          ['ratelimit-policy', '5;w=60'],
        ],
        'draft-6': [
          ['ratelimit-policy', '5;w=60'],
          ['ratelimit-limit', '5'],
          ['ratelimit-remaining', '4'],
          ['ratelimit-reset', '12'],
        ],
        legacy: [
          ['x-ratelimit-limit', '5'],
          ['x-ratelimit-remaining', '4'],
          ['x-ratelimit-reset', String(T0 / 1000 + 12)],
        ],
      }
      for (const [family, lines] of Object.entries(expected)) {
        await withServer(framework, { limiter: limiterAt(), family, policyName: 'api' }, async (s) => {
          const res = await get(s.url())
          assert.equal(res.status, 200)
          assert.deepEqual(fieldsOf(res), lines, family)
        })
      }
      // A denial in the legacy family still gets Retry-After in delta seconds.
      await withServer(framework, { limiter: limiterAt(gcra(1)), family: 'legacy' }, async (s) => {
        await get(s.url())
        const res = await get(s.url())
        assert.equal(res.status, 429)
        assert.equal(res.headers.get('retry-after'), '60')
        assert.equal(res.headers.get('x-ratelimit-remaining'), '0')
      })
    })

    test('shadow mode decides, sends the fields and reports, but never blocks', async () => {
      const events = []
      await withServer(framework, { limiter: limiterAt(gcra(1)), shadow: true, onLimited: (e) => events.push(e) }, async (s) => {
        const statuses = []
        for (let i = 0; i < 3; i++) {
          const res = await get(s.url('/limited?x=1'))
          statuses.push(res.status)
          if (i > 0) {
            assert.equal(res.headers.get('retry-after'), '60')
            assert.equal(res.headers.get('ratelimit'), '"default";r=0;t=60')
          }
        }
        assert.deepEqual(statuses, [200, 200, 200])
      })
      assert.equal(events.length, 2)
      for (const e of events) {
        assert.equal(e.shadow, true)
        assert.equal(e.key, '127.0.0.1')
        assert.equal(e.method, 'GET')
        assert.equal(e.path.split('?')[0], '/limited')
        assert.equal(e.decision.allowed, false)
      }
    })

    test('the on-limited hook sees each denial, the 429 body can be replaced, skip and cost apply', async () => {
      const events = []
      const denyResponse = {
        express: (_req, res, d) => res.status(429).type('text/plain').send(`slow down ${d.retryAfterMs}`),
        fastify: (_req, reply, d) => reply.code(429).type('text/plain').send(`slow down ${d.retryAfterMs}`),
        fetch: (_req, d) => new Response(`slow down ${d.retryAfterMs}`, { status: 429, headers: { 'content-type': 'text/plain' } }),
        koa: async (ctx, d) => {
          ctx.status = 429
          ctx.type = 'text/plain'
          ctx.body = `slow down ${d.retryAfterMs}`
        },
        // Nest's way: the exception to throw, answered by Nest's exception filter as JSON.
        nest: (_context, d) => new HttpException({ message: `slow down ${d.retryAfterMs}` }, 429),
      }[framework.startsWith('nest') ? 'nest' : framework]
      const options = {
        limiter: limiterAt(),
        skip: (req) => new URL(req.url, 'http://x').pathname === '/healthz',
        cost: (req) => (new URL(req.url, 'http://x').pathname === '/expensive' ? 3 : 1),
        onLimited: (e) => events.push(e),
        denyResponse,
      }
      await withServer(framework, options, async (s) => {
        const health = await get(s.url('/healthz'))
        assert.equal(health.status, 200)
        assert.deepEqual(fieldsOf(health), [])
        const exp = await get(s.url('/expensive'))
        assert.equal(exp.headers.get('ratelimit'), '"default";r=2;t=12')
        await get(s.url())
        await get(s.url())
        const denied = await get(s.url('/expensive'))
        assert.equal(denied.status, 429)
        const text = await denied.text()
        assert.equal(framework.startsWith('nest') ? JSON.parse(text).message : text, 'slow down 36000')
        assert.equal(denied.headers.get('retry-after'), '36')
        assert.equal(denied.headers.get('ratelimit'), '"default";r=0;t=12')
        for (let i = 0; i < 3; i++) assert.equal((await get(s.url('/healthz'))).status, 200)
      })
      assert.equal(events.length, 1)
      assert.equal(events[0].shadow, false)
      assert.equal(events[0].decision.retryAfterMs, 36_000)
    })

    test('a key function replaces the client IP; its error fails the request, not the process', async () => {
      const key = (req) => {
        const k = req.headers.get?.('x-api-key') ?? req.headers['x-api-key']
        if (k === undefined || k === null) throw Object.assign(new Error('no api key'), { code: 'no_key' })
        return `user:${k}`
      }
      await withServer(framework, { limiter: limiterAt(gcra(1)), key }, async (s) => {
        assert.equal((await get(s.url(), { 'x-api-key': 'a' })).status, 200)
        assert.equal((await get(s.url(), { 'x-api-key': 'b' })).status, 200)
        assert.equal((await get(s.url(), { 'x-api-key': 'a' })).status, 429)
        assert.equal((await get(s.url())).status, 500)
      })
    })

    test('a multi limiter lists every dimension, the binding one first', async () => {
      const clock = new ManualClock(T0)
      const limiter = new MultiLimiter({
        rule: 'all',
        clock,
        dimensions: [
          { name: 'burst', strategy: Strategy.fixedWindow({ limit: 2, windowMs: 1000 }) },
          { name: 'hourly', strategy: Strategy.fixedWindow({ limit: 100, windowMs: 3_600_000 }) },
        ],
      })
      await withServer(framework, { limiter }, async (s) => {
        const ok = await get(s.url())
        assert.equal(ok.headers.get('ratelimit-policy'), '"burst";q=2;w=1, "hourly";q=100;w=3600')
        // Fixed windows are aligned to the epoch: T0 is 800 s into its hour.
        assert.equal(ok.headers.get('ratelimit'), '"burst";r=1;t=1, "hourly";r=99;t=2800')
        await get(s.url())
        const denied = await get(s.url())
        assert.equal(denied.status, 429)
        assert.equal(denied.headers.get('retry-after'), '1')
        assert.equal(parseList(denied.headers.get('ratelimit'))[0][0], 'burst')
      })
    })

    test('without trusted proxies a spoofed X-Forwarded-For gets no fresh bucket', async () => {
      const events = []
      await withServer(framework, { limiter: limiterAt(gcra(1)), onLimited: (e) => events.push(e.key) }, async (s) => {
        assert.equal((await get(s.url(), { 'x-forwarded-for': '203.0.113.1' })).status, 200)
        assert.equal((await get(s.url(), { 'x-forwarded-for': '203.0.113.2' })).status, 429)
      })
      assert.deepEqual(events, ['127.0.0.1'])
    })

    test('behind a trusted proxy the rightmost untrusted hop is the client', async () => {
      const events = []
      const options = { limiter: limiterAt(gcra(1)), trustedProxies: ['127.0.0.0/8', '10.0.0.0/8'], onLimited: (e) => events.push(e.key) }
      await withServer(framework, options, async (s) => {
        assert.equal((await get(s.url(), { 'x-forwarded-for': '203.0.113.1' })).status, 200)
        assert.equal((await get(s.url(), { 'x-forwarded-for': '203.0.113.2, 10.0.0.7' })).status, 200)
        // The client wrote 6.6.6.6 itself; the proxy appended the address it saw.
        assert.equal((await get(s.url(), { 'x-forwarded-for': '6.6.6.6, 203.0.113.1' })).status, 429)
      })
      assert.deepEqual(events, ['203.0.113.1'])
    })

    test('RFC 7239 Forwarded is read only when configured', async () => {
      const events = []
      const options = { limiter: limiterAt(gcra(1)), trustedProxies: ['127.0.0.1'], forwardedHeader: 'forwarded', onLimited: (e) => events.push(e.key) }
      await withServer(framework, options, async (s) => {
        assert.equal((await get(s.url(), { forwarded: 'for="[2001:db8:1:2::7]:443";proto=https' })).status, 200)
        assert.equal((await get(s.url(), { 'x-forwarded-for': '203.0.113.9', forwarded: 'for="[2001:db8:1:2::8]"' })).status, 429)
      })
      assert.deepEqual(events, ['2001:db8:1:2::/64'])
    })

    test('IPv6 clients are grouped by /64 (or the configured prefix)', async () => {
      for (const [prefix, second, key] of [
        [undefined, 429, '2001:db8:1:2::/64'],
        [128, 200, undefined],
      ]) {
        const events = []
        const options = { limiter: limiterAt(gcra(1)), trustedProxies: ['::1'], ipv6Prefix: prefix, onLimited: (e) => events.push(e.key) }
        await withServer(
          framework,
          options,
          async (s) => {
            assert.equal((await get(s.url(), { 'x-forwarded-for': '2001:db8:1:2::a' })).status, 200)
            assert.equal((await get(s.url(), { 'x-forwarded-for': '2001:db8:1:2::b' })).status, second)
            assert.equal((await get(s.url(), { 'x-forwarded-for': '2001:db8:1:3::a' })).status, 200)
          },
          '::1',
        )
        assert.deepEqual(events, key === undefined ? [] : [key])
      }
      // The IPv6 peer itself, untrusted, is grouped too.
      const events = []
      await withServer(framework, { limiter: limiterAt(gcra(1)), onLimited: (e) => events.push(e.key) }, async (s) => {
        await get(s.url())
        assert.equal((await get(s.url())).status, 429)
      }, '::1')
      assert.deepEqual(events, ['::/64'])
    })

    test('bad options are config_invalid when the middleware is made', async () => {
      const bad = [
        {},
        { limiter: {} },
        { limiter: limiterAt(), famly: 'draft-10' },
        { limiter: limiterAt(), family: 'draft-8' },
        { limiter: limiterAt(), policyName: '' },
        { limiter: limiterAt(), trustedProxies: ['10.0.0.0/33'] },
        { limiter: limiterAt(), ipv6Prefix: 0 },
        { limiter: limiterAt(), forwardedHeader: 'x-real-ip' },
        { limiter: limiterAt(), failPolicy: 'ignore' },
        { limiter: limiterAt(), shadow: 'yes' },
        { limiter: limiterAt(), key: 'ip' },
      ]
      for (const options of bad) {
        await assert.rejects(
          serve(framework, options),
          (e) => e.code === 'config_invalid' || e.cause?.code === 'config_invalid',
          JSON.stringify(options),
        )
      }
    })
  })
}

describe('fail policy with Redis down (a private redis-server, killed by PID)', () => {
  let redis
  before(async () => {
    redis = await spawnRedis()
  })
  after(async () => {
    await redis?.stop()
  })

  test('raise answers 503, fail_open forwards without fields, fail_closed denies with Retry-After: 1', async () => {
    const servers = []
    const stores = []
    try {
      for (const framework of FRAMEWORKS) {
        for (const failPolicy of ['raise', 'fail_open', 'fail_closed']) {
          const store = await RedisStore.connect({ url: redis.url, timeoutMs: 500 })
          stores.push(store)
          const limiter = new Limiter({ strategy: gcra(), store, prefix: `${framework}-${failPolicy}`, failPolicy: 'raise' })
          servers.push({ framework, failPolicy, server: await serve(framework, { limiter, failPolicy }) })
        }
      }
      // Redis up: the async check decides, and the fields are sent.
      for (const { framework, server } of servers) {
        const res = await get(server.url())
        assert.equal(res.status, 200, framework)
        assert.equal(res.headers.get('ratelimit'), '"default";r=4;t=12', framework)
      }
      await redis.stop()
      for (const { framework, failPolicy, server } of servers) {
        const res = await get(server.url())
        const where = `${framework} ${failPolicy}`
        if (failPolicy === 'raise') {
          assert.equal(res.status, 503, where)
          assert.match(res.headers.get('content-type'), /^application\/problem\+json/, where)
          const body = await res.json()
          assert.equal(body.status, 503, where)
          assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity', where)
          assert.deepEqual(fieldsOf(res), [], where)
        } else if (failPolicy === 'fail_open') {
          assert.equal(res.status, 200, where)
          assert.deepEqual(fieldsOf(res), [], where)
        } else {
          assert.equal(res.status, 429, where)
          assert.deepEqual(fieldsOf(res), [['retry-after', '1']], where)
        }
      }
    } finally {
      for (const { server } of servers) await server.close()
      for (const s of stores) await s.close()
    }
  })
})

describe('the fetch wrapper on its own', () => {
  test('it finds the client address where Deno, Bun and Node adapters put it, and refuses to guess', async () => {
    const { withRateLimit } = await import('@throttlekit/core/fetch')
    const keys = []
    const limited = withRateLimit(() => new Response('ok'), { limiter: limiterAt(gcra(1)), onLimited: (e) => keys.push(e.key) })
    const req = () => new Request('http://localhost/limited')
    const deno = { remoteAddr: { transport: 'tcp', hostname: '192.0.2.7', port: 5555 } }
    const bun = { requestIP: () => ({ address: '2001:db8::1', family: 'IPv6', port: 5555 }) }
    const node = { incoming: { socket: { remoteAddress: '::ffff:198.51.100.4' } } }
    for (const ctx of [deno, bun, node]) {
      assert.equal((await limited(req(), ctx)).status, 200)
      assert.equal((await limited(req(), ctx)).status, 429)
    }
    assert.deepEqual(keys, ['192.0.2.7', '2001:db8::/64', '198.51.100.4'])
    await assert.rejects(limited(req()), { code: 'config_invalid', message: /no client address/ })
    await assert.rejects(limited(req(), { something: 'else' }), { code: 'config_invalid' })
    const withPeer = withRateLimit(() => new Response('ok'), { limiter: limiterAt(), peer: () => '203.0.113.5' })
    assert.equal((await withPeer(req())).headers.get('ratelimit'), '"default";r=4;t=12')
  })

  test('fields reach a response whose headers are immutable', async () => {
    const { withRateLimit } = await import('@throttlekit/core/fetch')
    const limited = withRateLimit(() => Response.redirect('http://localhost/elsewhere', 302), { limiter: limiterAt(), peer: () => '203.0.113.5' })
    const res = await limited(new Request('http://localhost/limited'))
    assert.equal(res.status, 302)
    assert.equal(res.headers.get('location'), 'http://localhost/elsewhere')
    assert.equal(res.headers.get('ratelimit'), '"default";r=4;t=12')
  })
})

describe('the Express middleware without Express', () => {
  test('it runs as Connect-style middleware on a bare node:http server', async () => {
    const { createServer } = await import('node:http')
    const { rateLimit } = await import('@throttlekit/core/express')
    const mw = rateLimit({ limiter: limiterAt(gcra(1)) })
    const server = createServer((req, res) =>
      mw(req, res, (err) => {
        res.statusCode = err ? 500 : 200
        res.end('ok')
      }),
    )
    await new Promise((r) => server.listen(0, '127.0.0.1', r))
    try {
      const url = `http://127.0.0.1:${server.address().port}/`
      const ok = await get(url)
      assert.equal(ok.status, 200)
      assert.equal(ok.headers.get('ratelimit'), '"default";r=0;t=60')
      const denied = await get(url)
      assert.equal(denied.status, 429)
      assert.equal(denied.headers.get('retry-after'), '60')
      assert.equal((await denied.json()).status, 429)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })
})
