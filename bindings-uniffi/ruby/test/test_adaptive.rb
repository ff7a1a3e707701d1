# frozen_string_literal: true

# The adaptive concurrency limiter from Ruby (Throttlekit::AdaptiveLimiter, its block form) and
# Throttlekit::RackShedder, as a plain script: `N passed, M failed`.

require "rack"
require "rack/mock"
require_relative "../lib/throttlekit/rack_shedder"
require_relative "helper"

def fixed(limit, **options)
  TK::AdaptiveLimiter.build(algorithm: "fixed", initial_limit: limit, **options)
end

def call_the_service
  $reply
end

test("docs/adaptive.md's Ruby example") do
  $reply = :ok
  limiter = Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2", initial_limit: 1,
                                                partitions: [{ name: "live", percent: 90 }])
  serve = lambda do
    limiter.acquire(partition: "live") do |permit|
      reply = call_the_service
      permit.release("dropped") if reply == :timeout # else "success" when the block returns
      reply
    end
  rescue Throttlekit::Rejected => e
    [503, { "retry-after" => e.rejection.retry_after_secs.to_s }]
  end
  assert(serve.call == :ok)
  $reply = :timeout
  assert(serve.call == :timeout)
  held = limiter.acquire(partition: "live").permit
  assert(serve.call == [503, { "retry-after" => "1" }])
  held.release("ignore")
  m = limiter.metrics
  assert(m.succeeded == 1 && m.dropped == 1 && m.rejected == 1 && m.inflight.zero?, m.inspect)
end

test("docs/adaptive.md's Rack example") do
  app = Rack::Builder.new do
    use Throttlekit::RackShedder, limiter: Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2")
    run ->(_env) { [200, {}, ["ok"]] }
  end.to_app
  assert(Rack::MockRequest.new(app).get("/").status == 200)
end

test("bad options are config_invalid naming the field as the keyword is spelled") do
  {
    "initial_limit" => -> { TK::AdaptiveLimiter.build(initial_limit: 0) },
    "initial_limit must be at least 1" => -> { TK::AdaptiveLimiter.build(initial_limit: -3) },
    "initial_limit must be between min_limit and max_limit" => -> { TK::AdaptiveLimiter.build(initial_limit: 3, max_limit: 2) },
    "window_min_samples" => -> { TK::AdaptiveLimiter.build(window_min_samples: 0) },
    "partitions" => -> { TK::AdaptiveLimiter.build(partitions: [{ name: "a", percent: 60 }, { name: "b", percent: 50 }]) },
    "backoff" => -> { TK::AdaptiveLimiter.build(algorithm: "vegas", backoff: 0.5) },
    "min_rtt_us" => -> { TK::AdaptiveLimiter.build(min_rtt_us: -1) },
  }.each do |field, build|
    e = expect_code("config_invalid", &build)
    assert(e.detail.include?(field), "#{field}: #{e.detail}")
  end
end

test("a full limit is a rejection; a permit releases once") do
  l = fixed(2)
  a = l.acquire.permit
  b = l.acquire.permit
  r = l.acquire
  assert(r.permit.nil? && r.rejection.limit == 2 && r.rejection.inflight == 2 && r.rejection.retry_after_secs == 1, r.inspect)
  assert(a.release("success") == true)
  assert(a.release("dropped") == false, "twice is harmless")
  expect_code("config_invalid") { b.release_with_rtt_ns("success", -1) }
  expect_code("config_invalid") { b.release("timeout") }
  assert(l.inflight == 1, "b stays held")
  expect_code("config_invalid") { l.acquire(partition: "batch") }
  expect_code("not_implemented") { l.advance_virtual(1000) }
  b.release("ignore")
  m = l.metrics
  assert(m.inflight.zero? && m.acquired == 2 && m.rejected == 1 && m.succeeded == 1 && m.ignored == 1, m.inspect)
end

test("the block form: success when it returns, ignore when it raises, Rejected when full") do
  l = fixed(1)
  assert(l.acquire { |_permit| 42 } == 42)
  begin
    l.acquire { raise ArgumentError, "a client error" }
  rescue ArgumentError
    nil
  end
  l.acquire { |permit| permit.release("dropped") } # said by the block itself
  held = l.acquire.permit
  begin
    l.acquire { raise "must not run" }
    raise "no Rejected"
  rescue TK::Rejected => e
    assert(e.rejection.limit == 1 && e.rejection.inflight == 1, e.rejection.inspect)
  end
  held.release("ignore")
  m = l.metrics
  assert(m.inflight.zero? && m.succeeded == 1 && m.ignored == 2 && m.dropped == 1 && m.rejected == 1, m.inspect)
end

test("acquire waits for a freed permit and times out; other threads run meanwhile") do
  l = fixed(1)
  held = l.acquire.permit
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  r = l.acquire(timeout_ms: 50)
  assert(r.permit.nil? && Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 >= 0.049, r.inspect)
  releaser = Thread.new do
    sleep 0.03
    held.release("ignore")
  end
  got = l.acquire(timeout_ms: 10_000) { |_p| l.inflight }
  releaser.join
  assert(got == 1 && l.inflight.zero?, "got #{got}")
end

test("partitions keep their share when the limit is full") do
  l = fixed(10, partitions: [{ name: "live", percent: 80 }, { name: "batch", percent: 20 }])
  held = [l.acquire(partition: "live").permit, l.acquire(partition: "batch").permit, l.acquire(partition: "batch").permit]
  r = l.acquire(partition: "batch")
  assert(r.permit.nil? && r.rejection.inflight == 3, "live's unused 7 are kept for it")
  7.times { held << l.acquire(partition: "live").permit }
  assert(held.none?(&:nil?) && l.inflight == 10)
  assert(l.metrics.partitions == { "live" => 8, "batch" => 2 }, l.metrics.partitions.inspect)
  held.each { |p| p.release("ignore") }
end

test("a permit dropped without a release is swept after GC as ignore and leaked") do
  l = fixed(3)
  kept = l.acquire.permit
  3.times { l.acquire.permit } # never referenced again: two are granted and lost
  assert(l.acquire.permit.nil?, "the lost permits still hold their slots before any collection")
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
  while l.inflight > 1 && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    GC.start(full_mark: true, immediate_sweep: true)
  end
  m = l.metrics
  assert(m.inflight == 1 && m.leaked == 2 && m.ignored == 2, m.inspect)
  assert(kept.release("success") == true, "the reachable permit was not swept")
end

test("the virtual clock measures the round trip") do
  l = TK::AdaptiveLimiter.build(algorithm: "fixed", initial_limit: 1, window_min_samples: 1, virtual_clock: true)
  p = l.acquire.permit
  l.advance_virtual(7_000_000)
  p.release("success")
  assert(l.metrics.latency_us == 7000 && l.metrics.windows == 1, l.metrics.inspect)
end

# RackShedder: a counted app whose /slow parks on a queue, /fail answers 503.
class Work
  attr_reader :calls, :entered, :release

  def initialize
    @calls = 0
    @entered = Queue.new
    @release = Queue.new
  end

  def call(env)
    @calls += 1
    case env["PATH_INFO"]
    when "/slow"
      @entered << true
      @release.pop
      [200, {}, ["ok"]]
    when "/fail" then [503, {}, []]
    when "/boom" then raise "boom"
    else [200, {}, ["ok"]]
    end
  end
end

test("RackShedder: 503 with Retry-After when full; the app's 503 and exceptions are dropped") do
  l = fixed(1)
  work = Work.new
  app = TK::RackShedder.new(work, limiter: l)
  slow = Thread.new { Rack::MockRequest.new(app).get("/slow") }
  work.entered.pop
  shed = Rack::MockRequest.new(app).get("/ok")
  assert(shed.status == 503 && shed.headers.to_h.transform_keys(&:downcase)["retry-after"] == "1", shed.headers.inspect)
  assert(work.calls == 1, "the shed request reached the app")
  work.release << true
  assert(slow.value.status == 200)
  assert(Rack::MockRequest.new(app).get("/fail").status == 503)
  begin
    Rack::MockRequest.new(app).get("/boom")
  rescue RuntimeError
    nil
  end
  m = l.metrics
  assert(m.inflight.zero? && m.rejected == 1 && m.succeeded == 1 && m.dropped == 2, m.inspect)
end

test("RackShedder: an unknown partition is 500; a wait queues") do
  l = fixed(1, partitions: [{ name: "live", percent: 100 }])
  app = TK::RackShedder.new(Work.new, limiter: l, partition: ->(env) { env["QUERY_STRING"][2..] }, wait_ms: 10_000)
  assert(Rack::MockRequest.new(app).get("/ok?p=nope").status == 500)
  held = l.acquire(partition: "live").permit
  Thread.new do
    sleep 0.03
    held.release("ignore")
  end
  assert(Rack::MockRequest.new(app).get("/ok?p=live").status == 200)
end

finish("adaptive")
