package io.kdapack.api.server;

import io.kdapack.actors.cluster.ClusterView;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.inference.InferenceGauges;
import io.kdapack.actors.job.JobHandle;
import io.kdapack.actors.job.JobState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The server's Prometheus metrics (Micrometer): HTTP responses by status, and per job its steps, last loss, last
 * validation loss (jobs with {@code train.eval_interval}), tokens per second and pipeline queue depths, plus the number of jobs in each state. Job gauges are
 * refreshed from the job manager's snapshot at each scrape, so a job's series disappear with it.
 */
public final class ServerMetrics {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final MultiGauge steps = MultiGauge.builder("kdapack.job.steps")
            .description("optimizer steps completed by the job's current run").register(registry);
    private final MultiGauge loss = MultiGauge.builder("kdapack.job.loss")
            .description("loss of the job's last step").register(registry);
    private final MultiGauge valLoss = MultiGauge.builder("kdapack.job.val.loss")
            .description("validation loss of the job's last evaluation (train.eval_interval)").register(registry);
    private final MultiGauge tokensPerSecond = MultiGauge.builder("kdapack.job.tokens.per.second")
            .description("token positions per second of the job's last step").register(registry);
    private final MultiGauge exchangeBytes = MultiGauge.builder("kdapack.job.exchange.bytes")
            .description("gradient bytes rank 0 of a data-parallel job sent and received in its last step")
            .register(registry);
    private final MultiGauge exchangeSeconds = MultiGauge.builder("kdapack.job.exchange.seconds")
            .description("seconds rank 0 of a data-parallel job spent in the gradient exchange of its last step")
            .register(registry);
    private final MultiGauge queueDepth = MultiGauge.builder("kdapack.job.queue.depth")
            .description("work waiting in the job's pipeline: micro-batches ready (segmented) or loading, and"
                    + " evaluations waiting for the step in progress").register(registry);
    private final MultiGauge jobs = MultiGauge.builder("kdapack.jobs")
            .description("jobs known to the server, by state").register(registry);
    private final MultiGauge members = MultiGauge.builder("kdapack.cluster.members")
            .description("cluster members as this api member sees them, by Pekko member status and reachability"
                    + " (cluster.enabled servers only)").register(registry);
    private final MultiGauge memberRoles = MultiGauge.builder("kdapack.cluster.members.by.role")
            .description("cluster members with the role (api, worker), any status").register(registry);

    /** Shows the inference actor's occupancy ({@code kdapack_inference_*} gauges). */
    public void watch(InferenceGauges inference) {
        Gauge.builder("kdapack.inference.active.sequences", inference, InferenceGauges::activeSequences)
                .description("sequences holding an inference slot (prefilling or generating)").register(registry);
        Gauge.builder("kdapack.inference.queued.requests", inference, InferenceGauges::queuedRequests)
                .description("completion requests waiting for slots or state memory").register(registry);
        Gauge.builder("kdapack.inference.state.bytes", inference, InferenceGauges::stateBytes)
                .description("decoding state held by the running sequences").register(registry);
        Gauge.builder("kdapack.inference.reserved.state.bytes", inference, InferenceGauges::reservedStateBytes)
                .description("decoding state reserved by running requests at their longest").register(registry);
        Gauge.builder("kdapack.inference.live.weight.bytes", inference, InferenceGauges::liveWeightBytes)
                .description("bytes of running jobs' weight copies cached to serve their live weights")
                .register(registry);
    }

    /** Counts one HTTP response. */
    public void countResponse(int status) {
        Counter.builder("kdapack.http.requests").description("HTTP responses sent, by status code")
                .tag("status", Integer.toString(status)).register(registry).increment();
    }

    /** Prometheus text exposition of every metric, job gauges taken from {@code snapshot}. */
    public String scrape(List<JobHandle> snapshot) {
        return scrape(snapshot, java.util.Optional.empty());
    }

    /** As {@link #scrape(List)}, with the membership gauges of {@code cluster} when the server is a member. */
    public synchronized String scrape(List<JobHandle> snapshot, java.util.Optional<ClusterView> cluster) {
        cluster.ifPresent(this::registerMembers);
        List<MultiGauge.Row<?>> stepRows = new ArrayList<>();
        List<MultiGauge.Row<?>> lossRows = new ArrayList<>();
        List<MultiGauge.Row<?>> speedRows = new ArrayList<>();
        List<MultiGauge.Row<?>> valLossRows = new ArrayList<>();
        List<MultiGauge.Row<?>> exchangeBytesRows = new ArrayList<>();
        List<MultiGauge.Row<?>> exchangeSecondsRows = new ArrayList<>();
        List<MultiGauge.Row<?>> queueRows = new ArrayList<>();
        Map<JobState, Integer> byState = new EnumMap<>(JobState.class);
        for (JobHandle job : snapshot) {
            Tags tags = Tags.of("job", job.status().id());
            stepRows.add(MultiGauge.Row.of(tags, job.status().step()));
            JobEventLog events = job.events();
            int size = events.size();
            if (size > 0) {
                lossRows.add(MultiGauge.Row.of(tags, events.get(size - 1).loss()));
                speedRows.add(MultiGauge.Row.of(tags, events.get(size - 1).tokensPerS()));
                if (events.get(size - 1).exchangeBytes() != null) {
                    exchangeBytesRows.add(MultiGauge.Row.of(tags, events.get(size - 1).exchangeBytes()));
                    exchangeSecondsRows.add(MultiGauge.Row.of(tags, events.get(size - 1).exchangeS()));
                }
            }
            events.lastValidation().ifPresent(step -> valLossRows.add(MultiGauge.Row.of(tags, step.valLoss())));
            queueRows.add(MultiGauge.Row.of(tags.and("queue", "ready"), job.gauges().readyBatches()));
            queueRows.add(MultiGauge.Row.of(tags.and("queue", "loading"), job.gauges().loadsInFlight()));
            queueRows.add(MultiGauge.Row.of(tags.and("queue", "evaluations"), job.gauges().waitingEvaluations()));
            byState.merge(job.status().state(), 1, Integer::sum);
        }
        List<MultiGauge.Row<?>> stateRows = new ArrayList<>();
        for (JobState state : JobState.values()) {
            stateRows.add(MultiGauge.Row.of(Tags.of("state", state.name().toLowerCase()), byState.getOrDefault(state, 0)));
        }
        steps.register(stepRows, true);
        loss.register(lossRows, true);
        valLoss.register(valLossRows, true);
        tokensPerSecond.register(speedRows, true);
        exchangeBytes.register(exchangeBytesRows, true);
        exchangeSeconds.register(exchangeSecondsRows, true);
        queueDepth.register(queueRows, true);
        jobs.register(stateRows, true);
        return registry.scrape();
    }

    private void registerMembers(ClusterView cluster) {
        Map<List<String>, Integer> byStatus = new java.util.TreeMap<>(java.util.Comparator.comparing(List::toString));
        Map<String, Integer> byRole = new java.util.TreeMap<>();
        for (ClusterView.Member member : cluster.members()) {
            byStatus.merge(List.of(member.status(), Boolean.toString(member.reachable())), 1, Integer::sum);
            member.roles().forEach(role -> byRole.merge(role, 1, Integer::sum));
        }
        List<MultiGauge.Row<?>> statusRows = new ArrayList<>();
        byStatus.forEach((key, count) -> statusRows.add(MultiGauge.Row.of(
                Tags.of("status", key.get(0), "reachable", key.get(1)), count)));
        List<MultiGauge.Row<?>> roleRows = new ArrayList<>();
        byRole.forEach((role, count) -> roleRows.add(MultiGauge.Row.of(Tags.of("role", role), count)));
        members.register(statusRows, true);
        memberRoles.register(roleRows, true);
    }
}
