-- lease.lua — the leased mode's grant and give-back (mirrors core/src/lease/grant.rs).
--
-- A lease is a check of several units: the request that asked for it (`cost`) plus up to
-- `want - cost` extra credits, taken from the strategy's own state in one atomic step, so every
-- credit a node holds is already counted here. What is granted is the largest of `want`, then
-- the units still admissible (never fewer than `cost`), then `cost` alone: a partial grant
-- rather than a denial while the strategy can still admit the request itself.
--
-- KEYS[1]  the limiter key (the strategy's own state and layout)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'lease' | 'return'
-- ARGV[3]  lease: cost, the asking request's units       return: the unspent units given back
-- ARGV[4]  lease: want >= cost                           return: the grant's resetAt
-- ARGV[5]  lease: lifetime of the credits in ms, or 0 for credits coupled to the period (they
--          expire at the period's reset: fixed window and fixed/calendar quota only)
-- ARGV[6]  kind ('gcra', 'tokenBucket', 'fixedWindow', 'slidingWindow', 'slidingWindowLog',
--          'quota'), then from ARGV[7] the kind's options exactly as its own script takes them
-- Reply    {granted units (0 = denied), limit, resetAt, retryAfterMs, expiresInMs, ttl or -1}
--          expiresInMs is on this server's clock, relative to the `now` the script ran at: the
--          caller adds it to the time it *sent* the call, so its credits expire no later than
--          here. A give-back replies {units given back, 0, 0, 0, 0, ttl or -1}.
-- #include lib.lua
-- #include gcra.lua
-- #include token_bucket.lua
-- #include period_counter.lua
-- #include fixed_window.lua
-- #include sliding_window.lua
-- #include sliding_window_log.lua
-- #include calendar.lua
-- #include quota.lua

-- Per kind: its decide and commit functions (before the main, so a function library builds
-- this table once per load, not per call).
local kinds = {
  gcra = { gcra_decide, gcra_commit },
  tokenBucket = { token_bucket_decide, token_bucket_commit },
  fixedWindow = { fixed_window_decide, period_counter_commit },
  slidingWindow = { sliding_window_decide, sliding_window_commit },
  slidingWindowLog = { sliding_window_log_decide, sliding_window_log_commit },
  quota = { quota_decide, period_counter_commit },
}

-- #main
local key = KEYS[1]
local now = read_now(ARGV[1])
local mode, units, arg4, lifetime, name = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local kind = kinds[name]
if not kind then return redis.error_reply('throttlekit: unknown strategy kind ' .. tostring(name)) end
local i = 7

if mode == 'return' then
  -- Gives back only what the strategy can take back exactly as the credits were taken: a
  -- period counter of the same period, a GCRA TAT, a token bucket. The sliding kinds age out.
  local back, ttl = 0, -1
  if name == 'gcra' then
    local t = tonumber(ARGV[i + 1]) / tonumber(ARGV[i])
    local tat = tonumber(redis.pcall('GET', key))
    if tat and tat > now then
      local new_tat = tat - units * t
      if new_tat < now then new_tat = now end
      back = units
      ttl = gcra_commit(key, new_tat, math.max(math.ceil(new_tat - now), 1))
    end
  elseif name == 'tokenBucket' then
    local capacity = tonumber(ARGV[i])
    local refill_per_ms = tonumber(ARGV[i + 1]) / 1000
    local tokens = token_bucket_tokens(key, now, capacity, refill_per_ms) + units
    if tokens > capacity then tokens = capacity end
    back = units
    ttl = token_bucket_commit(key, tokens, now, math.max(math.ceil(capacity / refill_per_ms), 1))
  elseif name == 'fixedWindow' or name == 'quota' then
    local start, finish
    if name == 'quota' then
      local _
      _, start, finish = quota_period(now, ARGV, i)
    else
      local window_ms = tonumber(ARGV[i + 1])
      start = math.floor(now / window_ms) * window_ms
      finish = start + window_ms
    end
    local f = redis.pcall('HMGET', key, 's', 'c')
    if finish == arg4 and f[1] and f[2] and tonumber(f[1]) == start and tonumber(f[2]) > 0 then
      local had = tonumber(f[2])
      local count = had - units
      if count < 0 then count = 0 end
      back = units
      ttl = period_counter_commit(key, start, count, math.max(finish - now, 1), had)
    end
  end
  return { back, 0, 0, 0, 0, ttl }
end

local cost, want = units, arg4
local granted = want
local d = { kind[1](key, now, want, ARGV, i) }
if d[1] ~= 1 and want > cost then
  local avail = d[3]
  if avail > cost and avail < want then
    granted = avail
    d = { kind[1](key, now, avail, ARGV, i) }
  end
  if d[1] ~= 1 then
    granted = cost
    d = { kind[1](key, now, cost, ARGV, i) }
  end
end
if d[1] ~= 1 then return { 0, d[2], d[4], d[5], 0, -1 } end
local ttl = kind[2](key, d[6], d[7], d[8], d[9])
local expires = lifetime
if lifetime == 0 then expires = d[4] - now end
if expires < 0 then expires = 0 end
return { granted, d[2], d[4], 0, expires, ttl }
