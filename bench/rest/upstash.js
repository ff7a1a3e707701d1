// @upstash/ratelimit's limit() over the REST front end (tests/restfront) and redis-server:
// decisions per second, sequential and 64 in flight, for the REST rows of `make bench` (the
// WebAssembly REST store's row joins them over the same front end and server).
//
//   node bench/rest/upstash.js <front end url> <token> [decisions]
//
// Every limit() is one round trip: the limit is far above what the run spends (nothing is
// denied) and ephemeralCache is off (it answers denied identifiers in memory). Prints one line
// per measurement: `ROW rest upstash-ratelimit <algorithm> <sequential|64 in flight> <n>/s`.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";

const [url, token, n = "2000"] = process.argv.slice(2);
const total = Number(n);
const redis = new Redis({ url, token });
const algorithms = {
  fixedWindow: Ratelimit.fixedWindow(1e9, "60 s"),
  slidingWindow: Ratelimit.slidingWindow(1e9, "60 s"),
  tokenBucket: Ratelimit.tokenBucket(1e9, "60 s", 1e9),
};

for (const [name, limiter] of Object.entries(algorithms)) {
  const rl = new Ratelimit({ redis, limiter, prefix: `bench-${name}-${process.pid}`, ephemeralCache: false, analytics: false });
  // Warm-up: the scripts get cached (EVALSHA thereafter), connections opened.
  for (let i = 0; i < 50; i++) await rl.limit(`warm${i % 4}`);
  let start = performance.now();
  let admitted = 0;
  let denied = null;
  const count = (r) => {
    if (!r.success) denied ??= r;
    return r.success ? 1 : 0;
  };
  for (let i = 0; i < total; i++) admitted += count(await rl.limit(`k${i % 100}`));
  const seq = total / ((performance.now() - start) / 1000);
  if (admitted !== total) throw new Error(`${name}: ${total - admitted} denied, the bench expects none: ${JSON.stringify(denied)}`);
  start = performance.now();
  let next = 0;
  admitted = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      // Awaited first: `admitted += await ...` would read `admitted` before the wait.
      const ok = count(await rl.limit(`k${next % 100}`));
      admitted += ok;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  const par = total / ((performance.now() - start) / 1000);
  if (admitted !== total) throw new Error(`${name}: ${total - admitted} denied in flight, the bench expects none: ${JSON.stringify(denied)}`);
  console.log(`ROW rest upstash-ratelimit ${name} sequential ${seq.toFixed(0)}/s`);
  console.log(`ROW rest upstash-ratelimit ${name} 64-in-flight ${par.toFixed(0)}/s`);
}
