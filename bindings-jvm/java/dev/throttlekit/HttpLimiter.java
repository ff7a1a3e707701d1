package dev.throttlekit;

import dev.throttlekit.internal.Json;
import dev.throttlekit.internal.Keys;
import dev.throttlekit.internal.Native;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A limiter at the HTTP edge, for middleware of any framework (the servlet filter uses it): per
 * request it derives the client key from the peer address and the trusted proxies' forwarding
 * header, checks it, and returns the response header lines and, on a denial, the RFC 9457 body,
 * all computed by core (the same bytes as every other language's middleware). The middleware
 * only copies them into its response.
 */
public final class HttpLimiter {
    private final Limiter limiter;
    private final long h;
    private final String forwardedHeader;

    private HttpLimiter(Builder b) {
        Map<String, Object> headers = new LinkedHashMap<>();
        headers.put("family", b.family);
        headers.put("policyName", b.policyName);
        if (b.partitionKeySecret != null) headers.put("partitionKeySecret", b.partitionKeySecret);
        Map<String, Object> client = new LinkedHashMap<>();
        client.put("trustedProxies", new ArrayList<Object>(b.trustedProxies));
        client.put("ipv6Prefix", (long) b.ipv6Prefix);
        client.put("forwardedHeader", b.forwardedHeader);
        h = Native.httpEdgeNew(Json.write(headers).getBytes(StandardCharsets.UTF_8), Json.write(client).getBytes(StandardCharsets.UTF_8));
        Handles.register(this, h, Native::httpEdgeFree);
        limiter = b.limiter;
        forwardedHeader = new String(Native.httpEdgeHeader(h), StandardCharsets.UTF_8);
    }

    /** A builder over {@code limiter}: draft-10 fields, policy "default", no trusted proxies, unless set. */
    public static Builder builder(Limiter limiter) {
        return new Builder(limiter);
    }

    /** The forwarding header (lower case) whose values {@link #check} takes: {@code x-forwarded-for} or {@code forwarded}. */
    public String forwardedHeader() {
        return forwardedHeader;
    }

    /** Checks a request of cost 1 from {@code peer} (the socket's address) with the forwarding header's values, in order. */
    public Verdict check(String peer, List<String> forwardedValues) {
        return check(peer, forwardedValues, 1);
    }

    /** Checks a request of {@code cost}. */
    public Verdict check(String peer, List<String> forwardedValues, long cost) {
        if (peer == null) throw new ConfigInvalidException("peer must not be null", -1);
        byte[] out;
        try {
            out = Native.httpEdgeCheck(h, limiter.handle(), peer.getBytes(StandardCharsets.UTF_8),
                    Keys.pack(forwardedValues == null ? List.of() : forwardedValues), cost);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(limiter);
        }
        // Native.httpEdgeCheck's packed verdict (bindings-jvm/src/http.rs): the outcome, whether a
        // decision follows, six longs, then the key, the body and the header lines as strings.
        ByteBuffer in = ByteBuffer.wrap(out).order(ByteOrder.LITTLE_ENDIAN);
        Outcome outcome = switch (in.get()) {
            case 0 -> Outcome.FORWARD;
            case 1 -> Outcome.DENY;
            default -> Outcome.UNAVAILABLE;
        };
        boolean hasDecision = in.get() != 0;
        long[] a = new long[6];
        for (int i = 0; i < 6; i++) a[i] = in.getLong();
        String key = string(in), body = string(in);
        List<Header> lines = new ArrayList<>(4);
        while (in.hasRemaining()) lines.add(new Header(string(in), string(in)));
        return new Verdict(outcome, key, hasDecision ? Optional.of(Decision.of(a, 0)) : Optional.empty(), List.copyOf(lines), body);
    }

    /** The next length-prefixed UTF-8 string of a packed verdict. */
    private static String string(ByteBuffer in) {
        int len = in.getInt();
        String s = new String(in.array(), in.position(), len, StandardCharsets.UTF_8);
        in.position(in.position() + len);
        return s;
    }

    /** What to do with a request. */
    public enum Outcome {
        /** Admitted: set the headers, pass the request on. */
        FORWARD,
        /** Denied: answer 429 with the headers and the problem body. */
        DENY,
        /** The store could not answer and the fail policy is {@code RAISE}: answer 503 with the problem body. */
        UNAVAILABLE
    }

    /** One response header line. */
    public record Header(String name, String value) {}

    /** A request's verdict: the outcome, the client key, the decision, the header lines and the problem body ({@code ""} when forwarded). */
    public record Verdict(Outcome outcome, String key, Optional<Decision> decision, List<Header> headers, String problemBody) {
        /** The HTTP status to answer with when not forwarding: 429 or 503 (200 when forwarded). */
        public int status() {
            return switch (outcome) {
                case FORWARD -> 200;
                case DENY -> 429;
                case UNAVAILABLE -> 503;
            };
        }

        /** The problem body's media type. */
        public static final String PROBLEM_CONTENT_TYPE = "application/problem+json";
    }

    /** How the edge is configured. */
    public static final class Builder {
        private final Limiter limiter;
        private String family = "draft-10";
        private String policyName = "default";
        private String partitionKeySecret;
        private final List<String> trustedProxies = new ArrayList<>();
        private int ipv6Prefix = 64;
        private String forwardedHeader = "x-forwarded-for";

        private Builder(Limiter limiter) {
            if (limiter == null) throw new ConfigInvalidException("limiter must not be null", -1);
            this.limiter = limiter;
        }

        /** The header family: {@code draft-10} (default), {@code draft-7}, {@code draft-6} or {@code legacy}. */
        public Builder family(String family) {
            this.family = family;
            return this;
        }

        /** The policy name in the fields (default {@code "default"}). */
        public Builder policyName(String name) {
            this.policyName = name;
            return this;
        }

        /** Sends {@code pk}: HMAC-SHA256 of the key under this secret (draft-10). */
        public Builder partitionKeySecret(String secret) {
            this.partitionKeySecret = secret;
            return this;
        }

        /** CIDRs of the proxies whose forwarding header is believed (default none: the peer is the client). */
        public Builder trustedProxies(List<String> cidrs) {
            trustedProxies.clear();
            trustedProxies.addAll(cidrs);
            return this;
        }

        /** IPv6 clients are grouped by this prefix (default 64). */
        public Builder ipv6Prefix(int bits) {
            this.ipv6Prefix = bits;
            return this;
        }

        /** {@code x-forwarded-for} (default) or {@code forwarded} (RFC 7239). */
        public Builder forwardedHeader(String name) {
            this.forwardedHeader = name;
            return this;
        }

        /** The edge; bad options are {@link ConfigInvalidException} here, not per request. */
        public HttpLimiter build() {
            return new HttpLimiter(this);
        }
    }
}
