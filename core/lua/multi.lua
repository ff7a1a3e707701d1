-- multi.lua — the fused all/any check (mirrors core/src/store/memory.rs apply_multi_sync and
-- core/src/multi.rs commit_set): evaluate every dimension at one `now`, then commit only what
-- the rule admits, in one atomic script. Keep every key in one hash slot (`prefix:{tag}:...`)
-- so the script also runs on Redis Cluster.
--
-- KEYS[1..n]  one key per dimension, in declaration order
-- ARGV[1]     now (epoch ms; "0" = the server clock)
-- ARGV[2]     rule: 'all' | 'any'
-- ARGV[3]     n, the number of dimensions
-- then, per dimension: kind, cost, m (the number of options), then the m options exactly as
--             the kind's own script takes them from its ARGV[4] on. kind is one of 'gcra',
--             'tokenBucket', 'fixedWindow', 'slidingWindow', 'slidingWindowLog', 'quota'
--             (a rolling quota is sent as 'slidingWindow').
-- then, for a multi-dimensional lease only (the leased mode, core/src/lease/multi.rs):
--             'lease', then per dimension: want (>= its cost), lifetime ms (0 = until the
--             period's reset). Each dimension is planned as lease.lua grants (the largest of
--             want, the units still admissible, its cost) and commits those units.
-- Reply       {admitted (0/1), then per dimension: allowed, limit, remaining, resetAt,
--             retryAfterMs, ttlMs written or -1} — each dimension's decision as a check sees it;
--             a lease appends per dimension: granted units (0 when it did not commit),
--             expiresInMs (on this server's clock, from the `now` the script ran at).
--
-- all: admitted iff every dimension allows; then every dimension commits, else none does.
-- any: admitted iff one allows; only the allowing dimensions commit.
-- #include lib.lua
-- #include gcra.lua
-- #include token_bucket.lua
-- #include period_counter.lua
-- #include fixed_window.lua
-- #include sliding_window.lua
-- #include sliding_window_log.lua
-- #include calendar.lua
-- #include quota.lua

-- #main
-- Per kind: the decide function (key, now, cost, ARGV, i) and the commit function it feeds.
local kinds = {
  gcra = { gcra_decide, gcra_commit },
  tokenBucket = { token_bucket_decide, token_bucket_commit },
  fixedWindow = { fixed_window_decide, period_counter_commit },
  slidingWindow = { sliding_window_decide, sliding_window_commit },
  slidingWindowLog = { sliding_window_log_decide, sliding_window_log_commit },
  quota = { quota_decide, period_counter_commit },
}

local now = read_now(ARGV[1])
local rule = ARGV[2]
local n = tonumber(ARGV[3])
-- decisions[k] = { allowed, limit, remaining, resetAt, retryAfterMs, what the commit writes... }
local decisions, commits, costs, opts = {}, {}, {}, {}
local i = 4
for k = 1, n do
  local kind = kinds[ARGV[i]]
  if not kind then return redis.error_reply('throttlekit: unknown strategy kind ' .. tostring(ARGV[i])) end
  local cost, m = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  costs[k], opts[k] = cost, i + 3
  commits[k] = kind[2]
  i = i + 3 + m
end
-- The lease section, if any (mirrors core/src/lease/grant.rs `plan`).
local leasing = ARGV[i] == 'lease'
local granted, lifetimes = {}, {}
for k = 1, n do
  local decide, cost = kinds[ARGV[opts[k] - 3]][1], costs[k]
  if leasing then
    local want = tonumber(ARGV[i + 2 * k - 1])
    lifetimes[k] = tonumber(ARGV[i + 2 * k])
    if want < cost then want = cost end
    granted[k] = want
    local d = { decide(KEYS[k], now, want, ARGV, opts[k]) }
    if d[1] ~= 1 and want > cost then
      local avail = d[3]
      if avail > cost and avail < want then
        granted[k] = avail
        d = { decide(KEYS[k], now, avail, ARGV, opts[k]) }
      end
      if d[1] ~= 1 then
        granted[k] = cost
        d = { decide(KEYS[k], now, cost, ARGV, opts[k]) }
      end
    end
    if d[1] ~= 1 then granted[k] = 0 end
    decisions[k] = d
  else
    decisions[k] = { decide(KEYS[k], now, cost, ARGV, opts[k]) }
  end
end

local admitted = rule == 'all'
for k = 1, n do
  if rule == 'all' then
    admitted = admitted and decisions[k][1] == 1
  elseif decisions[k][1] == 1 then
    admitted = true
  end
end

local reply = { admitted and 1 or 0 }
for k = 1, n do
  local d = decisions[k]
  local ttl = -1
  if admitted and d[1] == 1 then ttl = commits[k](KEYS[k], d[6], d[7], d[8], d[9]) end
  for j = 1, 5 do reply[#reply + 1] = d[j] end
  reply[#reply + 1] = ttl
  if leasing then
    local expires = 0
    if ttl == -1 then
      reply[#reply + 1] = 0
    else
      reply[#reply + 1] = granted[k]
      expires = lifetimes[k]
      if expires == 0 then expires = d[4] - now end
      if expires < 0 then expires = 0 end
    end
    reply[#reply + 1] = expires
  end
end
return reply
