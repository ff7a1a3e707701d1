package dev.throttlekit.servlet;

import static org.junit.jupiter.api.Assertions.*;

import dev.throttlekit.AdaptiveLimiter;
import dev.throttlekit.AdaptiveMetrics;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import javax.servlet.DispatcherType;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;
import org.junit.jupiter.api.Test;

/** SheddingFilter on a real embedded Jetty, with a real HTTP client. */
class SheddingFilterTest {
    /** /slow parks until released; /fail answers 503 itself; /ok answers 200. */
    static final class Work extends HttpServlet {
        private static final long serialVersionUID = 1L;
        final transient CountDownLatch entered = new CountDownLatch(1);
        final transient CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger calls = new AtomicInteger();

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse res) {
            calls.incrementAndGet();
            switch (req.getPathInfo()) {
                case "/slow" -> {
                    entered.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                case "/fail" -> res.setStatus(503);
                default -> res.setStatus(200);
            }
        }
    }

    @Test
    void shedsWith503AndRetryAfterWhenTheLimitIsFull() throws Exception {
        AdaptiveLimiter limiter = AdaptiveLimiter.builder("fixed").initialLimit(1).build();
        Work work = new Work();
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.addServlet(new ServletHolder(work), "/w/*");
        context.addFilter(new FilterHolder(new SheddingFilter(limiter)), "/w/*", EnumSet.of(DispatcherType.REQUEST));
        server.setHandler(context);
        server.start();
        try {
            HttpClient client = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + connector.getLocalPort() + "/w";
            CompletableFuture<HttpResponse<String>> slow =
                    client.sendAsync(HttpRequest.newBuilder(URI.create(base + "/slow")).build(), HttpResponse.BodyHandlers.ofString());
            assertTrue(work.entered.await(10, java.util.concurrent.TimeUnit.SECONDS));
            HttpResponse<String> shed = client.send(HttpRequest.newBuilder(URI.create(base + "/ok")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, shed.statusCode());
            assertEquals("1", shed.headers().firstValue("Retry-After").orElse(""));
            assertEquals(1, work.calls.get(), "the shed request never reached the servlet");
            work.release.countDown();
            assertEquals(200, slow.get().statusCode());
            HttpResponse<String> fail = client.send(HttpRequest.newBuilder(URI.create(base + "/fail")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, fail.statusCode());
            assertTrue(fail.headers().firstValue("Retry-After").isEmpty(), "the servlet's own 503 passes through");
            AdaptiveMetrics m = limiter.metrics();
            assertEquals(0, m.inflight());
            assertEquals(1, m.rejected());
            assertEquals(1, m.succeeded());
            assertEquals(1, m.dropped(), "a 503 from below is a congestion signal");
        } finally {
            server.stop();
            limiter.close();
        }
    }

    @Test
    void anUnknownPartitionIs500AndAWaitQueues() throws Exception {
        AdaptiveLimiter limiter = AdaptiveLimiter.builder("fixed").initialLimit(1).partition("live", 100).build();
        SheddingFilter filter = new SheddingFilter(limiter, r -> r.getParameter("p"), Duration.ofSeconds(10));
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.addServlet(new ServletHolder(new Work()), "/w/*");
        context.addFilter(new FilterHolder(filter), "/w/*", EnumSet.of(DispatcherType.REQUEST));
        server.setHandler(context);
        server.start();
        try {
            HttpClient client = HttpClient.newHttpClient();
            String base = "http://127.0.0.1:" + connector.getLocalPort() + "/w/ok?p=";
            assertEquals(500, client.send(HttpRequest.newBuilder(URI.create(base + "nope")).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
            dev.throttlekit.Permit held = (dev.throttlekit.Permit) limiter.tryAcquire("live");
            new Thread(() -> {
                try {
                    Thread.sleep(30);
                } catch (InterruptedException e) {
                    return;
                }
                held.close();
            }).start();
            assertEquals(200, client.send(HttpRequest.newBuilder(URI.create(base + "live")).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
        } finally {
            server.stop();
            limiter.close();
        }
    }
}
