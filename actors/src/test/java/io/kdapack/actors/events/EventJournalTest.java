package io.kdapack.actors.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.job.JobState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EventJournalTest {

    @TempDir
    Path dir;

    private static StepEvent step(long step) {
        // Values that do not print short, so a lossy round trip through the text would show.
        return new StepEvent(step, 1.0 / (step + 2), step % 2 == 0 ? null : Math.PI / step, 64 * step, 3, Math.E * step,
                1e-3 / 3, 12345.678901234567);
    }

    @Test
    void aJournalReadBackHoldsEveryStepExactlyAndARestartContinuesIt() throws Exception {
        Path file = dir.resolve("events.jsonl");
        try (EventJournal journal = EventJournal.open(file, 10)) {
            for (long s = 1; s <= 4; s++) {
                assertTrue(journal.append(step(s)));
            }
            journal.sync();
            journal.append(new EndEvent(JobState.STOPPED, 4, null));
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(Optional.of(new EndEvent(JobState.STOPPED, 4, null)), EventJournal.lastEnd(file));

        // A resumed run from the checkpoint at step 2 recomputes 3 and 4: already there, not written again.
        try (EventJournal journal = EventJournal.open(file, 10)) {
            JobEventLog log = journal.log();
            assertEquals(4, log.size());
            for (int i = 0; i < 4; i++) {
                assertEquals(step(i + 1), log.get(i), "bit for bit, nulls included");
            }
            assertTrue(log.end().isEmpty(), "an earlier run's end is not this run's");
            assertFalse(journal.append(step(3)));
            assertFalse(journal.append(step(4)));
            assertTrue(journal.append(step(5)));
            assertEquals(5, log.size());
        }
        assertEquals(Optional.empty(), EventJournal.lastEnd(file), "the second run was not ended");
        long steps = Files.readAllLines(file).stream().filter(l -> l.startsWith("{\"event\":\"step\"")).count();
        assertEquals(5, steps, "each step once in the file");
        assertTrue(Files.readString(file).contains("\"grad_norm\":") && Files.readString(file).contains("\"tokens_per_s\":"),
                "fields named as on the event stream");
    }

    @Test
    void aLineCutShortByAKillIsDropped() throws Exception {
        Path file = dir.resolve("events.jsonl");
        try (EventJournal journal = EventJournal.open(file, 10)) {
            journal.append(step(1));
            journal.append(step(2));
        }
        Files.writeString(file, "{\"event\":\"step\",\"step\":3,\"lo", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        try (EventJournal journal = EventJournal.open(file, 10)) {
            assertEquals(2, journal.log().size());
            assertTrue(journal.append(step(3)));
        }
        try (EventJournal journal = EventJournal.open(file, 10)) {
            assertEquals(3, journal.log().size());
            assertEquals(step(3), journal.log().get(2));
        }
    }
}
