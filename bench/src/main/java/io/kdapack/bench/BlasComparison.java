package io.kdapack.bench;

import io.kdapack.core.linalg.Gemm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * kdapack's matrix product beside the best BLAS found on the machine, for scale: numpy's (OpenBLAS in the wheels),
 * in a {@code python3} process of its own. Square fp32 products of {@value #SMALL}³ and {@value #LARGE}³, each side
 * timed as the best of {@value #SAMPLES} samples of 8.6 GFLOP each (32 products of 512³, 4 of 1024³: tens of
 * milliseconds), <em>the two sides taking turns</em> sample by sample: kdapack's {@link Gemm#parallelSgemm} on a pool
 * of {@code threads} (a {@link MatmulProbe} of the size), then numpy with {@code OPENBLAS_NUM_THREADS} (and
 * {@code OMP_NUM_THREADS}) set to {@code threads} and {@code OPENBLAS_CORETYPE} removed from its environment, so that
 * OpenBLAS picks the kernels of the CPU it finds.
 *
 * <p>Why in turns: on the VMs this runs on, the rate a core gives moves by up to 2× from one second to the next
 * (a register-only multiply-add loop and the product fall together: the core is shared with another hardware thread,
 * docs/kda.md), so one side timed after the other compares two machines. Why a pause after each numpy sample:
 * OpenBLAS's worker threads (with more than one thread) spin for a while after a product before they sleep, and a
 * kdapack sample started in that while runs at two thirds of its rate on two threads (measured). Why an untimed
 * sample of kdapack's after the pause: the cores come out of a second's idleness slow, and numpy's sample, right
 * after kdapack's, never meets them so.
 *
 * <p>Without {@code python3} or numpy, or when the script fails or the whole comparison runs past {@value #TIMEOUT_S}
 * s (the process is then killed), {@link #measure} says so in {@code blas} and leaves out the figures: a benchmark
 * never fails for want of a BLAS.
 */
public final class BlasComparison {

    static final int SMALL = 512;
    static final int LARGE = 1024;
    static final int SAMPLES = 5;
    /** Bound on the numpy process: its products take a few seconds; a hung or swapping one is killed. */
    static final long TIMEOUT_S = 120;
    /** Wait after each numpy sample, for OpenBLAS's workers to stop spinning (0.3 s was not always enough). */
    static final long SETTLE_MS = 1000;

    /**
     * Prints "numpy version BLAS-name version", then for each size read from stdin the seconds of one product, as the
     * mean of a sample's products (the first request of a size also warms it up).
     */
    private static final String SCRIPT = """
            import sys, time
            import numpy as np
            name = 'unknown BLAS'
            try:
                blas = np.show_config(mode='dicts')['Build Dependencies']['blas']
                name = blas.get('name', name) + ' ' + str(blas.get('version', ''))
            except Exception:
                pass
            print('numpy ' + np.__version__ + ' ' + name.strip(), flush=True)
            rng = np.random.default_rng(1)
            operands = {}
            for line in sys.stdin:
                n = int(line)
                if n not in operands:
                    a = rng.random((n, n), dtype=np.float32) - 0.5
                    b = rng.random((n, n), dtype=np.float32) - 0.5
                    a @ b
                    operands[n] = (a, b)
                a, b = operands[n]
                reps = max(1, (32 * 512 ** 3) // n ** 3)
                t = time.perf_counter()
                for _ in range(reps):
                    a @ b
                print((time.perf_counter() - t) / reps, flush=True)
            """;

    private BlasComparison() {
    }

    /**
     * Measures both sides in turns; the map holds {@code blas} (what was found, or why nothing was), and where found
     * {@code blas_gflops}, kdapack's {@code gemm_gflops} and their ratio {@code matmul_over_blas}, each keyed by size.
     *
     * @param threads worker threads of both sides, ≥ 1
     */
    public static Map<String, Object> measure(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        try (Numpy numpy = Numpy.start(threads)) {
            Map<String, Double> blas = new LinkedHashMap<>();
            Map<String, Double> gemm = new LinkedHashMap<>();
            for (int n : List.of(SMALL, LARGE)) {
                double bestGemm = 0;
                double bestBlas = Double.POSITIVE_INFINITY;
                try (MatmulProbe product = new MatmulProbe(threads, n, productsPerSample(n))) {
                    gemmGflops(product); // warm-up: compiles the kernels
                    numpy.seconds(n); // warm-up of numpy's side
                    for (int s = 0; s < SAMPLES; s++) {
                        if (threads > 1) { // after numpy's last product (on one thread OpenBLAS starts no workers)
                            Thread.sleep(SETTLE_MS);
                            gemmGflops(product); // untimed: a core that sat idle starts slow, numpy's never does
                        }
                        bestGemm = Math.max(bestGemm, gemmGflops(product));
                        bestBlas = Math.min(bestBlas, numpy.seconds(n));
                    }
                }
                gemm.put(Integer.toString(n), bestGemm);
                blas.put(Integer.toString(n), 2.0 * n * n * n / bestBlas * 1e-9);
            }
            out.put("blas", numpy.description());
            out.put("blas_gflops", blas);
            out.put("gemm_gflops", gemm);
            Map<String, Double> ratio = new LinkedHashMap<>();
            gemm.forEach((n, g) -> ratio.put(n, g / blas.get(n)));
            out.put("matmul_over_blas", ratio);
        } catch (NumpyUnavailable e) {
            out.clear();
            out.put("blas", "not found (" + e.getMessage() + ")");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.clear();
            out.put("blas", "not found (interrupted)");
        }
        return out;
    }

    /** Products of {@code n³} in a sample of 8.6 GFLOP, on both sides (the script forms the same number). */
    private static int productsPerSample(int n) {
        return (int) Math.max(1, 32L * SMALL * SMALL * SMALL / ((long) n * n * n));
    }

    /** GFLOP/s of one run of kdapack's side. */
    static double gemmGflops(MatmulProbe product) {
        long start = System.nanoTime();
        product.run();
        return product.flops() / (System.nanoTime() - start);
    }

    /** Why there is no numpy to compare with; the message goes into {@code blas}. */
    static final class NumpyUnavailable extends Exception {
        NumpyUnavailable(String message) {
            super(message);
        }
    }

    /** The python3 process that times numpy's products on request; killed after {@value #TIMEOUT_S} s at the latest. */
    static final class Numpy implements AutoCloseable {
        private final Process process;
        private final BufferedReader from;
        private final PrintWriter to;
        private final String description;

        private Numpy(Process process) throws NumpyUnavailable {
            this.process = process;
            from = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            to = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            CompletableFuture.delayedExecutor(TIMEOUT_S, TimeUnit.SECONDS).execute(process::destroyForcibly);
            description = line();
            if (!description.startsWith("numpy ")) {
                throw stopped(description);
            }
        }

        static Numpy start(int threads) throws NumpyUnavailable {
            ProcessBuilder builder = new ProcessBuilder("python3", "-c", SCRIPT).redirectErrorStream(true);
            builder.environment().remove("OPENBLAS_CORETYPE");
            builder.environment().put("OPENBLAS_NUM_THREADS", Integer.toString(threads));
            builder.environment().put("OMP_NUM_THREADS", Integer.toString(threads));
            try {
                return new Numpy(builder.start());
            } catch (IOException e) {
                throw new NumpyUnavailable("no python3: " + e.getMessage());
            }
        }

        String description() {
            return description;
        }

        /** Seconds of one {@code n × n} product by numpy. */
        double seconds(int n) throws NumpyUnavailable {
            to.println(n);
            String line = line();
            try {
                return Double.parseDouble(line);
            } catch (NumberFormatException e) {
                throw stopped(line);
            }
        }

        private String line() throws NumpyUnavailable {
            try {
                String line = from.readLine();
                if (line == null) {
                    throw stopped("");
                }
                return line;
            } catch (IOException e) {
                throw new NumpyUnavailable("reading python3's output: " + e.getMessage());
            }
        }

        /** The script stopped or printed something else than expected: say why, from the rest of its output. */
        private NumpyUnavailable stopped(String line) {
            String rest;
            try {
                to.close();
                rest = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                process.waitFor(TIMEOUT_S, TimeUnit.SECONDS);
            } catch (IOException e) {
                rest = "";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                rest = "";
            }
            Integer exit = process.isAlive() ? null : process.exitValue();
            process.destroyForcibly();
            return new NumpyUnavailable(reason(exit, (line + "\n" + rest).strip()));
        }

        @Override
        public void close() {
            to.close();
            process.destroyForcibly();
        }
    }

    /**
     * Why the script gave no figure, from its exit status ({@code null} while it still runs) and its output.
     */
    static String reason(Integer exitCode, String output) {
        String[] lines = output.split("\\R");
        String last = lines[lines.length - 1];
        if (output.contains("No module named")) {
            return "python3 has no numpy";
        }
        if (exitCode == null || exitCode == 0) {
            return "unexpected output from numpy: " + last;
        }
        if (exitCode == 137 || exitCode == 9) {
            return "python3 was killed: past the " + TIMEOUT_S + " s bound, or out of memory";
        }
        return "python3 exited " + exitCode + ": " + last;
    }
}
