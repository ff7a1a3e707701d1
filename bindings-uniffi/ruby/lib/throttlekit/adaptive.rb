# frozen_string_literal: true

# The adaptive concurrency limiter in Ruby's shapes (docs/adaptive.md): keyword options and a
# block form over the generated Throttlekit::AdaptiveLimiter. The options are core's (snake_case
# here, camelCase in core's JSON) and core validates them: a bad one raises
# Throttlekit::ThrottleKitError with code "config_invalid" naming the field as written here.
#
#   limiter = Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2")
#   limiter.acquire do |permit|        # Throttlekit::Rejected when the limit is full
#     call_the_service                 # returns normally: "success"; raises: "ignore"
#     permit.release("dropped") if timed_out   # or say it yourself (a second release is a no-op)
#   end

require "json"
require_relative "adaptive_fast"

module Throttlekit
  # Raised by the block form of AdaptiveLimiter#acquire when no permit was granted; carries
  # core's AdaptiveRejection (limit, inflight, retry_after_ms, retry_after_secs).
  class Rejected < StandardError
    attr_reader :rejection

    def initialize(rejection)
      @rejection = rejection
      super("rejected: #{rejection.inflight} in flight of a limit of #{rejection.limit}")
    end
  end

  class AdaptiveLimiter
    # A limiter from keyword options (absent: core's defaults). `partitions:` is a list of
    # `{name:, percent:}`; `virtual_clock: true` measures round trips on a clock that moves only
    # with #advance_virtual (tests, the vectors).
    def self.build(virtual_clock: false, **options)
      json = JSON.generate(camel_case(options))
      virtual_clock ? new_virtual(json) : new(json)
    rescue ThrottleKitError::ConfigInvalid => e
      # Core names the fields as its JSON does; the caller wrote them as keywords.
      raise ThrottleKitError.config_invalid(snake_case(e.detail.delete_prefix("config_invalid: ")))
    end

    # The inverse of camel_case, for the field names in core's messages.
    def self.snake_case(text)
      text.gsub(/(?<=[a-z0-9])([A-Z])/) { "_#{Regexp.last_match(1).downcase}" }
    end
    private_class_method :snake_case

    def self.camel_case(value)
      case value
      when Hash then value.to_h { |k, v| [k.to_s.gsub(/_([a-z])/) { Regexp.last_match(1).upcase }, camel_case(v)] }
      when Array then value.map { |v| camel_case(v) }
      else value
      end
    end
    private_class_method :camel_case

    # Without a block: the AdaptiveAdmission (`permit` or `rejection`), from try_acquire, or from
    # acquire_blocking when `timeout_ms:` is given. With a block: yields the permit and releases
    # it when the block ends ("success" when it returns, "ignore" when it raises, unless the
    # block released it first) and returns the block's value; raises Throttlekit::Rejected when
    # refused.
    def acquire(partition: nil, timeout_ms: nil)
      admission = timeout_ms ? acquire_blocking(timeout_ms, partition) : try_acquire(partition)
      return admission unless block_given?

      permit = admission.permit or raise Rejected, admission.rejection
      outcome = "ignore"
      begin
        result = yield permit
        outcome = "success"
        result
      ensure
        permit.release(outcome)
      end
    end
  end
end
