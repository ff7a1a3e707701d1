-- lib.lua — what every throttlekit script shares (a fragment: `-- #include lib.lua`).
--
-- Not a script on its own. The crate (core/src/redis/scripts.rs) splices this file, and the
-- algorithm fragments a script names, in place of its `-- #include` lines before loading it.
--
-- Conventions every script follows:
--   * `now` arrives as ARGV[1], epoch ms. The string "0" (exactly) means "read the server clock"
--     (TIME); a caller whose own clock really shows 0 sends "0.0".
--   * A decision is the five values allowed (0/1), limit, remaining, resetAt, retryAfterMs; every
--     one is an integer-valued number, so Redis's integer reply loses nothing. A single-key reply
--     is those five plus the TTL written (-1 when nothing was).
--   * Each strategy file defines `<kind>_decide(key, now, cost, ARGV, i)` (options from ARGV[i]
--     on), returning the decision and, when allowed, what `<kind>_commit(key, ...)` writes, so
--     the fused multi.lua can decide every dimension before committing any. Its `-- #main`
--     section, the single-key entry point, is what multi.lua leaves out.
--   * Fractional state is written with %.17g, which round-trips an IEEE-754 double exactly;
--     integral state with %d.
--   * A key of the wrong Redis type (two limiters of different kinds sharing a key) reads as a
--     fresh key and is replaced on write, like the in-memory store's shape check. Reads go
--     through redis.pcall, which answers WRONGTYPE with an error table instead of raising: its
--     missing fields read as absent, and tonumber() of it is nil. A write that can fail on the
--     type (HSET, ZREMRANGEBYSCORE) also goes through redis.pcall and, only when it failed,
--     deletes the key and writes again. No TYPE round on the common path.
--
-- Hot path: these scripts run on every check, so they create no tables but the reply and no
-- closures but their top-level functions, and they return several values instead of tables.

local function read_now(s)
  if s == '0' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return tonumber(s)
end
