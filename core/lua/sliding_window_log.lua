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

-- The live entries at `now`: how many dead ones (stamp <= now - windowMs) rank before them, and
-- their count. ZCARD (O(1)) minus the dead (O(dead)) is the live count, where a ZCOUNT of the
-- live range would cost O(live) on a small (listpack) set. A key of another type answers ZCARD
-- with an error table: an empty log.
local function sliding_window_log_live(key, now, window_ms)
  local total = redis.pcall('ZCARD', key)
  if type(total) ~= 'number' or total == 0 then return 0, 0 end
  local dead = redis.call('ZCOUNT', key, '-inf', string.format('%d', now - window_ms))
  return dead, total - dead
end

-- The stamp of the live entry of rank `rank` (1 = oldest), `dead` entries ranking before it.
local function sliding_window_log_stamp(key, dead, rank)
  local r = redis.call('ZRANGE', key, dead + rank - 1, dead + rank - 1, 'WITHSCORES')
  return tonumber(r[2])
end

-- A denial's resetAt and retryAfterMs for `cost` units: until the (count + cost - limit)-th
-- oldest live stamp ages out (rank clamped to [1, count]); windowMs when the log is empty.
local function sliding_window_log_denied(key, dead, count, limit, window_ms, now, cost)
  if count == 0 then return now + window_ms, math.max(window_ms, 1) end
  local oldest = sliding_window_log_stamp(key, dead, 1)
  local rank = math.min(math.max(count + cost - limit, 1), count)
  local stamp = oldest
  if rank ~= 1 then stamp = sliding_window_log_stamp(key, dead, rank) end
  return oldest + window_ms, math.max(stamp + window_ms - now, 1)
end

-- The decision for `cost` units (options from a[i]: limit, windowMs); when allowed, then also
-- what sliding_window_log_commit takes: now, cost, windowMs and the live count.
local function sliding_window_log_decide(key, now, cost, a, i)
  local limit, window_ms = a[i] * 1, a[i + 1] * 1
  local dead, count = sliding_window_log_live(key, now, window_ms)
  local new_count = count + cost
  if new_count > limit then
    local reset_at, retry = sliding_window_log_denied(key, dead, count, limit, window_ms, now, cost)
    return 0, limit, math.max(limit - count, 0), reset_at, retry
  end
  local first = now
  if count > 0 then first = math.min(sliding_window_log_stamp(key, dead, 1), now) end
  return 1, limit, limit - new_count, first + window_ms, 0, now, cost, window_ms, count
end

-- Prunes what is dead at `now`, adds `cost` members scored `now` named "now:seq" with seq unused
-- so far, and sets the TTL. seq starts at the live count, which no unit admitted at this stamp
-- has taken yet unless the clock jumped back; ZADD NX skips a taken one all the same.
local function sliding_window_log_commit(key, now, cost, window_ms, count)
  local dead = string.format('%d', now - window_ms)
  if type(redis.pcall('ZREMRANGEBYSCORE', key, '-inf', dead)) == 'table' then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
  end
  local stamp = string.format('%d', now)
  local seq, added = count, 0
  while added < cost do
    local n = math.min(cost - added, 1000)
    if n == 1 then
      added = added + redis.call('ZADD', key, 'NX', stamp, stamp .. ':' .. string.format('%d', seq))
      seq = seq + 1
    else
      local batch = {}
      for j = 1, 2 * n, 2 do
        batch[j], batch[j + 1] = stamp, stamp .. ':' .. string.format('%d', seq)
        seq = seq + 1
      end
      added = added + redis.call('ZADD', key, 'NX', unpack(batch))
    end
  end
  redis.call('PEXPIRE', key, window_ms)
  return window_ms
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"), the same steps as the functions above,
-- which the fused multi.lua runs. One reordering: a check that the total alone admits prunes
-- first (below).
local key, now, mode = KEYS[1], ARGV[1], ARGV[2]
if now == '0' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = now * 1
end
local limit, window_ms = ARGV[4] * 1, ARGV[5] * 1
local cost = 1 -- peek: the capacity for one unit
if mode ~= 'peek' then cost = ARGV[3] * 1 end
-- The live entries, as sliding_window_log_live; `dead` of them still in the set, ranking first.
local dead, count, bound = 0, 0, string.format('%d', now - window_ms)
local total = redis.pcall('ZCARD', key)
local wrongtype = type(total) ~= 'number'
if not wrongtype and total ~= 0 then
  if mode == 'check' and not (limit < total + cost) then
    -- Admitted whatever is dead (the live count is at most the total), so the commit below
    -- prunes: prune now instead, and ZREMRANGEBYSCORE's reply is the dead count (a ZCOUNT
    -- saved; the common check is five commands).
    count = total - redis.call('ZREMRANGEBYSCORE', key, '-inf', bound)
  else
    dead = redis.call('ZCOUNT', key, '-inf', bound)
    count = total - dead
  end
end
local denied
if mode == 'peek' then denied = not (count < limit) else denied = count + cost > limit end
if denied then
  -- As sliding_window_log_denied.
  local remaining, reset_at, retry = limit - count, now + window_ms, window_ms
  if remaining < 0 then remaining = 0 end
  if count ~= 0 then
    local oldest = tonumber(redis.call('ZRANGE', key, dead, dead, 'WITHSCORES')[2])
    local rank = count + cost - limit
    if rank < 1 then rank = 1 end
    if count < rank then rank = count end
    local stamp = oldest
    if rank ~= 1 then stamp = tonumber(redis.call('ZRANGE', key, dead + rank - 1, dead + rank - 1, 'WITHSCORES')[2]) end
    reset_at, retry = oldest + window_ms, stamp + window_ms - now
  end
  if retry < 1 then retry = 1 end
  return { 0, limit, remaining, reset_at, retry, -1 }
end
local first = now
if count > 0 then
  -- The oldest live stamp: the text before the ':' of its member, the string ZADD below (and
  -- sliding_window_log_commit) writes as its score too, read there so that the server need not
  -- format the score (%.17g) nor Lua parse it back; a member of another shape, written by
  -- something else, is read WITHSCORES. Rank 0 (nothing dead) is sent as text for the same
  -- reason.
  local r = dead
  if dead == 0 then r = '0' end
  local member = redis.call('ZRANGE', key, r, r)[1]
  local at, oldest = string.find(member, ':', 1, true), nil
  if at then oldest = tonumber(string.sub(member, 1, at - 1)) end
  if not oldest then oldest = tonumber(redis.call('ZRANGE', key, r, r, 'WITHSCORES')[2]) end
  if mode == 'peek' then return { 1, limit, limit - count, oldest + window_ms, 0, -1 } end
  if not (now < oldest) then first = oldest end -- math.min(oldest, now)
elseif mode == 'peek' then
  return { 1, limit, limit, now + window_ms, 0, -1 }
end
local ttl = -1
if mode == 'check' then
  -- As sliding_window_log_commit; with no dead entry there is nothing to prune (a call saved).
  if wrongtype then
    redis.call('DEL', key) -- WRONGTYPE: replace the key of another type
  elseif dead ~= 0 then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', bound)
  end
  local stamp = string.format('%d', now)
  local seq, added = count, 0
  while added < cost do
    local n = cost - added
    if 1000 < n then n = 1000 end -- math.min(cost - added, 1000)
    if n == 1 then
      added = added + redis.call('ZADD', key, 'NX', stamp, stamp .. ':' .. string.format('%d', seq))
      seq = seq + 1
    else
      local batch = {}
      for j = 1, 2 * n, 2 do
        batch[j], batch[j + 1] = stamp, stamp .. ':' .. string.format('%d', seq)
        seq = seq + 1
      end
      added = added + redis.call('ZADD', key, 'NX', unpack(batch))
    end
  end
  redis.call('PEXPIRE', key, ARGV[5]) -- window_ms as the crate wrote it: an integer's digits
  ttl = window_ms
end
return { 1, limit, limit - (count + cost), first + window_ms, 0, ttl }
