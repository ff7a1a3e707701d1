-- gcra.lua — GCRA, the generic cell rate algorithm (mirrors core/src/algorithms/gcra.rs).
--
-- KEYS[1]  the limiter key; state: a string, the theoretical arrival time (TAT, epoch ms, %.17g)
-- ARGV[1]  now (epoch ms; "0" = the server clock)
-- ARGV[2]  mode: 'check' | 'forecast' | 'peek'
-- ARGV[3]  cost (integer >= 1; ignored by peek)
-- ARGV[4]  limit     ARGV[5] periodMs     ARGV[6] burst
-- Reply    {allowed (0/1), limit (= burst), remaining, resetAt, retryAfterMs, ttlMs written or -1}
--
-- The order of floating-point operations is exactly the Rust file's (shared/SEMANTICS.md):
-- T = periodMs / limit, tau = T * burst, inc = T * cost, newTat = tat + inc, allowAt = newTat - tau.
-- #include lib.lua

local gcra = {}

function gcra.options(a, i)
  local limit, period_ms, burst = tonumber(a[i]), tonumber(a[i + 1]), tonumber(a[i + 2])
  local t = period_ms / limit
  return { burst = burst, t = t, tau = t * burst }
end

function gcra.decide(key, now, cost, o)
  local inc = o.t * cost
  local stored = tonumber(get_string(key)) or now
  local tat = stored
  if not (stored > now) then tat = now end
  local new_tat = tat + inc
  local allow_at = new_tat - o.tau
  if now < allow_at then
    local remaining = math.max(math.floor((o.tau - (tat - now)) / o.t), 0)
    return { 0, o.burst, remaining, math.ceil(tat), math.ceil(allow_at - now) }, nil
  end
  local remaining = math.max(math.floor((o.tau - (new_tat - now)) / o.t), 0)
  local ttl = math.max(math.ceil(new_tat - now), 1)
  return { 1, o.burst, remaining, math.ceil(new_tat), 0 }, function()
    redis.call('SET', key, fmt_float(new_tat), 'PX', ttl)
    return ttl
  end
end

function gcra.peek(key, now, o)
  local stored = tonumber(get_string(key)) or now
  local tat = stored
  if not (stored > now) then tat = now end
  local remaining = math.max(math.floor((o.tau - (tat - now)) / o.t), 0)
  local allowed = remaining >= 1
  local retry = 0
  if not allowed then retry = math.max(math.ceil(tat + o.t - o.tau - now), 1) end
  return { allowed and 1 or 0, o.burst, remaining, math.ceil(tat), retry }
end

-- #main
return run_single(gcra)
