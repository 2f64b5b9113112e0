package io.kdapack.core.linalg;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector species of every CPU kernel, and the one horizontal sum they use, in an order fixed by the length of
 * the sum alone, so that results are bitwise the same whatever the CPU's vector width (4, 8 or 16 floats:
 * SSE or {@code -XX:MaxVectorSize=16}, AVX2, AVX-512).
 *
 * <p>Every other kernel loop is element-wise or keeps a lane per output element that accumulates in a fixed order,
 * and its scalar tail runs the same IEEE operations as its vector body (a fused multiply-add where the body has one),
 * so the width only decides which elements take the vector path, never their value. A sum across the elements of a
 * vector is different: its order would follow the lane count. {@link #dot} therefore sums through
 * {@value #PARTIALS} partial sums whatever the width (element {@code 16b + j} of the whole blocks of 16 into partial
 * {@code j}, by fused multiply-adds in block order), combined in a fixed tree ({@code p_j + p_{j+8}}, then
 * {@code + 4}, {@code + 2}, {@code + 1}), and the last {@code n mod 16} elements in a fused multiply-add chain of
 * their own, added last. With 16 lanes the partials are one vector, with 8 two, with 4 four; the first levels of the
 * tree are then additions of those vectors, the rest shifts within one.
 *
 * <p>The species is the CPU's preferred one while it holds 4 to 16 floats (every x86-64 CPU); a wider one (as ARM SVE
 * may offer) is narrowed to 16 floats and a narrower one widened to 4, with a log line, so that the partial sums
 * always fill whole vectors.
 */
public final class VectorWidth {
    /** Partial sums of every horizontal sum, whatever the width. */
    public static final int PARTIALS = 16;
    /** The species of every kernel. */
    public static final VectorSpecies<Float> SPECIES = choose(FloatVector.SPECIES_PREFERRED);
    /** Floats per vector of {@link #SPECIES}: 4, 8 or 16. */
    public static final int LANES = SPECIES.length();
    /** Doubles in a vector as wide as {@link #SPECIES} (2, 4 or 8), for the sums kept in double. */
    public static final VectorSpecies<Double> DOUBLES = VectorSpecies.of(double.class, SPECIES.vectorShape());
    /** Floats in half {@link #SPECIES}'s width: as many as {@link #DOUBLES} holds, into which they convert exactly. */
    public static final VectorSpecies<Float> HALF_FLOATS =
            VectorSpecies.of(float.class, VectorShape.forBitSize(SPECIES.vectorBitSize() / 2));
    /** Vectors holding the {@value #PARTIALS} partial sums. */
    private static final int ACCUMULATORS = PARTIALS / LANES;
    /** Lane i takes lane i + s (wrapping; only the low lanes of each tree level are used). */
    private static final VectorShuffle<Float> SHIFT_4 = VectorShuffle.iota(SPECIES, 4 % LANES, 1, true);
    private static final VectorShuffle<Float> SHIFT_8 = VectorShuffle.iota(SPECIES, 8 % LANES, 1, true);
    private static final VectorShuffle<Float> SHIFT_2 = VectorShuffle.iota(SPECIES, 2, 1, true);
    private static final VectorShuffle<Float> SHIFT_1 = VectorShuffle.iota(SPECIES, 1, 1, true);

    private VectorWidth() {
    }

    private static VectorSpecies<Float> choose(VectorSpecies<Float> preferred) {
        int lanes = preferred.length();
        if (lanes >= 4 && lanes <= PARTIALS) {
            return preferred;
        }
        VectorSpecies<Float> chosen = lanes > PARTIALS ? FloatVector.SPECIES_512 : FloatVector.SPECIES_128;
        System.getLogger(VectorWidth.class.getName()).log(System.Logger.Level.INFO, "the CPU''s preferred vector holds "
                + "{0} floats; the kernels use {1} (their fixed-order sums need 4 to {2})", lanes, chosen.length(), PARTIALS);
        return chosen;
    }

    /** The {@link #DOUBLES}-many floats from {@code x[offset]}, each converted exactly to a double. */
    public static DoubleVector toDoubles(float[] x, int offset) {
        return (DoubleVector) FloatVector.fromArray(HALF_FLOATS, x, offset)
                .convertShape(VectorOperators.F2D, DOUBLES, 0);
    }

    /**
     * {@code Σ x[xOff + i] · y[yOff + i]} over {@code i < n}, in the order of the class comment: bitwise the same for
     * every vector width.
     */
    public static float dot(int n, float[] x, int xOff, float[] y, int yOff) {
        FloatVector p0 = FloatVector.zero(SPECIES);
        FloatVector p1 = FloatVector.zero(SPECIES);
        FloatVector p2 = FloatVector.zero(SPECIES);
        FloatVector p3 = FloatVector.zero(SPECIES);
        int whole = n - n % PARTIALS;
        // ACCUMULATORS is a constant: the compiler keeps only the branches of this machine's width.
        for (int i = 0; i < whole; i += PARTIALS) {
            p0 = FloatVector.fromArray(SPECIES, x, xOff + i).fma(FloatVector.fromArray(SPECIES, y, yOff + i), p0);
            if (ACCUMULATORS >= 2) {
                p1 = FloatVector.fromArray(SPECIES, x, xOff + i + LANES)
                        .fma(FloatVector.fromArray(SPECIES, y, yOff + i + LANES), p1);
            }
            if (ACCUMULATORS == 4) {
                p2 = FloatVector.fromArray(SPECIES, x, xOff + i + 2 * LANES)
                        .fma(FloatVector.fromArray(SPECIES, y, yOff + i + 2 * LANES), p2);
                p3 = FloatVector.fromArray(SPECIES, x, xOff + i + 3 * LANES)
                        .fma(FloatVector.fromArray(SPECIES, y, yOff + i + 3 * LANES), p3);
            }
        }
        // Tree level 1 (p_j + p_{j+8}) and 2 (+ 4) across the accumulators where the width splits the partials.
        FloatVector v;
        if (ACCUMULATORS == 4) {
            v = p0.add(p2).add(p1.add(p3));
        } else if (ACCUMULATORS == 2) {
            v = p0.add(p1);
        } else {
            v = p0.add(p0.rearrange(SHIFT_8));
        }
        if (ACCUMULATORS <= 2) {
            v = v.add(v.rearrange(SHIFT_4));
        }
        v = v.add(v.rearrange(SHIFT_2));
        v = v.add(v.rearrange(SHIFT_1));
        float tail = 0f;
        for (int i = whole; i < n; i++) {
            tail = Math.fma(x[xOff + i], y[yOff + i], tail);
        }
        return v.lane(0) + tail;
    }
}
