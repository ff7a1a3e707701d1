-- lib.lua — helpers shared by every throttlekit script (a fragment: `-- #include lib.lua`).
--
-- Not a script on its own. The crate (core/src/redis/scripts.rs) splices this file, and the
-- algorithm fragments a script names, in place of its `-- #include` lines before loading it.
--
-- Conventions every script follows:
--   * `now` arrives as ARGV[1], epoch ms. The string "0" (exactly) means "read the server clock"
--     (TIME); a caller whose own clock really shows 0 sends "0.0".
--   * A decision is the table {allowed (0/1), limit, remaining, resetAt, retryAfterMs}; every
--     field is an integer-valued number, so Redis's integer reply loses nothing.
--   * Fractional state is written with %.17g, which round-trips an IEEE-754 double exactly.
--   * A key of the wrong Redis type (two limiters of different kinds sharing a key) reads as a
--     fresh key and is replaced on write, like the in-memory store's shape check.

local function read_now(s)
  if s == '0' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return tonumber(s)
end

local function fmt_float(v)
  return string.format('%.17g', v)
end

local function fmt_int(v)
  return string.format('%d', v)
end

-- A string value, or nil when absent or of another type.
local function get_string(key)
  local ok, v = pcall(redis.call, 'GET', key)
  if ok and v then return v end
  return nil
end

-- Hash fields (a list of values, false for absent ones), or nil when the key is of another type.
local function get_fields(key, ...)
  local ok, v = pcall(redis.call, 'HMGET', key, ...)
  if ok then return v end
  return nil
end

-- Makes sure `key` can be written as `kind` ('hash', 'zset'): a key of another type is deleted.
local function claim(key, kind)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= kind then redis.call('DEL', key) end
end

-- The single-key entry point: ARGV = now, mode, cost, options...
-- mode is 'check' (decide and consume when allowed), 'forecast' (decide, consume nothing) or
-- 'peek' (current capacity). Reply: the decision plus the TTL written (-1 when nothing was).
local function run_single(algo)
  local key = KEYS[1]
  local now = read_now(ARGV[1])
  local mode = ARGV[2]
  local cost = tonumber(ARGV[3])
  local o = algo.options(ARGV, 4)
  if mode == 'peek' then
    local d = algo.peek(key, now, o)
    d[6] = -1
    return d
  end
  local d, commit = algo.decide(key, now, cost, o)
  local ttl = -1
  if mode == 'check' and d[1] == 1 then ttl = commit() end
  d[6] = ttl
  return d
end
