// The REST rows of `make bench`: the WebAssembly build's RedisRestStore against
// @upstash/ratelimit's limit(), in one Node process, over the same REST front end
// (tests/restfront) and redis-server: decisions per second, sequential and 64 in flight, per
// algorithm both offer. The two sides alternate (ROUNDS times each, best kept), so both see the
// same machine load.
//
//   node bench/rest/rest.mjs <front end url> <token> [decisions]
//
// Every decision is one round trip on both sides: the limits are far above what the run spends
// (nothing is denied, which is checked), @upstash/ratelimit's ephemeralCache is off (it answers
// denied identifiers in memory), @upstash/redis's auto-pipelining is off (its default coalesces
// concurrent commands into one `/pipeline` request: several decisions per round trip; measured
// apart, 64 in flight, and printed as a line of its own) and throttlekit's limiter reads the
// host's clock (no replay mode). Prints summarize.py's `ROW` lines (ratio: throttlekit /
// @upstash/ratelimit, target >= 1.0x).
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";

import * as tk from "../../bindings-node/wasm/node.mjs";

const [url, token, n = "2000"] = process.argv.slice(2);
const total = Number(n);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const redis = new Redis({ url, token, enableAutoPipelining: false });
const autoPipelined = new Redis({ url, token, enableAutoPipelining: true });
const store = new tk.RedisRestStore({ url, token, timeoutMs: 5000 });
const LIMIT = 1e9;

// The same algorithm on both sides, each one script call per decision. @upstash/ratelimit's
// sliding window is the two-counter estimate (this window's count and the previous one's,
// weighted): throttlekit's with `buckets: 1`. Its default, 10 sub-buckets, reads 11 slots a
// call (about twice the script time in Redis: measured with SLOWLOG, 97 vs 53 us median on a
// loaded machine) and is a different, finer estimate.
const ALGORITHMS = {
  fixedWindow: [Ratelimit.fixedWindow(LIMIT, "60 s"), tk.Strategy.fixedWindow({ limit: LIMIT, windowMs: 60_000 })],
  slidingWindow: [Ratelimit.slidingWindow(LIMIT, "60 s"), tk.Strategy.slidingWindow({ limit: LIMIT, windowMs: 60_000, buckets: 1 })],
  tokenBucket: [Ratelimit.tokenBucket(LIMIT, "60 s", LIMIT), tk.Strategy.tokenBucket({ capacity: LIMIT, refillPerSec: LIMIT / 60 })],
};

/**
 * Decisions per second of `decide(key)` (resolving to admitted or not), `inFlight` at a time, and
 * this process's CPU time per decision in microseconds (the client's cost: the front end and
 * Redis run in other processes), which a loaded machine moves far less than the rate.
 */
async function rate(decide, inFlight) {
  let next = 0;
  let admitted = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const worker = async () => {
    while (next < total) {
      const key = `k${next++ % 100}`;
      // Awaited first: `admitted += await ...` would read `admitted` before the wait.
      const ok = await decide(key);
      admitted += ok ? 1 : 0;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const perSec = total / ((performance.now() - start) / 1000);
  const used = process.cpuUsage(cpu);
  if (admitted !== total) throw new Error(`${total - admitted} denied: the bench expects none`);
  return { perSec, cpuUs: (used.user + used.system) / total };
}

for (const [name, [upstashLimiter, strategy]] of Object.entries(ALGORITHMS)) {
  const prefix = `bench-${name}-${process.pid}`;
  const rl = new Ratelimit({ redis, limiter: upstashLimiter, prefix: `${prefix}-upstash`, ephemeralCache: false, analytics: false });
  const limiter = new tk.Limiter({ strategy, store, prefix: `${prefix}-tk`, failPolicy: "raise" });
  const sides = {
    upstash: async (key) => (await rl.limit(key)).success,
    throttlekit: async (key) => (await limiter.check(key)).allowed,
  };
  // Warm-up: the scripts get cached (EVALSHA thereafter), connections opened.
  for (const decide of Object.values(sides)) for (let i = 0; i < 50; i++) await decide(`warm${i % 4}`);
  for (const [label, inFlight] of [["sequential", 1], ["64 in flight", 64]]) {
    const best = { upstash: 0, throttlekit: 0 };
    const cpu = { upstash: Infinity, throttlekit: Infinity };
    for (let r = 0; r < ROUNDS; r++) {
      for (const [side, decide] of Object.entries(sides)) {
        const m = await rate(decide, inFlight);
        best[side] = Math.max(best[side], m.perSec);
        cpu[side] = Math.min(cpu[side], m.cpuUs);
      }
    }
    const ratio = best.throttlekit / best.upstash;
    console.log(`rest ${name}, ${label}: throttlekit (WebAssembly) ${best.throttlekit.toFixed(0)}/s vs @upstash/ratelimit ${best.upstash.toFixed(0)}/s: ${ratio.toFixed(2)}x (target >= 1.0x); Node CPU per decision ${cpu.throttlekit.toFixed(0)} vs ${cpu.upstash.toFixed(0)} us`);
    console.log(["ROW", `WebAssembly RedisRestStore check, ${name}, ${label} (Node, REST front end)`, "@upstash/ratelimit limit(), same front end and Redis", ratio.toFixed(2), ">=1.0", `${best.throttlekit.toFixed(0)} vs ${best.upstash.toFixed(0)} decisions/s, Node CPU ${cpu.throttlekit.toFixed(0)} vs ${cpu.upstash.toFixed(0)} us each`].join("\t"));
  }
  const pipelined = new Ratelimit({ redis: autoPipelined, limiter: upstashLimiter, prefix: `${prefix}-upstash-auto`, ephemeralCache: false, analytics: false });
  const auto = await rate(async (key) => (await pipelined.limit(key)).success, 64);
  console.log(`rest ${name}, 64 in flight: @upstash/ratelimit with auto-pipelining (several decisions per request) ${auto.perSec.toFixed(0)}/s`);
}
