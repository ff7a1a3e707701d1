# frozen_string_literal: true

# Throttlekit::RackShedder: Rack middleware that sheds load with an adaptive concurrency limiter
# (docs/adaptive.md). Each request takes a permit (or waits up to `wait_ms:` for one); a refused
# request is answered 503 with Retry-After from core's rejection and never reaches the app. The
# permit is released when the response body is closed (the whole response was served): a 503 or
# 504 from the app, or an exception, is "dropped" (a congestion signal), anything else
# "success"; round trips are measured by core.
#
#   # config.ru
#   require "throttlekit/rack_shedder"
#   use Throttlekit::RackShedder, limiter: Throttlekit::AdaptiveLimiter.build(algorithm: "gradient2")

require "rack"
require_relative "../throttlekit"

module Throttlekit
  class RackShedder
    # `partition:` (a callable taking the Rack env) names each request's partition (nil: none;
    # an unknown one is answered 500: a configuration mistake, not load).
    def initialize(app, limiter:, partition: nil, wait_ms: nil)
      @app = app
      @limiter = limiter
      @partition = partition
      @wait_ms = wait_ms
    end

    def call(env)
      begin
        admission = @limiter.acquire(partition: @partition&.call(env), timeout_ms: @wait_ms)
      rescue ThrottleKitError::ConfigInvalid
        return [500, {}, []]
      end
      permit = admission.permit
      return [503, { retry_after => admission.rejection.retry_after_secs.to_s }, []] unless permit

      serve(env, permit)
    end

    private

    def serve(env, permit)
      status, headers, body = @app.call(env)
      outcome = [503, 504].include?(status.to_i) ? "dropped" : "success"
      [status, headers, ::Rack::BodyProxy.new(body) { permit.release(outcome) }]
    rescue Exception # rubocop:disable Lint/RescueException -- released, then re-raised as is
      permit.release("dropped")
      raise
    end

    # Rack 3 requires lower-case header names.
    def retry_after
      ::Rack.release.split(".").first.to_i >= 3 ? "retry-after" : "Retry-After"
    end
  end
end
