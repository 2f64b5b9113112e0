package io.kdapack.bench;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/** A streaming sum over a float array with vector loads: the read-bandwidth probe of {@link GenerateBenchmark}. */
final class VectorSum {
    private static final VectorSpecies<Float> SPECIES = FloatVector.SPECIES_PREFERRED;

    private VectorSum() {
    }

    /** Σ x, four vector accumulators so that loads, not the add latency, bound the loop. */
    static float sum(float[] x) {
        int lanes = SPECIES.length();
        FloatVector a = FloatVector.zero(SPECIES);
        FloatVector b = a;
        FloatVector c = a;
        FloatVector d = a;
        int i = 0;
        for (; i <= x.length - 4 * lanes; i += 4 * lanes) {
            a = a.add(FloatVector.fromArray(SPECIES, x, i));
            b = b.add(FloatVector.fromArray(SPECIES, x, i + lanes));
            c = c.add(FloatVector.fromArray(SPECIES, x, i + 2 * lanes));
            d = d.add(FloatVector.fromArray(SPECIES, x, i + 3 * lanes));
        }
        float total = a.add(b).add(c).add(d).reduceLanes(VectorOperators.ADD);
        for (; i < x.length; i++) {
            total += x[i];
        }
        return total;
    }
}
