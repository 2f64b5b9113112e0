package io.kdapack.api.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.job.JobManager;
import io.kdapack.api.server.JobService;
import io.kdapack.api.server.ScriptedJobFactory;
import io.kdapack.api.server.ServerMetrics;
import io.kdapack.training.pipeline.PipelineSettings;
import io.netty.buffer.ByteBufUtil;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The dashboard's routes: open, content types, the security headers, uPlot from its WebJar, no traversal. */
class DashboardTest {

    private static final String TOKEN = "dashboard-test-token-0123456789";
    private static final String UPLOT = "META-INF/resources/webjars/uplot/1.6.30/dist/";

    private static ActorTestKit testKit;
    private static ExecutorService factoryCalls;
    private static ActorRef<JobManager.Command> manager;

    @BeforeAll
    static void startActors() {
        testKit = ActorTestKit.create();
        factoryCalls = Executors.newFixedThreadPool(1);
        var settings = new PipelineSettings(2, Duration.ofSeconds(30), Duration.ofSeconds(30), Duration.ofSeconds(30));
        manager = testKit.spawn(JobManager.create(settings, 16));
    }

    @AfterAll
    static void stopActors() {
        factoryCalls.shutdownNow();
        testKit.shutdownTestKit();
    }

    private static LoopbackHttp http() throws InterruptedException {
        var jobs = new JobService(manager, testKit.system().scheduler(), new ScriptedJobFactory(), factoryCalls,
                Duration.ofSeconds(10));
        return new LoopbackHttp(new HttpApiInitializer(jobs, new ServerMetrics(), TOKEN, 4096, new byte[0], Duration.ZERO));
    }

    private static FullHttpResponse get(LoopbackHttp http, String path) throws InterruptedException {
        return http.exchange("GET " + path + " HTTP/1.1\r\nHost: x", "");
    }

    private static byte[] resource(String name) throws IOException {
        try (InputStream in = DashboardTest.class.getClassLoader().getResourceAsStream(name)) {
            assertTrue(in != null, name + " on the classpath");
            return in.readAllBytes();
        }
    }

    @Test
    void thePageAndEachAssetAreServedWithoutATokenWithTheirTypeAndTheSecurityHeaders() throws Exception {
        Map<String, String> types = Map.of(
                "/", "text/html; charset=utf-8",
                "/ui/", "text/html; charset=utf-8",
                "/ui/app.js", "text/javascript; charset=utf-8",
                "/ui/sse.js", "text/javascript; charset=utf-8",
                "/ui/app.css", "text/css; charset=utf-8",
                "/ui/favicon.svg", "image/svg+xml",
                "/ui/uPlot.iife.min.js", "text/javascript; charset=utf-8",
                "/ui/uPlot.min.css", "text/css; charset=utf-8",
                "/ui/app.js?cache=1", "text/javascript; charset=utf-8");
        try (var http = http()) {
            for (var entry : types.entrySet()) {
                FullHttpResponse response = get(http, entry.getKey());
                assertEquals(200, response.status().code(), entry.getKey());
                assertEquals(entry.getValue(), response.headers().get(HttpHeaderNames.CONTENT_TYPE), entry.getKey());
                assertEquals(Dashboard.CONTENT_SECURITY_POLICY, response.headers().get("Content-Security-Policy"));
                assertEquals("nosniff", response.headers().get("X-Content-Type-Options"));
                assertEquals("no-referrer", response.headers().get("Referrer-Policy"));
                assertEquals(response.content().readableBytes(), response.headers().getInt(HttpHeaderNames.CONTENT_LENGTH));
            }
            // uPlot is the WebJar's file, byte for byte (not a copy kept in the source tree).
            assertArrayEquals(resource(UPLOT + "uPlot.iife.min.js"),
                    ByteBufUtil.getBytes(get(http, "/ui/uPlot.iife.min.js").content()));
            assertArrayEquals(resource(UPLOT + "uPlot.min.css"),
                    ByteBufUtil.getBytes(get(http, "/ui/uPlot.min.css").content()));
        }
    }

    @Test
    void thePolicyForbidsInlineCodeAndOtherOrigins() {
        String policy = Dashboard.CONTENT_SECURITY_POLICY;
        assertTrue(policy.startsWith("default-src 'self';"), policy);
        assertFalse(policy.contains("unsafe"), "neither unsafe-inline nor unsafe-eval: " + policy);
        assertFalse(policy.contains("*") || policy.contains("http") || policy.contains("data:"), policy);
        for (String directive : List.of("script-src 'self'", "style-src 'self'", "connect-src 'self'",
                "object-src 'none'", "frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'")) {
            assertTrue(policy.contains(directive), directive + " in " + policy);
        }
    }

    /** What the policy would block must not be in the page: the page has to work under it, not merely declare it. */
    @Test
    void thePageHasNoInlineScriptStyleOrHandlersAndLoadsNothingFromAnotherOrigin() throws Exception {
        String page = new String(resource("dashboard/index.html"), StandardCharsets.UTF_8);
        Matcher scripts = Pattern.compile("<script([^>]*)>(.*?)</script>", Pattern.DOTALL).matcher(page);
        int count = 0;
        while (scripts.find()) {
            count++;
            assertTrue(scripts.group(1).matches(".*\\bsrc=\"/ui/[^\"]+\".*"), "a script from /ui/: " + scripts.group());
            assertEquals("", scripts.group(2).trim(), "no inline script: " + scripts.group());
        }
        assertEquals(3, count, "uPlot, the stream parser and the app");
        assertFalse(Pattern.compile("\\son[a-z]+\\s*=", Pattern.CASE_INSENSITIVE).matcher(page).find(),
                "no inline event handlers");
        assertFalse(page.contains("style=") || page.contains("<style"), "no inline style");
        for (String asset : List.of("dashboard/index.html", "dashboard/app.js", "dashboard/sse.js", "dashboard/app.css")) {
            String text = new String(resource(asset), StandardCharsets.UTF_8);
            assertFalse(Pattern.compile("https?://|//[a-z0-9.-]+\\.[a-z]{2,}/").matcher(text).find(),
                    asset + " names no other origin");
            assertFalse(text.contains("eval(") || text.contains("new Function") || text.contains("innerHTML"),
                    asset + ": no eval, no markup from strings");
        }
        // The token never goes into a URL: the page only ever sends it as a header.
        String app = new String(resource("dashboard/app.js"), StandardCharsets.UTF_8);
        assertTrue(app.contains("'Authorization': 'Bearer ' + token"), "the token travels in the header");
        assertFalse(Pattern.compile("[?&]token=|location\\.(search|hash)").matcher(app).find(), "no token in a URL");
    }

    @Test
    void noPathOutsideTheTableIsServedTraversalIncluded() throws Exception {
        try (var http = http()) {
            for (String path : List.of("/ui/../openapi.yaml", "/ui/%2e%2e/openapi.yaml", "/ui/..%2fopenapi.yaml",
                    "/ui/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/ui/app.js/..", "/ui/nothing.js", "/ui/index.html",
                    "/ui/dashboard/app.js", "/ui/META-INF/resources/webjars/uplot/1.6.30/dist/uPlot.iife.min.js",
                    "/ui/uPlot.iife.js", "/ui", "/index.html", "/dashboard/app.js")) {
                FullHttpResponse response = get(http, path);
                int status = response.status().code();
                assertTrue(status == 404 || status == 401, path + " → " + status);
                assertEquals("application/json", response.headers().get(HttpHeaderNames.CONTENT_TYPE), path);
                assertNull(response.headers().get("Content-Security-Policy"), path + " is not a dashboard asset");
            }
            // Open to GET only: anything else needs the token, and with it gets 405.
            assertEquals(401, http.exchange("POST / HTTP/1.1\r\nHost: x", "").status().code());
            assertEquals(405, http.exchange("DELETE /ui/app.js HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN,
                    "").status().code());
            // The API behind the page still needs the token.
            assertEquals(401, get(http, "/v1/jobs").status().code());
            assertEquals(200, get(http, "/").status().code(), "the connection still serves");
        }
    }
}
