package io.kdapack.actors.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.actors.job.JobState;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class JobEventLogTest {

    private static StepEvent step(long step) {
        return new StepEvent(step, 1.0 / step, null, 64, 3, 0.5, 1e-3, 1000);
    }

    @Test
    void keepsConsecutiveStepsAndFindsTheFirstUnseen() {
        JobEventLog log = new JobEventLog(10);
        assertEquals(0, log.indexAfter(7), "an empty log replays from its start");
        for (long s = 5; s <= 8; s++) {
            log.append(step(s));
        }
        assertEquals(4, log.size());
        assertEquals(5, log.get(0).step());
        assertEquals(0, log.indexAfter(0), "from before the run: everything");
        assertEquals(0, log.indexAfter(4));
        assertEquals(2, log.indexAfter(6), "after step 6 comes step 7 at index 2");
        assertEquals(4, log.indexAfter(8), "nothing new yet");
        assertEquals(4, log.indexAfter(1000));
        var gap = assertThrows(IllegalArgumentException.class, () -> log.append(step(10)));
        assertTrue(gap.getMessage().contains("step 10 does not follow step 8"), gap.getMessage());
    }

    @Test
    void refusesStepsPastCapacityOrAfterTheEnd() {
        JobEventLog log = new JobEventLog(2);
        log.append(step(1));
        log.append(step(2));
        assertThrows(IllegalStateException.class, () -> log.append(step(3)));
        log.end(new EndEvent(JobState.SUCCEEDED, 2, null));
        assertEquals(JobState.SUCCEEDED, log.end().orElseThrow().state());
        assertThrows(IllegalStateException.class, () -> log.end(new EndEvent(JobState.FAILED, 2, "x")));
        assertThrows(IllegalArgumentException.class, () -> new JobEventLog(0));
    }

    @Test
    void listenersHearEveryChangeUntilRemoved() {
        JobEventLog log = new JobEventLog(5);
        AtomicInteger calls = new AtomicInteger();
        Runnable unsubscribe = log.subscribe(calls::incrementAndGet);
        log.append(step(1));
        log.append(step(2));
        unsubscribe.run();
        log.append(step(3));
        assertEquals(2, calls.get());
    }

    @Test
    void aConcurrentReaderAlwaysSeesCompleteConsecutiveSteps() throws Exception {
        int steps = 200_000; // many array growths while the reader reads
        JobEventLog log = new JobEventLog(steps);
        AtomicReference<String> problem = new AtomicReference<>();
        Thread reader = new Thread(() -> {
            int seen = 0;
            while (seen < steps && problem.get() == null) {
                int size = log.size();
                for (int i = seen; i < size; i++) {
                    StepEvent event = log.get(i);
                    if (event == null || event.step() != i + 1) {
                        problem.set("index " + i + " held " + event);
                    }
                }
                seen = size;
            }
        });
        reader.start();
        for (long s = 1; s <= steps; s++) {
            log.append(step(s));
        }
        reader.join();
        assertEquals(null, problem.get());
    }

    @Test
    void remembersTheLastStepWithAValidationLoss() {
        JobEventLog log = new JobEventLog(10);
        log.append(step(1));
        assertTrue(log.lastValidation().isEmpty());
        log.append(new StepEvent(2, 0.5, 0.6, 64, 3, 0.5, 1e-3, 1000, 0.75, 0.8));
        log.append(step(3));
        assertEquals(2, log.lastValidation().orElseThrow().step());
        assertEquals(0.75, log.lastValidation().orElseThrow().valLoss());
    }
}
