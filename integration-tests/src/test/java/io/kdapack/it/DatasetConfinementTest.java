package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.training.RecallDatasets;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job's {@code train.data.prefix} is confined to the server's data root by the real path of every file the job
 * opens: prefixes that leave the root through {@code ..}, an absolute path, a symbolic link to a directory or symbolic
 * links planted as the {@code .idx}/{@code .bin} files are refused with 400 over HTTP, before any job exists, and the
 * answer quotes no byte and no path of what lies outside. Also on resume, after the files changed.
 */
class DatasetConfinementTest {
    /** What the files outside the root hold: a valid dataset (so that only the confinement can refuse it). */
    private static final String SECRET = "secret";
    /** An /etc/passwd look-alike outside the root, linked as an .idx: its first bytes must never reach the client. */
    private static final String PASSWD = "root:x:0:0:root:/root:/bin/bash\n";

    @TempDir
    Path temp;

    private static void link(Path link, Path target) throws Exception {
        Files.createSymbolicLink(link, target);
    }

    @Test
    void prefixesThatLeaveTheDataRootAreRefusedOverHttp() throws Exception {
        Path root = Files.createDirectories(temp.resolve("data"));
        Path outside = Files.createDirectories(temp.resolve("outside"));
        RecallDatasets.write(root.resolve("good"), AssociativeRecall.demo(), 300, 1);
        RecallDatasets.write(outside.resolve(SECRET), AssociativeRecall.demo(), 300, 2);
        Files.writeString(outside.resolve("passwd"), PASSWD);
        link(root.resolve("outdir"), outside);
        link(root.resolve("alias"), root);
        link(root.resolve("leak.idx"), outside.resolve(SECRET + ".idx"));
        link(root.resolve("leak.bin"), outside.resolve(SECRET + ".bin"));
        link(root.resolve("passwd.idx"), outside.resolve("passwd"));
        Files.copy(root.resolve("good.bin"), root.resolve("passwd.bin"));
        List<String> escapes = new ArrayList<>(List.of("../outside/" + SECRET, outside.resolve(SECRET).toString(),
                "outdir/" + SECRET, "leak", "passwd", "alias/leak"));
        if (Files.isReadable(Path.of("/etc/passwd"))) {
            link(root.resolve("etc.idx"), Path.of("/etc/passwd")); // the issue's own example
            Files.copy(root.resolve("good.bin"), root.resolve("etc.bin"));
            escapes.add("etc");
        }
        Path jobs = temp.resolve("jobs");
        try (TrainingServer server = new TrainingServer(root, jobs)) {
            for (String prefix : escapes) {
                HttpResponse<String> response = post(server, TrainingServer.tinyConfig(2, prefix));
                assertEquals(400, response.statusCode(), prefix + ": " + response.body());
                JsonNode error = TrainingServer.JSON.readTree(response.body());
                assertEquals("train.data.prefix", error.path("field").asText(), response.body());
                String message = error.path("error").asText();
                assertTrue(message.contains(prefix), "the error names the request's prefix: " + message);
                assertTrue(message.contains("outside the data root") || message.contains("leaves the data root"),
                        message);
                assertNoOutsideDetail(response.body(), prefix.contains(SECRET));
            }
            JsonNode listing = TrainingServer.JSON.readTree(server.send(server.request("/v1/jobs").build()).body());
            assertEquals(0, listing.path("jobs").size(), "no job was created: " + listing);
            try (var dirs = Files.list(jobs)) {
                assertEquals(0, dirs.count(), "no job directory was created");
            }

            // Inside the root, directly and through a link that stays inside: accepted, the real prefix recorded.
            for (String prefix : List.of("good", "alias/good")) {
                HttpResponse<String> created = post(server, TrainingServer.tinyConfig(2, prefix));
                assertEquals(201, created.statusCode(), prefix + ": " + created.body());
                String id = TrainingServer.JSON.readTree(created.body()).path("id").asText();
                JsonNode record = TrainingServer.JSON.readTree(jobs.resolve(id).resolve("job.json").toFile());
                assertEquals(root.toRealPath().resolve("good").toString(), record.path("dataset").asText());
                assertEquals("succeeded", server.follow(id, Integer.MAX_VALUE).end());
            }
        }
    }

    @Test
    void aResumedJobIsCheckedAgainstTheFilesAsTheyAreNow() throws Exception {
        Path root = Files.createDirectories(temp.resolve("data"));
        Path outside = Files.createDirectories(temp.resolve("outside"));
        RecallDatasets.write(root.resolve("good"), AssociativeRecall.demo(), 300, 1);
        Files.writeString(outside.resolve("passwd"), PASSWD);
        Path jobs = temp.resolve("jobs");
        String id;
        try (TrainingServer server = new TrainingServer(root, jobs)) {
            id = server.startJob(TrainingServer.tinyConfig(50, "good"));
            assertEquals(1, server.follow(id, 1).steps().size());
        } // closing stops the job after a checkpoint: resumable
        Files.delete(root.resolve("good.idx"));
        link(root.resolve("good.idx"), outside.resolve("passwd"));
        try (TrainingServer server = new TrainingServer(root, jobs)) {
            HttpResponse<String> resumed = server.send(server.request("/v1/jobs/" + id + "/resume")
                    .POST(HttpRequest.BodyPublishers.noBody()).build());
            assertEquals(400, resumed.statusCode(), resumed.body());
            JsonNode error = TrainingServer.JSON.readTree(resumed.body());
            assertEquals("train.data.prefix", error.path("field").asText(), resumed.body());
            assertTrue(error.path("error").asText().contains("outside the data root"), resumed.body());
            assertNoOutsideDetail(resumed.body(), false);
            JsonNode listing = TrainingServer.JSON.readTree(server.send(server.request("/v1/jobs").build()).body());
            assertEquals(0, listing.path("jobs").size(), "the job did not start: " + listing);
        }
    }

    private static HttpResponse<String> post(TrainingServer server, Map<String, Object> config) throws Exception {
        return server.send(server.request("/v1/jobs").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(TrainingServer.JSON.writeValueAsString(config))).build());
    }

    /**
     * The answer names no path outside the root and quotes none of the bytes there (as text or as the hex that the
     * dataset reader's errors use). {@code requestNamedSecret}: the request itself spelled the secret's name.
     */
    private void assertNoOutsideDetail(String body, boolean requestNamedSecret) {
        String passwdHex = HexFormat.ofDelimiter(" ").withUpperCase()
                .formatHex(PASSWD.substring(0, 9).getBytes(StandardCharsets.UTF_8));
        assertFalse(body.contains("root:x") || body.toUpperCase(Locale.ROOT).contains(passwdHex)
                || body.contains("/etc/passwd") || body.contains("/bin/bash"), "no byte of a file outside the root: " + body);
        if (!requestNamedSecret) {
            assertFalse(body.contains(SECRET) || body.contains(temp.resolve("outside").toString()),
                    "no path outside the root: " + body);
        }
    }
}
