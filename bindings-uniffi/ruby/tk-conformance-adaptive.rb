# frozen_string_literal: true

# tk-conformance's half for the adaptive concurrency vectors ("format": "throttlekit-adaptive/1",
# conformance-vectors/adaptive): each case builds an AdaptiveLimiter on a virtual clock from its
# config and replays acquire / release / drop / advance through the public Ruby API, comparing
# the limit and in-flight count (and granted / released, or the error code) after each event.
# A "drop" is a permit left to the garbage collector, as a Ruby caller would leak it: the runner
# collects until its finalizer has released it (core counts the leak).

module TkConformance
  module Adaptive
    FORMAT = "throttlekit-adaptive/1"
    FILE_FIELDS = %w[format comment cases].freeze
    CASE_FIELDS = %w[id comment config expectError events].freeze
    EVENT_FIELDS = %w[op permit partition outcome rttUs us expect expectError].freeze
    EXPECT_FIELDS = %w[granted released limit inflight].freeze

    def self.replay(data, report)
      TkConformance.fields(data, FILE_FIELDS, "adaptive file")
      data.fetch("cases").each { |c| replay_case(TkConformance.fields(c, CASE_FIELDS, "adaptive case"), report) }
    end

    def self.replay_case(c, report)
      begin
        limiter = TK::AdaptiveLimiter.new_virtual(JSON.generate(c["config"]))
      rescue TK::ThrottleKitError => e
        return e.code == c["expectError"] ? report.ok : report.fail("#{c['id']}: expected #{c['expectError']}, got #{e}")
      end
      return report.fail("#{c['id']}: expected error #{c['expectError']}, got a limiter") if c["expectError"]

      held = {}
      (c["events"] || []).each_with_index do |e, i|
        TkConformance.fields(e, EVENT_FIELDS, "#{c['id']} event #{i}")
        want = e.key?("expectError") ? "error #{e['expectError']}" : describe(e["expect"])
        got = begin
          run(limiter, held, e)
        rescue TK::ThrottleKitError => err
          "error #{err.code}"
        end
        want == got ? report.ok : report.fail("#{c['id']} event #{i} (#{e['op']}): expected #{want}, got #{got}")
      end
    end

    def self.run(limiter, held, e)
      name = e["permit"] || ""
      granted = released = nil
      case e["op"]
      when "advance" then limiter.advance_virtual((e["us"] || 0) * 1000)
      when "acquire"
        admission = limiter.acquire(partition: e["partition"])
        granted = !admission.permit.nil?
        if granted && held.key?(name)
          held[name] = admission.permit
          collect(limiter, limiter.inflight - 1)
        elsif granted
          held[name] = admission.permit
        end
      when "drop"
        collect(limiter, limiter.inflight - 1) if held.delete(name)
      when "release"
        permit = held[name] or return "error config_invalid"
        released = if e.key?("rttUs")
                     permit.release_with_rtt_ns(e["outcome"].to_s, e["rttUs"] * 1000)
                   else
                     permit.release(e["outcome"].to_s)
                   end
      else raise FormatError, "unknown adaptive op #{e['op']}"
      end
      state(granted, released, limiter.limit, limiter.inflight)
    end

    # Runs the collector until a dropped permit's finalizer has brought in-flight to `target`.
    def self.collect(limiter, target)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
      while limiter.inflight > target && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        GC.start(full_mark: true, immediate_sweep: true)
        sleep 0.001
      end
    end

    def self.describe(expect)
      x = TkConformance.fields(expect, EXPECT_FIELDS, "expect")
      state(x["granted"], x["released"], x["limit"], x["inflight"])
    end

    def self.state(granted, released, limit, inflight)
      "granted=#{granted.inspect} released=#{released.inspect} limit=#{limit} inflight=#{inflight}"
    end
  end
end
