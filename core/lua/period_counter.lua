-- period_counter.lua — a counter over one period [start, finish) (a fragment, mirrors
-- core/src/algorithms/period_counter.rs): the shared core of fixed_window.lua and quota.lua.
--
-- State: a hash  s = period start (epoch ms),  c = units admitted in that period.
-- A count stored for another period, or under a key of another type, reads as 0.
-- #include lib.lua

-- The decision for `cost` units; when allowed, then also what period_counter_commit writes: the
-- start, the new count, and the TTL (to the period's end); allowed or not, the count found last
-- (multi.lua's `count` reply).
local function period_counter_decide(limit, start, finish, key, now, cost)
  -- The stored count when it is for this period: a key of another type answers HMGET with an
  -- error table, whose fields read as absent.
  local f = redis.pcall('HMGET', key, 's', 'c')
  local count = 0
  if f[1] and f[2] and tonumber(f[1]) == start then count = tonumber(f[2]) end
  -- math.max written out (lib.lua, "Standalone mains": equal even for NaN and -0): this runs for
  -- every fixed-window and quota dimension of every fused call.
  local to_end = finish - now
  if to_end < 1 then to_end = 1 end
  local new_count = count + cost
  if new_count <= limit then
    return 1, limit, limit - new_count, finish, 0, start, new_count, to_end, count
  end
  local remaining = limit - count
  if remaining < 0 then remaining = 0 end
  return 0, limit, remaining, finish, to_end, nil, nil, nil, count
end

-- TTL: the key expires at the period's end, `finish`. Every allowed op of one period sets the
-- same deadline (its now + (finish - now)), so only the write that starts a period (count 0:
-- a fresh key, another period's state, or a key of another type) sets it; a write that adds to
-- a count it read for this period (`count` > 0, from this hash's `c` beside `s` = start) finds
-- the deadline already set and changes `c` alone. The TTL is still reported (to_end): it is
-- the deadline the key has. (Two limiters of different windows sharing one key, a count that
-- mixes both, are the one case where this deadline can differ from the last op's; see
-- docs/redis.md.)
local function period_counter_commit(key, start, new_count, to_end, count)
  local c = string.format('%d', new_count)
  if count ~= 0 then
    redis.call('HSET', key, 'c', c)
    return to_end
  end
  local s = string.format('%d', start)
  if type(redis.pcall('HSET', key, 's', s, 'c', c)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
    redis.call('HSET', key, 's', s, 'c', c)
  end
  redis.call('PEXPIRE', key, to_end)
  return to_end
end

-- Current capacity: allowed (0/1), limit, remaining, resetAt, retryAfterMs.
local function period_counter_peek(limit, start, finish, key, now)
  local f = redis.pcall('HMGET', key, 's', 'c')
  local count = 0
  if f[1] and f[2] and tonumber(f[1]) == start then count = tonumber(f[2]) end
  local allowed, retry = 1, 0
  if not (count < limit) then allowed, retry = 0, math.max(finish - now, 1) end
  return allowed, limit, math.max(limit - count, 0), finish, retry
end
