-- fixed_window.lua — fixed window (mirrors core/src/algorithms/fixed_window.rs).
--
-- KEYS[1]  the limiter key; state: a hash  s = window start (epoch ms),  c = count
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] windowMs
-- Reply    {allowed (0/1), limit, remaining, resetAt, retryAfterMs, ttlMs or -1}
--
-- Windows are epoch-aligned: [k*W, (k+1)*W). floor(now / W) is exact for |now| < 2^53.
-- #include lib.lua
-- #include period_counter.lua

-- The decision for `cost` units (options from a[i]: limit, windowMs), as period_counter_decide.
local function fixed_window_decide(key, now, cost, a, i)
  local window_ms = tonumber(a[i + 1])
  local start = math.floor(now / window_ms) * window_ms
  return period_counter_decide(tonumber(a[i]), start, start + window_ms, key, now, cost)
end

-- #main
local key, now, mode = KEYS[1], read_now(ARGV[1]), ARGV[2]
if mode == 'peek' then
  local window_ms = tonumber(ARGV[5])
  local start = math.floor(now / window_ms) * window_ms
  local allowed, limit, remaining, reset_at, retry = period_counter_peek(tonumber(ARGV[4]), start, start + window_ms, key, now)
  return { allowed, limit, remaining, reset_at, retry, -1 }
end
local allowed, limit, remaining, reset_at, retry, start, new_count, ttl = fixed_window_decide(key, now, tonumber(ARGV[3]), ARGV, 4)
if allowed == 1 and mode == 'check' then
  ttl = period_counter_commit(key, start, new_count, ttl)
else
  ttl = -1
end
return { allowed, limit, remaining, reset_at, retry, ttl }
