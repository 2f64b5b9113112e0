package io.kdapack.bench;

import io.kdapack.core.linalg.Gemm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;

/**
 * kdapack's matrix product beside the best BLAS found on the machine, for scale: numpy's (OpenBLAS in the wheels),
 * run by {@code python3 -c}. Square fp32 products of {@value #SMALL}³ and {@value #LARGE}³, each side timed as the
 * best of {@value #SAMPLES} samples of enough products to take a few tenths of a second, one after the other in the
 * same minutes: kdapack's {@link Gemm#parallelSgemm} on a pool of {@code threads}, then numpy with
 * {@code OPENBLAS_NUM_THREADS} (and {@code OMP_NUM_THREADS}) set to {@code threads} and {@code OPENBLAS_CORETYPE}
 * removed from its environment, so that OpenBLAS picks the kernels of the CPU it finds.
 *
 * <p>Without {@code python3} or numpy, or when the script fails or runs past {@value #TIMEOUT_S} s (it is then
 * killed), {@link #measure} says so in {@code blas} and leaves out the figures: a benchmark never fails for want of a
 * BLAS.
 */
public final class BlasComparison {

    static final int SMALL = 512;
    static final int LARGE = 1024;
    static final int SAMPLES = 5;
    /** Bound on the numpy process: its products take a few seconds; a hung or swapping one is killed. */
    static final long TIMEOUT_S = 120;

    /** Prints "name version" of numpy's BLAS, then one "n gflops" line per size, best of the samples. */
    private static final String SCRIPT = """
            import sys, time
            import numpy as np
            name = 'unknown BLAS'
            try:
                blas = np.show_config(mode='dicts')['Build Dependencies']['blas']
                name = blas.get('name', name) + ' ' + str(blas.get('version', ''))
            except Exception:
                pass
            print('numpy ' + np.__version__ + ' ' + name.strip())
            rng = np.random.default_rng(1)
            for n in map(int, sys.argv[1:]):
                a = rng.random((n, n), dtype=np.float32) - 0.5
                b = rng.random((n, n), dtype=np.float32) - 0.5
                reps = max(1, (8 * 512 ** 3) // n ** 3)
                a @ b
                best = float('inf')
                for _ in range(%d):
                    t = time.perf_counter()
                    for _ in range(reps):
                        a @ b
                    best = min(best, (time.perf_counter() - t) / reps)
                print(n, 2.0 * n ** 3 / best * 1e-9)
            """.formatted(SAMPLES);

    private BlasComparison() {
    }

    /**
     * Measures both sides; the map holds {@code blas} (what was found, or why nothing was), and where found
     * {@code blas_gflops}, kdapack's {@code gemm_gflops} and their ratio {@code matmul_over_blas}, each keyed by size.
     *
     * @param threads worker threads of both sides, ≥ 1
     */
    public static Map<String, Object> measure(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        Map<String, Double> gemm = new LinkedHashMap<>();
        ForkJoinPool pool = new ForkJoinPool(threads);
        try {
            for (int n : List.of(SMALL, LARGE)) {
                gemm.put(Integer.toString(n), gemmGflops(pool, n));
            }
        } finally {
            pool.shutdown();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        Numpy numpy = numpy(threads);
        out.put("blas", numpy.description());
        if (numpy.gflops().isEmpty()) {
            return out;
        }
        Map<String, Double> ratio = new LinkedHashMap<>();
        gemm.forEach((n, g) -> ratio.put(n, g / numpy.gflops().get(n)));
        out.put("blas_gflops", numpy.gflops());
        out.put("gemm_gflops", gemm);
        out.put("matmul_over_blas", ratio);
        return out;
    }

    /** Best of the samples of kdapack's product of two random {@code n × n} matrices, in GFLOP/s. */
    static double gemmGflops(ForkJoinPool pool, int n) {
        Random random = new Random(1);
        float[] a = new float[n * n];
        float[] b = new float[n * n];
        float[] c = new float[n * n];
        for (int i = 0; i < a.length; i++) {
            a[i] = random.nextFloat() - 0.5f;
            b[i] = random.nextFloat() - 0.5f;
        }
        long reps = Math.max(1, 8L * SMALL * SMALL * SMALL / ((long) n * n * n));
        Runnable products = () -> {
            for (long r = 0; r < reps; r++) {
                Gemm.parallelSgemm(pool, false, false, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
            }
        };
        products.run(); // warm-up: compiles the kernels
        products.run();
        double best = Double.POSITIVE_INFINITY;
        for (int s = 0; s < SAMPLES; s++) {
            long start = System.nanoTime();
            products.run();
            best = Math.min(best, (System.nanoTime() - start) * 1e-9 / reps);
        }
        return 2.0 * n * n * n / best * 1e-9;
    }

    /** What numpy gave: a description, and GFLOP/s by size (empty when it gave none). */
    record Numpy(String description, Map<String, Double> gflops) {
    }

    static Numpy numpy(int threads) {
        ProcessBuilder builder = new ProcessBuilder("python3", "-c", SCRIPT, Integer.toString(SMALL),
                Integer.toString(LARGE)).redirectErrorStream(true);
        builder.environment().remove("OPENBLAS_CORETYPE");
        builder.environment().put("OPENBLAS_NUM_THREADS", Integer.toString(threads));
        builder.environment().put("OMP_NUM_THREADS", Integer.toString(threads));
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            return new Numpy("not found (no python3: " + e.getMessage() + ")", Map.of());
        }
        try {
            process.getOutputStream().close();
            if (!process.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return new Numpy("not found (numpy ran past " + TIMEOUT_S + " s; killed)", Map.of());
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            return parse(process.exitValue(), output);
        } catch (IOException e) {
            process.destroyForcibly();
            return new Numpy("not found (reading python3's output: " + e.getMessage() + ")", Map.of());
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            return new Numpy("not found (interrupted)", Map.of());
        }
    }

    /** The script's output: its first line names the BLAS, then "n gflops" per size. */
    static Numpy parse(int exitCode, String output) {
        String[] lines = output.split("\\R");
        if (exitCode != 0) {
            String last = lines[lines.length - 1];
            return new Numpy(last.contains("No module named") ? "not found (python3 has no numpy)"
                    : "not found (python3 exited " + exitCode + ": " + last + ")", Map.of());
        }
        Map<String, Double> gflops = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            String[] fields = lines[i].trim().split("\\s+");
            if (fields.length != 2) {
                return new Numpy("not found (unexpected line from numpy: " + lines[i] + ")", Map.of());
            }
            try {
                gflops.put(fields[0], Double.parseDouble(fields[1]));
            } catch (NumberFormatException e) {
                return new Numpy("not found (unexpected line from numpy: " + lines[i] + ")", Map.of());
            }
        }
        if (!gflops.keySet().equals(java.util.Set.of(Integer.toString(SMALL), Integer.toString(LARGE)))) {
            return new Numpy("not found (numpy gave sizes " + gflops.keySet() + ")", Map.of());
        }
        return new Numpy(lines[0], gflops);
    }
}
