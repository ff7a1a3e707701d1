-- quota.lua — calendar and fixed quotas (mirrors core/src/algorithms/quota.rs).
--
-- KEYS[1]  the limiter key; state: a hash  s = period start (epoch ms),  c = count
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit
-- ARGV[5]  resetCadence: 'calendar-month' | 'calendar-week' | 'calendar-day' | 'fixed'
-- ARGV[6]  periodMs (fixed; "0" otherwise)     ARGV[7] anchor (fixed; default 0)
-- ARGV[8]  offsetMinutes (±840, default 0)     ARGV[9] weekStartsOn (0 = Sunday … 6, default 1)
-- Reply    {allowed (0/1), limit, remaining, resetAt, retryAfterMs, ttlMs or -1}
--
-- The `rolling` cadence *is* the sliding window: the crate sends it to sliding_window.lua.
-- Calendar cadences work on local = now + offset; boundaries are converted back by subtracting it.
-- #include lib.lua
-- #include period_counter.lua
-- #include calendar.lua

local quota = {}

function quota.options(a, i)
  return {
    limit = tonumber(a[i]),
    cadence = a[i + 1],
    period_ms = tonumber(a[i + 2]),
    anchor = tonumber(a[i + 3]),
    offset_ms = tonumber(a[i + 4]) * 60000,
    week_starts_on = tonumber(a[i + 5]),
  }
end

-- The period [start, finish) that contains `now`.
local function period(o, now)
  if o.cadence == 'fixed' then
    local start = o.anchor + math.floor((now - o.anchor) / o.period_ms) * o.period_ms
    return start, start + o.period_ms
  end
  local day = math.floor((now + o.offset_ms) / calendar.DAY_MS)
  local start_day, end_day
  if o.cadence == 'calendar-day' then
    start_day, end_day = day, day + 1
  elseif o.cadence == 'calendar-week' then
    start_day = day - (calendar.weekday(day) - o.week_starts_on) % 7
    end_day = start_day + 7
  else -- calendar-month
    local y, m = calendar.civil_from_days(day)
    local ny, nm = y, m + 1
    if m == 12 then ny, nm = y + 1, 1 end
    start_day, end_day = calendar.days_from_civil(y, m, 1), calendar.days_from_civil(ny, nm, 1)
  end
  return start_day * calendar.DAY_MS - o.offset_ms, end_day * calendar.DAY_MS - o.offset_ms
end

function quota.decide(key, now, cost, o)
  local start, finish = period(o, now)
  return period_counter.decide(o.limit, start, finish, key, now, cost)
end

function quota.peek(key, now, o)
  local start, finish = period(o, now)
  return period_counter.peek(o.limit, start, finish, key, now)
end

-- #main
return run_single(quota)
