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

-- Tokens present at `now`: lazily refilled, never for negative elapsed time. A key of another
-- type answers HMGET with an error table, whose fields read as absent: a full bucket.
local function token_bucket_tokens(key, now, capacity, refill_per_ms)
  local f = redis.pcall('HMGET', key, 't', 'l')
  local tokens, last = f[1], f[2]
  if not tokens or not last then return capacity end
  local elapsed = math.max(now - tonumber(last), 0)
  return math.min(capacity, tonumber(tokens) + elapsed * refill_per_ms)
end

-- The decision for `cost` units (options from a[i]: capacity, refillPerSec); when allowed, then
-- also what token_bucket_commit writes: the tokens left, now, and the TTL.
local function token_bucket_decide(key, now, cost, a, i)
  local capacity = a[i] * 1
  local refill_per_ms = a[i + 1] / 1000
  local tokens = token_bucket_tokens(key, now, capacity, refill_per_ms)
  if tokens >= cost then
    local left = tokens - cost
    return 1, capacity, math.max(math.floor(left), 0), now + math.ceil((capacity - left) / refill_per_ms), 0,
      left, now, math.max(math.ceil(capacity / refill_per_ms), 1)
  end
  return 0, capacity, math.max(math.floor(tokens), 0), now + math.ceil((capacity - tokens) / refill_per_ms),
    math.max(math.ceil((cost - tokens) / refill_per_ms), 1)
end

local function token_bucket_commit(key, left, now, ttl)
  local t, l = string.format('%.17g', left), string.format('%d', now)
  if type(redis.pcall('HSET', key, 't', t, 'l', l)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, 't', t, 'l', l)
  end
  redis.call('PEXPIRE', key, ttl)
  return ttl
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"), the same arithmetic as token_bucket_tokens,
-- token_bucket_decide and token_bucket_commit above, which the fused multi.lua runs.
local key, now, mode = KEYS[1], ARGV[1], ARGV[2]
if now == '0' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = now * 1
end
local capacity = ARGV[4] * 1
local refill_per_ms = ARGV[5] / 1000
local f = redis.pcall('HMGET', key, 't', 'l')
local tokens, last = f[1], f[2]
if not tokens or not last then
  tokens = capacity
else
  local elapsed = now - tonumber(last)
  if elapsed < 0 then elapsed = 0 end
  local refilled = tonumber(tokens) + elapsed * refill_per_ms
  tokens = capacity
  if refilled < capacity then tokens = refilled end
end
local cost = 1 -- peek: the capacity for one unit
if mode ~= 'peek' then cost = ARGV[3] * 1 end
if not (tokens >= cost) or mode == 'peek' then
  local allowed, retry, remaining = 1, 0, math.floor(tokens)
  if not (tokens >= cost) then
    allowed, retry = 0, math.ceil((cost - tokens) / refill_per_ms)
    if retry < 1 then retry = 1 end
  end
  if remaining < 0 then remaining = 0 end
  return { allowed, capacity, remaining, now + math.ceil((capacity - tokens) / refill_per_ms), retry, -1 }
end
local left = tokens - cost
local remaining = math.floor(left)
if remaining < 0 then remaining = 0 end
local ttl = -1
if mode == 'check' then
  ttl = math.ceil(capacity / refill_per_ms)
  if ttl < 1 then ttl = 1 end
  local t, l = string.format('%.17g', left), string.format('%d', now)
  if type(redis.pcall('HSET', key, 't', t, 'l', l)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, 't', t, 'l', l)
  end
  redis.call('PEXPIRE', key, ttl)
end
return { 1, capacity, remaining, now + math.ceil((capacity - left) / refill_per_ms), 0, ttl }
