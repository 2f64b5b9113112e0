package io.kdapack.gpu;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.conv.ShortConvFiles;
import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvOutputs;
import io.kdapack.core.io.DType;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaBackend.KdaGradients;
import io.kdapack.core.kda.KdaBackend.KdaResult;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaCase;
import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.kda.Varlen;
import io.kdapack.gpu.Bf16;
import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;

/**
 * The GPU check run by gpu/device-check.sh on a lent GPU: every golden case of {@code <golden>/kda} and
 * {@code <golden>/conv} on the CUDA backend against its float64 expected values (fp32: relative error ≤ 1e-5
 * for outputs and final states, ≤ 1e-4 for gradients), then forward and forward+backward timings at T=8192,
 * H=HV=16, K=V=128, bf16, for one document and for 64 packed documents, with the table printed last. Between the
 * two, fresh random problems are compared with core's CPU backends (fp32, and bf16 inputs for KDA).
 *
 * <p>Usage: {@code DeviceCheck <golden dir> [--no-bench]}. Exit status: 0 all checks passed, 1 a check failed,
 * 3 no CUDA driver or device (nothing was run).
 */
public final class DeviceCheck {

    static final double OUTPUT_TOLERANCE = 1e-5;
    static final double GRADIENT_TOLERANCE = 1e-4;

    private final CudaDevice device;
    private int failures;
    private int checks;

    private DeviceCheck(CudaDevice device) {
        this.device = device;
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: DeviceCheck <golden dir with kda/ and conv/> [--no-bench]");
            System.exit(2);
        }
        // CPU side first, so that a machine without a GPU still checks that the bundle reads the cases and runs
        // the CPU reference.
        Path golden = Path.of(args[0]);
        List<Path> kdaFiles = list(golden.resolve("kda"));
        List<Path> convFiles = list(golden.resolve("conv"));
        for (Path file : kdaFiles) {
            KdaCase.from(SafeTensors.read(file));
        }
        for (Path file : convFiles) {
            ShortConvFiles.inputs(SafeTensors.read(file));
        }
        List<RandomKda> randomKda = RandomKda.create(System.nanoTime());
        RandomConv randomConv = RandomConv.create(System.nanoTime());
        System.out.printf(Locale.ROOT, "DeviceCheck: %d KDA and %d conv golden cases read, CPU reference of %d random "
                + "KDA problems and 1 conv problem computed%n", kdaFiles.size(), convFiles.size(), randomKda.size());
        String reason = CudaDevice.unavailableReason();
        if (reason != null) {
            System.out.println("DeviceCheck: " + reason + "; GPU checks not run");
            System.exit(3);
        }
        try (CudaDevice device = CudaDevice.open(0)) {
            System.out.printf(Locale.ROOT, "device: %s, compute %d.%d, %d SMs, driver %d, PTX %s%n", device.name(),
                    device.computeMajor(), device.computeMinor(), device.multiprocessors(), device.driverVersion(),
                    PtxResources.TARGET);
            DeviceCheck check = new DeviceCheck(device);
            // Correctness runs pin faults on their kernel and poison fresh memory with NaN (reads of unwritten
            // scratch show); the timings run without either.
            device.setSyncAfterLaunch(true);
            device.setPoisonAllocations(true);
            check.golden(kdaFiles, convFiles);
            check.randomAgainstCpu(randomKda, randomConv);
            device.setSyncAfterLaunch(false);
            device.setPoisonAllocations(false);
            System.out.printf(Locale.ROOT, "correctness: %d checks, %d failed%n", check.checks, check.failures);
            if (!(args.length > 1 && args[1].equals("--no-bench"))) {
                check.bench();
            }
            System.exit(check.failures == 0 ? 0 : 1);
        }
    }

    private void golden(List<Path> kdaFiles, List<Path> convFiles) throws IOException {
        CudaKdaBackend kda = new CudaKdaBackend(device);
        for (Path file : kdaFiles) {
            SafeTensors f = SafeTensors.read(file);
            KdaCase g = KdaCase.from(f);
            String name = file.getFileName().toString();
            KdaResult r = kda.forward(g.inputs(), g.options());
            compare(name, "o", r.o(), f, OUTPUT_TOLERANCE);
            compare(name, "ht", r.ht(), f, OUTPUT_TOLERANCE);
            KdaGradients d = kda.backward(g.inputs(), g.options(), g.dO(), g.dHt());
            compare(name, "dq", d.dq(), f, GRADIENT_TOLERANCE);
            compare(name, "dk", d.dk(), f, GRADIENT_TOLERANCE);
            compare(name, "dv", d.dv(), f, GRADIENT_TOLERANCE);
            compare(name, "dg", d.dg(), f, GRADIENT_TOLERANCE);
            compare(name, "dbeta", d.dBeta(), f, GRADIENT_TOLERANCE);
            if (f.has("dh0")) {
                compare(name, "dh0", d.dH0(), f, GRADIENT_TOLERANCE);
            }
            if (f.has("dA_log")) {
                compare(name, "dA_log", d.dALog(), f, GRADIENT_TOLERANCE);
            }
            if (f.has("ddt_bias")) {
                compare(name, "ddt_bias", d.dDtBias(), f, GRADIENT_TOLERANCE);
            }
        }
        CudaConvBackend conv = new CudaConvBackend(device);
        for (Path file : convFiles) {
            SafeTensors f = SafeTensors.read(file);
            String name = file.getFileName().toString();
            ShortConvInputs in = ShortConvFiles.inputs(f);
            ShortConvOutputs r = conv.forward(in);
            compare(name, "y", r.y(), f, OUTPUT_TOLERANCE);
            compare(name, "final_state", r.finalState(), f, OUTPUT_TOLERANCE);
            ShortConvGradients d = conv.backward(in, ShortConvFiles.upstreamGradient(f), null);
            compare(name, "dx", d.dx(), f, GRADIENT_TOLERANCE);
            compare(name, "dweight", d.dweight(), f, GRADIENT_TOLERANCE);
            if (f.has("dbias")) {
                compare(name, "dbias", d.dbias(), f, GRADIENT_TOLERANCE);
            }
            if (f.has("dinitial_state")) {
                compare(name, "dinitial_state", d.dinitialState(), f, GRADIENT_TOLERANCE);
            }
        }
    }

    static List<Path> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("golden folder " + dir + " does not exist");
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.toString().endsWith(".safetensors")).sorted().toList();
        }
    }

    private void compare(String file, String tensor, float[] out, SafeTensors f, double tolerance) {
        compare(file, tensor, out, f.get(tensor).toDoubleArray(), tolerance);
    }

    private void compare(String file, String tensor, float[] out, float[] reference, double tolerance) {
        double[] ref = new double[reference.length];
        for (int i = 0; i < ref.length; i++) {
            ref[i] = reference[i];
        }
        compare(file, tensor, out, ref, tolerance);
    }

    private void compare(String file, String tensor, float[] out, double[] ref, double tolerance) {
        double err = out == null || out.length != ref.length ? Double.POSITIVE_INFINITY : relativeError(out, ref);
        boolean ok = err <= tolerance;
        checks++;
        if (!ok) {
            failures++;
        }
        System.out.printf(Locale.ROOT, "  %-44s %-15s rel.err %.3e (tol %.0e) %s%n", file, tensor, err, tolerance,
                ok ? "ok" : "FAIL");
    }

    /** ‖out − ref‖ / ‖ref‖ (‖out‖ when ref is all zero); NaN anywhere gives infinity. */
    static double relativeError(float[] out, double[] ref) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < ref.length; i++) {
            double d = out[i] - ref[i];
            num += d * d;
            den += ref[i] * ref[i];
        }
        if (Double.isNaN(num)) {
            return Double.POSITIVE_INFINITY;
        }
        return den == 0 ? Math.sqrt(num) : Math.sqrt(num / den);
    }

    // ------------------------------------------------------------------------- random inputs against the CPU

    /** A fresh random KDA problem and core's CPU results on it. */
    record RandomKda(String label, KdaInputs inputs, KdaOptions options, float[] dO, float[] dHt, boolean bf16,
                     KdaResult cpu, KdaGradients cpuGrads) {

        /**
         * Partial chunks and value blocks, a zero-length sequence, GVA, both gate forms, initial states and
         * final-state gradients; each twice: fp32, and bf16-rounded inputs for the bf16 kernels (the CPU then runs
         * on the same rounded values, so only the bf16 rounding of o and the accumulation order differ).
         */
        static List<RandomKda> create(long seed) {
            Random rnd = new Random(seed);
            Segments seg = Varlen.fromCuSeqlens(new int[] {0, 5, 130, 131, 131, 400, 700}, 700);
            KdaBackend cpu = new KdaChunked();
            List<RandomKda> out = new ArrayList<>();
            int h = 2;
            int hv = 4;
            int k = 64;
            int v = 80;
            int t = seg.tokens();
            for (KdaOptions options : List.of(KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f),
                    KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, -5f))) {
                KdaInputs in = new KdaInputs(seg, h, hv, k, v, gaussian(rnd, t * h * k), gaussian(rnd, t * h * k),
                        gaussian(rnd, t * hv * v), gaussian(rnd, t * hv * k), gaussian(rnd, t * hv),
                        options.gate() == KdaOptions.Gate.SOFTPLUS ? logUniform(rnd, hv) : null,
                        gaussian(rnd, hv * k), gaussian(rnd, seg.count() * hv * k * v));
                float[] dO = gaussian(rnd, t * hv * v);
                float[] dHt = gaussian(rnd, seg.count() * hv * k * v);
                String gate = options.gate().name().toLowerCase(Locale.ROOT);
                out.add(new RandomKda("random fp32 " + gate, in, options, dO, dHt, false, cpu.forward(in, options),
                        cpu.backward(in, options, dO, dHt)));
                KdaInputs rounded = new KdaInputs(seg, h, hv, k, v, roundBf16(in.q()), roundBf16(in.k()),
                        roundBf16(in.v()), roundBf16(in.g()), roundBf16(in.beta()), in.aLog(), in.dtBias(), in.h0());
                float[] dORounded = roundBf16(dO);
                out.add(new RandomKda("random bf16 " + gate, rounded, options, dORounded, dHt, true,
                        cpu.forward(rounded, options), cpu.backward(rounded, options, dORounded, dHt)));
            }
            return out;
        }
    }

    /** A random short convolution (two channel blocks, initial state, final-state gradient) and its CPU results. */
    record RandomConv(ShortConvInputs inputs, float[] dy, float[] dFinal, ShortConvOutputs cpu,
                      ShortConvGradients cpuGrads) {

        static RandomConv create(long seed) {
            Random rnd = new Random(seed);
            Segments seg = Varlen.fromCuSeqlens(new int[] {0, 2, 3, 3, 120, 300}, 300);
            int d = 200;
            int w = 4;
            ShortConvInputs in = new ShortConvInputs(seg, d, w, gaussian(rnd, seg.tokens() * d),
                    gaussian(rnd, d * w), gaussian(rnd, d), gaussian(rnd, seg.count() * d * w), Activation.SILU);
            float[] dy = gaussian(rnd, seg.tokens() * d);
            float[] dFinal = gaussian(rnd, seg.count() * d * w);
            return new RandomConv(in, dy, dFinal, ShortConv.forward(in), ShortConv.backward(in, dy, dFinal));
        }
    }

    private void randomAgainstCpu(List<RandomKda> problems, RandomConv conv) {
        CudaKdaBackend gpu = new CudaKdaBackend(device);
        for (RandomKda p : problems) {
            if (p.bf16()) {
                Bf16Run bf = runBf16(p.inputs(), p.options(), p.dO(), p.dHt());
                // o is stored in bf16 (relative rounding 2^-9); the gradients are fp32 from bf16 inputs.
                compareKda(p.label(), bf.result, bf.grads, p.cpu(), p.cpuGrads(), 1e-2, GRADIENT_TOLERANCE);
            } else {
                compareKda(p.label(), gpu.forward(p.inputs(), p.options()),
                        gpu.backward(p.inputs(), p.options(), p.dO(), p.dHt()), p.cpu(), p.cpuGrads(),
                        OUTPUT_TOLERANCE, GRADIENT_TOLERANCE);
            }
        }
        CudaConvBackend backend = new CudaConvBackend(device);
        ShortConvOutputs go = backend.forward(conv.inputs());
        ShortConvGradients gg = backend.backward(conv.inputs(), conv.dy(), conv.dFinal());
        String label = "random conv D=200 W=4";
        compare(label, "y", go.y(), conv.cpu().y(), OUTPUT_TOLERANCE);
        compare(label, "final_state", go.finalState(), conv.cpu().finalState(), OUTPUT_TOLERANCE);
        compare(label, "dx", gg.dx(), conv.cpuGrads().dx(), GRADIENT_TOLERANCE);
        compare(label, "dweight", gg.dweight(), conv.cpuGrads().dweight(), GRADIENT_TOLERANCE);
        compare(label, "dbias", gg.dbias(), conv.cpuGrads().dbias(), GRADIENT_TOLERANCE);
        compare(label, "dinitial_state", gg.dinitialState(), conv.cpuGrads().dinitialState(), GRADIENT_TOLERANCE);
    }

    private void compareKda(String label, KdaResult r, KdaGradients g, KdaResult cr, KdaGradients cg, double outTol,
                            double gradTol) {
        compare(label, "o", r.o(), cr.o(), outTol);
        compare(label, "ht", r.ht(), cr.ht(), OUTPUT_TOLERANCE);
        compare(label, "dq", g.dq(), cg.dq(), gradTol);
        compare(label, "dk", g.dk(), cg.dk(), gradTol);
        compare(label, "dv", g.dv(), cg.dv(), gradTol);
        compare(label, "dg", g.dg(), cg.dg(), gradTol);
        compare(label, "dbeta", g.dBeta(), cg.dBeta(), gradTol);
        compare(label, "dh0", g.dH0(), cg.dH0(), gradTol);
        compare(label, "ddt_bias", g.dDtBias(), cg.dDtBias(), gradTol);
        if (cg.dALog() != null) {
            compare(label, "dA_log", g.dALog(), cg.dALog(), gradTol);
        }
    }

    private record Bf16Run(KdaResult result, KdaGradients grads) {
    }

    /** The bf16 kernels on inputs that are already bf16 values (so the conversion is exact). */
    private Bf16Run runBf16(KdaInputs in, KdaOptions options, float[] dO, float[] dHt) {
        ChunkTable table = ChunkTable.of(in.segments());
        KdaLaunchPlan plan = KdaLaunchPlan.of(table, in.tokens(), in.heads(), in.valueHeads(), in.keyDim(),
                in.valueDim());
        List<DeviceBuffer> bufs = new ArrayList<>();
        KdaDeviceOp.Inputs dev = new KdaDeviceOp.Inputs(bf16(in.q(), bufs), bf16(in.k(), bufs), bf16(in.v(), bufs),
                bf16(in.g(), bufs), bf16(in.beta(), bufs),
                in.aLog() == null ? null : keep(device.upload(in.aLog()), bufs),
                keep(device.upload(in.dtBias()), bufs), keep(device.upload(in.h0()), bufs));
        DeviceBuffer dOBuf = bf16(dO, bufs);
        DeviceBuffer dHtBuf = keep(device.upload(dHt), bufs);
        try (KdaDeviceOp op = new KdaDeviceOp(device, table, plan, options, KdaDeviceOp.DType.BF16, dev)) {
            op.forward();
            KdaResult r = new KdaResult(Bf16.toFloats(device.downloadShorts(op.o, (int) plan.tokenValueElements())),
                    device.download(op.ht, (int) plan.stateElements()));
            KdaDeviceOp.Gradients g = op.backward(dOBuf, dHtBuf);
            int qk = in.tokens() * in.heads() * in.keyDim();
            KdaGradients grads = new KdaGradients(device.download(g.dq(), qk), device.download(g.dk(), qk),
                    device.download(g.dv(), (int) plan.tokenValueElements()),
                    device.download(g.dg(), (int) plan.tokenKeyElements()),
                    device.download(g.dBeta(), in.tokens() * in.valueHeads()),
                    g.dALog() == null ? null : device.download(g.dALog(), in.valueHeads()),
                    device.download(g.dDtBias(), in.valueHeads() * in.keyDim()),
                    device.download(g.dh0(), (int) plan.stateElements()));
            return new Bf16Run(r, grads);
        } finally {
            bufs.forEach(device::free);
        }
    }

    private static float[] roundBf16(float[] values) {
        return Bf16.toFloats(Bf16.fromFloats(values));
    }

    private static float[] logUniform(Random rnd, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) Math.log(1 + 15 * rnd.nextDouble());
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------ benchmark

    static final int BENCH_T = 8192;
    static final int BENCH_H = 16;
    static final int BENCH_K = 128;
    static final int BENCH_V = 128;

    /** Boundaries of {@code docs} documents of random lengths (≥ 1, mostly not chunk multiples) over T tokens. */
    static int[] packedCuSeqlens(int tokens, int docs, long seed) {
        if (docs < 1 || docs > tokens) {
            throw new IllegalArgumentException("docs must be in [1, " + tokens + "], got " + docs);
        }
        Random rnd = new Random(seed);
        double[] w = new double[docs];
        double sum = 0;
        for (int i = 0; i < docs; i++) {
            w[i] = 0.2 + rnd.nextDouble();
            sum += w[i];
        }
        int[] cu = new int[docs + 1];
        for (int i = 1; i < docs; i++) {
            int ideal = (int) Math.round(tokens * (sumTo(w, i) / sum));
            cu[i] = Math.max(cu[i - 1] + 1, Math.min(ideal, tokens - (docs - i)));
        }
        cu[docs] = tokens;
        return cu;
    }

    private static double sumTo(double[] w, int n) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            s += w[i];
        }
        return s;
    }

    private void bench() {
        int t = BENCH_T;
        int h = BENCH_H;
        Random rnd = new Random(42);
        float[] q = gaussian(rnd, t * h * BENCH_K);
        float[] k = gaussian(rnd, t * h * BENCH_K);
        float[] v = gaussian(rnd, t * h * BENCH_V);
        float[] g = gaussian(rnd, t * h * BENCH_K);
        float[] beta = gaussian(rnd, t * h);
        float[] aLog = logUniform(rnd, h);
        float[] dtBias = gaussian(rnd, h * BENCH_K);
        float[] dO = gaussian(rnd, t * h * BENCH_V);
        KdaOptions options = KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f);
        List<String> rows = new ArrayList<>();
        double[] single = benchCase("1 document", new int[] {0, t}, q, k, v, g, beta, aLog, dtBias, dO, options, rows);
        double[] packed = benchCase("64 packed documents", packedCuSeqlens(t, 64, 7), q, k, v, g, beta, aLog, dtBias,
                dO, options, rows);
        System.out.printf(Locale.ROOT, "{\"bench\":\"kda-cuda\",\"device\":\"%s\",\"dtype\":\"bf16\",\"T\":%d,"
                + "\"H\":%d,\"K\":%d,\"V\":%d,\"single_fwd_ms\":%.4f,\"single_fwd_bwd_ms\":%.4f,"
                + "\"packed64_fwd_ms\":%.4f,\"packed64_fwd_bwd_ms\":%.4f}%n", device.name(), t, h, BENCH_K, BENCH_V,
                single[0], single[1], packed[0], packed[1]);
        System.out.println();
        System.out.printf(Locale.ROOT, "KDA on %s, bf16 inputs (fp32 accumulation), T=%d H=HV=%d K=V=%d, "
                + "l2norm + softplus gate + beta sigmoid, CUDA-event mean over up to 20 runs after a warm-up%n", device.name(), t, h, BENCH_K);
        System.out.println("| case                | chunks | fwd ms  | fwd+bwd ms |");
        System.out.println("|---------------------|--------|---------|------------|");
        rows.forEach(System.out::println);
        System.out.printf(Locale.ROOT, "packed/unpacked: fwd %.3f, fwd+bwd %.3f%n", packed[0] / single[0],
                packed[1] / single[1]);
    }

    private double[] benchCase(String label, int[] cu, float[] q, float[] k, float[] v, float[] g, float[] beta,
                               float[] aLog, float[] dtBias, float[] dO, KdaOptions options, List<String> rows) {
        Segments seg = Varlen.fromCuSeqlens(cu, BENCH_T);
        ChunkTable table = ChunkTable.of(seg);
        KdaLaunchPlan plan = KdaLaunchPlan.of(table, BENCH_T, BENCH_H, BENCH_H, BENCH_K, BENCH_V);
        List<DeviceBuffer> bufs = new ArrayList<>();
        KdaDeviceOp.Inputs in = new KdaDeviceOp.Inputs(bf16(q, bufs), bf16(k, bufs), bf16(v, bufs), bf16(g, bufs),
                bf16(beta, bufs), keep(device.upload(aLog), bufs), keep(device.upload(dtBias), bufs), null);
        DeviceBuffer dOBuf = bf16(dO, bufs);
        try (KdaDeviceOp op = new KdaDeviceOp(device, table, plan, options, KdaDeviceOp.DType.BF16, in)) {
            op.forward();
            float[] o = Bf16.toFloats(device.downloadShorts(op.o, (int) plan.tokenValueElements()));
            for (float x : o) {
                if (!Float.isFinite(x)) {
                    throw new IllegalStateException(label + ": non-finite forward output");
                }
            }
            Runnable fwdBwd = () -> {
                op.forward();
                op.backward(dOBuf, null);
            };
            // One warm-up, then as many timed runs as fit in about 3 s (1 … 20): the lease is short.
            double once = device.timeMillis(fwdBwd, 1);
            int reps = (int) Math.max(1, Math.min(20, 3000 / Math.max(once, 1e-3)));
            double fwd = device.timeMillis(op::forward, reps);
            double both = device.timeMillis(fwdBwd, reps);
            System.out.printf(Locale.ROOT, "bench %s: fwd %.3f ms, fwd+bwd %.3f ms (%d runs)%n", label, fwd, both, reps);
            rows.add(String.format(Locale.ROOT, "| %-19s | %6d | %7.3f | %10.3f |", label, table.count(), fwd, both));
            return new double[] {fwd, both};
        } finally {
            bufs.forEach(device::free);
        }
    }

    private DeviceBuffer bf16(float[] values, List<DeviceBuffer> bufs) {
        return keep(device.upload(Bf16.fromFloats(values)), bufs);
    }

    private static DeviceBuffer keep(DeviceBuffer b, List<DeviceBuffer> bufs) {
        bufs.add(b);
        return b;
    }

    private static float[] gaussian(Random rnd, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) rnd.nextGaussian();
        }
        return out;
    }
}
