# frozen_string_literal: true

# Throttlekit::Rack's tests, as a plain script like test_throttlekit.rb: each check prints on
# failure and the run ends with `N passed, M failed`. Requests go through Rack::MockRequest
# (the app called as a server would call it); the ruby-rack example is also served by a real
# puma in the black-box and same-bytes suites. With --with-redis the fail
# policy runs against a private redis-server that this script starts and kills by PID.
#
#   ruby bindings-uniffi/ruby/test/test_rack.rb [--with-redis]

require "rack"
require "rack/mock"
require "tmpdir"
require_relative "../lib/throttlekit/rack"
require_relative "helper"

ROOT = File.expand_path("../../..", __dir__)

def assert_eq(want, got, what = "")
  raise "#{what}: expected #{want.inspect}, got #{got.inspect}" unless want == got
end

# A Rack app behind the middleware, counting the requests that reach it.
class Counted
  attr_reader :calls

  def initialize
    @calls = 0
  end

  def call(_env)
    @calls += 1
    [200, { "Content-Type" => "text/plain" }, ["ok"]]
  end
end

def manual_limiter(clock, limit: 5, period_ms: 60_000.0, store: nil, prefix: "t", fail_policy: nil)
  store ||= TK::Store::MEMORY.new(store: TK::MemoryStore.new(nil))
  TK::Limiter.new(TK::Strategy.gcra(limit, period_ms, limit),
                  TK::LimiterOptions.new(store: store, clock: clock, prefix: prefix, fail_policy: fail_policy))
end

def get(app, path = "/", env = {})
  Rack::MockRequest.new(app).get(path, { "REMOTE_ADDR" => "192.0.2.1" }.merge(env))
end

def fields(response)
  response.headers.select { |k, _| %w[ratelimit ratelimit-policy retry-after].include?(k.downcase) }
end

test "five admitted with core's exact fields, then 429 with the problem body; the app never sees a denial" do
  clock = TK::ManualClock.new(1_700_000_000_000)
  inner = Counted.new
  app = TK::Rack.new(inner) { |tk| tk.throttle("ip", limiter: manual_limiter(clock)) }
  5.times do |i|
    r = get(app)
    assert_eq 200, r.status, "request #{i}"
    assert_eq({ "RateLimit-Policy" => '"default";q=5;w=60', "RateLimit" => "\"default\";r=#{4 - i};t=12" }, fields(r), "request #{i}")
  end
  r = get(app)
  assert_eq 429, r.status
  assert_eq '"default";r=0;t=12', r.headers["RateLimit"]
  assert_eq "12", r.headers["Retry-After"]
  assert_eq "application/problem+json", r.headers["Content-Type"]
  assert r.body.include?("quota-exceeded"), r.body
  assert_eq 5, inner.calls, "app calls"
  # Another client has its own budget.
  assert_eq 200, get(app, "/", "REMOTE_ADDR" => "192.0.2.2").status
end

test "the answers are core's: the same lines as the HttpEdge asked directly" do
  clock = TK::ManualClock.new(1_700_000_000_000)
  app = TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", limiter: manual_limiter(clock, prefix: "a")) }
  edge = TK::HttpEdge.new("", "", nil, false)
  direct = manual_limiter(clock, prefix: "b")
  7.times do
    r = get(app)
    answer = edge.check_blocking(direct, "192.0.2.1", 1)
    assert_eq answer.lines.to_h { |l| [l.name, l.value] }, fields(r)
    assert_eq(answer.status.zero? ? 200 : answer.status, r.status)
  end
end

test "a key block keys the throttle by what it returns, and nil leaves the request alone" do
  clock = TK::ManualClock.new(0)
  app = TK::Rack.new(Counted.new) do |tk|
    tk.throttle("api-key", limiter: manual_limiter(clock, limit: 2)) { |req| req.get_header("HTTP_X_API_KEY") }
  end
  2.times { assert_eq 200, get(app, "/", "HTTP_X_API_KEY" => "alice").status }
  assert_eq 429, get(app, "/", "HTTP_X_API_KEY" => "alice").status
  assert_eq 200, get(app, "/", "HTTP_X_API_KEY" => "bob").status
  free = get(app, "/")
  assert_eq 200, free.status
  assert fields(free).empty?, "no key, no fields: #{fields(free)}"
end

test "safelist skips every throttle; blocklist answers 403, or its responder's answer" do
  inner = Counted.new
  app = TK::Rack.new(inner) do |tk|
    tk.safelist("healthz") { |req| req.path == "/healthz" }
    tk.blocklist("bots") { |req| req.user_agent.to_s.include?("BadBot") }
    tk.throttle("ip", limit: 1, period: 60)
  end
  3.times { assert_eq 200, get(app, "/healthz").status }
  assert fields(get(app, "/healthz")).empty?
  assert_eq 403, get(app, "/", "HTTP_USER_AGENT" => "BadBot/1").status
  assert_eq 200, get(app, "/").status
  assert_eq 429, get(app, "/").status
  assert_eq 5, inner.calls
  custom = TK::Rack.new(Counted.new) do |tk|
    tk.blocklist("all") { |_req| true }
    tk.blocklisted_responder = ->(_req) { [418, {}, ["no"]] }
    tk.throttle("ip", limit: 1, period: 60)
  end
  assert_eq 418, get(custom, "/").status
end

test "a throttled responder writes the denial, with core's decision and lines at hand" do
  clock = TK::ManualClock.new(0)
  seen = []
  app = TK::Rack.new(Counted.new) do |tk|
    tk.throttle("ip", limiter: manual_limiter(clock, limit: 1))
    tk.throttled_responder = lambda do |_req, answer|
      seen << answer
      [429, answer.lines.to_h { |l| [l.name, l.value] }.merge("Content-Type" => "application/json"),
       [%({"retry_after_ms":#{answer.decision.retry_after_ms}})]]
    end
  end
  get(app)
  r = get(app)
  assert_eq 429, r.status
  assert_eq '{"retry_after_ms":60000}', r.body
  assert_eq "60", r.headers["Retry-After"]
  assert_eq "deny", seen.first.action
end

test "shadow mode forwards a denial with its fields, and the hook is told" do
  clock = TK::ManualClock.new(0)
  events = []
  inner = Counted.new
  app = TK::Rack.new(inner, shadow: true) do |tk|
    tk.throttle("ip", limiter: manual_limiter(clock, limit: 1))
    tk.on_limited { |e| events << e }
  end
  get(app)
  r = get(app)
  assert_eq 200, r.status
  assert_eq "60", r.headers["Retry-After"]
  assert_eq 2, inner.calls
  assert_eq 1, events.size
  e = events.first
  assert_eq ["ip", "192.0.2.1", true, false], [e.throttle, e.key, e.shadow, e.decision.allowed]
end

test "several throttles: each that applies is checked; the denying one answers" do
  clock = TK::ManualClock.new(0)
  events = []
  app = TK::Rack.new(Counted.new) do |tk|
    tk.throttle("ip", limiter: manual_limiter(clock, limit: 10, prefix: "ip"))
    tk.throttle("login", limiter: manual_limiter(clock, limit: 1, prefix: "login")) do |req|
      req.params["email"] if req.post? && req.path == "/login"
    end
    tk.on_limited { |e| events << e.throttle }
  end
  r = get(app, "/")
  assert_eq '"default";r=9;t=6', r.headers["RateLimit"]
  login = ->() { Rack::MockRequest.new(app).post("/login", "REMOTE_ADDR" => "192.0.2.1", params: { "email" => "a@b" }) }
  assert_eq 200, login.call.status
  r = login.call
  assert_eq 429, r.status
  assert_eq '"default";r=0;t=60', r.headers["RateLimit"]
  assert_eq ["login"], events
end

test "a multi limiter as one throttle: the block returns one key per dimension, atomically" do
  clock = TK::ManualClock.new(0)
  multi = TK::MultiLimiter.new(TK::Rule::ALL, [
    TK::Dimension.new(name: "user", strategy: TK::Strategy.gcra(2, 60_000.0, 2), cost_multiplier: 1),
    TK::Dimension.new(name: "global", strategy: TK::Strategy.gcra(100, 60_000.0, 100), cost_multiplier: 1)
  ], TK::MultiLimiterOptions.new(clock: clock))
  app = TK::Rack.new(Counted.new) do |tk|
    tk.throttle("multi", limiter: multi) { |req| [req.get_header("HTTP_X_USER") || "anon", "all"] }
  end
  statuses = %w[u1 u1 u1 u2].map { |u| get(app, "/", "HTTP_X_USER" => u).status }
  assert_eq [200, 200, 429, 200], statuses
  r = get(app, "/", "HTTP_X_USER" => "u1")
  assert_eq '"user";r=0;t=30, "global";r=96;t=1', r.headers["RateLimit"]
end

test "rate: is read by core, as in every language" do
  app = TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", rate: "2 per minute") }
  assert_eq [200, 200, 429], 3.times.map { get(app).status }
  assert_eq '"default";q=2;w=60', get(app).headers["RateLimit-Policy"]
  e = expect_code("config_invalid") { TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", rate: "2/fortnight") } }
  assert e.detail.include?("is not a rate"), e.detail
end

test "cost as a number or a block of the request" do
  clock = TK::ManualClock.new(0)
  app = TK::Rack.new(Counted.new) do |tk|
    tk.throttle("ip", limiter: manual_limiter(clock, limit: 5), cost: ->(req) { req.path == "/bulk" ? 5 : 1 })
  end
  assert_eq 200, get(app, "/bulk").status
  assert_eq 429, get(app, "/").status
end

test "a peer that is not an address is core's 500 problem, naming config_invalid" do
  app = TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", limit: 5, period: 60) }
  r = get(app, "/", "REMOTE_ADDR" => "not-an-address")
  assert_eq 500, r.status
  assert r.body.include?("config_invalid"), r.body
end

test "a bad configuration fails when the app is built, with config_invalid naming the setting" do
  {
    "fail_policy" => -> { TK::Rack.new(Counted.new, fail_policy: :sometimes) { |tk| tk.throttle("ip", limit: 1, period: 1) } },
    "headerOptions" => -> { TK::Rack.new(Counted.new, headers: { family: "draft-99" }) { |tk| tk.throttle("ip", limit: 1, period: 1) } },
    "trustedProxies" => -> { TK::Rack.new(Counted.new, trusted_proxies: ["nope"]) { |tk| tk.throttle("ip", limit: 1, period: 1) } },
    "throttle" => -> { TK::Rack.new(Counted.new) },
    "limit" => -> { TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", limit: 0, period: 60) } },
    "period" => -> { TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", limit: 5) } },
    "cost" => -> { TK::Rack.new(Counted.new) { |tk| tk.throttle("ip", limit: 5, period: 60, cost: 1.5) } },
    "safelist" => -> { TK::Rack.new(Counted.new) { |tk| tk.safelist("x") } }
  }.each do |setting, build|
    e = expect_code("config_invalid") { build.call }
    assert e.detail.downcase.include?(setting.downcase) || setting == "limit", "#{setting}: #{e.detail}"
  end
  # Through Rack::Builder, as config.ru and Rails build it: at to_app, before any request.
  builder = Rack::Builder.new do
    use TK::Rack, fail_policy: :sometimes do |tk|
      tk.throttle("ip", limit: 1, period: 1)
    end
    run Counted.new
  end
  expect_code("config_invalid") { builder.to_app }
end

if ARGV.include?("--with-redis")
  test "with Redis down: raise answers 503, open forwards without fields, closed answers 429 Retry-After: 1" do
    pidfile = File.join(Dir.mktmpdir, "redis.pid")
    url = `#{ROOT}/tests/redis-server.sh start #{pidfile}`.strip
    raise "could not start redis-server" unless $?.success?

    pid = File.read(pidfile).to_i
    begin
      apps = %i[raise open closed].to_h do |policy|
        app = TK::Rack.new(Counted.new, fail_policy: policy) do |tk|
          tk.redis(url, timeout_ms: 300)
          tk.throttle("ip-#{policy}", limit: 5, period: 60)
        end
        [policy, app]
      end
      apps.each { |policy, app| assert_eq 200, get(app).status, "#{policy} with redis up" }
      Process.kill("KILL", pid)
      200.times do
        Process.kill(0, pid)
        sleep 0.01
      rescue Errno::ESRCH
        break
      end
      r = get(apps[:raise])
      assert_eq 503, r.status
      assert r.body.include?("temporary-reduced-capacity"), r.body
      assert fields(r).empty?, fields(r).inspect
      r = get(apps[:open])
      assert_eq [200, "ok", {}], [r.status, r.body, fields(r)]
      r = get(apps[:closed])
      assert_eq 429, r.status
      assert_eq "1", r.headers["Retry-After"]
    ensure
      begin
        Process.kill("KILL", pid)
      rescue Errno::ESRCH
        nil
      end
    end
  end
end

test "the README's Rack quick start is the example's config.ru" do
  readme = File.read(File.join(ROOT, "bindings-uniffi/README.md"))
  config = File.read(File.join(ROOT, "examples/http/ruby-rack/config.ru"))
  snippet = config.lines.reject { |l| l.start_with?("#") }.join.strip
  assert readme.include?(snippet), "bindings-uniffi/README.md does not show examples/http/ruby-rack/config.ru"
end

finish("rack")
