# frozen_string_literal: true

# The adaptive limiter's try_acquire + release through the Ruby binding (the integer-only fast
# path of lib/throttlekit/adaptive_fast.rb over ruby-ffi), against issue #35's 1 µs per binding,
# and where the time goes: the same run times the steps apart (docs/adaptive.md, "Speed").
#
#   THROTTLEKIT_LIB=target/release/libthrottlekit_uniffi.so ruby bindings-uniffi/ruby/bench/adaptive.rb [N]
#
# Prints `ROW` lines for bench/summarize.py (bench/run.sh, part `adaptive`).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "throttlekit"

N = Integer(ARGV[0] || 300_000)

def per_call_us(n)
  n.times { yield } # warm up
  GC.start
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  n.times { yield }
  (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0) / n * 1e6
end

limiter = Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2", initial_limit: 64, min_limit: 64, min_rtt_us: 0)
total = per_call_us(N) { limiter.try_acquire.permit.release("success") }

fast = limiter.fast_path
fn = Throttlekit::AdaptiveFast
steps = {
  "the two FFI calls alone (tk_rb_adaptive_try_acquire + tk_rb_adaptive_release)" =>
    per_call_us(N) { fn.tk_rb_adaptive_release(fast, fn.tk_rb_adaptive_try_acquire(fast, -1), "success", 0, 0) },
  "one attached FFI call that does nothing (tk_rb_adaptive_rejected)" => per_call_us(N) { fn.tk_rb_adaptive_rejected(9) },
  "Permit.new (the one Ruby object per acquire)" =>
    per_call_us(N) { Throttlekit::AdaptiveLimiter::Permit.new(limiter, fast, 1) },
  "the generated uniffi path, for comparison (try_acquire + release, finalizer per permit)" =>
    per_call_us(N / 10) { limiter.acquire_blocking(0, nil).permit.release("success") }
}
printf "ruby %s, ffi %s: try_acquire + release %.2f us (N=%d)\n", RUBY_VERSION, FFI::VERSION, total, N
steps.each { |name, us| printf "  %-90s %7.2f us\n", name, us }
printf "ROW\tadaptive acquire + release through Ruby (integer fast path over ruby-ffi)\t1000 ns target\t%.2f\t>=1\t%.0f ns per try_acquire + release\n",
       1.0 / total, total * 1000
