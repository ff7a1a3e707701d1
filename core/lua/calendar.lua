-- calendar.lua — proleptic-Gregorian civil dates from day numbers and back (a fragment, mirrors
-- core/src/algorithms/calendar.rs; Howard Hinnant's algorithms). Integer-only: every division
-- below is floor division of whole numbers well inside 2^53, so it is exact in Lua's doubles.
-- Day 0 is 1970-01-01, a Thursday.

local CALENDAR_DAY_MS = 86400000

-- Days since 1970-01-01 of the civil date y-m-d.
local function calendar_days_from_civil(y, m, d)
  local floor = math.floor
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The civil date (y, m, d) of day number z.
local function calendar_civil_from_days(z)
  local floor = math.floor
  z = z + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m
  if mp < 10 then m = mp + 3 else m = mp - 9 end
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- Day of the week of day number z: 0 = Sunday ... 6 = Saturday.
local function calendar_weekday(z)
  return (z + 4) % 7
end
