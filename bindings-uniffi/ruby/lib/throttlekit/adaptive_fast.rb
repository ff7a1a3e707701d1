# frozen_string_literal: true

# AdaptiveLimiter#try_acquire and the permit's release over plain C functions that take and
# return integers (src/adaptive_fast.rs), instead of uniffi's generated calls: those cost two
# FFI calls, a call-status struct and RustBuffers per method, and a native object with a GC
# finalizer per permit (13 to 17 µs per acquire + release; docs/adaptive.md, "Speed").
#
# A permit here is a plain Ruby object over an id, and is also its own admission (#permit is
# itself, #rejection nil), so a granted try_acquire makes one Ruby object. A permit dropped
# without a release is found without a finalizer per object: after a garbage collection, the
# next #inflight, #metrics or refused #try_acquire hands core the ids of the permits still
# reachable, and core releases, as `ignore` and counted as leaked, those missing from two such
# sweeps in a row (a permit another thread was just granted may not have its object yet).

require "ffi"

module Throttlekit
  # The fast path's functions (every one a panic boundary in Rust).
  module AdaptiveFast
    extend FFI::Library
    ffi_lib ENV.fetch("THROTTLEKIT_LIB") { File.expand_path("../libthrottlekit_uniffi.so", __dir__) }
    attach_function :tk_rb_adaptive_partition, %i[uint64 string], :int32
    attach_function :tk_rb_adaptive_try_acquire, %i[uint64 int32], :int64
    attach_function :tk_rb_adaptive_rejected, %i[uint32], :uint64
    attach_function :tk_rb_adaptive_release, %i[uint64 int64 string int32 int64], :int32
    attach_function :tk_rb_adaptive_sweep, %i[uint64 pointer size_t], :uint64
    attach_function :tk_rb_adaptive_held, %i[uint64], :uint64
    attach_function :tk_rb_adaptive_last_error, %i[pointer size_t], :size_t

    # Raises the calling thread's latest error: core's config_invalid, or a RuntimeError for a
    # panic caught at the boundary.
    def self.raise_last_error
      buf = FFI::MemoryPointer.new(:uint8, 1024)
      text = buf.read_string(tk_rb_adaptive_last_error(buf, 1024)).force_encoding(Encoding::UTF_8)
      raise ThrottleKitError.config_invalid(text.delete_prefix("config_invalid: ")) if text.start_with?("config_invalid: ")

      raise text
    end

    # The rejection core just gave this thread.
    def self.rejection
      AdaptiveRejection.new(limit: tk_rb_adaptive_rejected(0), inflight: tk_rb_adaptive_rejected(1),
                            retry_after_ms: tk_rb_adaptive_rejected(2), retry_after_secs: tk_rb_adaptive_rejected(3))
    end
  end

  class AdaptiveLimiter
    # One admitted request, released once with its outcome ("success", "ignore", "dropped");
    # a second release returns false.
    class Permit
      attr_reader :limiter, :id

      def initialize(limiter, fast, id)
        @limiter = limiter
        @fast = fast
        @id = id
      end

      # A permit is its own admission.
      def permit
        self
      end

      def rejection
        nil
      end

      # Releases with the round trip measured by core; whether this call released it.
      def release(outcome)
        finish(outcome, 0, 0)
      end

      # Releases with a round trip the caller measured (negative: config_invalid, and the
      # permit stays held).
      def release_with_rtt_ns(outcome, rtt_ns)
        finish(outcome, 1, Throttlekit.uniffi_in_range(rtt_ns, "i64", -2**63, 2**63))
      end

      private

      def finish(outcome, has_rtt, rtt_ns)
        unless outcome.is_a?(String)
          raise ThrottleKitError.config_invalid("outcome must be a String, not #{outcome.inspect}")
        end

        r = AdaptiveFast.tk_rb_adaptive_release(@fast, @id, outcome, has_rtt, rtt_ns)
        AdaptiveFast.raise_last_error if r.negative?
        r == 1
      end
    end

    # The fast path in front of the generated methods (`super` is the generated one).
    module FastPath
      # A Permit (its own admission) or an AdaptiveAdmission with the rejection; never waits. An
      # unknown partition is core's config_invalid (through the generated call).
      def try_acquire(partition = nil)
        fast = (@tk_fast ||= fast_path)
        index = partition.nil? ? -1 : tk_partition_index(fast, partition)
        return super if index.nil?

        id = AdaptiveFast.tk_rb_adaptive_try_acquire(fast, index)
        return Permit.new(self, fast, id) if id.positive?

        AdaptiveFast.raise_last_error if id.negative?
        rejection = AdaptiveFast.rejection
        # Permits lost since the last collection may be what fills the limit: free them, and
        # try once more if that freed any.
        if tk_sweep_after_gc(fast).positive?
          id = AdaptiveFast.tk_rb_adaptive_try_acquire(fast, index)
          return Permit.new(self, fast, id) if id.positive?

          rejection = AdaptiveFast.rejection if id.zero?
        end
        AdaptiveAdmission.new(permit: nil, rejection: rejection)
      end

      def inflight
        tk_sweep_after_gc(@tk_fast ||= fast_path)
        super
      end

      def metrics
        tk_sweep_after_gc(@tk_fast ||= fast_path)
        super
      end

      private

      def tk_partition_index(fast, name)
        return nil unless name.is_a?(String)

        (@tk_partitions ||= {})[name] ||= begin
          i = AdaptiveFast.tk_rb_adaptive_partition(fast, name)
          i.negative? ? nil : i
        end
      end

      # After a garbage collection, releases (as leaked) the held permits no Ruby object names
      # any more; how many.
      def tk_sweep_after_gc(fast)
        gc = GC.count
        return 0 if @tk_swept_at == gc

        @tk_swept_at = gc
        return 0 if AdaptiveFast.tk_rb_adaptive_held(fast).zero?

        ids = []
        ObjectSpace.each_object(Permit) { |p| ids << p.id if p.limiter.equal?(self) }
        buf = FFI::MemoryPointer.new(:int64, [ids.size, 1].max)
        buf.write_array_of_int64(ids)
        AdaptiveFast.tk_rb_adaptive_sweep(fast, buf, ids.size)
      end
    end
    prepend FastPath
  end
end
