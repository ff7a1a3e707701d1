// java-servlet: dev.throttlekit.servlet.RateLimitFilter on Debian's Jetty 9 (embedded).
// GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s,
// burst 5, draft-10 fields, policy name "default", no trusted proxies.
//   java ... ServletExample PORT        (binds 127.0.0.1; set HOST to listen elsewhere)
import dev.throttlekit.HttpLimiter;
import dev.throttlekit.Limiter;
import dev.throttlekit.Strategy;
import dev.throttlekit.servlet.RateLimitFilter;
import java.io.IOException;
import java.time.Duration;
import java.util.EnumSet;
import javax.servlet.DispatcherType;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class ServletExample {
    /** Answers "ok" as text/plain. */
    public static final class Ok extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
            res.setContentType("text/plain");
            res.getWriter().write("ok");
        }
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args.length > 0 ? args[0] : "8080");
        String host = System.getenv().getOrDefault("HOST", "127.0.0.1");
        Limiter limiter = Limiter.builder(Strategy.gcra(5, Duration.ofSeconds(60), 5)).build();
        HttpLimiter edge = HttpLimiter.builder(limiter).family("draft-10").policyName("default").build();

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(host);
        connector.setPort(port);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.addServlet(new ServletHolder(new Ok()), "/healthz");
        context.addServlet(new ServletHolder(new Ok()), "/limited");
        context.addFilter(new FilterHolder(new RateLimitFilter(edge)), "/limited", EnumSet.of(DispatcherType.REQUEST));
        server.setHandler(context);
        server.start();
        System.out.println("java-servlet listening on http://" + host + ":" + connector.getLocalPort());
        server.join();
    }
}
