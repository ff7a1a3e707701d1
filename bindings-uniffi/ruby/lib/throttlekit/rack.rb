# frozen_string_literal: true

# Throttlekit::Rack: Rack middleware in rack-attack's everyday shapes (throttle, safelist,
# blocklist, custom responders) whose every decision, header line and problem body comes from
# the Rust core's HTTP edge, so a Rails, Sinatra or plain Rack app answers byte for byte what
# every other throttlekit middleware answers.
#
#   # config.ru (Rails: config.middleware.use Throttlekit::Rack do |tk| ... end)
#   require "throttlekit/rack"
#   use Throttlekit::Rack do |tk|
#     tk.safelist("healthz") { |req| req.path == "/healthz" }
#     tk.throttle("req/ip", limit: 300, period: 300)             # key: the client IP
#     tk.throttle("logins/email", limit: 5, period: 60) do |req|  # key: what the block returns
#       req.params["email"] if req.post? && req.path == "/login"
#     end
#   end
#
# Everything is validated when the app is built (boot), never at the first request: a bad
# option raises Throttlekit::ThrottleKitError with code "config_invalid" naming the setting.
# docs/http-ruby.md, "Ruby: Rack middleware", has every option.

require "json"
require "rack"
require_relative "../throttlekit"

module Throttlekit
  class Rack
    # Rack 3 requires lower-case response header names; Rack 2 takes core's spelling as is.
    DOWNCASE_NAMES = ::Rack.release.split(".").first.to_i >= 3

    FAIL_POLICIES = {
      raise: FailPolicy::RAISE, open: FailPolicy::FAIL_OPEN, closed: FailPolicy::FAIL_CLOSED
    }.freeze

    # What the on_limited hook is told about each denied request (in shadow mode too).
    LimitedEvent = Struct.new(:throttle, :key, :decision, :shadow, :request, keyword_init: true)

    # One `throttle`: its name, its limiter, and the block that derives its key (nil: core's
    # client key).
    Throttle = Struct.new(:name, :limiter, :key_block, :cost_block)

    # The settings block's receiver (`use Throttlekit::Rack do |tk| ... end`).
    class Config
      attr_accessor :store, :trusted_proxies, :ipv6_prefix, :forwarded_header, :headers, :fail_policy,
                    :shadow, :throttled_responder, :blocklisted_responder
      attr_reader :throttles, :safelists, :blocklists, :limited_hooks

      def initialize
        @throttles = []
        @safelists = []
        @blocklists = []
        @limited_hooks = []
        @headers = {}
        @fail_policy = :raise
        @shadow = false
      end

      # Limits the requests for which the block returns a key (all of them without a block,
      # keyed by client IP) to `limit` per `period` seconds, bursts of `limit` (GCRA), or to a
      # `rate:` as core reads it ("10/second", "1 per 5 minutes"), or by any `strategy:` (a
      # Throttlekit::Strategy), or through a ready `limiter:` (its own store, prefix, mode). A block returning nil or false leaves the request to the other
      # rules. `cost:` is a number or a block of the request.
      def throttle(name, limit: nil, period: nil, rate: nil, strategy: nil, limiter: nil, cost: 1, &key_block)
        @throttles << { name: name.to_s, limit: limit, period: period, rate: rate, strategy: strategy,
                        limiter: limiter, cost: cost, key_block: key_block }
      end

      # Requests for which the block is true skip every throttle (and get no fields).
      def safelist(name = nil, &block)
        raise Throttlekit::ThrottleKitError.config_invalid("safelist #{name.inspect} needs a block") unless block

        @safelists << block
      end

      # Requests for which the block is true are answered 403 (blocklisted_responder).
      def blocklist(name = nil, &block)
        raise Throttlekit::ThrottleKitError.config_invalid("blocklist #{name.inspect} needs a block") unless block

        @blocklists << block
      end

      # Called with a LimitedEvent for every denied request, also in shadow mode.
      def on_limited(&block)
        @limited_hooks << block
      end

      # Connects a Redis store (any URL every binding takes: redis://, rediss://, several seed
      # nodes for a cluster) for the throttles built here.
      def redis(url, timeout_ms: 500)
        redis = Throttlekit::RedisStore.connect(url, Throttlekit::RedisStoreOptions.new(timeout_ms: timeout_ms))
        @store = Throttlekit::Store::REDIS.new(store: redis)
      end
    end

    def initialize(app, **options, &block)
      @app = app
      config = Config.new
      options.each { |k, v| config.public_send("#{k}=", v) }
      block&.call(config)
      @safelists = config.safelists
      @blocklists = config.blocklists
      @limited_hooks = config.limited_hooks
      @throttled_responder = config.throttled_responder
      @blocklisted_responder = config.blocklisted_responder || ->(_req) { [403, { "Content-Type" => "text/plain" }, ["Forbidden\n"]] }
      @edge = HttpEdge.new(header_options_json(config.headers), client_key_options_json(config),
                           fail_policy(config.fail_policy), config.shadow ? true : false)
      store = config.store || Throttlekit::Store::MEMORY.new(store: Throttlekit::MemoryStore.new(nil))
      @throttles = config.throttles.map { |t| build_throttle(t, store) }
      invalid("throttle", "at least one throttle is needed") if @throttles.empty?
    end

    def call(env)
      req = ::Rack::Request.new(env)
      return @app.call(env) if @safelists.any? { |s| s.call(req) }
      return @blocklisted_responder.call(req) if @blocklists.any? { |b| b.call(req) }

      forward_lines = nil
      @throttles.each do |t|
        key = key_of(t, req)
        next unless key

        answer = if t.limiter.is_a?(MultiLimiter)
                   @edge.check_multi_blocking(t.limiter, Array(key).map(&:to_s), cost_of(t, req))
                 else
                   @edge.check_blocking(t.limiter, key, cost_of(t, req))
                 end
        tell_hooks(t, key, answer, req) if answer.action == "deny" || answer.action == "shadow"
        case answer.action
        when "forward", "shadow"
          forward_lines ||= answer.lines
        when "deny"
          return @throttled_responder.call(req, answer) if @throttled_responder

          return respond(answer.status, answer.lines, answer.content_type, answer.body)
        else # "unavailable"
          return respond(answer.status, [], answer.content_type, answer.body)
        end
      end
      status, headers, body = @app.call(env)
      forward_lines&.each { |l| headers[name_of(l.name)] = l.value }
      [status, headers, body]
    rescue ThrottleKitError => e
      failure(e.code)
    end

    private

    # The key of request `req` under throttle `t`: the block's (nil: the throttle does not
    # apply), else core's client key from the peer and the forwarding headers.
    def key_of(throttle, req)
      if throttle.key_block
        key = throttle.key_block.call(req)
        key.is_a?(Array) || !key ? key : key.to_s
      else
        env = req.env
        @edge.client_key(env["REMOTE_ADDR"].to_s, env["HTTP_X_FORWARDED_FOR"].to_s, env["HTTP_FORWARDED"].to_s)
      end
    end

    def cost_of(throttle, req)
      throttle.cost_block.respond_to?(:call) ? throttle.cost_block.call(req) : throttle.cost_block
    end

    def tell_hooks(throttle, key, answer, req)
      return if @limited_hooks.empty?

      event = LimitedEvent.new(throttle: throttle.name, key: key, decision: answer.decision,
                               shadow: answer.action == "shadow", request: req)
      @limited_hooks.each { |h| h.call(event) }
    end

    def respond(status, lines, content_type, body)
      headers = {}
      lines.each { |l| headers[name_of(l.name)] = l.value }
      headers[name_of("Content-Type")] = content_type if content_type
      [status, headers, [body.to_s]]
    end

    # An error the edge could not decide past (a key block's bad key, a peer that is not an
    # address): core's status and problem body for its code.
    def failure(code)
      answer = @edge.error_answer(code)
      respond(answer.status, [], "application/problem+json", answer.body)
    end

    def name_of(name)
      DOWNCASE_NAMES ? name.downcase : name
    end

    def build_throttle(spec, store)
      name = spec[:name]
      invalid("throttle name", "must not be empty") if name.empty?
      cost = spec[:cost]
      unless cost.respond_to?(:call) || cost.is_a?(Integer)
        invalid("throttle #{name.inspect} cost", "must be an Integer or a block")
      end
      limiter = spec[:limiter] || Limiter.new(strategy_of(spec), LimiterOptions.new(store: store, prefix: name))
      Throttle.new(name, limiter, spec[:key_block], cost)
    end

    def strategy_of(spec)
      return spec[:strategy] if spec[:strategy]
      return Strategy.from_rate(spec[:rate].to_s, nil) if spec[:rate]

      limit, period = spec[:limit], spec[:period]
      unless limit.is_a?(Integer) && period.respond_to?(:to_i)
        invalid("throttle #{spec[:name].inspect}", "needs limit: (an Integer) and period: (seconds), rate:, or strategy:")
      end
      # period is whole seconds (rack-attack's unit, ActiveSupport durations included).
      Strategy.gcra(limit, period.to_i * 1000.0, limit)
    end

    def header_options_json(headers)
      invalid("headers", "must be a Hash") unless headers.is_a?(Hash)
      JSON.generate(headers.transform_keys { |k| camel(k) })
    end

    def client_key_options_json(config)
      opts = {}
      opts["trustedProxies"] = Array(config.trusted_proxies) if config.trusted_proxies
      opts["ipv6Prefix"] = config.ipv6_prefix if config.ipv6_prefix
      opts["forwardedHeader"] = config.forwarded_header if config.forwarded_header
      JSON.generate(opts)
    end

    def fail_policy(value)
      FAIL_POLICIES.fetch(value.to_s.to_sym) do
        invalid("fail_policy", "must be one of #{FAIL_POLICIES.keys.join(", ")}, not #{value.inspect}")
      end
    end

    # policy_name -> policyName: the JSON form every binding takes.
    def camel(key)
      parts = key.to_s.split("_")
      parts.first + parts.drop(1).map(&:capitalize).join
    end

    def invalid(setting, problem)
      raise ThrottleKitError.config_invalid("Throttlekit::Rack #{setting}: #{problem}")
    end
  end
end
