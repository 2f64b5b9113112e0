package io.kdapack.config;

/**
 * Checkpointing ({@code train.checkpoint}).
 *
 * @param dir      directory of the per-step checkpoint directories
 * @param interval write a checkpoint every this many steps; 0: only at the end of the run
 */
public record CheckpointConfig(String dir, int interval) {

    public static CheckpointConfig defaults() {
        return new CheckpointConfig("runs/checkpoints", 50);
    }
}
