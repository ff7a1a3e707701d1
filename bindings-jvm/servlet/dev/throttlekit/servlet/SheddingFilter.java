package dev.throttlekit.servlet;

import dev.throttlekit.AdaptiveLimiter;
import dev.throttlekit.Admission;
import dev.throttlekit.Outcome;
import dev.throttlekit.Permit;
import dev.throttlekit.Rejection;
import java.io.IOException;
import java.time.Duration;
import java.util.function.Function;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/**
 * A servlet {@link Filter} (Servlet 3.1+/4, {@code javax.servlet}) that sheds load with an
 * {@link AdaptiveLimiter} (docs/adaptive.md): each request takes a permit (or waits up to
 * {@code wait} for one); a refused request is answered {@code 503 Service Unavailable} with
 * {@code Retry-After} from core's rejection and never reaches the chain. The permit is released
 * when the chain returns: a {@code 503} or {@code 504} from below, or an exception, is
 * {@link Outcome#DROPPED} (a congestion signal), anything else {@link Outcome#SUCCESS}; round
 * trips are measured by core. (An asynchronous request's permit is released when its
 * {@code doFilter} returns, before the async work ends.)
 *
 * <pre>{@code
 * AdaptiveLimiter limiter = AdaptiveLimiter.builder("gradient2").build();
 * context.addFilter(new FilterHolder(new SheddingFilter(limiter)), "/*", EnumSet.of(DispatcherType.REQUEST));
 * }</pre>
 */
public final class SheddingFilter implements Filter {
    private final AdaptiveLimiter limiter;
    private final Function<HttpServletRequest, String> partition;
    private final Duration wait;

    /** Sheds at once when the limit is full, with no partitions. */
    public SheddingFilter(AdaptiveLimiter limiter) {
        this(limiter, r -> "", Duration.ZERO);
    }

    /**
     * Names each request's partition ({@code ""}: none; an unknown one is answered 500: a
     * configuration mistake, not load) and waits up to {@code wait} for a permit before shedding.
     */
    public SheddingFilter(AdaptiveLimiter limiter, Function<HttpServletRequest, String> partition, Duration wait) {
        this.limiter = limiter;
        this.partition = partition;
        this.wait = wait;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
            chain.doFilter(request, response);
            return;
        }
        Admission a;
        try {
            String p = partition.apply(req);
            a = wait.isZero() ? limiter.tryAcquire(p) : limiter.acquire(p, wait);
        } catch (dev.throttlekit.ConfigInvalidException e) {
            res.sendError(HttpServletResponse.SC_INTERNAL_SERVER_ERROR);
            return;
        }
        if (a instanceof Rejection r) {
            res.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
            res.setHeader("Retry-After", Long.toString(r.retryAfterSecs()));
            return;
        }
        Permit permit = (Permit) a;
        Outcome outcome = Outcome.DROPPED; // an exception from the chain leaves it so
        try {
            chain.doFilter(request, response);
            int status = res.getStatus();
            boolean failed = status == HttpServletResponse.SC_SERVICE_UNAVAILABLE || status == HttpServletResponse.SC_GATEWAY_TIMEOUT;
            outcome = failed ? Outcome.DROPPED : Outcome.SUCCESS;
        } finally {
            permit.release(outcome);
        }
    }
}
