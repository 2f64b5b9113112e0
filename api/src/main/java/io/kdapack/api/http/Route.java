package io.kdapack.api.http;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The endpoints of the API (architecture §5), matched on method and path; {@code {id}} is a job id, the rest of a
 * template a regular expression.
 */
public enum Route {
    HEALTH(HttpMethod.GET, "/healthz"),
    METRICS(HttpMethod.GET, "/metrics"),
    OPENAPI(HttpMethod.GET, "/openapi.yaml"),
    LIST_JOBS(HttpMethod.GET, "/v1/jobs"),
    CREATE_JOB(HttpMethod.POST, "/v1/jobs"),
    GET_JOB(HttpMethod.GET, "/v1/jobs/{id}"),
    CANCEL_JOB(HttpMethod.DELETE, "/v1/jobs/{id}"),
    RESUME_JOB(HttpMethod.POST, "/v1/jobs/{id}/resume"),
    JOB_EVENTS(HttpMethod.GET, "/v1/jobs/{id}/events"),
    STEPS(HttpMethod.POST, "/v1/steps"),
    COMPLETIONS(HttpMethod.POST, "/v1/completions"),
    MODELS(HttpMethod.GET, "/v1/models"),
    /** The browser dashboard's page ({@link Dashboard}); no token. */
    DASHBOARD(HttpMethod.GET, "/"),
    /** Its assets, one path segment under {@code /ui/} (a regular expression without a group: no job id). */
    DASHBOARD_ASSET(HttpMethod.GET, "/ui/[^/]*");

    /** A matched route and its job id (null for routes without one). */
    public record Match(Route route, String jobId) {
    }

    private final HttpMethod method;
    private final Pattern pattern;

    Route(HttpMethod method, String template) {
        this.method = method;
        this.pattern = Pattern.compile(template.replace("{id}", "([^/]+)"));
    }

    /**
     * The route for {@code method} and {@code path}.
     *
     * @throws ApiException 404 for an unknown path, 405 (with the allowed methods) for a known path
     */
    public static Match match(HttpMethod method, String path) {
        List<Route> onPath = new ArrayList<>();
        for (Route route : values()) {
            Matcher matcher = route.pattern.matcher(path);
            if (matcher.matches()) {
                if (route.method.equals(method)) {
                    return new Match(route, matcher.groupCount() > 0 ? matcher.group(1) : null);
                }
                onPath.add(route);
            }
        }
        if (onPath.isEmpty()) {
            throw ApiException.notFound("no endpoint " + path);
        }
        throw new MethodNotAllowed(path, onPath.stream().map(r -> r.method.name()).collect(Collectors.joining(", ")));
    }

    /** 405, with the methods the path accepts for the {@code Allow} header. */
    public static final class MethodNotAllowed extends ApiException {
        private final String allowed;

        MethodNotAllowed(String path, String allowed) {
            super(HttpResponseStatus.METHOD_NOT_ALLOWED,
                    path + " accepts " + allowed, null);
            this.allowed = allowed;
        }

        public String allowed() {
            return allowed;
        }
    }
}
