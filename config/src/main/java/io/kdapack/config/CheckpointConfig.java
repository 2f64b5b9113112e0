package io.kdapack.config;

/**
 * Checkpointing ({@code train.checkpoint}).
 *
 * @param dir      directory of the per-step checkpoint directories
 * @param interval write a checkpoint every this many steps; 0: only at the end of the run
 * @param keepLast keep only the newest this many checkpoints, deleting older ones once a new one is durably written;
 *                 0: keep every checkpoint
 */
public record CheckpointConfig(String dir, int interval, int keepLast) {

    public static CheckpointConfig defaults() {
        return new CheckpointConfig("runs/checkpoints", 50, 0);
    }
}
