package io.kdapack.api.http;

import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Properties;

/**
 * The browser dashboard: {@code GET /} (the page) and {@code GET /ui/<name>} (its scripts, styles and uPlot, the
 * charting library, from its WebJar on the classpath). The assets are a fixed table read from the jar once, when the
 * server starts; a request names an entry of the table or gets 404, so no request path ever reaches a file system or a
 * classpath lookup (no traversal). The page holds no data: every API call it makes carries the token the user typed
 * into it, so these two routes need no token ({@link BearerAuthHandler}). Each response carries a strict
 * Content-Security-Policy ({@link #CONTENT_SECURITY_POLICY}): scripts, styles, images and connections from this origin
 * only, no inline script or style, no frames, no form submission.
 */
public final class Dashboard {

    /** No inline script or style, nothing from another origin, never framed, no form posts (the token form is JS). */
    public static final String CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; "
            + "img-src 'self'; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
            + "form-action 'none'; frame-ancestors 'none'";
    /** Largest asset read from the jar (uPlot's minified build is 49 KiB). */
    static final int MAX_ASSET_BYTES = 1 << 20;
    private static final String UPLOT_POM = "META-INF/maven/org.webjars.npm/uplot/pom.properties";
    private static final String HTML = "text/html; charset=utf-8";
    private static final String JAVASCRIPT = "text/javascript; charset=utf-8";
    private static final String CSS = "text/css; charset=utf-8";

    /** One servable file: its bytes and content type. */
    private record Asset(String contentType, byte[] body) {
    }

    private final Map<String, Asset> assets;

    private Dashboard(Map<String, Asset> assets) {
        this.assets = assets;
    }

    /**
     * Reads the page, its assets and uPlot (the version of the {@code org.webjars.npm:uplot} jar on the classpath).
     *
     * @throws IllegalStateException if one is missing or larger than {@link #MAX_ASSET_BYTES}
     */
    public static Dashboard fromClasspath() {
        String uplot = "META-INF/resources/webjars/uplot/" + webJarVersion(UPLOT_POM) + "/dist/";
        Asset page = asset("dashboard/index.html", HTML);
        return new Dashboard(Map.of(
                "/", page,
                "/ui/", page,
                "/ui/app.js", asset("dashboard/app.js", JAVASCRIPT),
                "/ui/sse.js", asset("dashboard/sse.js", JAVASCRIPT),
                "/ui/app.css", asset("dashboard/app.css", CSS),
                "/ui/favicon.svg", asset("dashboard/favicon.svg", "image/svg+xml"),
                "/ui/uPlot.iife.min.js", asset(uplot + "uPlot.iife.min.js", JAVASCRIPT),
                "/ui/uPlot.min.css", asset(uplot + "uPlot.min.css", CSS)));
    }

    /** The response for {@code path} (decoded, without the query). @throws ApiException 404 for any other path */
    FullHttpResponse response(String path) {
        Asset asset = assets.get(path);
        if (asset == null) {
            throw ApiException.notFound("no dashboard asset " + path);
        }
        FullHttpResponse response = Responses.bytes(HttpResponseStatus.OK, asset.contentType(), asset.body());
        HttpHeaders headers = response.headers();
        headers.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
        headers.set("X-Content-Type-Options", "nosniff");
        headers.set("Referrer-Policy", "no-referrer");
        headers.set("Cross-Origin-Opener-Policy", "same-origin");
        headers.set("Cross-Origin-Resource-Policy", "same-origin");
        // Small and served from memory: revalidate each time, so a new server version is picked up at once.
        headers.set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
        return response;
    }

    private static String webJarVersion(String pomProperties) {
        Properties properties = new Properties();
        try (InputStream in = open(pomProperties)) {
            properties.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + pomProperties, e);
        }
        String version = properties.getProperty("version");
        if (version == null || !version.matches("[0-9A-Za-z.\\-]+")) {
            throw new IllegalStateException(pomProperties + ": no usable version, got '" + version + "'");
        }
        return version;
    }

    private static Asset asset(String resource, String contentType) {
        try (InputStream in = open(resource)) {
            byte[] body = in.readNBytes(MAX_ASSET_BYTES + 1);
            if (body.length > MAX_ASSET_BYTES) {
                throw new IllegalStateException(resource + " is larger than " + MAX_ASSET_BYTES + " bytes");
            }
            return new Asset(contentType, body);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read dashboard asset " + resource, e);
        }
    }

    private static InputStream open(String resource) {
        InputStream in = Dashboard.class.getClassLoader().getResourceAsStream(resource);
        if (in == null) {
            throw new IllegalStateException(resource + " is missing from the classpath");
        }
        return in;
    }
}
