# frozen_string_literal: true

# The Ruby binding's tests, as a plain script (no test framework needed): each check prints on
# failure, and the run ends with `N passed, M failed`. With a Redis URL as the first argument,
# the Redis tests run too.
#
#   ruby bindings-uniffi/ruby/test/test_throttlekit.rb [REDIS_URL]

require "socket"
require_relative "helper"

def memory_options
  TK::LimiterOptions.new(store: TK::Store::MEMORY.new(store: TK::MemoryStore.new(nil)), clock: TK::ManualClock.new(0))
end

test "strategy options out of their domain are config_invalid" do
  expect_code("config_invalid") { TK::Strategy.gcra(0, 1000.0, nil) }
  expect_code("config_invalid") { TK::Strategy.gcra(10, Float::NAN, nil) }
  expect_code("config_invalid") { TK::Strategy.token_bucket(5, 0.0) }
  expect_code("config_invalid") { TK::Strategy.fixed_window(10, 0) }
  expect_code("config_invalid") { TK::Strategy.quota(10, "fortnightly", nil, nil, nil, nil, nil) }
  expect_code("config_invalid") { TK::Strategy.from_json("{") }
  expect_code("config_invalid") { TK::Strategy.from_json('{"kind":"gcra","options":{"limit":1,"periodMs":1,"x":1}}') }
  # Integers must be Integers: uniffi's converter would truncate 2.5 to 2.
  expect_code("config_invalid") { TK::Strategy.fixed_window(2.5, 1000) }
  expect_code("config_invalid") { TK::Strategy.fixed_window(2**70, 1000) }
end

test "bad costs are config_invalid (never truncated), and change nothing" do
  l = TK::Limiter.new(TK::Strategy.fixed_window(2, 1000), memory_options)
  [0, -1, 2**53 + 1, 1.5, 1.0, "1", nil].each do |bad|
    expect_code("config_invalid") { l.check_blocking("k", bad) }
  end
  expect_code("config_invalid") { l.check("k", 0) }
  [1.5, 0.0, -1.0, Float::NAN].each { |bad| expect_code("config_invalid") { TK.cost_from_double(bad) } }
  assert l.peek_blocking("k").remaining == 2, "a refused cost consumed"
end

test "other bad arguments are config_invalid or a TypeError, never a crash" do
  expect_code("config_invalid") { TK::MemoryStore.new(0) }
  expect_code("config_invalid") { TK::ManualClock.new(0).advance(-1) }
  expect_code("config_invalid") { TK::Shaper.new(0.0, 100.0, TK::ShaperOptions.new) }
  expect_code("config_invalid") { TK::MultiLimiter.new(TK::Rule::ALL, [], TK::MultiLimiterOptions.new) }
  begin
    TK::Limiter.new(nil, TK::LimiterOptions.new)
    raise "a nil strategy was accepted"
  rescue TypeError
    nil
  end
  begin
    TK::Limiter.new(TK::Strategy.fixed_window(1, 1000), TK::LimiterOptions.new).check_blocking(42, 1)
    raise "an Integer key was accepted"
  rescue TypeError
    nil
  end
end

test "every error case is a ThrottleKitError with its stable code" do
  assert TK.error_codes == %w[config_invalid store_unavailable rate_limit_exceeded queue_full not_implemented]
  e = expect_code("config_invalid") { TK::Strategy.gcra(0, 1.0, nil) }
  assert e.is_a?(TK::ThrottleKitError::ConfigInvalid) && e.is_a?(StandardError)
  assert e.detail.include?("limit"), e.detail
end

test "metrics count checks by outcome when asked for" do
  l = TK::Limiter.new(TK::Strategy.fixed_window(2, 1000), TK::LimiterOptions.new(metrics: true))
  3.times { l.check_blocking("metrics-k") }
  m = l.metrics
  assert(m.enabled && m.allowed == 2 && m.denied == 1, "metrics #{m.inspect}")
  off = TK::Limiter.new(TK::Strategy.fixed_window(2, 1000), TK::LimiterOptions.new)
  off.check_blocking("metrics-k")
  assert(!off.metrics.enabled && off.metrics.allowed.zero?, "metrics off")
end

test "metrics: peeks and forecasts apart from checks; multi limiters and shapers count too" do
  clock = TK::ManualClock.new(0)
  l = TK::Limiter.new(TK::Strategy.fixed_window(2, 1000), TK::LimiterOptions.new(clock: clock, metrics: true))
  l.check_blocking("k")
  l.peek_blocking("k")
  l.peek_blocking("other")
  l.forecast_blocking("k", 2)
  m = l.metrics
  assert [m.allowed, m.denied, m.peeks, m.forecasts] == [1, 0, 2, 1], m.inspect
  s2 = TK::Strategy.fixed_window(2, 1000)
  dims = [TK::Dimension.new(name: "ip", strategy: s2)]
  assert !TK::MultiLimiter.new(TK::Rule::ALL, dims, TK::MultiLimiterOptions.new).metrics.enabled
  multi = TK::MultiLimiter.new(TK::Rule::ALL, dims, TK::MultiLimiterOptions.new(clock: clock, metrics: true))
  3.times { multi.check_blocking(%w[1.2.3.4]) }
  expect_code("config_invalid") { multi.check_blocking(%w[a b]) }
  m = multi.metrics
  assert m.enabled && [m.allowed, m.denied, m.errors["config_invalid"]] == [2, 1, 1], m.inspect
  sh = TK::Shaper.new(10.0, 150.0, TK::ShaperOptions.new(clock: clock, metrics: true))
  3.times { sh.reserve_blocking("q") } # 0 and 100 ms: accepted; 200 ms: past max_queue_ms
  m = sh.metrics
  assert m.enabled && [m.allowed, m.denied] == [2, 1], m.inspect
  assert !TK::Shaper.new(10.0, 150.0, TK::ShaperOptions.new).metrics.enabled
end

test "a default memory store refuses keys over 256 bytes" do
  l = TK::Limiter.new(TK::Strategy.fixed_window(5, 1000), TK::LimiterOptions.new)
  l.check_blocking("k" * 256)
  expect_code("config_invalid") { l.check_blocking("k" * 257) }
  store = TK::MemoryStore.new(4, 8)
  assert(store.evictions.zero?, "a new store has evicted nothing")
end

test "a Redis URL nobody serves is store_unavailable" do
  port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] } # closed again: nobody listens
  expect_code("store_unavailable") do
    TK::RedisStore.connect("redis://127.0.0.1:#{port}", TK::RedisStoreOptions.new(timeout_ms: 300))
  end
end

test "core's connection options are checked by core: bad mode, scripting" do
  expect_code("config_invalid") { TK::RedisStore.connect("redis://127.0.0.1:1", TK::RedisStoreOptions.new(mode: "ring")) }
  expect_code("config_invalid") { TK::RedisStore.connect("redis://127.0.0.1:1", TK::RedisStoreOptions.new(scripting: "lua")) }
end

test "durable and sentinel options are checked by core, naming the option" do
  [
    [{ durable_replicas: 65 }, "redis.durable_replicas"],
    [{ durable_replicas: -1 }, "redis.durable_replicas"],
    [{ durable_replicas: 2**40 }, "redis.durable_replicas"],
    [{ durable_replicas: 1, timeout_ms: 100, durable_timeout_ms: 100 }, "redis.durable_timeout_ms"],
    [{ durable_replicas: 1, durable_timeout_ms: -5 }, "redis.durable_timeout_ms"],
    [{ durable_replicas: 1, deterministic_replay: true }, "redis.durable_replicas"],
    [{ sentinel_password: "pw" }, "redis.sentinel_password"],
    [{ mode: "sentinel", service_name: "m", sentinel_username: "u" }, "redis.sentinel_password"],
  ].each do |opts, named|
    e = expect_code("config_invalid") { TK::RedisStore.connect("redis://127.0.0.1:1", TK::RedisStoreOptions.new(**opts)) }
    assert e.to_s.include?(named), "#{opts}: #{e} should name #{named}"
  end
end

test "blocking and async checks decide the same; retry_after_ms on denial" do
  clock = TK::ManualClock.new(1_000)
  l = TK::Limiter.new(TK::Strategy.fixed_window(3, 1_000), TK::LimiterOptions.new(clock: clock, prefix: "api"))
  got = [l.check_blocking("u").allowed, l.check_blocking("u", 1).allowed, l.check("u").allowed, l.check("u").allowed]
  assert got == [true, true, true, false], got.inspect
  d = l.check_blocking("u")
  assert !d.allowed && d.retry_after_ms == 1_000 && d.limit == 3, d.inspect
  clock.advance(1_000)
  assert l.check_blocking("u").allowed
end

test "8 threads on one limiter admit exactly K" do
  l = TK::Limiter.new(TK::Strategy.fixed_window(300, 60_000), memory_options)
  admitted = Queue.new
  8.times.map { Thread.new { 100.times { admitted << 1 if l.check_blocking("shared").allowed } } }.each(&:join)
  assert admitted.size == 300, "admitted #{admitted.size}"
end

test "MultiLimiter and Shaper" do
  clock = TK::ManualClock.new(0)
  s5 = TK::Strategy.fixed_window(5, 1000)
  s2 = TK::Strategy.fixed_window(2, 1000)
  m = TK::MultiLimiter.new(TK::Rule::ALL,
                           [TK::Dimension.new(name: "ip", strategy: s5), TK::Dimension.new(name: "user", strategy: s2)],
                           TK::MultiLimiterOptions.new(clock: clock))
  2.times { assert m.check_blocking(%w[1.2.3.4 bob]).decision.allowed }
  d = m.check_blocking(%w[1.2.3.4 bob])
  assert !d.decision.allowed && d.binding == "user", d.inspect
  sh = TK::Shaper.new(10.0, 150.0, TK::ShaperOptions.new(clock: clock))
  delays = 3.times.map { sh.reserve_blocking("q") }
  assert delays.map(&:accepted) == [true, true, false] && delays[0].delay_ms.zero? && delays[1].delay_ms == 100, delays.inspect
  e = expect_code("queue_full") { sh.schedule_blocking("q", 5) }
  assert e.retry_after_ms.to_i.positive?, e.inspect
end

test "a thread waiting in schedule_blocking lets other Ruby threads run (the GVL is released)" do
  clock = TK::ManualClock.new(0)
  # One departure every 2 s: the first reservation leaves now, the second waits 2000 ms of real
  # sleep (the shaper sleeps for real; the manual clock only dates the reservations). The main
  # thread's 50 ms of sleeps leave a wide margin on a loaded machine.
  sh = TK::Shaper.new(0.5, 5_000.0, TK::ShaperOptions.new(clock: clock))
  assert sh.reserve_blocking("q").delay_ms.zero?
  started = Queue.new
  waiter = Thread.new do
    started << true
    sh.schedule_blocking("q")
  end
  started.pop
  5.times { sleep 0.01 } # needs the GVL between sleeps: impossible while the waiter holds it
  assert waiter.alive?, "the other thread could not run until schedule_blocking returned"
  assert waiter.value.delay_ms == 2_000, waiter.value.inspect
end

test "two-tier modes: bad values are config_invalid, nil takes core's defaults" do
  fw = TK::Strategy.fixed_window(10, 1000)
  [
    { mode: "ring" },
    { lease: TK::LeaseOptions.new(batch: 0) },
    { lease: TK::LeaseOptions.new(batch: -1) },
    { lease: TK::LeaseOptions.new(batch: 2**53 + 1) },
    { lease: TK::LeaseOptions.new(batch: 4, low_water: 4) },
    { lease: TK::LeaseOptions.new(max_keys: 0) },
    { mode: "cached_deny", lease: TK::LeaseOptions.new(max_keys: 0) }
  ].each do |kw|
    expect_code("config_invalid") { TK::Limiter.new(fw, TK::LimiterOptions.new(**kw)) }
  end
  expect_code("config_invalid") do # never truncated
    TK::Limiter.new(fw, TK::LimiterOptions.new(lease: TK::LeaseOptions.new(batch: 1.5)))
  end
  e = expect_code("config_invalid") do
    TK::Limiter.new(TK::Strategy.gcra(10, 1000.0, nil), TK::LimiterOptions.new(lease: TK::LeaseOptions.new(window_coupled: true)))
  end
  assert e.detail.include?("lease.windowCoupled"), e.detail
  assert TK::Limiter.new(fw, TK::LimiterOptions.new).mode == "strict"
  assert TK::Limiter.new(fw, TK::LimiterOptions.new(lease: TK::LeaseOptions.new)).mode == "leased"
  l = TK::Limiter.new(fw, TK::LimiterOptions.new(mode: "cached_deny"))
  assert l.mode == "cached_deny" && l.tier_stats.leases.zero?
  expect_code("config_invalid") { l.release_leases_blocking(-1) }
end

test "leased on a memory store: one lease, the rest spent locally, given back (blocking and async)" do
  store = TK::Store::MEMORY.new(store: TK::MemoryStore.new(nil, nil))
  clock = TK::ManualClock.new(1_700_000_040_000)
  fw = TK::Strategy.fixed_window(10, 60_000)
  l = TK::Limiter.new(fw, TK::LimiterOptions.new(store: store, clock: clock, mode: "leased",
                                                 lease: TK::LeaseOptions.new(batch: 4, window_coupled: true)))
  strict = TK::Limiter.new(fw, TK::LimiterOptions.new(store: store, clock: clock))
  assert l.check_blocking("k").allowed && l.check("k").allowed
  s = l.tier_stats
  assert s.leases == 1 && s.local_admits == 1, s.inspect
  assert strict.peek_blocking("k").remaining == 6
  assert l.release_leases == 2
  assert l.check_blocking("k").allowed && l.release_leases_blocking(0) == 3
  assert strict.peek_blocking("k").remaining == 7 && l.tier_stats.credits_returned == 5
end

# A multi limiter (rule all) over a tenant (20 per 60 s) and an IP (1000 per 60 s).
def multi_limiter(**kw)
  dims = [TK::Dimension.new(name: "tenant", strategy: TK::Strategy.fixed_window(20, 60_000)),
          TK::Dimension.new(name: "ip", strategy: TK::Strategy.fixed_window(1000, 60_000))]
  TK::MultiLimiter.new(TK::Rule::ALL, dims, TK::MultiLimiterOptions.new(**kw))
end

test "multi limiter modes: bad values are config_invalid (low_water must be 0), nil takes the defaults" do
  [
    { mode: "ring" },
    { lease: TK::LeaseOptions.new(batch: 0) },
    { lease: TK::LeaseOptions.new(batch: 5, low_water: 1) },
    { mode: "cached_deny", lease: TK::LeaseOptions.new(max_keys: 0) }
  ].each do |kw|
    expect_code("config_invalid") { multi_limiter(**kw) }
  end
  e = expect_code("config_invalid") { multi_limiter(lease: TK::LeaseOptions.new(batch: 5, low_water: 1)) }
  assert e.detail.include?("lease.lowWater"), e.detail
  assert multi_limiter.mode == "strict" && multi_limiter.tier_stats.leases.zero?
  assert multi_limiter(lease: TK::LeaseOptions.new).mode == "leased"
  assert multi_limiter(mode: "cached_deny").mode == "cached_deny"
end

test "multi leased on a memory store: 18 admitted with 4 fused leases where strict calls 18 times; credits given back" do
  store = TK::Store::MEMORY.new(store: TK::MemoryStore.new(nil, nil))
  clock = TK::ManualClock.new(1_700_000_040_000)
  leased = multi_limiter(store: store, clock: clock, mode: "leased", lease: TK::LeaseOptions.new(batch: 5))
  keys = %w[acme 10.0.0.1]
  admitted = 9.times.count { leased.check_blocking(keys).decision.allowed } + 9.times.count { leased.check(keys).decision.allowed }
  assert admitted == 18, admitted
  s = leased.tier_stats
  assert s.leases == 4 && s.local_admits == 14, s.inspect
  assert leased.release_leases == 4 # 2 per dimension key
  assert leased.tier_stats.credits_returned == 4
  strict = multi_limiter(store: store, clock: clock)
  d = strict.check_blocking(keys, 2).decision
  assert d.allowed && d.remaining.zero?, d.inspect
  assert !strict.check_blocking(keys).decision.allowed
end

if (url = ARGV[0])
  test "Redis: blocking and async share one limit; 4 threads admit exactly K" do
    store = TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 2000))
    # A day's window on the system clock (Redis expires keys on its own): a window boundary
    # between the checks would start the count over; a test of a few seconds meets one with a
    # probability of about 1 in 20,000.
    l = TK::Limiter.new(TK::Strategy.fixed_window(100, 86_400_000),
                        TK::LimiterOptions.new(store: TK::Store::REDIS.new(store: store), prefix: "tk-ruby-test:#{Process.pid}"))
    assert l.check_blocking("a", 60).allowed && l.check("a", 40).allowed
    assert !l.check_blocking("a").allowed
    admitted = Queue.new
    4.times.map { Thread.new { 50.times { admitted << 1 if l.check_blocking("shared").allowed } } }.each(&:join)
    assert admitted.size == 100, "admitted #{admitted.size}"
    %w[a shared].each { |k| l.reset_blocking(k) }
  end

  test "Redis: a closed store is store_unavailable under raise, a fallback under fail_open" do
    store = TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 500))
    redis = TK::Store::REDIS.new(store: store)
    raise_l = TK::Limiter.new(TK::Strategy.gcra(5, 1000.0, nil), TK::LimiterOptions.new(store: redis, fail_policy: TK::FailPolicy::RAISE))
    open_l = TK::Limiter.new(TK::Strategy.gcra(5, 1000.0, nil), TK::LimiterOptions.new(store: redis, fail_policy: TK::FailPolicy::FAIL_OPEN))
    store.disconnect_blocking
    expect_code("store_unavailable") { raise_l.check_blocking("k") }
    d = open_l.check_blocking("k")
    assert d.allowed && d.fallback, d.inspect
  end

  # INFO commandstats' script calls (fcall, fcall_ro, evalsha, eval) on the server at url.
  def script_calls(url)
    host, port = url.sub(%r{\Arediss?://}, "").sub(%r{/.*\z}, "").split(":")
    sock = TCPSocket.new(host, port.to_i)
    sock.write("INFO commandstats\r\n")
    len = sock.gets[1..].to_i
    body = sock.read(len + 2)
    sock.close
    body.scan(/^cmdstat_(?:fcall|fcall_ro|evalsha|eval):calls=(\d+)/).flatten.sum(&:to_i)
  end

  # 3 limiters (3 connections) take turns on one key of a fixed window (20 per 60 s of a
  # manual clock, which the sync path sends to Redis: exact windows, and Redis keeps each key
  # 60 s of real time), 100 steps a window for 4 windows; admissions per window by time, and
  # the script calls the server ran. With multi, 3 multi limiters (tenant 20, IP 1000) on one
  # tenant and one IP.
  def lease_fleet(url, prefix, mode, lease, async, multi: false)
    clock = TK::ManualClock.new(1_700_000_040_000)
    fw = TK::Strategy.fixed_window(20, 60_000)
    keys = multi ? %w[hot 10.0.0.1] : "hot"
    ls = 3.times.map do
      store = TK::Store::REDIS.new(store: TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 5000)))
      opts = { store: store, clock: clock, prefix: prefix, server_clock: false, mode: mode, lease: lease }
      multi ? multi_limiter(**opts) : TK::Limiter.new(fw, TK::LimiterOptions.new(**opts))
    end
    ls[0].reset_blocking(keys)
    before = script_calls(url)
    per = 4.times.map do |w|
      admitted = 0
      100.times do |step|
        clock.set(1_700_000_040_000 + w * 60_000 + step * 600)
        ls.each do |l|
          d = async ? l.check(keys) : l.check_blocking(keys)
          admitted += 1 if (multi ? d.decision : d).allowed
        end
      end
      admitted
    end
    calls = script_calls(url) - before
    ls.each { |l| l.release_leases_blocking }
    [per, calls]
  end

  test "Redis: leased multi limiters make far fewer script calls than strict, within the bound" do
    pid = Process.pid
    strict, strict_calls = lease_fleet(url, "rb-mstrict-#{pid}", nil, nil, false, multi: true)
    coupled, coupled_calls = lease_fleet(url, "rb-mcoupled-#{pid}", "leased",
                                         TK::LeaseOptions.new(batch: 5, window_coupled: true), false, multi: true)
    leased, leased_calls = lease_fleet(url, "rb-mleased-#{pid}", "leased", TK::LeaseOptions.new(batch: 5), true, multi: true)
    assert strict == [20] * 4 && coupled == [20] * 4, "strict #{strict}, coupled #{coupled}"
    assert leased.all? { |n| n.between?(20, 20 + 3 * 4) }, "leased #{leased} outside 20..20 + N(batch-1) = 32"
    assert strict_calls == 1200, "strict ran #{strict_calls} scripts for 1200 decisions"
    assert coupled_calls * 20 < strict_calls && leased_calls * 20 < strict_calls,
           "script calls: strict #{strict_calls}, coupled #{coupled_calls}, leased #{leased_calls}"
    puts "ruby multi lease fleet: 1200 decisions; script calls (INFO commandstats): strict #{strict_calls}, " \
         "leased coupled #{coupled_calls}, leased (async) #{leased_calls}; per window #{strict} #{coupled} #{leased}"
  end

  test "Redis: leased makes far fewer script calls than strict, within the bound (blocking and async)" do
    pid = Process.pid
    strict, strict_calls = lease_fleet(url, "rb-strict-#{pid}", nil, nil, false)
    coupled, coupled_calls = lease_fleet(url, "rb-coupled-#{pid}", "leased",
                                         TK::LeaseOptions.new(batch: 5, window_coupled: true), false)
    leased, leased_calls = lease_fleet(url, "rb-leased-#{pid}", "leased", TK::LeaseOptions.new(batch: 5), true)
    assert strict == [20] * 4 && coupled == [20] * 4, "strict #{strict}, coupled #{coupled}"
    assert leased.all? { |n| n <= 20 + 3 * 4 }, "leased #{leased} above 20 + N(batch-1) = 32"
    assert strict_calls == 1200, "strict ran #{strict_calls} scripts for 1200 decisions"
    assert coupled_calls * 20 < strict_calls && leased_calls * 20 < strict_calls,
           "script calls: strict #{strict_calls}, coupled #{coupled_calls}, leased #{leased_calls}"
    puts "ruby lease fleet: 1200 decisions; script calls (INFO commandstats): strict #{strict_calls}, " \
         "leased coupled #{coupled_calls}, leased (async) #{leased_calls}; per window #{strict} #{coupled} #{leased}"
  end

  test "Redis: cached_deny answers denials without a script call, until the retry time" do
    store = TK::Store::REDIS.new(store: TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 5000)))
    clock = TK::ManualClock.new(1_700_000_041_000)
    fw = TK::Strategy.fixed_window(3, 60_000)
    opts = { store: store, clock: clock, prefix: "rb-deny-#{Process.pid}", server_clock: false }
    cached = TK::Limiter.new(fw, TK::LimiterOptions.new(**opts, mode: "cached_deny"))
    strict = TK::Limiter.new(fw, TK::LimiterOptions.new(**opts))
    strict.reset_blocking("k")
    assert 4.times.map { cached.check_blocking("k").allowed } == [true, true, true, false]
    strict.reset_blocking("k") # the store would admit now
    before = script_calls(url)
    50.times do
      d = cached.check_blocking("k")
      assert !d.allowed && d.retry_after_ms == 59_000, d.inspect
      assert !cached.check("k").allowed
    end
    assert script_calls(url) == before, "script calls while the denial was cached"
    assert cached.tier_stats.local_denials == 100
    clock.set(1_700_000_100_000)
    assert cached.check_blocking("k").allowed
    strict.reset_blocking("k")
  end

  # `url` is a private server with no replica (test.sh starts it).
  test "Redis: without a replica a durable charge is store_unavailable within its timeout" do
    store = TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 1000, durable_replicas: 1, durable_timeout_ms: 100))
    redis = TK::Store::REDIS.new(store: store)
    l = TK::Limiter.new(TK::Strategy.fixed_window(3, 60_000),
                        TK::LimiterOptions.new(store: redis, prefix: "tk-ruby-durable", fail_policy: TK::FailPolicy::RAISE))
    start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    e = expect_code("store_unavailable") { l.check_blocking("k") }
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - start
    assert e.to_s.include?("0 of 1 replicas") && e.to_s.include?("durable_replicas"), e.to_s
    assert took >= 0.1 && took < 1.1, "answered after #{took} s"
    expect_code("store_unavailable") { l.check("k") }
    store.disconnect_blocking
  end
end

# A Sentinel setup of its own (master + replica) whose sentinels require the password "spw"
# (test.sh: tests/redis-sentinels.sh with SENTINEL_PASSWORD).
if (sentinels = ENV["TK_REDIS_SENTINEL_PW_URLS"]) && !sentinels.empty?
  test "passworded sentinels need sentinel_password; with a replica a durable charge is admitted" do
    base = { mode: "sentinel", service_name: "tkmain", timeout_ms: 2000 }
    e = expect_code("store_unavailable") { TK::RedisStore.connect(sentinels, TK::RedisStoreOptions.new(**base)) }
    assert e.to_s.include?("NOAUTH") || e.to_s.include?("uthentication"), e.to_s
    expect_code("store_unavailable") do
      TK::RedisStore.connect(sentinels, TK::RedisStoreOptions.new(**base, sentinel_password: "nope"))
    end
    # A generous WAIT timeout: on a loaded machine the replica's acknowledgement can take a while.
    store = TK::RedisStore.connect(sentinels, TK::RedisStoreOptions.new(
      **base, timeout_ms: 5000, sentinel_username: "default", sentinel_password: "spw",
      durable_replicas: 1, durable_timeout_ms: 4000
    ))
    l = TK::Limiter.new(TK::Strategy.fixed_window(3, 60_000),
                        TK::LimiterOptions.new(store: TK::Store::REDIS.new(store: store), prefix: "tk-ruby-sentinel-pw:#{Process.pid}",
                                               fail_policy: TK::FailPolicy::RAISE))
    got = [l.check_blocking("k").allowed, l.check("k").allowed, l.check_blocking("k").allowed, l.check_blocking("k").allowed]
    assert got == [true, true, true, false], got.inspect
    store.disconnect_blocking
  end
else
  puts "note: TK_REDIS_SENTINEL_PW_URLS is not set; the passworded-sentinel test did not run"
end

# Every call counted once: N calls of fresh limiters, a multi limiter and a shaper down each
# entry point (blocking and async checks, check_many, peeks, forecasts, the leased mode, multi
# checks, reservations and schedules) move the counters by exactly N, on memory and on each
# Redis the environment names (test.sh: one node, a cluster, Sentinel); on Redis each call is
# timed.
METRICS_N = 7

def moved(m)
  [m.allowed + m.denied, m.fallback_allowed + m.fallback_denied, m.peeks, m.forecasts, m.errors.values.sum]
end

def every_path_counts_once(store, tag)
  timed = store ? METRICS_N : 0
  strategy = TK::Strategy.gcra(4, 3_600_000.0, 4) # four an hour, bursts of 4: nothing refills meanwhile
  prefix = "tk-ruby-metrics:#{Process.pid}:#{tag}"
  limiter = lambda do |path, **extra|
    TK::Limiter.new(strategy, TK::LimiterOptions.new(store: store, prefix: "#{prefix}:#{path}", metrics: true, **extra))
  end
  {
    check_blocking: ->(l) { l.check_blocking("k") },
    check: ->(l) { l.check("k") },
    check_many_blocking: ->(l) { l.check_many_blocking(["k"]) },
    check_many: ->(l) { l.check_many(["k"]) }
  }.each do |name, call|
    l = limiter.call(name)
    METRICS_N.times { call.call(l) }
    m = l.metrics
    assert [m.allowed, m.denied] == [4, 3] && moved(m) == [METRICS_N, 0, 0, 0, 0], "#{tag} #{name}: #{m.inspect}"
    assert m.latency_counts.sum == timed, "#{tag} #{name} timed: #{m.inspect}"
  end
  l = limiter.call(:reads)
  METRICS_N.times do
    l.peek_blocking("k")
    l.peek("k")
    l.forecast_blocking("k")
    l.forecast("k")
  end
  m = l.metrics
  assert moved(m) == [0, 0, 2 * METRICS_N, 2 * METRICS_N, 0] && m.latency_counts.sum == 4 * timed, "#{tag} reads: #{m.inspect}"
  l = limiter.call(:leased, mode: "leased", lease: TK::LeaseOptions.new(batch: 2))
  METRICS_N.times do
    l.check_blocking("k")
    l.check("k")
  end
  assert moved(l.metrics) == [2 * METRICS_N, 0, 0, 0, 0], "#{tag} leased: #{l.metrics.inspect}"
  dims = [TK::Dimension.new(name: "a", strategy: strategy), TK::Dimension.new(name: "b", strategy: strategy)]
  multi = TK::MultiLimiter.new(TK::Rule::ALL, dims, TK::MultiLimiterOptions.new(store: store, prefix: "#{prefix}:multi", metrics: true))
  shaper = TK::Shaper.new(1000.0, 60_000.0, TK::ShaperOptions.new(store: store, prefix: "#{prefix}:shaper", metrics: true))
  METRICS_N.times do
    multi.check_blocking(%w[x y])
    multi.check(%w[x y])
    shaper.reserve_blocking("x")
    shaper.reserve("x")
    shaper.schedule_blocking("y")
    shaper.schedule("y")
  end
  m = multi.metrics
  assert [m.allowed, m.denied] == [4, 2 * METRICS_N - 4] && m.latency_counts.sum == 2 * timed, "#{tag} multi: #{m.inspect}"
  m = shaper.metrics
  assert moved(m) == [4 * METRICS_N, 0, 0, 0, 0] && m.latency_counts.sum == 4 * timed, "#{tag} shaper: #{m.inspect}"
end

test "metrics: every path counts each call once on memory" do
  every_path_counts_once(nil, "memory")
end

[
  ["one node", ARGV[0], {}],
  ["a cluster", ENV.fetch("TK_REDIS_CLUSTER_URLS", nil), { mode: "cluster" }],
  ["Sentinel", ENV.fetch("TK_REDIS_SENTINEL_URLS", nil), { mode: "sentinel", service_name: "tkmain" }]
].each do |name, urls, options|
  if urls.nil? || urls.empty?
    puts "note: no URLs for #{name}; its metrics test did not run"
    next
  end
  test "metrics: every path counts each call once on #{name}" do
    store = TK::RedisStore.connect(urls, TK::RedisStoreOptions.new(timeout_ms: 5000, **options))
    every_path_counts_once(TK::Store::REDIS.new(store: store), name.delete(" "))
    store.disconnect_blocking
  end
end

finish
