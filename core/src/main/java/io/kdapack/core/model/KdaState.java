package io.kdapack.core.model;

/**
 * One sequence's decoding state in one KDA layer, constant in the sequence's length: the recurrent state and the
 * last {@code W−1} inputs of each short convolution (oldest first; zeros before the first token).
 *
 * @param recurrent {@code [HV,K,V]} the KDA state S
 * @param qWindow   {@code [H·K, W−1]} last inputs of {@code q_conv1d}
 * @param kWindow   {@code [H·K, W−1]} last inputs of {@code k_conv1d}
 * @param vWindow   {@code [HV·V, W−1]} last inputs of {@code v_conv1d}
 */
public record KdaState(float[] recurrent, float[] qWindow, float[] kWindow, float[] vWindow) {

    /** Bytes held. */
    public long bytes() {
        return 4L * (recurrent.length + qWindow.length + kWindow.length + vWindow.length);
    }

    KdaState copy() {
        return new KdaState(recurrent.clone(), qWindow.clone(), kWindow.clone(), vWindow.clone());
    }
}
