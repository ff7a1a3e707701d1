package dev.throttlekit;

import dev.throttlekit.internal.Native;
import java.nio.charset.StandardCharsets;

/**
 * The HTTP edge's pure functions from core, through their JSON entry points (the same ones the
 * HTTP conformance vectors exercise): response header lines for decisions, and a request's client
 * key from its peer address and forwarding headers. Middleware calls these and computes nothing
 * itself ({@code docs/http.md} has the request and answer formats).
 */
public final class Http {
    private Http() {}

    /** Core's {@code headers_json}: a HeadersRequest in, the header lines {@code [[name, value], ...]} out. */
    public static String headersJson(String request) {
        return call(0, request);
    }

    /** Core's {@code client_key_json}: a ClientKeyRequest in, the key out. */
    public static String clientKeyJson(String request) {
        return call(1, request);
    }

    private static String call(int which, String request) {
        if (request == null) throw new ConfigInvalidException("request must not be null", -1);
        return new String(Native.http(which, request.getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8);
    }
}
