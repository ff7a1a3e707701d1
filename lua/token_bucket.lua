-- token_bucket.lua — token bucket (mirrors core/src/algorithms/token_bucket.rs).
--
-- KEYS[1]  the limiter key; state: a hash  t = tokens at `l` (%.17g),  l = last (epoch ms)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  capacity     ARGV[5] refillPerSec
-- Reply    {allowed (0/1), limit (= capacity), remaining, resetAt, retryAfterMs, ttlMs or -1}
--
-- A new bucket starts full. Every tokens-to-ms conversion divides by refillPerMs.
-- #include lib.lua

local token_bucket = {}

function token_bucket.options(a, i)
  local capacity, refill_per_sec = tonumber(a[i]), tonumber(a[i + 1])
  return { capacity = capacity, refill_per_ms = refill_per_sec / 1000 }
end

-- Tokens present at `now`: lazily refilled, never for negative elapsed time.
local function tokens_at(key, now, o)
  local f = get_fields(key, 't', 'l')
  if not f or not f[1] or not f[2] then return o.capacity end
  local tokens, last = tonumber(f[1]), tonumber(f[2])
  local elapsed = math.max(now - last, 0)
  return math.min(o.capacity, tokens + elapsed * o.refill_per_ms)
end

local function reset_at(now, tokens, o)
  return now + math.ceil((o.capacity - tokens) / o.refill_per_ms)
end

function token_bucket.decide(key, now, cost, o)
  local tokens = tokens_at(key, now, o)
  if tokens >= cost then
    local left = tokens - cost
    local ttl = math.max(math.ceil(o.capacity / o.refill_per_ms), 1)
    return { 1, o.capacity, math.max(math.floor(left), 0), reset_at(now, left, o), 0 }, function()
      claim(key, 'hash')
      redis.call('HSET', key, 't', fmt_float(left), 'l', fmt_int(now))
      redis.call('PEXPIRE', key, ttl)
      return ttl
    end
  end
  local retry = math.max(math.ceil((cost - tokens) / o.refill_per_ms), 1)
  return { 0, o.capacity, math.max(math.floor(tokens), 0), reset_at(now, tokens, o), retry }, nil
end

function token_bucket.peek(key, now, o)
  local tokens = tokens_at(key, now, o)
  local allowed = tokens >= 1
  local retry = 0
  if not allowed then retry = math.max(math.ceil((1 - tokens) / o.refill_per_ms), 1) end
  return { allowed and 1 or 0, o.capacity, math.max(math.floor(tokens), 0), reset_at(now, tokens, o), retry }
end

-- #main
return run_single(token_bucket)
