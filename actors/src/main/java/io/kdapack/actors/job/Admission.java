package io.kdapack.actors.job;

/**
 * How many jobs a {@link JobManager} runs and keeps waiting.
 *
 * @param memoryBudget heap bytes that the running jobs' {@link io.kdapack.training.pipeline.MemoryEstimate}s may take
 *                     together; a job whose estimate alone exceeds it is refused
 * @param maxRunning   jobs that run at once
 * @param maxQueued    jobs that wait (state {@link JobState#QUEUED}) for a slot or for memory; beyond that new jobs
 *                     are refused as {@link JobRefused.Reason#FULL}
 */
public record Admission(long memoryBudget, int maxRunning, int maxQueued) {

    /** No memory budget, no limit on running jobs, no queue. */
    public static final Admission UNLIMITED = new Admission(Long.MAX_VALUE, Integer.MAX_VALUE, 0);

    public Admission {
        if (memoryBudget < 1 || maxRunning < 1 || maxQueued < 0) {
            throw new IllegalArgumentException("admission needs memoryBudget >= 1, maxRunning >= 1, maxQueued >= 0, got "
                    + memoryBudget + ", " + maxRunning + ", " + maxQueued);
        }
    }
}
