require "throttlekit"
TK = Throttlekit

# In memory: 100 requests a minute, bursts of 10, keys namespaced under "api".
limiter = TK::Limiter.new(TK::Strategy.gcra(100, 60_000.0, 10), TK::LimiterOptions.new(prefix: "api"))
d = limiter.check_blocking("user:42")
puts "429: retry in #{d.retry_after_ms} ms" unless d.allowed
puts "memory: allowed=#{d.allowed} remaining=#{d.remaining}"

# On Redis, shared by a fleet: one atomic script call per decision.
url = ARGV[0] || "redis://127.0.0.1:6379"
redis = TK::RedisStore.connect(url, TK::RedisStoreOptions.new(timeout_ms: 500, fail_policy: TK::FailPolicy::FAIL_OPEN))
shared = TK::Limiter.new(TK::Strategy.token_bucket(20, 5.0),
                         TK::LimiterOptions.new(store: TK::Store::REDIS.new(store: redis), prefix: "quickstart"))
r = shared.check_blocking("user:42", 2)
puts "redis: allowed=#{r.allowed} remaining=#{r.remaining}"
begin
  TK::Strategy.gcra(0, 60_000.0, nil)
rescue TK::ThrottleKitError => e
  puts "error code: #{e.code}" # config_invalid
end
