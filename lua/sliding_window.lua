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

local sliding_window = {}

function sliding_window.options(a, i)
  local limit, window_ms, buckets = tonumber(a[i]), tonumber(a[i + 1]), tonumber(a[i + 2])
  return { limit = limit, window_ms = window_ms, buckets = buckets, w = window_ms / buckets, len = buckets + 1 }
end

-- Reads the ring: a function tick -> count (0 unless the slot is tagged with that tick).
local function ring_reader(key, o, tick)
  local slots = {}
  if o.len <= 64 then
    local fields = {}
    for t = tick - o.buckets, tick do fields[#fields + 1] = fmt_int(t % o.len) end
    local values = get_fields(key, unpack(fields))
    if values then
      for j = 1, #fields do
        if values[j] then slots[fields[j]] = values[j] end
      end
    end
  else
    local ok, all = pcall(redis.call, 'HGETALL', key)
    if ok then
      for j = 1, #all, 2 do slots[all[j]] = all[j + 1] end
    end
  end
  return function(t)
    local v = slots[fmt_int(t % o.len)]
    if not v then return 0 end
    local tag, count = string.match(v, '^(-?%d+):(%d+)$')
    if tag and tonumber(tag) == t then return tonumber(count) end
    return 0
  end
end

-- The window as seen at `now`.
local function view(key, o, now)
  local c = math.floor(now / o.w)
  local elapsed = now - c * o.w
  local weight = math.min(math.max((o.w - elapsed) / o.w, 0), 1)
  local count = ring_reader(key, o, c)
  local sum = 0
  for t = c - o.buckets + 1, c do sum = sum + count(t) end
  local oldest = count(c - o.buckets)
  return { tick = c, weight = weight, oldest = oldest, current = count(c), estimate = sum + oldest * weight }
end

local function reset_at(o, tick)
  return math.ceil((tick + 1) * o.w + o.window_ms)
end

local function retry_after(o, v, now, cost)
  local d = v.estimate + cost - o.limit
  local retry
  if v.oldest > 0 and d <= v.oldest * v.weight then
    retry = math.ceil(d * o.w / v.oldest)
  else
    retry = math.ceil((v.tick + 1) * o.w - now)
  end
  return math.max(retry, 1)
end

function sliding_window.decide(key, now, cost, o)
  local v = view(key, o, now)
  local after = v.estimate + cost
  if after <= o.limit then
    local ttl = math.max(math.ceil(o.window_ms + o.w), 1)
    return { 1, o.limit, math.max(math.floor(o.limit - after), 0), reset_at(o, v.tick), 0 }, function()
      claim(key, 'hash')
      redis.call('HSET', key, fmt_int(v.tick % o.len), fmt_int(v.tick) .. ':' .. fmt_int(v.current + cost))
      redis.call('PEXPIRE', key, ttl)
      return ttl
    end
  end
  local remaining = math.max(math.floor(o.limit - v.estimate), 0)
  return { 0, o.limit, remaining, reset_at(o, v.tick), retry_after(o, v, now, cost) }, nil
end

function sliding_window.peek(key, now, o)
  local v = view(key, o, now)
  local allowed = v.estimate + 1 <= o.limit
  local retry = 0
  if not allowed then retry = retry_after(o, v, now, 1) end
  return { allowed and 1 or 0, o.limit, math.max(math.floor(o.limit - v.estimate), 0), reset_at(o, v.tick), retry }
end

-- #main
return run_single(sliding_window)
