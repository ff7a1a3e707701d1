# frozen_string_literal: true

# The adaptive limiter's try_acquire + release through the Ruby binding (the uniffi library
# over ruby-ffi), against issue #35's 1 µs per binding, and where the time goes: the same run
# times each step the generated wrapper takes (docs/adaptive.md, "Speed").
#
#   THROTTLEKIT_LIB=target/release/libthrottlekit_uniffi.so ruby bindings-uniffi/ruby/bench/adaptive.rb [N]
#
# Prints `ROW` lines for bench/summarize.py (bench/run.sh, part `adaptive`).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "throttlekit"

N = Integer(ARGV[0] || 100_000)

def per_call_us(n)
  n.times { yield } # warm up (and let the first finalizers run)
  GC.start
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  n.times { yield }
  (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) / n * 1e6
end

limiter = Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2", initial_limit: 64, min_limit: 64, min_rtt_us: 0)
total = per_call_us(N) { limiter.try_acquire.permit.release("success") }

# The steps, each in isolation (the generated code in lib/throttlekit/uniffi.rb makes them).
status = Throttlekit.const_get(:RustCallStatus)
steps = {
  "limit(): one method call with no buffers (a clone_handle call + the call)" => per_call_us(N) { limiter.limit },
  "RustCallStatus.new (one per FFI call)" => per_call_us(N) { status.new },
  "a RustBuffer for an argument: alloc + write + free (3 FFI calls)" =>
    per_call_us(N) { Throttlekit::RustBuffer.alloc_from_string("success").free }
}
# try_acquire, release and the permit's finalizer (free_adaptivepermit at GC) apart: hold M
# permits (a limiter with room for them), release them, then collect them.
def clock_us(m)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  yield
  (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) / m * 1e6
end
m = 900
wide = Throttlekit::AdaptiveLimiter.build(algorithm: "fixed", initial_limit: m, max_limit: m, min_rtt_us: 0)
permits = nil
GC.start
GC.disable
steps["try_acquire (4 FFI calls: clone_handle, buffer alloc, the call, buffer free)"] =
  clock_us(m) { permits = Array.new(m) { wide.try_acquire.permit } }
steps["release(\"success\") (3 FFI calls: buffer alloc, clone_handle, the call)"] =
  clock_us(m) { permits.each { |p| p.release("success") } }
permits = nil
GC.enable
steps["the permit's finalizer at GC (free_adaptivepermit)"] = clock_us(m) { GC.start }
printf "ruby %s, ffi %s: try_acquire + release %.2f us (N=%d)\n", RUBY_VERSION, FFI::VERSION, total, N
steps.each { |name, us| printf "  %-75s %7.2f us\n", name, us }
printf "ROW\tadaptive acquire + release through Ruby (uniffi over ruby-ffi)\t1000 ns target\t%.2f\t>=1\t%.0f ns per try_acquire + release\n",
       1.0 / total, total * 1000
