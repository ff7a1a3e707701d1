# frozen_string_literal: true

# throttlekit for Ruby: the uniffi-generated bindings (throttlekit/uniffi.rb, committed and
# checked for drift) plus the little they need to be safe and idiomatic. Nothing here computes
# a decision; every call goes to the Rust core.
#
#   require "throttlekit"
#   limiter = Throttlekit::Limiter.new(Throttlekit::Strategy.gcra(100, 60_000.0, 10),
#                                      Throttlekit::LimiterOptions.new(prefix: "api"))
#   d = limiter.check_blocking("user:42")   # d.allowed, d.retry_after_ms, ...
#
# The shared library is lib/libthrottlekit_uniffi.so in the gem (`make -C bindings-uniffi ruby`
# puts it there), or the file THROTTLEKIT_LIB names.

# The generated async helper waits on a pipe with IO#wait_readable, which Ruby 3.1 defines
# only once io/wait is loaded; the generated file does not load it.
require "io/wait"
require "ffi"

module Throttlekit
  # uniffi's Ruby generator attaches every native function without `blocking: true`, so a call
  # holds the GVL for its whole duration: a `check_blocking` waiting on Redis, or a
  # `schedule_blocking` sleeping until its departure, would stop every other Ruby thread.
  # Prepended before the generated module attaches its functions, this marks the ones that
  # may wait (the `*_blocking` methods and the constructors of the stores that connect or open
  # a file) as blocking, so Ruby-FFI releases the GVL around them. (A test checks that other
  # threads run meanwhile.)
  module ReleaseGvlWhileWaiting
    WAITING = %w[_blocking _redisstore_connect _postgresstore_new _sqlitestore_new].freeze

    def attach_function(name, *rest)
      if name.to_s.end_with?(*WAITING)
        rest << {} if rest.length == 2 # (args, returns) without options
        rest[-1] = rest[-1].merge(blocking: true) if rest[-1].is_a?(Hash)
      end
      super(name, *rest)
    end
  end

  module UniFFILib
    extend FFI::Library
    singleton_class.prepend(ReleaseGvlWhileWaiting)
  end
end

require_relative "throttlekit/uniffi"

module Throttlekit
  # Every error case (ConfigInvalid, StoreUnavailable, RateLimitExceeded, QueueFull,
  # NotImplemented) is a StandardError carrying `code`, `detail` and `retry_after_ms`. uniffi
  # makes ThrottleKitError a namespace module only; including it into each case lets callers
  # `rescue Throttlekit::ThrottleKitError => e` and branch on `e.code`.
  module ThrottleKitError
    constants.each do |name|
      klass = const_get(name)
      klass.include(self) if klass.is_a?(Class) && klass < StandardError
    end

    # `config_invalid` raised by this file for a value uniffi's Ruby converters would accept
    # wrongly.
    def self.config_invalid(detail)
      ConfigInvalid.new(code: "config_invalid", detail: "config_invalid: #{detail}", retry_after_ms: nil)
    end
  end

  # uniffi's generated integer converter calls `to_int`, which truncates a Float: a cost of 1.5
  # would silently become 1. Integers must be Integers here, as in every other binding; anything
  # else, or an Integer out of the parameter's range, is `config_invalid`.
  def self.uniffi_in_range(value, type_name, min, max)
    unless value.is_a?(Integer)
      raise ThrottleKitError.config_invalid("an integer argument must be an Integer, not #{value.inspect}")
    end
    unless min <= value && value < max
      raise ThrottleKitError.config_invalid("#{value} is out of range for #{type_name}")
    end
    value
  end
end

require_relative "throttlekit/adaptive"
require_relative "throttlekit/sql"
