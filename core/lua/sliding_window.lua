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

-- The window as seen at `now`: tick c, the oldest tick's weight, the oldest tick's count, the
-- current tick's count, and the estimate sum + oldest * weight. The main repeats this text.
local function sliding_window_view(key, now, w, buckets)
  local c = math.floor(now / w)
  local elapsed = now - c * w
  local weight = (w - elapsed) / w
  if weight < 0 then weight = 0 end
  if 1 < weight then weight = 1 end
  local len = buckets + 1
  local oldest, current, sum = 0, 0, 0
  -- values[j]: the slot of tick c - buckets + j - 1 (a key of another type answers with an
  -- error table: empty); field: the current tick's, c % len, as text with one bucket. The loops
  -- count offsets, not ticks: a tick past 2^53 is its own successor (a loop that never ends).
  local values, field
  if len == 2 and c < 4503599627370496 and -4503599627370496 < c then
    -- One bucket and |c| < 2^52 (exact ticks): the fields are the text Redis makes of the
    -- numbers 0 and 1 (x % 2 is never -0), without the server's printf("%.17g") of each.
    if (c - buckets) % len == 0 then
      values, field = redis.pcall('HMGET', key, '0', '1'), '1'
    else
      values, field = redis.pcall('HMGET', key, '1', '0'), '0'
    end
  elseif len <= 64 then
    local fields = {}
    for j = 0, buckets do fields[j + 1] = (c - buckets + j) % len end
    values = redis.pcall('HMGET', key, unpack(fields))
  else
    local all = redis.pcall('HGETALL', key)
    local slots = {}
    for j = 1, #all, 2 do slots[all[j]] = all[j + 1] end
    values = {}
    for j = 0, buckets do values[j + 1] = slots[string.format('%d', (c - buckets + j) % len)] end
  end
  -- A slot "tick:count" counts for its exact tick only: the oldest weighted, the rest summed.
  for j = 1, len do
    local v = values[j]
    if v then
      local tag, count = string.match(v, '^(-?%d+):(%d+)$')
      if tag then
        tag = tonumber(tag)
        if j == 1 then
          if tag == c - buckets then oldest = tonumber(count) end
        elseif tag == c - buckets + j - 1 then
          sum = sum + tonumber(count)
        end
        if j == len and tag == c then current = tonumber(count) end
      end
    end
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
  local field, value = tick % len, string.format('%d:%d', tick, count)
  if type(redis.pcall('HSET', key, field, value)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, field, value)
  end
  redis.call('PEXPIRE', key, ttl)
  return ttl
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"), so EVALSHA builds none of the closures
-- above (nor lib.lua's read_now) on every call. The same arithmetic as sliding_window_view,
-- _decide, _retry and _commit, which multi.lua runs, operation for operation, and in their
-- words (the WebAssembly build embeds both: repeated text costs it little once compressed).
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
local elapsed = now - c * w
local weight = (w - elapsed) / w
if weight < 0 then weight = 0 end
if 1 < weight then weight = 1 end
local len = buckets + 1
local oldest, current, sum = 0, 0, 0
-- values[j]: the slot of tick c - buckets + j - 1 (a key of another type answers with an
-- error table: empty); field: the current tick's, c % len, as text with one bucket.
local values, field
if len == 2 and c < 4503599627370496 and -4503599627370496 < c then
  -- One bucket and |c| < 2^52 (exact ticks): the fields are the text Redis makes of the
  -- numbers 0 and 1 (x % 2 is never -0), without the server's printf("%.17g") of each.
  if (c - buckets) % len == 0 then
    values, field = redis.pcall('HMGET', key, '0', '1'), '1'
  else
    values, field = redis.pcall('HMGET', key, '1', '0'), '0'
  end
elseif len <= 64 then
  local fields = {}
  for j = 0, buckets do fields[j + 1] = (c - buckets + j) % len end
  values = redis.pcall('HMGET', key, unpack(fields))
else
  local all = redis.pcall('HGETALL', key)
  local slots = {}
  for j = 1, #all, 2 do slots[all[j]] = all[j + 1] end
  values = {}
  for j = 0, buckets do values[j + 1] = slots[string.format('%d', (c - buckets + j) % len)] end
end
-- A slot "tick:count" counts for its exact tick only: the oldest weighted, the rest summed.
for j = 1, len do
  local v = values[j]
  if v then
    local tag, count = string.match(v, '^(-?%d+):(%d+)$')
    if tag then
      tag = tonumber(tag)
      if j == 1 then
        if tag == c - buckets then oldest = tonumber(count) end
      elseif tag == c - buckets + j - 1 then
        sum = sum + tonumber(count)
      end
      if j == len and tag == c then current = tonumber(count) end
    end
  end
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
local remaining = math.floor(limit - after)
if mode == 'peek' then remaining = math.floor(limit - estimate) end
if remaining < 0 then remaining = 0 end
local ttl = -1
if mode == 'check' then
  ttl = math.ceil(window_ms + w)
  if ttl < 1 then ttl = 1 end
  local value = string.format('%d:%d', c, current + cost)
  field = field or c % len
  if type(redis.pcall('HSET', key, field, value)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, field, value)
  end
  redis.call('PEXPIRE', key, ttl)
end
return { 1, limit, remaining, reset_at, 0, ttl }
