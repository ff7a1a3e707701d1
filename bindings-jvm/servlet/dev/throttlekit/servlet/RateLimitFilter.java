package dev.throttlekit.servlet;

import dev.throttlekit.HttpLimiter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/**
 * A servlet {@link Filter} (Servlet 3.1+/4, {@code javax.servlet}) that limits requests by client
 * IP with an {@link HttpLimiter}: it reads the peer address and the forwarding header, and writes
 * what core computed — the RateLimit fields on every response, and on a denial 429 with
 * {@code Retry-After} and an RFC 9457 body (503 when the store is down and the policy raises).
 * It computes no header value itself.
 *
 * <pre>{@code
 * Limiter limiter = Limiter.builder(Strategy.gcra(5, Duration.ofMinutes(1), 5)).build();
 * context.addFilter(new FilterHolder(new RateLimitFilter(HttpLimiter.builder(limiter).build())), "/limited", ...);
 * }</pre>
 */
public final class RateLimitFilter implements Filter {
    private final HttpLimiter edge;

    /** A filter over {@code edge}. */
    public RateLimitFilter(HttpLimiter edge) {
        this.edge = edge;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
            chain.doFilter(request, response);
            return;
        }
        List<String> forwarded = Collections.list(req.getHeaders(edge.forwardedHeader()));
        HttpLimiter.Verdict v = edge.check(req.getRemoteAddr(), forwarded);
        for (HttpLimiter.Header h : v.headers()) res.addHeader(h.name(), h.value());
        if (v.outcome() == HttpLimiter.Outcome.FORWARD) {
            chain.doFilter(request, response);
            return;
        }
        byte[] body = v.problemBody().getBytes(StandardCharsets.UTF_8);
        res.setStatus(v.status());
        res.setContentType(HttpLimiter.Verdict.PROBLEM_CONTENT_TYPE);
        res.setContentLength(body.length);
        res.getOutputStream().write(body);
    }
}
