-- sliding_window.lua — sub-bucketed sliding window (mirrors core/src/algorithms/sliding_window.rs).
--
-- KEYS[1]  the limiter key; state: a hash, a ring of buckets + 1 slots: field `tick % (buckets+1)`
--          holds "tick:count" (a slot counts for its exact tick only)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] windowMs     ARGV[6] buckets
-- Reply    {allowed (0/1), limit, remaining, resetAt, retryAfterMs, ttlMs or -1}
--
-- w = windowMs / buckets (a float); c = floor(now / w); the window is ticks c - buckets .. c; the
-- oldest is weighted by (w - (now - c * w)) / w, clamped to [0, 1]. A rolling quota is this script.
-- #include lib.lua

-- A slot's count for tick `t`: 0 unless the slot (a "tick:count" string or nil) is tagged `t`.
local function sliding_window_slot(v, t)
  if not v then return 0 end
  local tag, count = string.match(v, '^(-?%d+):(%d+)$')
  if tag and tonumber(tag) == t then return tonumber(count) end
  return 0
end

-- The window as seen at `now`: tick c, the oldest tick's weight, the oldest tick's count, the
-- current tick's count, and the estimate sum + oldest * weight.
local function sliding_window_view(key, now, w, buckets)
  local c = math.floor(now / w)
  local elapsed = now - c * w
  local weight = math.min(math.max((w - elapsed) / w, 0), 1)
  local len = buckets + 1
  local oldest, current, sum = 0, 0, 0
  if len <= 64 then
    -- One HMGET of the window's slots, oldest tick first; a key of another type answers with an
    -- error table, which reads as empty.
    local fields = {}
    for t = c - buckets, c do fields[#fields + 1] = t % len end
    local values = redis.pcall('HMGET', key, unpack(fields))
    oldest = sliding_window_slot(values[1], c - buckets)
    for j = 2, len do sum = sum + sliding_window_slot(values[j], c - buckets + j - 1) end
    current = sliding_window_slot(values[len], c)
  else
    local all = redis.pcall('HGETALL', key)
    local slots = {}
    for j = 1, #all, 2 do slots[all[j]] = all[j + 1] end
    oldest = sliding_window_slot(slots[string.format('%d', (c - buckets) % len)], c - buckets)
    for t = c - buckets + 1, c do sum = sum + sliding_window_slot(slots[string.format('%d', t % len)], t) end
    current = sliding_window_slot(slots[string.format('%d', c % len)], c)
  end
  return c, weight, oldest, current, sum + oldest * weight
end

local function sliding_window_retry(limit, w, tick, weight, oldest, estimate, now, cost)
  local d = estimate + cost - limit
  local retry
  if oldest > 0 and d <= oldest * weight then
    retry = math.ceil(d * w / oldest)
  else
    retry = math.ceil((tick + 1) * w - now)
  end
  return math.max(retry, 1)
end

-- The decision for `cost` units (options from a[i]: limit, windowMs, buckets); when allowed, then
-- also what sliding_window_commit writes: the tick, its new count, the ring length, the TTL.
local function sliding_window_decide(key, now, cost, a, i)
  local limit, window_ms, buckets = a[i] * 1, a[i + 1] * 1, a[i + 2] * 1
  local w = window_ms / buckets
  local tick, weight, oldest, current, estimate = sliding_window_view(key, now, w, buckets)
  local reset_at = math.ceil((tick + 1) * w + window_ms)
  local after = estimate + cost
  if after <= limit then
    return 1, limit, math.max(math.floor(limit - after), 0), reset_at, 0,
      tick, current + cost, buckets + 1, math.max(math.ceil(window_ms + w), 1)
  end
  return 0, limit, math.max(math.floor(limit - estimate), 0), reset_at,
    sliding_window_retry(limit, w, tick, weight, oldest, estimate, now, cost)
end

local function sliding_window_commit(key, tick, count, len, ttl)
  local field, value = tick % len, string.format('%d', tick) .. ':' .. string.format('%d', count)
  if type(redis.pcall('HSET', key, field, value)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, field, value)
  end
  redis.call('PEXPIRE', key, ttl)
  return ttl
end

-- #main
local key, now, mode = KEYS[1], read_now(ARGV[1]), ARGV[2]
if mode == 'peek' then
  local limit, window_ms, buckets = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local w = window_ms / buckets
  local tick, weight, oldest, _, estimate = sliding_window_view(key, now, w, buckets)
  local allowed, retry = 1, 0
  if not (estimate + 1 <= limit) then
    allowed, retry = 0, sliding_window_retry(limit, w, tick, weight, oldest, estimate, now, 1)
  end
  return { allowed, limit, math.max(math.floor(limit - estimate), 0), math.ceil((tick + 1) * w + window_ms), retry, -1 }
end
local allowed, limit, remaining, reset_at, retry, tick, count, len, ttl =
  sliding_window_decide(key, now, tonumber(ARGV[3]), ARGV, 4)
if allowed == 1 and mode == 'check' then
  ttl = sliding_window_commit(key, tick, count, len, ttl)
else
  ttl = -1
end
return { allowed, limit, remaining, reset_at, retry, ttl }
