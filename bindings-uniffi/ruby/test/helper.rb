# frozen_string_literal: true

# What the Ruby test scripts share: `test` runs a named check and counts it, `assert` and
# `expect_code` fail it, and `finish` prints `N passed, M failed` and exits with the result.
# Plain Ruby, no test framework needed.

require_relative "../lib/throttlekit"

TK = Throttlekit
$passed = 0
$failed = 0

def test(name)
  yield
  $passed += 1
rescue StandardError, ScriptError => e
  $failed += 1
  puts "FAIL #{name}: #{e.class}: #{e}"
  puts e.backtrace.first(3).map { |l| "    #{l}" } if ENV["TK_TEST_BACKTRACE"]
end

def assert(cond, what = "assertion failed")
  raise what unless cond
end

# Runs the block, which must raise a ThrottleKitError of `code`; returns it.
def expect_code(code)
  yield
rescue TK::ThrottleKitError => e
  raise "expected #{code}, got #{e.code}: #{e}" unless e.code == code

  e
else
  raise "expected #{code}, nothing was raised"
end

# Prints the totals (after `label: `, if given) and exits non-zero when a check failed.
def finish(label = nil)
  puts "#{label ? "#{label}: " : ""}#{$passed} passed, #{$failed} failed"
  exit($failed.zero? ? 0 : 1)
end
