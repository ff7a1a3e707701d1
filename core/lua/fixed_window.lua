-- fixed_window.lua — fixed window (mirrors core/src/algorithms/fixed_window.rs).
--
-- KEYS[1]  the limiter key; state: a hash  s = window start (epoch ms),  c = count
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek' | 'count'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] windowMs
-- Reply    {allowed (0/1), limit, remaining, resetAt, retryAfterMs, ttlMs or -1}; for 'count',
--          a check that replies the count this window held before it (an integer) instead:
--          the crate sends it when `now` is its own, and derives the decision and the TTL from
--          that count with the Rust fixed window (core/src/redis/call.rs, `Shape::WindowCount`),
--          which decides as this script does. A 6-element reply is a third of the call's
--          server instructions (bench/redis_instructions.py); an integer is not.
--
-- Windows are epoch-aligned: [k*W, (k+1)*W). floor(now / W) is exact for |now| < 2^53.
-- #include lib.lua
-- #include period_counter.lua

-- The decision for `cost` units (options from a[i]: limit, windowMs), as period_counter_decide.
local function fixed_window_decide(key, now, cost, a, i)
  local window_ms = a[i + 1] * 1
  local start = math.floor(now / window_ms) * window_ms
  return period_counter_decide(a[i] * 1, start, start + window_ms, key, now, cost)
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"), the same arithmetic as fixed_window_decide
-- and the period counter's decide, peek and commit, which the fused multi.lua runs.
local key, now, mode = KEYS[1], ARGV[1], ARGV[2]
if now == '0' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = now * 1
end
local limit, window_ms = ARGV[4] * 1, ARGV[5] * 1
local start = math.floor(now / window_ms) * window_ms
local finish = start + window_ms
local f = redis.pcall('HMGET', key, 's', 'c')
local count = 0
if f[1] and f[2] and tonumber(f[1]) == start then count = tonumber(f[2]) end
local to_end = finish - now
if to_end < 1 then to_end = 1 end
local remaining = limit - count
if mode == 'peek' then
  if remaining < 0 then remaining = 0 end
  if not (count < limit) then return { 0, limit, remaining, finish, to_end, -1 } end
  return { 1, limit, remaining, finish, 0, -1 }
end
local new_count = count + ARGV[3]
if not (new_count <= limit) then
  if mode == 'count' then return count end
  if remaining < 0 then remaining = 0 end
  return { 0, limit, remaining, finish, to_end, -1 }
end
local ttl = -1
if mode == 'check' or mode == 'count' then
  ttl = to_end
  local c = string.format('%d', new_count)
  if count == 0 then
    local s = string.format('%d', start)
    if type(redis.pcall('HSET', key, 's', s, 'c', c)) == 'table' then
      redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
      redis.call('HSET', key, 's', s, 'c', c)
    end
    redis.call('PEXPIRE', key, to_end)
  else
    -- A count other than 0 was read from this hash's `c` beside an `s` equal to this window's
    -- start: the key is a hash and `s` already holds the start, so only `c` changes (-7 % of
    -- the server's instructions per call, bench/redis_instructions.py), and the key already
    -- expires at this window's end, where the write that started the window set it
    -- (period_counter.lua, "TTL"): no PEXPIRE (-17 %).
    redis.call('HSET', key, 'c', c)
  end
  if mode == 'count' then return count end
end
return { 1, limit, limit - new_count, finish, 0, ttl }
