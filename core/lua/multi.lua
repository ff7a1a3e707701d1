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
-- Reply       {admitted (0/1), then per dimension: allowed, limit, remaining, resetAt,
--             retryAfterMs, ttlMs written or -1} — each dimension's decision as a check sees it.
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
local decisions, commits = {}, {}
local i = 4
for k = 1, n do
  local kind = kinds[ARGV[i]]
  if not kind then return redis.error_reply('throttlekit: unknown strategy kind ' .. tostring(ARGV[i])) end
  local cost, m = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  decisions[k] = { kind[1](KEYS[k], now, cost, ARGV, i + 3) }
  commits[k] = kind[2]
  i = i + 3 + m
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
end
return reply
