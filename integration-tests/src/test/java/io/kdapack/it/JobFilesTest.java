package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job's files on disk through the server's lifecycle: checkpoints pruned to {@code train.checkpoint.keep_last},
 * owner-only permissions, and {@code DELETE /v1/jobs/{id}?purge=true} (refused while the job runs, confined to its
 * directory, the job gone afterwards).
 */
class JobFilesTest {

    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    private static final String PREFIX = "mqar/mqar-train";

    @TempDir
    Path temp;

    @Test
    void aFinishedJobKeepsItsNewestCheckpointsOwnerOnlyAndAPurgeRemovesItWhole() throws Exception {
        Path jobs = temp.resolve("jobs");
        Path outside = Files.writeString(temp.resolve("outside.txt"), "not the job's");
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            // 6 steps, a checkpoint every 2 (steps 2, 4, 6), the newest 2 kept.
            String id = server.startJob(withKeepLast(TrainingServer.tinyConfig(6, PREFIX), 2));
            assertEquals("succeeded", server.follow(id, Integer.MAX_VALUE).end());
            Path dir = jobs.resolve(id);
            Path checkpoints = dir.resolve("checkpoints");
            assertEquals(List.of("latest", "step-00000004", "step-00000006"), names(checkpoints));
            if (Files.getFileStore(checkpoints).supportsFileAttributeView("posix")) {
                try (Stream<Path> files = Files.walk(dir)) {
                    for (Path file : files.filter(Files::isRegularFile).toList()) {
                        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)),
                                dir.relativize(file).toString());
                    }
                }
            }

            // A link planted in the job's directory is removed as a link: what it points to stays.
            Files.createSymbolicLink(dir.resolve("planted"), outside);
            HttpResponse<String> bad = server.send(server.request("/v1/jobs/" + id + "?purge=yes").DELETE().build());
            assertEquals(400, bad.statusCode(), bad.body());
            assertEquals("purge", TrainingServer.JSON.readTree(bad.body()).path("field").asText());

            HttpResponse<String> purged = server.send(server.request("/v1/jobs/" + id + "?purge=true").DELETE().build());
            assertEquals(200, purged.statusCode(), purged.body());
            JsonNode answer = TrainingServer.JSON.readTree(purged.body());
            assertTrue(answer.path("purged").asBoolean());
            assertEquals("succeeded", answer.path("last_status").path("state").asText());
            assertFalse(Files.exists(dir), "the job's directory is gone");
            assertEquals(List.of(), names(jobs), "nothing left in the jobs directory, temporary or not");
            assertEquals("not the job's", Files.readString(outside));

            assertEquals(404, server.send(server.request("/v1/jobs/" + id).build()).statusCode());
            assertEquals(404, server.send(server.request("/v1/jobs/" + id + "?purge=true").DELETE().build()).statusCode());
            assertEquals(404, server.send(server.request("/v1/jobs/" + id + "/resume")
                    .POST(HttpRequest.BodyPublishers.noBody()).build()).statusCode());
            assertFalse(server.send(server.request("/v1/jobs").build()).body().contains(id));
        }
    }

    @Test
    void aRunningJobIsNotPurgedAndACancelledOneIsAlsoAfterARestart() throws Exception {
        Path jobs = temp.resolve("jobs");
        String id;
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            id = server.startJob(TrainingServer.tinyConfig(100_000, PREFIX));
            server.follow(id, 1);
            HttpResponse<String> refused = server.send(server.request("/v1/jobs/" + id + "?purge=true").DELETE().build());
            assertEquals(409, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains("is running: cancel it first"), refused.body());
            assertTrue(Files.isDirectory(jobs.resolve(id)), "a refused purge leaves the files");
            assertEquals("running", server.status(id).path("state").asText(), "and the job trains on");
            assertEquals(202, server.send(server.request("/v1/jobs/" + id).DELETE().build()).statusCode());
            long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
            while (!server.status(id).path("state").asText().equals("cancelled")) {
                assertTrue(System.nanoTime() < deadline, "the job did not stop");
                Thread.sleep(20);
            }
        }
        // A restarted server knows the job only from its files: the purge removes them.
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            HttpResponse<String> purged = server.send(server.request("/v1/jobs/" + id + "?purge=true").DELETE().build());
            assertEquals(200, purged.statusCode(), purged.body());
            assertTrue(TrainingServer.JSON.readTree(purged.body()).path("last_status").isNull(), purged.body());
            assertFalse(Files.exists(jobs.resolve(id)));
        }
    }

    @Test
    void aJobDirectoryThatIsALinkIsNotFollowed() throws Exception {
        Path jobs = Files.createDirectories(temp.resolve("jobs"));
        Path elsewhere = Files.createDirectories(temp.resolve("elsewhere"));
        Files.writeString(elsewhere.resolve("job.json"), "{}");
        assumeTrue(Files.getFileStore(jobs).supportsFileAttributeView("posix"), "symbolic links need a POSIX file system");
        Files.createSymbolicLink(jobs.resolve("jlinked"), elsewhere);
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), jobs)) {
            HttpResponse<String> refused = server.send(server.request("/v1/jobs/jlinked?purge=true").DELETE().build());
            assertEquals(409, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains("symbolic link"), refused.body());
            assertTrue(Files.isRegularFile(elsewhere.resolve("job.json")), "the link's target is untouched");
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> withKeepLast(Map<String, Object> config, int keepLast) {
        Map<String, Object> train = new HashMap<>((Map<String, Object>) config.get("train"));
        train.put("checkpoint", Map.of("interval", 2, "keep_last", keepLast));
        Map<String, Object> out = new HashMap<>(config);
        out.put("train", train);
        return out;
    }

    private static List<String> names(Path dir) throws Exception {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
