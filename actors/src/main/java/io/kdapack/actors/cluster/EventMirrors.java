package io.kdapack.actors.cluster;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobStatus;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An api member's copies of the event histories of jobs that run elsewhere: one {@link JobEventLog} per job, which the
 * HTTP streams read exactly as they read a local job's (same cursor, same {@code Last-Event-ID} replay).
 *
 * <p>Nothing is missed, nothing doubled: a worker writes each event to the job's {@code events.jsonl} (in the jobs
 * directory every member sees) before it publishes it on the {@link EventTopic}, and this member is subscribed to the
 * topic before it opens a mirror. So a mirror is built from the file, then fed by the topic; a live step is taken only
 * if it follows the mirror's last one (each step id once), and a gap (a message the topic lost, or one published before
 * this member's subscription had reached the worker) is filled from the file, where it already is. The run's end comes
 * from the topic, or, when that message is lost (the worker died, or the run ended before the subscription reached
 * it), from the job's final status ({@link #endFromStatus}), which the owner checks periodically.
 *
 * <p>Bounds: at most {@code capacity} mirrors (ended ones are dropped first, the least recently used first), each
 * bounded like any {@link JobEventLog} by its plan's step count. Confined to one actor (the writer of the logs).
 */
final class EventMirrors {

    private static final Logger LOG = LoggerFactory.getLogger(EventMirrors.class);

    private final Function<String, Path> journalOf;
    private final int capacity;
    private final Map<String, JobEventLog> mirrors = new LinkedHashMap<>(16, 0.75f, true);

    /** @param journalOf a job's {@code events.jsonl} */
    EventMirrors(Function<String, Path> journalOf, int capacity) {
        this.journalOf = journalOf;
        this.capacity = capacity;
    }

    /** The mirror of {@code status}'s job (built from its journal if there is none, or if a new run has begun). */
    JobEventLog open(JobStatus status) {
        JobEventLog log = mirrors.get(status.id());
        if (log != null && !(log.end().isPresent() && !status.state().isTerminal())) {
            return log;
        }
        log = new JobEventLog(Math.max(1, status.totalSteps()));
        fill(status.id(), log);
        if (status.state().isTerminal()) {
            log.end(new EndEvent(status.state(), status.step(), status.error()));
        }
        mirrors.put(status.id(), log);
        evict();
        return log;
    }

    /** A live event from the topic. */
    void live(JobEventMessage message) {
        JobEventLog log = mirrors.get(message.jobId());
        if (log == null) {
            return; // no stream or status read it yet: it is in the journal when one does
        }
        if (message.step() != null) {
            if (log.end().isPresent()) {
                mirrors.remove(message.jobId()); // a new run of the job: the next reader builds a fresh mirror
                return;
            }
            StepEvent step = message.step();
            if (step.step() != next(log)) {
                fill(message.jobId(), log);
            }
            if (step.step() == next(log)) {
                log.append(step);
            }
        } else if (log.end().isEmpty()) {
            fill(message.jobId(), log);
            log.end(message.end());
        }
    }

    /** Ends the mirror of a run that has ended according to its status, when the topic's end message never came. */
    void endFromStatus(JobStatus status) {
        JobEventLog log = mirrors.get(status.id());
        if (log != null && log.end().isEmpty() && status.state().isTerminal()) {
            fill(status.id(), log);
            log.end(new EndEvent(status.state(), status.step(), status.error()));
        }
    }

    /** Jobs whose mirror has not ended yet. */
    List<String> open() {
        return mirrors.entrySet().stream().filter(e -> e.getValue().end().isEmpty()).map(Map.Entry::getKey).toList();
    }

    /** Appends the journal's steps after the mirror's last one. */
    private void fill(String jobId, JobEventLog log) {
        try {
            for (StepEvent step : EventJournal.readSteps(journalOf.apply(jobId))) {
                if (step.step() == next(log)) {
                    log.append(step);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("job {}: cannot read its event journal: {}", jobId, e.toString());
        }
    }

    /** The step a log takes next: one after its last, or 1 for an empty one (a journal's history starts at step 1). */
    private static long next(JobEventLog log) {
        return log.size() == 0 ? 1 : log.get(log.size() - 1).step() + 1;
    }

    private void evict() {
        Iterator<Map.Entry<String, JobEventLog>> eldest = mirrors.entrySet().iterator();
        while (mirrors.size() > capacity && eldest.hasNext()) {
            if (eldest.next().getValue().end().isPresent()) {
                eldest.remove();
            }
        }
        eldest = mirrors.entrySet().iterator();
        while (mirrors.size() > capacity && eldest.hasNext()) {
            eldest.next();
            eldest.remove();
        }
    }
}
