package io.kdapack.actors.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.EventJournal;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.kdapack.actors.job.JobState;
import io.kdapack.actors.job.JobStatus;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An api member's mirror of a job's events: built from the journal, then fed live, each step once; gaps filled from
 * the journal; the end taken from the topic or, when that never comes, from the status.
 */
class EventMirrorsTest {

    @TempDir
    Path temp;

    @Test
    void fromTheJournalThenLiveEachStepOnceGapsFilledFromTheJournal() throws Exception {
        Path file = temp.resolve("events.jsonl");
        EventMirrors mirrors = new EventMirrors(id -> file, 4);
        try (EventJournal journal = EventJournal.open(file, 10)) {
            for (int s = 1; s <= 3; s++) {
                journal.append(step(s));
            }
            JobEventLog log = mirrors.open(status(JobState.RUNNING, 3));
            assertEquals(List.of(1L, 2L, 3L), steps(log));
            mirrors.live(JobEventMessage.of("j", step(3))); // published before the mirror was read: already there
            assertEquals(List.of(1L, 2L, 3L), steps(log));
            journal.append(step(4));
            journal.append(step(5));
            journal.sync();
            mirrors.live(JobEventMessage.of("j", step(5))); // step 4's message was lost
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L), steps(log), "the gap is filled from the journal");
            assertSame(log, mirrors.open(status(JobState.RUNNING, 5)), "one mirror per job");
            assertEquals(List.of("j"), mirrors.open());
            journal.append(step(6));
            journal.append(new EndEvent(JobState.SUCCEEDED, 6, null));
        }
        JobEventLog log = mirrors.open(status(JobState.RUNNING, 5));
        mirrors.live(JobEventMessage.of("j", new EndEvent(JobState.SUCCEEDED, 6, null)));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), steps(log), "the end waits for the steps before it");
        assertEquals(JobState.SUCCEEDED, log.end().orElseThrow().state());
        assertEquals(List.of(), mirrors.open());
    }

    @Test
    void anEndTheTopicNeverDeliveredComesFromTheStatusAndANewRunGetsAFreshMirror() throws Exception {
        Path file = temp.resolve("events.jsonl");
        EventMirrors mirrors = new EventMirrors(id -> file, 4);
        try (EventJournal journal = EventJournal.open(file, 10)) {
            journal.append(step(1));
            journal.append(step(2));
        }
        JobEventLog log = mirrors.open(status(JobState.RUNNING, 1));
        mirrors.endFromStatus(status(JobState.RUNNING, 2));
        assertTrue(log.end().isEmpty(), "a running job's mirror does not end");
        JobStatus failed = new JobStatus("j", JobState.FAILED, 2, 10, 1.0, Instant.EPOCH, Instant.EPOCH, "worker left");
        mirrors.endFromStatus(failed);
        assertEquals(new EndEvent(JobState.FAILED, 2, "worker left"), log.end().orElseThrow());
        assertEquals(List.of(1L, 2L), steps(log));

        JobEventLog resumed = mirrors.open(status(JobState.RUNNING, 2));
        assertTrue(resumed != log && resumed.end().isEmpty(), "a resumed run is mirrored afresh");
        assertEquals(List.of(1L, 2L), steps(resumed));
    }

    @Test
    void boundedEndedMirrorsGoFirst() throws Exception {
        EventMirrors mirrors = new EventMirrors(id -> temp.resolve(id + ".jsonl"), 2);
        JobEventLog running = mirrors.open(new JobStatus("a", JobState.RUNNING, 0, 5, null, Instant.EPOCH, null, null));
        mirrors.open(new JobStatus("b", JobState.SUCCEEDED, 0, 5, null, Instant.EPOCH, Instant.EPOCH, null));
        mirrors.open(new JobStatus("c", JobState.RUNNING, 0, 5, null, Instant.EPOCH, null, null));
        assertEquals(List.of("a", "c"), mirrors.open(), "the ended mirror was dropped, not the running one");
        assertSame(running, mirrors.open(new JobStatus("a", JobState.RUNNING, 0, 5, null, Instant.EPOCH, null, null)));
    }

    private static StepEvent step(long s) {
        return new StepEvent(s, 1.0 / s, null, 128, 3, 0.5, 1e-3, 1000);
    }

    private static JobStatus status(JobState state, long step) {
        return new JobStatus("j", state, step, 10, 1.0, Instant.EPOCH, null, null);
    }

    private static List<Long> steps(JobEventLog log) {
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < log.size(); i++) {
            out.add(log.get(i).step());
        }
        return out;
    }
}
