-- sliding_window_log.lua — exact sliding-window log (mirrors core/src/algorithms/sliding_window_log.rs).
--
-- KEYS[1]  the limiter key; state: a sorted set, one member per admitted unit, scored by its
--          stamp (epoch ms); members are "stamp:seq", unique per unit, so two units admitted at
--          the same millisecond never collide and vanish
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] windowMs
-- Reply    {allowed (0/1), limit, remaining, resetAt, retryAfterMs, ttlMs or -1}
--
-- Live stamps are those > now - windowMs (a stamp at t is gone at exactly t + windowMs); stamps
-- later than now (a backward clock jump) stay live. Only an allowed check prunes, so a denial or
-- a peek at a late `now` never destroys what an earlier `now` would still count.
-- #include lib.lua

local sliding_window_log = {}

function sliding_window_log.options(a, i)
  return { limit = tonumber(a[i]), window_ms = tonumber(a[i + 1]) }
end

-- The live part of the log at `now`: its count, and a function rank -> stamp.
local function view(key, o, now)
  local horizon = now - o.window_ms
  local live = '(' .. fmt_int(horizon)
  local ok, count = pcall(redis.call, 'ZCOUNT', key, live, '+inf')
  if not ok then count = 0 end
  local function stamp_of_rank(rank)
    local r = redis.call('ZRANGEBYSCORE', key, live, '+inf', 'WITHSCORES', 'LIMIT', rank - 1, 1)
    return tonumber(r[2])
  end
  return { horizon = horizon, count = count, stamp_of_rank = stamp_of_rank }
end

local function oldest(v)
  if v.count == 0 then return nil end
  return v.stamp_of_rank(1)
end

local function retry_after(o, v, now, cost)
  if v.count == 0 then return math.max(o.window_ms, 1) end
  local rank = math.min(math.max(v.count + cost - o.limit, 1), v.count)
  return math.max(v.stamp_of_rank(rank) + o.window_ms - now, 1)
end

local function reset_at(o, v, now)
  return (oldest(v) or now) + o.window_ms
end

-- Adds `cost` members scored `now`, named "now:seq" with seq unused so far.
local function add_units(key, now, cost)
  local stamp = fmt_int(now)
  local seq = redis.call('ZCOUNT', key, stamp, stamp)
  local added = 0
  while added < cost do
    local batch = {}
    for _ = 1, math.min(cost - added, 1000) do
      batch[#batch + 1] = stamp
      batch[#batch + 1] = stamp .. ':' .. fmt_int(seq)
      seq = seq + 1
    end
    added = added + redis.call('ZADD', key, 'NX', unpack(batch))
  end
end

function sliding_window_log.decide(key, now, cost, o)
  local v = view(key, o, now)
  local new_count = v.count + cost
  if new_count > o.limit then
    return { 0, o.limit, math.max(o.limit - v.count, 0), reset_at(o, v, now), retry_after(o, v, now, cost) }, nil
  end
  local first = math.min(oldest(v) or now, now)
  return { 1, o.limit, o.limit - new_count, first + o.window_ms, 0 }, function()
    claim(key, 'zset')
    redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt_int(v.horizon))
    add_units(key, now, cost)
    redis.call('PEXPIRE', key, o.window_ms)
    return o.window_ms
  end
end

function sliding_window_log.peek(key, now, o)
  local v = view(key, o, now)
  local allowed = v.count < o.limit
  local retry = 0
  if not allowed then retry = retry_after(o, v, now, 1) end
  return { allowed and 1 or 0, o.limit, math.max(o.limit - v.count, 0), reset_at(o, v, now), retry }
end

-- #main
return run_single(sliding_window_log)
