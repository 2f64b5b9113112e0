package io.kdapack.core.optim;

import io.kdapack.core.linalg.Team;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The elements of a list of parameters cut into blocks of at most {@value #BLOCK} elements, run in parallel in the
 * fork-join pool of the calling task (or the common pool): how the optimizer's element-wise passes (the AdamW update,
 * the clipping scale, zeroing the gradients) use every thread instead of the caller's alone. A body sees one
 * parameter's index range at a time and must treat each element independently of the others, so results are bitwise
 * the same whatever the split and the pool's size. Reductions (the global gradient norm) keep their own fixed order
 * and do not run here.
 */
final class ElementBlocks {
    /** Elements per block: 128 KiB of one fp32 array, enough to make a task's scheduling cost negligible. */
    static final int BLOCK = 1 << 15;

    private ElementBlocks() {
    }

    interface Body {
        /** Processes elements {@code [from, to)} of parameter {@code p}. */
        void run(NamedParameter p, int from, int to);
    }

    /** Runs {@code body} over every element of {@code parameters}, blocks in parallel. */
    static void forEach(List<? extends NamedParameter> parameters, Body body) {
        List<int[]> blocks = new ArrayList<>();
        for (int p = 0; p < parameters.size(); p++) {
            int n = parameters.get(p).values().length;
            for (int from = 0; from < n; from += BLOCK) {
                blocks.add(new int[] {p, from, Math.min(n, from + BLOCK)});
            }
        }
        Team.forEach(blocks.size(), i -> {
            int[] b = blocks.get(i);
            body.run(parameters.get(b[0]), b[1], b[2]);
        });
    }

    /** Sets every gradient of {@code parameters} to zero, blocks in parallel. */
    static void zeroGradients(List<? extends NamedParameter> parameters) {
        forEach(parameters, (p, from, to) -> Arrays.fill(p.grads(), from, to, 0f));
    }
}
