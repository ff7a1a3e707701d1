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

-- The limit and the period [start, finish) that contains `now` (options from a[i]: limit,
-- cadence, periodMs, anchor, offsetMinutes, weekStartsOn).
local function quota_period(now, a, i)
  local limit, cadence = tonumber(a[i]), a[i + 1]
  if cadence == 'fixed' then
    local period_ms, anchor = tonumber(a[i + 2]), tonumber(a[i + 3])
    local start = anchor + math.floor((now - anchor) / period_ms) * period_ms
    return limit, start, start + period_ms
  end
  local offset_ms = tonumber(a[i + 4]) * 60000
  local day = math.floor((now + offset_ms) / CALENDAR_DAY_MS)
  local start_day, end_day
  if cadence == 'calendar-day' then
    start_day, end_day = day, day + 1
  elseif cadence == 'calendar-week' then
    start_day = day - (calendar_weekday(day) - tonumber(a[i + 5])) % 7
    end_day = start_day + 7
  else -- calendar-month
    local y, m = calendar_civil_from_days(day)
    local ny, nm = y, m + 1
    if m == 12 then ny, nm = y + 1, 1 end
    start_day, end_day = calendar_days_from_civil(y, m, 1), calendar_days_from_civil(ny, nm, 1)
  end
  return limit, start_day * CALENDAR_DAY_MS - offset_ms, end_day * CALENDAR_DAY_MS - offset_ms
end

-- The decision for `cost` units, as period_counter_decide.
local function quota_decide(key, now, cost, a, i)
  local limit, start, finish = quota_period(now, a, i)
  return period_counter_decide(limit, start, finish, key, now, cost)
end

-- #main
local key, now, mode = KEYS[1], read_now(ARGV[1]), ARGV[2]
if mode == 'peek' then
  local limit, start, finish = quota_period(now, ARGV, 4)
  local allowed, limit, remaining, reset_at, retry = period_counter_peek(limit, start, finish, key, now)
  return { allowed, limit, remaining, reset_at, retry, -1 }
end
local allowed, limit, remaining, reset_at, retry, start, new_count, ttl, count =
  quota_decide(key, now, tonumber(ARGV[3]), ARGV, 4)
if allowed == 1 and mode == 'check' then
  ttl = period_counter_commit(key, start, new_count, ttl, count)
else
  ttl = -1
end
return { allowed, limit, remaining, reset_at, retry, ttl }
