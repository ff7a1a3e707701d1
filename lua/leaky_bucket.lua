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

local leaky_bucket = {}

function leaky_bucket.options(a, i)
  local rate_per_sec, max_queue_ms = tonumber(a[i]), tonumber(a[i + 1])
  return { max_queue_ms = max_queue_ms, t = 1000 / rate_per_sec }
end

function leaky_bucket.reserve(key, now, cost, o)
  local inc = o.t * cost
  local stored = tonumber(get_string(key)) or now
  local departure = stored
  if not (stored > now) then departure = now end
  local delay = departure - now
  if delay > o.max_queue_ms then
    return { 0, math.max(math.ceil(delay - o.max_queue_ms), 1), -1 }
  end
  local nxt = departure + inc
  local ttl = math.max(math.ceil(nxt - now), 1)
  redis.call('SET', key, fmt_float(nxt), 'PX', ttl)
  return { 1, math.ceil(delay), ttl }
end

-- #main
return leaky_bucket.reserve(KEYS[1], read_now(ARGV[1]), tonumber(ARGV[3]), leaky_bucket.options(ARGV, 4))
