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
-- then, when every dimension is a fixed window and `now` is the caller's: 'count' (the reply
--             below becomes {admitted, then per dimension the count its window held before the
--             call}, from which core's Rust derives each decision and TTL as the memory store
--             does: core/src/redis/call.rs, `WindowCounts`; for three dimensions 135.5k server
--             instructions a call against 148.3k with the decisions kept and replied)
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

-- The kind's decide and commit, by name: an if-chain (interned strings compare by address), so
-- a call builds no dispatch table. decide answers nil for an unknown kind.
local function multi_decide(kind, key, now, cost, a, i)
  if kind == 'fixedWindow' then return fixed_window_decide(key, now, cost, a, i) end
  if kind == 'gcra' then return gcra_decide(key, now, cost, a, i) end
  if kind == 'tokenBucket' then return token_bucket_decide(key, now, cost, a, i) end
  if kind == 'slidingWindow' then return sliding_window_decide(key, now, cost, a, i) end
  if kind == 'slidingWindowLog' then return sliding_window_log_decide(key, now, cost, a, i) end
  if kind == 'quota' then return quota_decide(key, now, cost, a, i) end
  return nil
end

local function multi_commit(kind, key, x6, x7, x8, x9)
  if kind == 'fixedWindow' or kind == 'quota' then return period_counter_commit(key, x6, x7, x8, x9) end
  if kind == 'gcra' then return gcra_commit(key, x6, x7, x8, x9) end
  if kind == 'tokenBucket' then return token_bucket_commit(key, x6, x7, x8, x9) end
  if kind == 'slidingWindow' then return sliding_window_commit(key, x6, x7, x8, x9) end
  return sliding_window_log_commit(key, x6, x7, x8, x9)
end

-- #main
-- Everything above is defined once per FUNCTION LOAD under Redis Functions (the library hoists a
-- script's definitions out of its registered function, core/src/redis/scripts.rs), and per call
-- under EVALSHA. Below runs per call: it builds two tables, the reply and `pending` (per
-- dimension: its kind and what its commit writes), whatever the number of dimensions, and
-- coerces ARGV by arithmetic (see lib.lua, "Standalone mains": exactly tonumber's value).
local now = read_now(ARGV[1])
local all = ARGV[2] == 'all'
local n = ARGV[3] * 1
-- Where the lease section starts, if any: past every dimension's kind, cost, m and m options.
local i = 4
for _ = 1, n do i = i + 3 + ARGV[i + 2] end
local lease = ARGV[i] == 'lease' and i or nil
local counts = ARGV[i] == 'count'
-- Per dimension: allowed, limit, remaining, resetAt, retryAfterMs, ttl (then granted and
-- expiresInMs when leasing), filled in as each dimension decides; reply[1] is the verdict.
-- With the count reply the decisions are not replied: every dimension writes the same six
-- slots (stride 0), so the table never grows, and a dimension's own verdict is its pending
-- start (period_counter_decide's 6th value: a number exactly when it allowed).
local stride = lease and 8 or (counts and 0 or 6)
-- (Sized for one dimension by its constructor: growing an empty table reallocates it.)
local reply = n > 0 and { 0, 0, 0, 0, 0, 0, -1 } or { 0 }
local pending = { false, false, false, false, false }
local admitted = all
i = 4
for k = 1, n do
  local kind, key = ARGV[i], KEYS[k]
  local cost, o = ARGV[i + 1] * 1, i + 3
  i = o + ARGV[i + 2]
  local want = cost
  if lease then
    -- The lease plan (mirrors core/src/lease/grant.rs `plan`): want, else the units still
    -- admissible, else the cost alone.
    want = ARGV[lease + 2 * k - 1] * 1
    if want < cost then want = cost end
  end
  local d1, d2, d3, d4, d5, d6, d7, d8, d9 = multi_decide(kind, key, now, want, ARGV, o)
  if d1 == nil then return redis.error_reply('throttlekit: unknown strategy kind ' .. tostring(kind)) end
  local granted = want
  if lease and d1 ~= 1 and want > cost then
    if d3 > cost and d3 < want then
      granted = d3
      d1, d2, d3, d4, d5, d6, d7, d8, d9 = multi_decide(kind, key, now, granted, ARGV, o)
    end
    if d1 ~= 1 then
      granted = cost
      d1, d2, d3, d4, d5, d6, d7, d8, d9 = multi_decide(kind, key, now, cost, ARGV, o)
    end
  end
  local b = 1 + (k - 1) * stride
  reply[b + 1], reply[b + 2], reply[b + 3], reply[b + 4], reply[b + 5], reply[b + 6] = d1, d2, d3, d4, d5, -1
  if lease then
    -- Until committed: no units, no expiry; granted is kept for the commit below.
    reply[b + 7], reply[b + 8] = granted, 0
  end
  local p = 5 * k - 4
  pending[p], pending[p + 1], pending[p + 2], pending[p + 3], pending[p + 4] = kind, d6, d7, d8, d9
  if all then
    admitted = admitted and d1 == 1
  elseif d1 == 1 then
    admitted = true
  end
end

-- Commit what the rule admits: every dimension under all (each one allowed), the allowing ones
-- under any.
if admitted then
  reply[1] = 1
  for k = 1, n do
    local b, p = 1 + (k - 1) * stride, 5 * k - 4
    if (counts and pending[p + 1]) or (not counts and reply[b + 1] == 1) then
      local ttl = multi_commit(pending[p], KEYS[k], pending[p + 1], pending[p + 2], pending[p + 3], pending[p + 4])
      reply[b + 6] = ttl
      if lease and ttl ~= -1 then
        local expires = ARGV[lease + 2 * k] * 1
        if expires == 0 then expires = reply[b + 4] - now end
        if expires < 0 then expires = 0 end
        reply[b + 8] = expires
      end
    end
  end
end
if counts then
  -- The counts alone (pending holds each dimension's as its 5th value: period_counter_decide's
  -- 9th). Up to four dimensions by one constructor (Redis ends an array reply at its first
  -- nil, pending's end); more grow the table.
  if n <= 4 then return { reply[1], pending[5], pending[10], pending[15], pending[20] } end
  local out = { reply[1] }
  for k = 1, n do out[k + 1] = pending[5 * k] end
  return out
end
if lease then
  -- A dimension that did not commit was granted nothing.
  for k = 1, n do
    local b = 1 + (k - 1) * stride
    if reply[b + 6] == -1 then reply[b + 7] = 0 end
  end
end
return reply
