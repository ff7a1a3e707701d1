-- gcra.lua — GCRA, the generic cell rate algorithm (mirrors core/src/algorithms/gcra.rs).
--
-- KEYS[1]  the limiter key; state: a string, the theoretical arrival time (TAT, epoch ms, %.17g)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] periodMs     ARGV[6] burst
-- Reply    {allowed (0/1), limit (= burst), remaining, resetAt, retryAfterMs, ttlMs written or -1}
--
-- The order of floating-point operations is exactly the Rust file's (docs/semantics.md):
-- T = periodMs / limit, tau = T * burst, inc = T * cost, newTat = tat + inc, allowAt = newTat - tau.
-- #include lib.lua

-- The decision for `cost` units (options from a[i]: limit, periodMs, burst); when allowed, then
-- also what gcra_commit writes: newTat and its TTL.
local function gcra_decide(key, now, cost, a, i)
  local burst = a[i + 2] * 1
  local t = a[i + 1] / a[i]
  local tau = t * burst
  local inc = t * cost
  -- SET replaces a key of any type, so a value of another type only has to read as absent.
  local stored = tonumber(redis.pcall('GET', key)) or now
  local tat = stored
  if not (stored > now) then tat = now end
  local new_tat = tat + inc
  local allow_at = new_tat - tau
  if now < allow_at then
    return 0, burst, math.max(math.floor((tau - (tat - now)) / t), 0), math.ceil(tat), math.ceil(allow_at - now)
  end
  return 1, burst, math.max(math.floor((tau - (new_tat - now)) / t), 0), math.ceil(new_tat), 0,
    new_tat, math.max(math.ceil(new_tat - now), 1)
end

local function gcra_commit(key, new_tat, ttl)
  redis.call('SET', key, string.format('%.17g', new_tat), 'PX', ttl)
  return ttl
end

-- #main standalone
-- The single-key entry point, straight-line on purpose: the single-key script is this header and
-- this section only (see lib.lua, "Standalone mains"), the same arithmetic as gcra_decide and
-- gcra_commit above, which the fused multi.lua runs.
local key, now, mode = KEYS[1], ARGV[1], ARGV[2]
if now == '0' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = now * 1
end
local burst = ARGV[6] * 1
local t = ARGV[5] / ARGV[4]
local tau = t * burst
local tat = tonumber(redis.pcall('GET', key)) or now
if not (tat > now) then tat = now end
if mode == 'peek' then
  local remaining = math.floor((tau - (tat - now)) / t)
  if remaining < 0 then remaining = 0 end
  local allowed, retry = 1, 0
  if not (remaining >= 1) then
    allowed, retry = 0, math.ceil(tat + t - tau - now)
    if retry < 1 then retry = 1 end
  end
  return { allowed, burst, remaining, math.ceil(tat), retry, -1 }
end
local new_tat = tat + t * ARGV[3]
local allow_at = new_tat - tau
if now < allow_at then
  local remaining = math.floor((tau - (tat - now)) / t)
  if remaining < 0 then remaining = 0 end
  return { 0, burst, remaining, math.ceil(tat), math.ceil(allow_at - now), -1 }
end
local remaining = math.floor((tau - (new_tat - now)) / t)
if remaining < 0 then remaining = 0 end
local ttl = -1
if mode == 'check' then
  ttl = math.ceil(new_tat - now)
  if ttl < 1 then ttl = 1 end
  redis.call('SET', key, string.format('%.17g', new_tat), 'PX', ttl)
end
return { 1, burst, remaining, math.ceil(new_tat), 0, ttl }
