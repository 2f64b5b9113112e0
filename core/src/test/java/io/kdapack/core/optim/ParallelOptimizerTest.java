package io.kdapack.core.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import org.junit.jupiter.api.Test;

/**
 * The optimizer step's element-wise passes run in parallel blocks ({@link ElementBlocks}); the results must be
 * bitwise those of the plain element loop, for any pool size: parameters of several blocks with a ragged last one,
 * a small one, weight decay on and off.
 */
class ParallelOptimizerTest {
    private static final OptimizerConfig CONFIG = new OptimizerConfig(5e-3, 1e-3, 2, 0.1, 0.9, 0.95, 1e-8, 0.5);
    private static final int[] SIZES = {3 * ElementBlocks.BLOCK + 17, 5, ElementBlocks.BLOCK};
    private static final String[] NAMES = {"model.layers.0.mlp.up_proj.weight", "model.norm.weight", "lm_head.weight"};

    @Test
    void stepsAreBitwiseThoseOfTheSerialLoopForEveryPoolSize() throws Exception {
        List<TestParameter> expected = parameters();
        float[][][] moments = serialSteps(expected, 3);
        for (int threads : new int[] {1, 2, 3}) {
            List<TestParameter> actual = parameters();
            TrainingOptimizer optimizer = new TrainingOptimizer(CONFIG, 10);
            ForkJoinPool pool = new ForkJoinPool(threads);
            try {
                for (int s = 0; s < 3; s++) {
                    fillGradients(actual, s);
                    double norm = pool.submit(() -> optimizer.step(actual)).get().gradNorm();
                    assertEquals(norm(gradientsOf(s)), norm, "gradient norm, step " + s + ", " + threads + " threads");
                }
            } finally {
                pool.shutdown();
            }
            AdamWState state = optimizer.state();
            for (int p = 0; p < SIZES.length; p++) {
                String what = NAMES[p] + ", " + threads + " threads";
                assertArrayEquals(expected.get(p).values(), actual.get(p).values(), what);
                assertArrayEquals(moments[p][0], state.expAvg().get(NAMES[p]), what);
                assertArrayEquals(moments[p][1], state.expAvgSq().get(NAMES[p]), what);
                assertArrayEquals(new float[SIZES[p]], actual.get(p).grads(), what + ": gradients zeroed");
            }
        }
    }

    private static List<TestParameter> parameters() {
        Random random = new Random(7);
        List<TestParameter> list = new ArrayList<>();
        for (int p = 0; p < SIZES.length; p++) {
            float[] values = new float[SIZES[p]];
            for (int i = 0; i < values.length; i++) {
                values[i] = (float) random.nextGaussian();
            }
            list.add(TestParameter.of(NAMES[p], values, new float[SIZES[p]]));
        }
        return list;
    }

    /** Step {@code s}'s gradients, large enough that clipping (max norm 0.5) scales them. */
    private static float[][] gradientsOf(int s) {
        Random random = new Random(100 + s);
        float[][] g = new float[SIZES.length][];
        for (int p = 0; p < SIZES.length; p++) {
            g[p] = new float[SIZES[p]];
            for (int i = 0; i < g[p].length; i++) {
                g[p][i] = (float) (random.nextGaussian() * 0.01);
            }
        }
        return g;
    }

    private static void fillGradients(List<TestParameter> parameters, int s) {
        float[][] g = gradientsOf(s);
        for (int p = 0; p < SIZES.length; p++) {
            System.arraycopy(g[p], 0, parameters.get(p).grads(), 0, SIZES[p]);
        }
    }

    private static double norm(float[][] g) {
        double sum = 0;
        for (float[] row : g) {
            for (float x : row) {
                sum += (double) x * x;
            }
        }
        return Math.sqrt(sum);
    }

    /**
     * The optimizer step written out as one element loop on this thread: clip by the global norm, AdamW (PyTorch's
     * arithmetic, decay off for the norm weight), zero. Returns each parameter's moments {@code [m, v]}.
     */
    private static float[][][] serialSteps(List<TestParameter> parameters, int steps) {
        float[][][] moments = new float[SIZES.length][2][];
        for (int p = 0; p < SIZES.length; p++) {
            moments[p][0] = new float[SIZES[p]];
            moments[p][1] = new float[SIZES[p]];
        }
        CosineSchedule schedule = new CosineSchedule(CONFIG.lr(), CONFIG.minLr(), CONFIG.warmupSteps(), 10);
        for (int s = 0; s < steps; s++) {
            float[][] g = gradientsOf(s);
            double coefficient = CONFIG.clipGrad() / (norm(g) + GradientClipping.EPSILON);
            double lr = schedule.lr(s);
            double stepSize = lr / (1 - Math.pow(CONFIG.beta1(), s + 1));
            double bias2Sqrt = Math.sqrt(1 - Math.pow(CONFIG.beta2(), s + 1));
            for (int p = 0; p < SIZES.length; p++) {
                double decay = NAMES[p].equals("model.norm.weight") ? 1 : 1 - lr * CONFIG.weightDecay();
                float[] values = parameters.get(p).values();
                float[] m = moments[p][0];
                float[] v = moments[p][1];
                for (int i = 0; i < values.length; i++) {
                    double gi = coefficient < 1.0 ? (float) (g[p][i] * coefficient) : g[p][i];
                    double mi = CONFIG.beta1() * m[i] + (1 - CONFIG.beta1()) * gi;
                    double vi = CONFIG.beta2() * v[i] + (1 - CONFIG.beta2()) * gi * gi;
                    m[i] = (float) mi;
                    v[i] = (float) vi;
                    double denom = Math.sqrt(vi) / bias2Sqrt + CONFIG.eps();
                    values[i] = (float) (values[i] * decay - stepSize * mi / denom);
                }
            }
        }
        return moments;
    }
}
