-- period_counter.lua — a counter over one period [start, finish) (a fragment, mirrors
-- core/src/algorithms/period_counter.rs): the shared core of fixed_window.lua and quota.lua.
--
-- State: a hash  s = period start (epoch ms),  c = units admitted in that period.
-- A count stored for another period reads as 0.
-- #include lib.lua

local period_counter = {}

local function count_in(key, start)
  local f = get_fields(key, 's', 'c')
  if f and f[1] and f[2] and tonumber(f[1]) == start then return tonumber(f[2]) end
  return 0
end

function period_counter.decide(limit, start, finish, key, now, cost)
  local count = count_in(key, start)
  local to_end = math.max(finish - now, 1)
  local new_count = count + cost
  if new_count <= limit then
    return { 1, limit, limit - new_count, finish, 0 }, function()
      claim(key, 'hash')
      redis.call('HSET', key, 's', fmt_int(start), 'c', fmt_int(new_count))
      redis.call('PEXPIRE', key, to_end)
      return to_end
    end
  end
  return { 0, limit, math.max(limit - count, 0), finish, to_end }, nil
end

function period_counter.peek(limit, start, finish, key, now)
  local count = count_in(key, start)
  local allowed = count < limit
  local retry = 0
  if not allowed then retry = math.max(finish - now, 1) end
  return { allowed and 1 or 0, limit, math.max(limit - count, 0), finish, retry }
end
