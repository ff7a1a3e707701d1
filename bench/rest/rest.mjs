// The REST rows of `make bench`: the WebAssembly build's RedisRestStore against
// @upstash/ratelimit's limit(), in one Node process, over the same REST front end
// (tests/restfront) and redis-server: decisions per second, sequential and 64 in flight, per
// algorithm both offer. The two sides alternate (ROUNDS times each, best kept; which side goes
// first alternates too, so neither always inherits the other's garbage), so both see the same
// machine load.
//
//   node bench/rest/rest.mjs <front end url> <token> [decisions]
//
// With REST_FRONT_PID and REDIS_PID (run.sh sets both), each row also prints the CPU time the
// front end and redis-server spent per decision of each side (/proc/PID/stat): a sequential
// decision waits on the client, the front end and Redis in turn, so the three say where the
// time of a row goes.
//
// Every decision is one round trip on both sides: the limits are far above what the run spends
// (nothing is denied, which is checked), @upstash/ratelimit's ephemeralCache is off (it answers
// denied identifiers in memory), @upstash/redis's auto-pipelining is off (its default coalesces
// concurrent commands into one `/pipeline` request: several decisions per round trip; measured
// apart, 64 in flight, and printed as a line of its own) and throttlekit's limiter reads the
// host's clock (no replay mode). Prints summarize.py's `ROW` lines (ratio: throttlekit /
// @upstash/ratelimit, target >= 1.0x).
import { readFileSync } from "node:fs";

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
/** The servers' processes, when known: their CPU per decision is printed with each row. */
const SERVERS = { front: Number(process.env.REST_FRONT_PID) || 0, redis: Number(process.env.REDIS_PID) || 0 };
const WATCHED = SERVERS.front > 0 && SERVERS.redis > 0;

/**
 * Process `pid`'s CPU time (user + system) in microseconds, from /proc/PID/stat's utime and
 * stime (fields 14 and 15, in clock ticks; 100 a second on Linux, so a run of 2000 decisions at
 * a few hundred microseconds each reads to about 2%).
 */
function cpuOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

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
  const front = WATCHED ? cpuOf(SERVERS.front) : 0;
  const redisCpu = WATCHED ? cpuOf(SERVERS.redis) : 0;
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
  const frontUs = WATCHED ? (cpuOf(SERVERS.front) - front) / total : NaN;
  const redisUs = WATCHED ? (cpuOf(SERVERS.redis) - redisCpu) / total : NaN;
  return { perSec, cpuUs: (used.user + used.system) / total, frontUs, redisUs };
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
    const front = { upstash: Infinity, throttlekit: Infinity };
    const redisCpu = { upstash: Infinity, throttlekit: Infinity };
    for (let r = 0; r < ROUNDS; r++) {
      const order = Object.keys(sides);
      if (r % 2 === 1) order.reverse();
      for (const side of order) {
        const m = await rate(sides[side], inFlight);
        best[side] = Math.max(best[side], m.perSec);
        cpu[side] = Math.min(cpu[side], m.cpuUs);
        front[side] = Math.min(front[side], m.frontUs);
        redisCpu[side] = Math.min(redisCpu[side], m.redisUs);
      }
    }
    const ratio = best.throttlekit / best.upstash;
    const servers = WATCHED
      ? `; front end CPU ${front.throttlekit.toFixed(0)} vs ${front.upstash.toFixed(0)} us, redis-server CPU ${redisCpu.throttlekit.toFixed(0)} vs ${redisCpu.upstash.toFixed(0)} us`
      : "";
    console.log(`rest ${name}, ${label}: throttlekit (WebAssembly) ${best.throttlekit.toFixed(0)}/s vs @upstash/ratelimit ${best.upstash.toFixed(0)}/s: ${ratio.toFixed(2)}x (target >= 1.0x); Node CPU per decision ${cpu.throttlekit.toFixed(0)} vs ${cpu.upstash.toFixed(0)} us${servers}`);
    console.log(["ROW", `WebAssembly RedisRestStore check, ${name}, ${label} (Node, REST front end)`, "@upstash/ratelimit limit(), same front end and Redis", ratio.toFixed(2), ">=1.0", `${best.throttlekit.toFixed(0)} vs ${best.upstash.toFixed(0)} decisions/s, Node CPU ${cpu.throttlekit.toFixed(0)} vs ${cpu.upstash.toFixed(0)} us each${servers}`].join("\t"));
  }
  const pipelined = new Ratelimit({ redis: autoPipelined, limiter: upstashLimiter, prefix: `${prefix}-upstash-auto`, ephemeralCache: false, analytics: false });
  const auto = await rate(async (key) => (await pipelined.limit(key)).success, 64);
  console.log(`rest ${name}, 64 in flight: @upstash/ratelimit with auto-pipelining (several decisions per request) ${auto.perSec.toFixed(0)}/s`);
}
