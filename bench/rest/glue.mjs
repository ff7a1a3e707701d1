// The client's own cost per decision on the REST path, without the network: the same two sides
// as rest.mjs (the WebAssembly build's RedisRestStore and @upstash/ratelimit's limit()), each
// sending through a `fetch` that answers at once from a reply recorded off the test front end
// (tests/restfront). The fetch builds a `Request` from the call's URL and options first, as
// Node's fetch (undici) does, so the headers object, the body and the timeout's signal cost what
// they cost there; it then answers a `Response` of the recorded text. What is left is each
// side's JavaScript and (ours) the module's work: preparing the command, reading the reply,
// deciding. Prints Node CPU per decision (process.cpuUsage(): this process alone), medians of
// ROUNDS alternating rounds, and the paired ratio (ours / theirs; lower is cheaper).
//
//   node bench/rest/glue.mjs [decisions per round, default 3000]
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";

import * as tk from "../../bindings-node/wasm/node.mjs";

const total = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 12);
const url = "http://127.0.0.1:1";
const LIMIT = 1e9;

// What the front end answered each side's script (its EVALSHA; the limits are far above the
// run, so every decision admits), by algorithm.
const NOW = Date.now();
const REPLIES = {
  fixedWindow: { upstash: '{"result": [2, 1000000000]}', throttlekit: '{"result": 1}' },
  slidingWindow: { upstash: '{"result": [999999998, 1000000000]}', throttlekit: `{"result": [1, 1000000000, 999999998, ${NOW + 60000}, 0, 120000]}` },
  tokenBucket: { upstash: `{"result": [999999998, ${NOW + 60000}, 1000000000]}`, throttlekit: `{"result": [1, 1000000000, 999999999, ${NOW}, 0, 60001]}` },
};
let reply = "";
globalThis.fetch = async (input, init) => {
  const req = new Request(input, init);
  return new Response(reply, { status: 200, headers: { "content-type": "application/json" } });
};

const redis = new Redis({ url, token: "bench", enableAutoPipelining: false });
const store = new tk.RedisRestStore({ url, token: "bench", timeoutMs: 5000 });
const ALGORITHMS = {
  fixedWindow: [Ratelimit.fixedWindow(LIMIT, "60 s"), tk.Strategy.fixedWindow({ limit: LIMIT, windowMs: 60_000 })],
  slidingWindow: [Ratelimit.slidingWindow(LIMIT, "60 s"), tk.Strategy.slidingWindow({ limit: LIMIT, windowMs: 60_000, buckets: 1 })],
  tokenBucket: [Ratelimit.tokenBucket(LIMIT, "60 s", LIMIT), tk.Strategy.tokenBucket({ capacity: LIMIT, refillPerSec: LIMIT / 60 })],
};

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Node CPU per decision (us) of `total` sequential decisions. */
async function cpuPer(decide) {
  const cpu = process.cpuUsage();
  for (let i = 0; i < total; i++) if (!(await decide(`k${i % 100}`))) throw new Error("denied");
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / total;
}

for (const [name, [upstashLimiter, strategy]] of Object.entries(ALGORITHMS)) {
  const rl = new Ratelimit({ redis, limiter: upstashLimiter, prefix: `glue-${name}-upstash`, ephemeralCache: false, analytics: false });
  const limiter = new tk.Limiter({ strategy, store, prefix: `glue-${name}-tk`, failPolicy: "raise" });
  const sides = {
    upstash: async (key) => (await rl.limit(key)).success,
    throttlekit: async (key) => (await limiter.check(key)).allowed,
  };
  const run = async (side) => {
    reply = REPLIES[name][side];
    return cpuPer(sides[side]);
  };
  for (const side of Object.keys(sides)) await run(side); // warm-up, discarded
  const us = { upstash: [], throttlekit: [] };
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = Object.keys(sides);
    if (r % 2 === 1) order.reverse();
    for (const side of order) us[side].push(await run(side));
    ratios.push(us.throttlekit[r] / us.upstash[r]);
  }
  console.log(`glue ${name}: Node CPU per decision ${median(us.throttlekit).toFixed(1)} vs ${median(us.upstash).toFixed(1)} us (throttlekit vs @upstash/ratelimit, a fetch that answers at once): ${median(ratios).toFixed(2)}x, rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x`);
}
