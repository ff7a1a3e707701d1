package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Redis store: every decision is one atomic script call on the server, so a fleet of processes
 * shares each limit exactly. One node ({@code redis://}, {@code rediss://} with certificate
 * verification, ACL {@code redis://user:password@host}), a cluster from seed nodes, or Sentinel;
 * the options are core's ({@code docs/redis.md}) under the same names.
 *
 * <pre>{@code
 * try (RedisStore redis = RedisStore.builder("redis://127.0.0.1:6379").timeout(Duration.ofMillis(250)).connect()) { ... }
 * }</pre>
 */
public final class RedisStore implements Store {
    private final long h;

    private RedisStore(long h) {
        this.h = h;
        Handles.register(this, h, Native::storeFree);
    }

    /** A builder for a store at {@code url} (a cluster's seed nodes or the sentinels: several URLs). */
    public static Builder builder(String... urls) {
        return new Builder(urls);
    }

    @Override
    public long handle() {
        return h;
    }

    /** Closes the connections, blocking; later calls throw {@link StoreUnavailableException}. */
    @Override
    public void close() {
        try {
            Native.storeClose(h);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** How to reach Redis. */
    public enum Mode {
        /** One node (exactly one URL). */
        STANDALONE,
        /** A Redis Cluster; the URLs are seed nodes. */
        CLUSTER,
        /** Sentinel; the URLs are sentinels, and {@link Builder#serviceName} names the master. */
        SENTINEL
    }

    /** How scripts run: Redis Functions where the server allows them, else {@code EVALSHA}. */
    public enum Scripting {
        /** Functions on Redis >= 7 when loadable, else scripts (the default). */
        AUTO,
        /** Functions only ({@code FCALL}). */
        FUNCTIONS,
        /** Scripts only ({@code EVALSHA}, {@code EVAL} on {@code NOSCRIPT}). */
        EVAL
    }

    /** The connection options and the defaults limiters on the store take. */
    public static final class Builder {
        private final List<String> urls = new ArrayList<>();
        private final Map<String, Object> o = new LinkedHashMap<>();

        private Builder(String... urls) {
            if (urls == null || urls.length == 0) throw new ConfigInvalidException("urls must name at least one Redis", -1);
            for (String u : urls) {
                if (u == null) throw new ConfigInvalidException("urls must not contain null", -1);
                this.urls.add(u);
            }
        }

        /** Standalone (default), cluster or sentinel. */
        public Builder mode(Mode mode) {
            o.put("mode", nonNull("mode", mode).name().toLowerCase());
            return this;
        }

        /** The Sentinel service whose master to use (sentinel mode only). */
        public Builder serviceName(String name) {
            o.put("serviceName", nonNull("serviceName", name));
            return this;
        }

        /** A PEM file of CAs to trust for {@code rediss://} instead of the system roots. */
        public Builder tlsCaFile(Path file) {
            o.put("tlsCaFile", nonNull("tlsCaFile", file).toString());
            return this;
        }

        /** A PEM client certificate and its key, for mutual TLS. */
        public Builder tlsClientCertificate(Path certFile, Path keyFile) {
            o.put("tlsCertFile", nonNull("tlsCertFile", certFile).toString());
            o.put("tlsKeyFile", nonNull("tlsKeyFile", keyFile).toString());
            return this;
        }

        /** Functions or scripts (default auto). */
        public Builder scripting(Scripting scripting) {
            o.put("scripting", nonNull("scripting", scripting).name().toLowerCase());
            return this;
        }

        /** The longest wait for any one call, connecting included (default 1 s); past it, {@code store_unavailable}, never retried. */
        public Builder timeout(Duration timeout) {
            o.put("timeoutMs", Strategy.wholeMs("timeout", timeout));
            return this;
        }

        /** Limiters on this store read time from Redis ({@code TIME}) by default. */
        public Builder serverClock(boolean on) {
            o.put("serverClock", on);
            return this;
        }

        /** What limiters on this store answer when Redis cannot, by default. */
        public Builder failPolicy(FailPolicy policy) {
            o.put("failPolicy", nonNull("failPolicy", policy).wire());
            return this;
        }

        /** Expire keys on the callers' clock instead of Redis's (conformance replays and tests only: serialises every call). */
        public Builder deterministicReplay(boolean on) {
            o.put("deterministicReplay", on);
            return this;
        }

        /**
         * Makes each charge durable before it is admitted: {@code replicas} replicas (0–64; 0, the
         * default, turns it off) must acknowledge the call's writes within {@link #durableTimeout},
         * else the call fails with {@code store_unavailable} and the fail policy decides.
         */
        public Builder durableReplicas(int replicas) {
            o.put("durableReplicas", (long) replicas);
            return this;
        }

        /** How long the server waits for those replicas (default 100 ms; less than {@link #timeout}). */
        public Builder durableTimeout(Duration timeout) {
            o.put("durableTimeoutMs", Strategy.wholeMs("durableTimeout", timeout));
            return this;
        }

        /** Sentinel mode: the password the sentinels themselves require; the URLs' credentials stay the master's. */
        public Builder sentinelPassword(String password) {
            o.put("sentinelPassword", nonNull("sentinelPassword", password));
            return this;
        }

        /** Sentinel mode: the sentinels' ACL user for {@link #sentinelPassword} (default: their default user). */
        public Builder sentinelUsername(String username) {
            o.put("sentinelUsername", nonNull("sentinelUsername", username));
            return this;
        }

        /** Connects, blocking until connected or {@link StoreUnavailableException}. */
        public RedisStore connect() {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("urls", new ArrayList<Object>(urls));
            c.putAll(o);
            return new RedisStore(Native.redisStoreConnect(Json.write(c).getBytes(StandardCharsets.UTF_8)));
        }

        private static <T> T nonNull(String name, T v) {
            if (v == null) throw new ConfigInvalidException(name + " must not be null", -1);
            return v;
        }
    }
}
