package io.kdapack.core.model;

import io.kdapack.core.nn.LatentCache;

/**
 * One sequence's decoding state in every layer of a {@link HybridModel} (DESIGN §6): per KDA layer a
 * {@link KdaState} (constant size), per MLA layer a {@link LatentCache} (growing by {@code Ckv+R} floats a token),
 * and the number of tokens consumed, which is the position of the next one. Made by {@link HybridModel#newSequence()}
 * and advanced only by {@link HybridModel#extend}; not thread-safe.
 */
public final class SequenceState {
    /** Per layer; null at MLA layers. */
    private final KdaState[] kda;
    /** Per layer; null at KDA layers. */
    private final LatentCache[] latent;
    private int length;

    SequenceState(KdaState[] kda, LatentCache[] latent) {
        this.kda = kda;
        this.latent = latent;
    }

    /** Tokens consumed so far (prompt and generated); the next token's position. */
    public int length() {
        return length;
    }

    /** Bytes of state held now: KDA states and convolution windows, and the MLA caches as allocated. */
    public long bytes() {
        long bytes = 0;
        for (int i = 0; i < kda.length; i++) {
            bytes += kda[i] != null ? kda[i].bytes() : latent[i].bytes();
        }
        return bytes;
    }

    /** An independent copy (the same state, its own arrays). */
    public SequenceState copy() {
        KdaState[] k = new KdaState[kda.length];
        LatentCache[] c = new LatentCache[latent.length];
        for (int i = 0; i < kda.length; i++) {
            k[i] = kda[i] == null ? null : kda[i].copy();
            c[i] = latent[i] == null ? null : latent[i].copy();
        }
        SequenceState copy = new SequenceState(k, c);
        copy.length = length;
        return copy;
    }

    KdaState kda(int layer) {
        return kda[layer];
    }

    LatentCache latent(int layer) {
        return latent[layer];
    }

    void advance(int tokens) {
        length += tokens;
    }
}
