package io.kdapack.core.nn;

/**
 * Rotary position embedding on interleaved pairs, as DeepSeek-V2 / Megatron MLA apply it to the decoupled rope
 * part: for a vector {@code x [R]} at position {@code p}, each pair {@code (x[2j], x[2j+1])}, {@code j < R/2}, is
 * rotated by the angle {@code p · θ^(−2j/R)}:
 *
 * <pre>
 * y[2j]   = x[2j] · cos(a_j) − x[2j+1] · sin(a_j)
 * y[2j+1] = x[2j] · sin(a_j) + x[2j+1] · cos(a_j)
 * </pre>
 *
 * Angles are formed in float32 ({@code inv_freq} as float, {@code p · inv_freq} rounded to float) like the
 * PyTorch references, so long positions get the same angles. (Hugging Face's DeepSeek-V2 code also permutes the
 * rotated pairs to {@code [evens…, odds…]}; q and k get the same permutation, so scores are unchanged and kdapack
 * keeps the pairs in place.)
 */
public final class Rope {
    private final int dim;
    private final float[] inverseFrequencies;

    /** @param dim R, even and ≥ 2; @param theta base θ > 0 (rope_theta) */
    public Rope(int dim, double theta) {
        if (dim < 2 || dim % 2 != 0) {
            throw new IllegalArgumentException("rope dim must be even and >= 2, got " + dim);
        }
        if (!(theta > 0)) {
            throw new IllegalArgumentException("rope_theta must be > 0, got " + theta);
        }
        this.dim = dim;
        this.inverseFrequencies = new float[dim / 2];
        for (int j = 0; j < dim / 2; j++) {
            inverseFrequencies[j] = (float) (1.0 / Math.pow(theta, (float) (2 * j) / dim));
        }
    }

    public int dim() {
        return dim;
    }

    /** Rotates {@code x[offset … offset+R)} in place for {@code position}. */
    public void rotate(float[] x, int offset, int position) {
        apply(x, offset, position, 1);
    }

    /** The inverse (transpose) rotation: maps the gradient of a rotated vector to the gradient of the original. */
    public void rotateBack(float[] x, int offset, int position) {
        apply(x, offset, position, -1);
    }

    private void apply(float[] x, int offset, int position, int direction) {
        for (int j = 0; j < dim / 2; j++) {
            float angle = position * inverseFrequencies[j];
            float cos = (float) Math.cos(angle);
            float sin = direction * (float) Math.sin(angle);
            float even = x[offset + 2 * j];
            float odd = x[offset + 2 * j + 1];
            x[offset + 2 * j] = even * cos - odd * sin;
            x[offset + 2 * j + 1] = even * sin + odd * cos;
        }
    }
}
