package io.kdapack.core.kda;

/**
 * What a training forward ({@link KdaBackend#forwardForBackward}) leaves for its backward: the inputs, the
 * options, the result, and whatever the backend kept so that the backward need not run the forward again.
 * A tape serves one backward: the backend may recycle what it kept, and a second backward through the same
 * tape is refused.
 */
public interface KdaTape {

    KdaInputs inputs();

    KdaOptions options();

    KdaBackend.KdaResult result();

    /** A tape that keeps nothing beyond the inputs: its backward recomputes the forward. */
    record Recomputing(KdaInputs inputs, KdaOptions options, KdaBackend.KdaResult result) implements KdaTape {
    }
}
