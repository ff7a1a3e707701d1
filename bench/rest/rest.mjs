// The REST rows of `make bench`: the WebAssembly build's RedisRestStore against
// @upstash/ratelimit's limit(), in one Node process, over the same REST front end
// (tests/restfront) and redis-server: decisions per second, sequential and 64 in flight, per
// algorithm both offer. Each row: one discarded round of each side, then ROUNDS paired rounds
// (default 5), each measuring both sides back to back with the first of the two alternating (so
// neither always inherits the other's garbage); the row's ratio is the median of the rounds'
// ratios, printed with their spread. run.sh pins the processes (TK_BENCH_PIN), the same for
// both sides: they run in this one process.
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
const ROUNDS = Number(process.env.ROUNDS ?? 5);
/** Where run.sh placed the processes (TK_BENCH_PIN), for the rows. */
const PLACEMENT = process.env.REST_BENCH_PLACEMENT ?? "placement unknown";
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

/** The median of `xs` (the mean of the middle two for an even count). */
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
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
    // A discarded round of each side first (the JIT's tiers, undici's connection pool at this
    // concurrency), then ROUNDS paired rounds: each round measures both sides back to back, the
    // first of the two alternating, and its ratio is of those two runs (the machine's load in a
    // round is shared by both). The row reports the median ratio and the spread of the rounds'.
    for (const decide of Object.values(sides)) await rate(decide, inFlight);
    const runs = { upstash: [], throttlekit: [] };
    const ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = Object.keys(sides);
      if (r % 2 === 1) order.reverse();
      for (const side of order) runs[side].push(await rate(sides[side], inFlight));
      ratios.push(runs.throttlekit[r].perSec / runs.upstash[r].perSec);
    }
    const med = (side, field) => median(runs[side].map((m) => m[field]));
    const ratio = median(ratios);
    const spread = `rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x`;
    const servers = WATCHED
      ? `; front end CPU ${med("throttlekit", "frontUs").toFixed(0)} vs ${med("upstash", "frontUs").toFixed(0)} us, redis-server CPU ${med("throttlekit", "redisUs").toFixed(0)} vs ${med("upstash", "redisUs").toFixed(0)} us`
      : "";
    const rates = `${med("throttlekit", "perSec").toFixed(0)} vs ${med("upstash", "perSec").toFixed(0)}`;
    const cpu = `Node CPU per decision ${med("throttlekit", "cpuUs").toFixed(0)} vs ${med("upstash", "cpuUs").toFixed(0)} us`;
    console.log(`rest ${name}, ${label}: throttlekit (WebAssembly) vs @upstash/ratelimit ${rates} decisions/s: ${ratio.toFixed(2)}x (target >= 1.0x), median of ${ROUNDS} paired rounds (${spread}); ${cpu}${servers}`);
    console.log(["ROW", `WebAssembly RedisRestStore check, ${name}, ${label} (Node, REST front end)`, "@upstash/ratelimit limit(), same front end and Redis", ratio.toFixed(2), ">=1.0", `${rates} decisions/s (medians of ${ROUNDS} paired rounds, ${spread}; ${PLACEMENT}), ${cpu}${servers}`].join("\t"));
  }
  const pipelined = new Ratelimit({ redis: autoPipelined, limiter: upstashLimiter, prefix: `${prefix}-upstash-auto`, ephemeralCache: false, analytics: false });
  const auto = await rate(async (key) => (await pipelined.limit(key)).success, 64);
  console.log(`rest ${name}, 64 in flight: @upstash/ratelimit with auto-pipelining (several decisions per request) ${auto.perSec.toFixed(0)}/s`);
}
