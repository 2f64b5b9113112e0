package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kdapack.training.StepResult;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * kdapack as a Pekko Cluster on 127.0.0.1: each member a JVM of its own with its own Artery port, all sharing the jobs
 * directory and the data root (docs/cluster.md). Every wait is bounded and every member is killed at the end.
 */
class ClusterTest {

    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    private static final String PREFIX = "mqar/mqar-train";
    /**
     * Failure detection of the test clusters: unreachable after 20 s of silence, downed 2 s later. Pauses of 3 s and
     * 10 s were mistaken for failures on a 2-core machine shared with other builds (load 40: a member starved of CPU
     * while its JVM warmed up was downed as the cluster formed); on an idle machine 3 s is plenty.
     */
    private static final String FAST_FAILURE = "  failure_timeout_ms: 20000\n  stable_after_ms: 2000\n";
    /** How long a killed worker's job may take to be marked failed: detection, the resolver, removal, slack. */
    private static final long FAILED_WITHIN_MS = 60_000;

    @TempDir
    Path temp;

    /**
     * An api member, a worker, and a member that is both. Two jobs at once land on the two workers; the worker of the first is killed
     * (SIGKILL) mid-run: the job ends {@code failed} naming the worker, within a bound, its stream ends, and the other
     * job goes on; a data-parallel job (two ranks) gives the losses of {@code kdapack train}. Then the first api member,
     * the oldest (the cluster's leader and the job directory's holder), is stopped with SIGTERM while a job runs: it
     * leaves the cluster (the other member never sees it unreachable, nor downs itself), the job goes on and the other
     * api member serves its status and its stream. That member serves every job, a resume of the failed one runs on the
     * surviving worker, and its steps (read from the api member with {@code Last-Event-ID: 0}) are those of an
     * uninterrupted {@code kdapack train} run bit for bit; the second job's stream, read from the second api member
     * since before the kill, holds every step once and its end.
     */
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void twoJobsADataParallelJobAWorkerKilledMidJobAnApiMemberStoppedAndAResume() throws Exception {
        int seedPort = ClusterMember.freePort();
        String seeds = "  seed_nodes: [\"127.0.0.1:" + seedPort + "\"]\n";
        Map<String, Object> killedConfig = TrainingServer.tinyConfig(60, PREFIX);
        Map<String, Object> otherConfig = TrainingServer.tinyConfig(80, PREFIX, true);
        // With no runs yet, placement goes by address: the worker with the lower port takes the first job.
        int portA = ClusterMember.freePort();
        int portB = ClusterMember.freePort();
        List<ClusterMember> members = new ArrayList<>();
        try {
            ClusterMember api1 = start(members, "api1", seedPort, seeds + "  roles: [api]\n" + FAST_FAILURE);
            ClusterMember workerA = start(members, "worker-a", Math.min(portA, portB),
                    seeds + "  roles: [worker]\n" + FAST_FAILURE);
            ClusterMember apiWorkerB = start(members, "api-worker-b", Math.max(portA, portB),
                    seeds + "  roles: [api, worker]\n" + FAST_FAILURE);
            String address1 = api1.awaitUp();
            String addressA = workerA.awaitUp();
            String addressB = apiWorkerB.awaitUp();
            TrainingServer first = new TrainingServer(api1.awaitHttp());
            TrainingServer second = new TrainingServer(apiWorkerB.awaitHttp());
            awaitMembers(first, 3);
            dataParallelJobOnTheTwoWorkers(first, second);

            String killed = first.startJob(killedConfig);
            String other = first.startJob(otherConfig);
            CompletableFuture<TrainingServer.Events> otherStream = CompletableFuture.supplyAsync(() -> {
                try {
                    return second.follow(other, Integer.MAX_VALUE);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            JsonNode cluster = TrainingServer.JSON.readTree(second.send(second.request("/v1/cluster").build()).body());
            String killedOn = memberRunning(cluster, killed);
            String otherOn = memberRunning(cluster, other);
            assertEquals(addressA, killedOn, "the first job goes to the worker that sorts first: " + cluster);
            assertEquals(addressB, otherOn, "two jobs at once go to two workers: " + cluster);
            assertEquals(200, second.send(second.request("/v1/jobs/" + killed).build()).statusCode(),
                    "a job started on one api member is seen from the other");
            String metrics = second.send(second.request("/metrics").build()).body();
            assertTrue(metrics.contains("kdapack_cluster_members{reachable=\"true\",status=\"Up\"} 3.0"), metrics);

            TrainingServer.Events killedStream = second.follow(second.request("/v1/jobs/" + killed + "/events").build(), 3);
            assertEquals(3, killedStream.steps().size());
            workerA.kill();
            long killedAt = System.nanoTime();
            TrainingServer.Events rest = TrainingServer.read(killedStream.remaining(), Integer.MAX_VALUE);
            assertEquals("failed", rest.end(), "the stream of the killed worker's job ends");
            JsonNode failed = awaitState(second, killed, "failed");
            long failedAfterMs = (System.nanoTime() - killedAt) / 1_000_000;
            assertTrue(failedAfterMs < FAILED_WITHIN_MS, "failed after " + failedAfterMs + " ms");
            assertTrue(failed.path("error").asText().contains(killedOn), failed.toString());
            assertTrue(failed.path("error").asText().contains("left the cluster"), failed.toString());
            assertTrue(List.of("running", "succeeded").contains(second.status(other).path("state").asText()),
                    "the other job is unaffected");
            HttpResponse<String> tooMany = second.submitJob(demo(3));
            assertEquals(400, tooMany.statusCode(), "two ranks, one worker left: " + tooMany.body());
            assertTrue(tooMany.body().contains("train.data_parallel"), tooMany.body());

            apiMemberStoppedWhileAJobRuns(api1, address1, second, addressB);
            HttpResponse<String> resumed = awaitResume(second, killed);
            assertEquals(202, resumed.statusCode(), resumed.body());
            assertEquals(otherOn, memberRunning(readCluster(second), killed), "resumed on the surviving worker");

            TrainingServer.Events otherEvents = otherStream.get(TrainingServer.WAIT.toSeconds(), TimeUnit.SECONDS);
            assertEquals("succeeded", otherEvents.end());
            assertConsecutive(80, otherEvents.steps());
            TrainingServer.Events replay = second.follow(second.request("/v1/jobs/" + killed + "/events")
                    .header("Last-Event-ID", "0").build(), Integer.MAX_VALUE);
            assertEquals("succeeded", replay.end());
            assertConsecutive(60, replay.steps());
            JsonNode survivor = readCluster(second).path("members");
            assertEquals(1, survivor.size(), survivor.toString());
            assertEquals("Up", survivor.get(0).path("status").asText(), "the last member is still up: " + survivor);
            List<StepResult> direct = TrainingServer.trainDirectly(killedConfig, MQAR.resolve("mqar-train"),
                    Files.createDirectories(temp.resolve("direct")));
            for (StepResult step : direct) {
                JsonNode event = replay.steps().get((int) step.step() - 1);
                assertEquals(Double.doubleToLongBits(step.loss()), Double.doubleToLongBits(event.path("loss").asDouble()),
                        "loss of step " + step.step() + " across the kill and the resume, as the direct loop");
                assertEquals(Double.doubleToLongBits(step.gradNorm()),
                        Double.doubleToLongBits(event.path("grad_norm").asDouble()), "grad norm of step " + step.step());
            }
        } catch (Throwable failure) {
            for (ClusterMember member : members) { // what each member said, for the report
                String out = member.output();
                System.err.println("---- member on " + member.arteryPort() + ":\n"
                        + out.substring(Math.max(0, out.length() - 6000)));
            }
            throw failure;
        } finally {
            for (ClusterMember member : members) {
                member.close();
            }
        }
    }

    /** Misconfiguration stops a member at start with one line naming the key, and exit code 2. */
    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void unreachableSeedsAPortInUseAndBadRolesAreErrorsNamingTheKey() throws Exception {
        List<ClusterMember> members = new ArrayList<>();
        try (ServerSocket taken = new ServerSocket(0)) {
            int nobody = ClusterMember.freePort();
            ClusterMember lonely = start(members, "lonely", ClusterMember.freePort(),
                    "  seed_nodes: [\"127.0.0.1:" + nobody + "\"]\n  join_timeout_ms: 2000\n");
            ClusterMember busy = start(members, "busy", taken.getLocalPort(), "");
            ClusterMember confused = start(members, "confused", ClusterMember.freePort(), "  roles: [api, trainer]\n");
            assertEquals(2, lonely.awaitExit(), lonely.output());
            assertTrue(lonely.output().contains("cluster.seed_nodes = '127.0.0.1:" + nobody + "'"), lonely.output());
            assertTrue(lonely.output().contains("cluster.join_timeout_ms = 2000"), lonely.output());
            assertEquals(2, busy.awaitExit(), busy.output());
            assertTrue(busy.output().contains("cluster.port = " + taken.getLocalPort()), busy.output());
            assertEquals(2, confused.awaitExit(), confused.output());
            assertTrue(confused.output().contains("cluster.roles = 'api,trainer'"), confused.output());
        } finally {
            for (ClusterMember member : members) {
                member.close();
            }
        }
    }

    /**
     * The demo configuration (the defaults) for {@code steps} steps with {@code data_parallel: 2}; one warmup step so
     * that the learning rate is above 0 from step 2 on; a checkpoint at the last step only.
     */
    private static Map<String, Object> demo(int steps) {
        Map<String, Object> train = new LinkedHashMap<>();
        train.put("steps", steps);
        train.put("threads", 1);
        train.put("data_parallel", 2);
        train.put("checkpoint", Map.of("interval", 0));
        train.put("optimizer", Map.of("warmup_steps", 1));
        train.put("data", Map.of("prefix", PREFIX));
        return Map.of("train", train);
    }

    /**
     * A job with {@code data_parallel: 2} runs on both workers; its stream, read from the api member that does not hold
     * the job directory, holds every step once and the end, and its step losses and gradient norms are those of
     * {@code kdapack train}'s loop with the same configuration bit for bit.
     */
    private void dataParallelJobOnTheTwoWorkers(TrainingServer api, TrainingServer other) throws Exception {
        Map<String, Object> config = demo(3);
        String job = startOnceWorkersRegistered(api, config);
        JsonNode cluster = readCluster(other);
        long workersRunning = 0;
        for (JsonNode member : cluster.path("members")) {
            for (JsonNode id : member.path("jobs")) {
                workersRunning += id.asText().equals(job) ? 1 : 0;
            }
        }
        TrainingServer.Events events = other.follow(other.request("/v1/jobs/" + job + "/events")
                .header("Last-Event-ID", "0").build(), Integer.MAX_VALUE);
        assertEquals("succeeded", events.end(), "the data-parallel job's stream ends");
        assertConsecutive(3, events.steps());
        JsonNode status = awaitState(other, job, "succeeded");
        assertEquals(3, status.path("step").asLong(), status.toString());
        assertTrue(workersRunning == 2 || workersRunning == 0, "placed on two workers (or already ended): " + cluster);
        List<StepResult> direct = TrainingServer.trainDirectly(config, MQAR.resolve("mqar-train"),
                Files.createDirectories(temp.resolve("direct-dp")));
        assertEquals(3, direct.size());
        for (StepResult step : direct) {
            JsonNode event = events.steps().get((int) step.step() - 1);
            assertEquals(Double.doubleToLongBits(step.loss()), Double.doubleToLongBits(event.path("loss").asDouble()),
                    "loss of step " + step.step() + " on two ranks, as the single-JVM loop");
            assertEquals(Double.doubleToLongBits(step.gradNorm()),
                    Double.doubleToLongBits(event.path("grad_norm").asDouble()), "grad norm of step " + step.step());
            // With two ranks, rank 0 sends its block gradient and receives the sum: 2 · 4 · parameters bytes.
            assertTrue(event.path("exchange_bytes").asLong() > 0 && event.path("exchange_bytes").asLong() % 8 == 0,
                    "gradient bytes of the step: " + event);
            assertTrue(event.path("exchange_s").asDouble() > 0, "exchange time of the step: " + event);
        }
        String metrics = other.send(other.request("/metrics").build()).body();
        assertTrue(metrics.contains("kdapack_job_exchange_bytes{job=\"" + job + "\"}"), metrics);
    }

    /**
     * Stops {@code stopped} (an api member) with SIGTERM while a job runs on the worker of {@code survivor}: every view
     * of {@code GET /v1/cluster} on the survivor shows the stopped member {@code Up}, {@code Leaving} or {@code Exiting}
     * and reachable, then not at all (removed), and the survivor itself {@code Up}; the member exits with 143 (SIGTERM
     * after its shutdown hook); the job still advances afterwards, its status and its stream (opened on the survivor
     * before the stop) go on, every step once, until it is cancelled.
     */
    private static void apiMemberStoppedWhileAJobRuns(ClusterMember stopped, String stoppedAddress,
                                                      TrainingServer survivor, String survivorAddress) throws Exception {
        awaitMembers(survivor, 2); // the killed worker removed: the two left are up
        String job = survivor.startJob(longRun());
        TrainingServer.Events stream = survivor.follow(survivor.request("/v1/jobs/" + job + "/events").build(), 2);
        stopped.terminate();
        List<String> seen = new ArrayList<>(); // the stopped member's status in each view, for the report
        long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
        boolean gone = false;
        while (!gone && System.nanoTime() < deadline) {
            JsonNode cluster;
            try {
                cluster = readCluster(survivor);
            } catch (ConnectException e) {
                throw new AssertionError("the survivor stopped answering (downed?) after the stopped member's statuses "
                        + seen, e);
            }
            gone = true;
            for (JsonNode member : cluster.path("members")) {
                String address = member.path("address").asText();
                String status = member.path("status").asText();
                assertTrue(member.path("reachable").asBoolean(), "no member unreachable: " + seen + " " + cluster);
                if (address.equals(survivorAddress)) {
                    assertEquals("Up", status, "the survivor is never downed: " + seen + " " + cluster);
                } else if (address.equals(stoppedAddress)) {
                    gone = false;
                    assertTrue(List.of("Up", "Leaving", "Exiting").contains(status),
                            "the stopped member leaves: " + seen + " " + cluster);
                    if (seen.isEmpty() || !seen.getLast().equals(status)) {
                        seen.add(status);
                    }
                }
            }
            Thread.sleep(gone ? 0 : 50);
        }
        assertTrue(gone, "the stopped member is removed within " + TrainingServer.WAIT + " (statuses " + seen + ")");
        assertEquals(143, stopped.awaitExit(), "SIGTERM, after the shutdown hook: " + stopped.output());
        long stepWhenGone = survivor.status(job).path("step").asLong();
        long deadlineStep = System.nanoTime() + TrainingServer.WAIT.toNanos();
        JsonNode status = survivor.status(job);
        while (status.path("step").asLong() <= stepWhenGone && System.nanoTime() < deadlineStep) {
            Thread.sleep(50);
            status = survivor.status(job);
        }
        assertEquals("running", status.path("state").asText(), "the job goes on: " + status);
        assertTrue(status.path("step").asLong() > stepWhenGone, "the job advances after the member left: " + status);
        HttpResponse<String> cancel = survivor.send(survivor.request("/v1/jobs/" + job).DELETE().build());
        assertEquals(202, cancel.statusCode(), cancel.body());
        TrainingServer.Events rest = TrainingServer.read(stream.remaining(), Integer.MAX_VALUE);
        assertEquals("cancelled", rest.end(), "the stream opened before the stop ends with the job");
        List<JsonNode> steps = new ArrayList<>(stream.steps());
        steps.addAll(rest.steps());
        assertTrue(steps.size() > stepWhenGone, "steps streamed after the member left: " + steps.size());
        assertConsecutive(steps.size(), steps);
    }

    /** The tiny model for more steps than a test waits for (it is cancelled), with no checkpoint before the end. */
    private static Map<String, Object> longRun() {
        Map<String, Object> config = new LinkedHashMap<>(TrainingServer.tinyConfig(100_000, PREFIX));
        @SuppressWarnings("unchecked")
        Map<String, Object> train = new LinkedHashMap<>((Map<String, Object>) config.get("train"));
        train.put("checkpoint", Map.of("interval", 0));
        config.put("train", train);
        return config;
    }

    private ClusterMember start(List<ClusterMember> members, String name, int port, String clusterYaml)
            throws Exception {
        ClusterMember member = new ClusterMember(Files.createDirectories(temp.resolve("cluster")), MQAR.getParent(), name,
                port, clusterYaml);
        members.add(member);
        return member;
    }

    private static JsonNode readCluster(TrainingServer api) throws Exception {
        HttpResponse<String> response = api.send(api.request("/v1/cluster").build());
        assertEquals(200, response.statusCode(), response.body());
        return TrainingServer.JSON.readTree(response.body());
    }

    /**
     * Starts a job once the job directory knows enough workers: members are {@code Up} before their registration
     * through the Receptionist reaches the directory, which meanwhile answers 503 (no worker) or 400 (fewer workers
     * than ranks), as documented. Any other answer fails at once.
     */
    private static String startOnceWorkersRegistered(TrainingServer api, Map<String, Object> config) throws Exception {
        long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
        HttpResponse<String> created;
        do {
            created = api.submitJob(config);
            boolean registering = created.statusCode() == 503
                    || created.statusCode() == 400 && created.body().contains("worker member(s) up");
            if (!registering) {
                break;
            }
            Thread.sleep(200);
        } while (System.nanoTime() < deadline);
        assertEquals(201, created.statusCode(), created.body());
        return TrainingServer.JSON.readTree(created.body()).get("id").asText();
    }

    /** Waits (bounded) until the cluster is {@code count} members, all up and reachable. */
    private static void awaitMembers(TrainingServer api, int count) throws Exception {
        long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
        JsonNode cluster = null;
        while (System.nanoTime() < deadline) {
            cluster = readCluster(api);
            long up = 0;
            for (JsonNode member : cluster.path("members")) {
                up += member.path("status").asText().equals("Up") && member.path("reachable").asBoolean() ? 1 : 0;
            }
            if (up == count && cluster.path("members").size() == count) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("not " + count + " members up: " + cluster);
    }

    /** The address of the member that runs {@code job} according to {@code GET /v1/cluster}. */
    private static String memberRunning(JsonNode cluster, String job) {
        for (JsonNode member : cluster.path("members")) {
            for (JsonNode id : member.path("jobs")) {
                if (id.asText().equals(job)) {
                    return member.path("address").asText();
                }
            }
        }
        throw new AssertionError("no member runs " + job + ": " + cluster);
    }

    private static JsonNode awaitState(TrainingServer api, String job, String state) throws Exception {
        long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
        JsonNode status = null;
        while (System.nanoTime() < deadline) {
            status = api.status(job);
            if (status.path("state").asText().equals(state)) {
                return status;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("job " + job + " not " + state + ": " + status);
    }

    /** Resumes once the job directory has moved and answers again (503 while it is handed over). */
    private static HttpResponse<String> awaitResume(TrainingServer api, String job) throws Exception {
        long deadline = System.nanoTime() + TrainingServer.WAIT.toNanos();
        HttpResponse<String> response = null;
        while (System.nanoTime() < deadline) {
            response = api.send(api.request("/v1/jobs/" + job + "/resume").POST(HttpRequest.BodyPublishers.noBody())
                    .build());
            if (response.statusCode() != 503) {
                return response;
            }
            Thread.sleep(200);
        }
        return response;
    }

    private static void assertConsecutive(int steps, List<JsonNode> events) {
        List<Long> expected = new ArrayList<>();
        List<Long> got = new ArrayList<>();
        for (long s = 1; s <= steps; s++) {
            expected.add(s);
        }
        events.forEach(e -> got.add(e.path("step").asLong()));
        assertEquals(expected, got, "every step once, in order");
    }
}
