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
    local values
    if len == 2 and c < 4503599627370496 and -4503599627370496 < c then
      -- One bucket, |c| < 2^52: the fields are the text of (c - 1) % 2 and c % 2 (see the main).
      if (c - 1) % 2 == 0 then
        values = redis.pcall('HMGET', key, '0', '1')
      else
        values = redis.pcall('HMGET', key, '1', '0')
      end
    else
      local fields = {}
      for t = c - buckets, c do fields[#fields + 1] = t % len end
      values = redis.pcall('HMGET', key, unpack(fields))
    end
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
  -- One format for "tick:count", and the TTL as text below 1e15: the main says why.
  local field, value, px = tick % len, string.format('%d:%d', tick, count), ttl
  if ttl < 1e15 then px = string.format('%d', ttl) end
  if type(redis.pcall('HSET', key, field, value)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, field, value)
  end
  redis.call('PEXPIRE', key, px)
  return ttl
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"): under EVALSHA it builds none of the
-- file's six function closures per call. The same arithmetic as sliding_window_view, _decide,
-- _retry and _commit, which the fused multi.lua runs, operation for operation.
local key, now, mode = KEYS[1], ARGV[1], ARGV[2]
if now == '0' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = now * 1
end
local limit, window_ms, buckets = ARGV[4] * 1, ARGV[5] * 1, ARGV[6] * 1
local w = window_ms / buckets
local c = math.floor(now / w)
local weight = (w - (now - c * w)) / w
if weight < 0 then weight = 0 end
if 1 < weight then weight = 1 end
local len = buckets + 1
local first = c - buckets
-- The window's slots, oldest tick first (`values[j]` is tick first + j - 1's slot); a key of
-- another type answers HMGET with an error table, which reads as empty.
local oldest, current, sum = 0, 0, 0
-- The current tick's field, c % len: a number, or with one bucket its text.
local field
if len <= 64 then
  local values
  if len == 2 and c < 4503599627370496 and -4503599627370496 < c then
    -- One bucket, ticks first and c = first + 1 exactly (|c| < 2^52): the fields are 0 and 1,
    -- sent as the text Redis makes of the numbers 0 and 1 (x % 2 is never -0), which saves the
    -- server its number-to-text conversions (printf's %.17g on Redis 7.0).
    if first % 2 == 0 then
      field = '1'
      values = redis.pcall('HMGET', key, '0', '1')
    else
      field = '0'
      values = redis.pcall('HMGET', key, '1', '0')
    end
  else
    local fields = {}
    for t = first, c do fields[#fields + 1] = t % len end
    values = redis.pcall('HMGET', key, unpack(fields))
  end
  -- Slot j ("tick:count") counts for tick first + j - 1 only: the oldest weighted, the rest
  -- summed, the current tick's count kept for the write.
  for j = 1, len do
    local v = values[j]
    if v then
      local tag, n = string.match(v, '^(-?%d+):(%d+)$')
      if tag then
        tag = tonumber(tag)
        if j == 1 then
          if tag == first then oldest = tonumber(n) end
        elseif tag == first + j - 1 then
          sum = sum + tonumber(n)
        end
        if j == len and tag == c then current = tonumber(n) end
      end
    end
  end
else
  -- A ring longer than 64 slots: the whole hash, as sliding_window_view reads it.
  local function slot(v, t)
    if not v then return 0 end
    local tag, n = string.match(v, '^(-?%d+):(%d+)$')
    if tag and tonumber(tag) == t then return tonumber(n) end
    return 0
  end
  local all = redis.pcall('HGETALL', key)
  local slots = {}
  for j = 1, #all, 2 do slots[all[j]] = all[j + 1] end
  oldest = slot(slots[string.format('%d', first % len)], first)
  for t = first + 1, c do sum = sum + slot(slots[string.format('%d', t % len)], t) end
  current = slot(slots[string.format('%d', c % len)], c)
end
local estimate = sum + oldest * weight
local reset_at = math.ceil((c + 1) * w + window_ms)
local cost = 1
if mode ~= 'peek' then cost = ARGV[3] * 1 end
local after = estimate + cost
if not (after <= limit) then
  local remaining = math.floor(limit - estimate)
  if remaining < 0 then remaining = 0 end
  local d = estimate + cost - limit
  local retry
  if oldest > 0 and d <= oldest * weight then
    retry = math.ceil(d * w / oldest)
  else
    retry = math.ceil((c + 1) * w - now)
  end
  if retry < 1 then retry = 1 end
  return { 0, limit, remaining, reset_at, retry, -1 }
end
if mode == 'peek' then
  local remaining = math.floor(limit - estimate)
  if remaining < 0 then remaining = 0 end
  return { 1, limit, remaining, reset_at, 0, -1 }
end
local remaining = math.floor(limit - after)
if remaining < 0 then remaining = 0 end
local ttl = -1
if mode == 'check' then
  ttl = math.ceil(window_ms + w)
  if ttl < 1 then ttl = 1 end
  if not field then field = c % len end
  -- One format for "tick:count" (the same text as two and a concatenation); the TTL as text
  -- when it is below 1e15, where %d writes what Redis makes of the number (integral: a ceil).
  local value, px = string.format('%d:%d', c, current + cost), ttl
  if ttl < 1e15 then px = string.format('%d', ttl) end
  if type(redis.pcall('HSET', key, field, value)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, field, value)
  end
  redis.call('PEXPIRE', key, px)
end
return { 1, limit, remaining, reset_at, 0, ttl }
