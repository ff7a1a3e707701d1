-- leaky_bucket.lua — the shaper's reservation (mirrors core/src/algorithms/leaky_bucket.rs).
--
-- KEYS[1]  the shaper key; state: a string, the next departure (epoch ms, %.17g)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'reserve'
-- ARGV[3]  cost (integer >= 1)
-- ARGV[4]  ratePerSec     ARGV[5] maxQueueMs
-- Reply    {accepted (0/1), delayMs, ttlMs written or -1}
--
-- T = 1000 / ratePerSec, inc = T * cost, departure = max(stored, now), delay = departure - now.
-- Past maxQueueMs: rejected, delayMs = by how much (at least 1), nothing stored.
-- #include lib.lua

-- #main
local key, now, cost = KEYS[1], read_now(ARGV[1]), tonumber(ARGV[3])
local max_queue_ms = tonumber(ARGV[5])
local inc = (1000 / tonumber(ARGV[4])) * cost
-- SET replaces a key of any type, so a value of another type only has to read as absent.
local stored = tonumber(redis.pcall('GET', key)) or now
local departure = stored
if not (stored > now) then departure = now end
local delay = departure - now
if delay > max_queue_ms then
  return { 0, math.max(math.ceil(delay - max_queue_ms), 1), -1 }
end
local nxt = departure + inc
local ttl = math.max(math.ceil(nxt - now), 1)
redis.call('SET', key, string.format('%.17g', nxt), 'PX', ttl)
return { 1, math.ceil(delay), ttl }
