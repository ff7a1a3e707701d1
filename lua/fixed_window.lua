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

local fixed_window = {}

function fixed_window.options(a, i)
  return { limit = tonumber(a[i]), window_ms = tonumber(a[i + 1]) }
end

local function period(o, now)
  local start = math.floor(now / o.window_ms) * o.window_ms
  return start, start + o.window_ms
end

function fixed_window.decide(key, now, cost, o)
  local start, finish = period(o, now)
  return period_counter.decide(o.limit, start, finish, key, now, cost)
end

function fixed_window.peek(key, now, o)
  local start, finish = period(o, now)
  return period_counter.peek(o.limit, start, finish, key, now)
end

-- #main
return run_single(fixed_window)
