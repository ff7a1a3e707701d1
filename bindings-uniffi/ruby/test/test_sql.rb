# frozen_string_literal: true

# The SQL stores from Ruby: Throttlekit::PostgresStore against the Postgres 15 test.sh starts
# (its URL is ARGV[0]; test.sh always passes one) and Throttlekit::SqliteStore on temp files.
# The vectors replay on both through tk-conformance (test.sh); these cover limiters of every
# kind, exactly K from several threads, and bad input as coded errors.
#
#   ruby test/test_sql.rb POSTGRES_URL

require "fileutils"
require "securerandom"
require "socket"
require "tmpdir"
require_relative "helper"

PG_URL = ARGV[0] or abort "usage: ruby test_sql.rb POSTGRES_URL (bindings-uniffi/test.sh starts one)"
DIR = Dir.mktmpdir("tk-ruby-sql")
at_exit { FileUtils.rm_rf(DIR) }

def fresh = "tk-ruby-sql:#{Process.pid}:#{SecureRandom.hex(4)}"

def limiter(store, strategy, **options)
  TK::Limiter.new(strategy, TK::LimiterOptions.new(store: store, prefix: fresh, **options))
end

# A clock standing still at the present, for checks that count a window or space a queue: on the
# system clock a minute boundary between two checks would start the count over, and a loaded
# machine's pause between two reservations would drain the queue. Both stores judge expiry by the
# caller's now.
def still = TK::ManualClock.new((Time.now.to_r * 1000).to_i)

# Every kind of limiter decides on `store`: a limiter (blocking and async), a multi limiter that
# charges all or nothing, a shaper that queues.
def every_kind_decides_on(store)
  clock = still
  l = limiter(store, TK::Strategy.fixed_window(3, 60_000), clock: clock)
  assert l.check_blocking("k").allowed && l.check("k").allowed && l.check_blocking("k").allowed
  d = l.check_blocking("k")
  assert !d.allowed && d.retry_after_ms.positive?, d.inspect
  l.reset_blocking("k")
  assert l.check_blocking("k").remaining == 2
  dims = [TK::Dimension.new(name: "a", strategy: TK::Strategy.fixed_window(2, 60_000)),
          TK::Dimension.new(name: "b", strategy: TK::Strategy.fixed_window(3, 60_000))]
  m = TK::MultiLimiter.new(TK::Rule::ALL, dims, TK::MultiLimiterOptions.new(store: store, clock: clock, prefix: fresh))
  2.times { assert m.check_blocking(%w[x y]).decision.allowed }
  assert !m.check_blocking(%w[x y]).decision.allowed # a is full
  assert m.check_blocking(%w[other y]).decision.allowed # the denial charged b nothing
  assert !m.check_blocking(%w[third y]).decision.allowed
  sh = TK::Shaper.new(10.0, 250.0, TK::ShaperOptions.new(store: store, clock: clock, prefix: fresh))
  first = sh.reserve_blocking("q")
  second = sh.reserve_blocking("q")
  assert first.accepted && first.delay_ms.zero? && second.accepted && second.delay_ms.positive?, [first, second].inspect
end

# How many of `threads` x `each` checks on one key of `l` were admitted.
def admitted(l, key, threads, each)
  q = Queue.new
  threads.times.map { Thread.new { each.times { q << 1 if l.check_blocking(key).allowed } } }.each(&:join)
  q.size
end

test "Postgres: docs/postgres.md's Ruby example decides (scripts/check-readme.py checks the page shows it)" do
  url = PG_URL
  store = Throttlekit::PostgresStore.new(url, pool_size: 4, timeout_ms: 500)
  limiter = Throttlekit::Limiter.new(Throttlekit::Strategy.gcra(100, 60_000.0, nil),
                                     Throttlekit::LimiterOptions.new(store: Throttlekit::Store::POSTGRES.new(store: store)))
  decision = limiter.check_blocking("user:1") # or the async limiter.check("user:1")
  Throttlekit::PostgresStore.migrate(url, table: "limits") # the deploy step for migrate: false
  assert decision.allowed && decision.remaining == 99, decision.inspect
  TK::PostgresStore.new(url, table: "limits", migrate: false).disconnect_blocking
  store.disconnect_blocking
end

pg = TK::PostgresStore.new(PG_URL, pool_size: 2, timeout_ms: 3000, sweep_interval_ms: 0)
PG = TK::Store::POSTGRES.new(store: pg)

test "Postgres: a limiter, a multi limiter and a shaper decide on it" do
  assert pg.table == "throttlekit"
  every_kind_decides_on(PG)
end

test "Postgres: 6 threads on a new key admit exactly K" do
  l = limiter(PG, TK::Strategy.fixed_window(60, 3_600_000), clock: still)
  got = admitted(l, "hot", 6, 20)
  assert got == 60, "admitted #{got}"
end

test "Postgres: the store carries its limiters' defaults; closed, the fail policy decides" do
  s = TK::PostgresStore.new(PG_URL, pool_size: 1, server_clock: true, fail_policy: TK::FailPolicy::FAIL_OPEN, sweep_interval_ms: 0)
  store = TK::Store::POSTGRES.new(store: s)
  l = limiter(store, TK::Strategy.gcra(1, 1000.0, nil))
  strict = limiter(store, TK::Strategy.gcra(1, 1000.0, nil), fail_policy: TK::FailPolicy::RAISE)
  assert l.check_blocking("k").allowed && !l.check_blocking("k").allowed
  s.disconnect_blocking
  d = l.check_blocking("k")
  assert d.allowed && d.fallback, d.inspect
  expect_code("store_unavailable") { strict.check_blocking("k") }
end

test "Postgres: a bad URL is config_invalid naming postgres.url" do
  e = expect_code("config_invalid") { TK::PostgresStore.new("postgres://[nope") }
  assert e.to_s.include?("postgres.url"), e.to_s
end

test "Postgres: a wrong password is store_unavailable naming the authentication" do
  bad = PG_URL.sub("throttlekit:throttlekit@", "throttlekit:wrong@")
  assert bad != PG_URL
  e = expect_code("store_unavailable") { TK::PostgresStore.new(bad, pool_size: 1) }
  assert e.to_s.downcase.include?("auth"), e.to_s
end

test "Postgres: an unreachable server is store_unavailable within the timeouts" do
  port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  expect_code("store_unavailable") do
    TK::PostgresStore.new("postgres://u:p@127.0.0.1:#{port}/db", pool_size: 1, connect_timeout_ms: 500, timeout_ms: 500)
  end
  assert Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < 5
end

test "Postgres: a missing table with migrate off is config_invalid until migrated" do
  table = "tk_ruby_#{SecureRandom.hex(6)}"
  e = expect_code("config_invalid") { TK::PostgresStore.new(PG_URL, table: table, migrate: false, pool_size: 1) }
  assert e.to_s.include?(table), e.to_s
  TK::PostgresStore.migrate(PG_URL, table: table)
  s = TK::PostgresStore.new(PG_URL, table: table, migrate: false, pool_size: 1, sweep_interval_ms: 0)
  l = limiter(TK::Store::POSTGRES.new(store: s), TK::Strategy.fixed_window(1, 60_000), clock: still)
  assert l.check_blocking("k").allowed && !l.check_blocking("k").allowed
  s.disconnect_blocking
end

test "Postgres: a table of another shape is config_invalid, migrate on or off" do
  table = "tk_ruby_shape_#{SecureRandom.hex(6)}"
  out = IO.popen(["psql", "-q", "-v", "ON_ERROR_STOP=1", PG_URL, "-c", "CREATE TABLE #{table} (key text PRIMARY KEY, hits int)"],
                 err: %i[child out], &:read)
  raise "psql: #{out}" unless $?.success?

  [true, false].each do |migrate|
    e = expect_code("config_invalid") { TK::PostgresStore.new(PG_URL, table: table, migrate: migrate, pool_size: 1) }
    assert e.to_s.include?(table), e.to_s
  end
end

test "Postgres: bad options are config_invalid; an unknown keyword is an ArgumentError" do
  u = "postgres://u:p@127.0.0.1:1/db"
  expect_code("config_invalid") { TK::PostgresStore.new(u, table: "Bad-Name") }
  expect_code("config_invalid") { TK::PostgresStore.new(u, pool_size: 0) }
  expect_code("config_invalid") { TK::PostgresStore.new(u, timeout_ms: -1) }
  expect_code("config_invalid") { TK::PostgresStore.new(u, timeout_ms: 1.5) }
  begin
    TK::PostgresStore.new(u, nope: 1)
    raise "an unknown keyword was accepted"
  rescue ArgumentError => e
    assert e.message.include?("nope"), e.message
  end
end

test "SQLite: a limiter, a multi limiter and a shaper decide on it" do
  s = TK::SqliteStore.new(File.join(DIR, "a.db"))
  assert s.table == "throttlekit"
  every_kind_decides_on(TK::Store::SQLITE.new(store: s))
end

test "SQLite: docs/sqlite.md's Ruby example decides, and the state is the file's (scripts/check-readme.py checks the page)" do
  2.times do |i|
    path = File.join(DIR, "limits.db")
    store = Throttlekit::SqliteStore.new(path, busy_timeout_ms: 2000) # created if missing
    limiter = Throttlekit::Limiter.new(Throttlekit::Strategy.gcra(100, 3_600_000.0, nil),
                                       Throttlekit::LimiterOptions.new(store: Throttlekit::Store::SQLITE.new(store: store)))
    decision = limiter.check_blocking("user:42")
    assert decision.remaining == 99 - i, decision.inspect
  end
end

test "SQLite: threads on two stores of one file admit exactly K" do
  path = File.join(DIR, "shared.db")
  strategy = TK::Strategy.fixed_window(50, 3_600_000)
  clock = still
  a = TK::Limiter.new(strategy, TK::LimiterOptions.new(store: TK::Store::SQLITE.new(store: TK::SqliteStore.new(path)), clock: clock))
  b = TK::Limiter.new(strategy, TK::LimiterOptions.new(store: TK::Store::SQLITE.new(store: TK::SqliteStore.new(path)), clock: clock))
  got = [a, b].map { |l| Thread.new { admitted(l, "hot", 3, 20) } }.sum(&:value)
  assert got == 50, "admitted #{got}"
end

test "SQLite: a missing table with migrate off, a table of another shape, a file that is no database: config_invalid" do
  e = expect_code("config_invalid") { TK::SqliteStore.new(File.join(DIR, "empty.db"), table: "limits", migrate: false) }
  assert e.to_s.include?("limits"), e.to_s
  shape = File.join(DIR, "shape.db")
  ok = system("python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); " \
                               "c.execute('CREATE TABLE throttlekit (key TEXT PRIMARY KEY, hits INTEGER)'); c.commit()", shape)
  raise "could not create #{shape}" unless ok

  e = expect_code("config_invalid") { TK::SqliteStore.new(shape) }
  assert e.to_s.include?("throttlekit"), e.to_s
  junk = File.join(DIR, "junk.db")
  File.write(junk, "this is not a database, just text long enough to fill a header page" * 20)
  expect_code("config_invalid") { TK::SqliteStore.new(junk) }
  expect_code("config_invalid") { TK::SqliteStore.new(File.join(DIR, "no/such/dir/x.db")) }
end

test "SQLite: bad options are config_invalid; closed, the fail policy decides" do
  f = File.join(DIR, "opts.db")
  expect_code("config_invalid") { TK::SqliteStore.new(f, table: "bad name") }
  expect_code("config_invalid") { TK::SqliteStore.new(f, max_key_length: 0) }
  expect_code("config_invalid") { TK::SqliteStore.new(f, busy_timeout_ms: -1) }
  expect_code("config_invalid") { TK::SqliteStore.new(f, synchronous: "sometimes") }
  s = TK::SqliteStore.new(File.join(DIR, "closed.db"), fail_policy: TK::FailPolicy::FAIL_CLOSED)
  l = limiter(TK::Store::SQLITE.new(store: s), TK::Strategy.gcra(5, 1000.0, nil))
  assert l.check_blocking("k").allowed
  s.disconnect_blocking
  d = l.check_blocking("k")
  assert !d.allowed && d.fallback, d.inspect
end

pg.disconnect_blocking
finish("sql")
