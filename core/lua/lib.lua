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
-- Under Redis Functions, everything before a script's `-- #main` line (the spliced functions
-- and tables) runs once per FUNCTION LOAD, outside the registered function (scripts.rs,
-- LIBRARY): it must read no KEYS or ARGV, and may only define functions and tables, since
-- Redis 7.0 hides the libraries at load time (`local floor = math.floor` there fails the load:
-- "nonexistent global variable 'math'").
--
-- Standalone mains (gcra, token_bucket, fixed_window, sliding_window, sliding_window_log): Redis
-- runs a script's whole body on every EVALSHA, so each `local function` in it is a closure built
-- per call. A file whose main section opens with `-- #main standalone` has a straight-line main
-- that calls none of the file's functions; its single-key script is its header and that section
-- only (the functions stay for multi.lua). Such a main repeats its functions' arithmetic
-- operation for operation, so the two paths decide alike (core/tests/redis_dual_path.rs checks
-- both against the in-memory store). In it, for speed, and each exactly equal to what it replaces:
--   * numeric ARGV are coerced by arithmetic (`ARGV[5] / ARGV[4]`, `ARGV[4] * 1`) instead of
--     tonumber(): both convert with the same luaO_str2d, and x * 1 == x for every double
--     (-0, inf and NaN included); tonumber() of a string parses it twice. A value compared or
--     returned is made a number with `* 1`. (Only for ARGV, which the crate writes: stored
--     values still go through tonumber(), which answers nil for garbage.) read_now, multi.lua
--     and the strategies' decide helpers do the same with the options they read.
--   * math.max(x, k) is `if x < k then x = k end` and math.min(a, b) is
--     `if not (b < a) then ... end` written to match Lua 5.1's loop (the first argument wins a
--     tie or a NaN comparison), so even a NaN or -0 comes out the same.

local function read_now(s)
  if s == '0' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return s * 1
end
