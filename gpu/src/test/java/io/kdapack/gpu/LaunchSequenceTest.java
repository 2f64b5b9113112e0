package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kdapack.core.conv.ShortConvFiles;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.kda.KdaCase;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;
import io.kdapack.testkit.Golden;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jcuda.driver.CUdeviceptr;
import org.junit.jupiter.api.Test;

/**
 * Runs the host side of every forward and backward (KDA fp32 and bf16, conv with a final-state gradient) against a
 * device that only records, and checks each launch against the kernel's PTX signature: the kernel exists in both
 * PTX targets, the arguments match the parameters in number and type (pointer ↔ .u64, int ↔ .u32/.s32,
 * float ↔ .f32), the block size equals the kernel's .maxntid, dynamic shared memory stays under the raised limit,
 * and every pointer handed to a kernel is a live allocation (no use after the pool took it back).
 */
class LaunchSequenceTest {

    private record Call(String module, String kernel, Launch launch, Object[] args) {
    }

    /** Records launches; memory is fake (CUdeviceptr objects with no device behind them). */
    private static final class RecordingDevice implements DeviceApi {
        final List<Call> calls = new ArrayList<>();
        final Set<CUdeviceptr> live = Collections.newSetFromMap(new IdentityHashMap<>());
        final Map<CUdeviceptr, Long> sizes = new IdentityHashMap<>();

        @Override
        public DeviceBuffer alloc(long bytes) {
            CUdeviceptr p = new CUdeviceptr();
            live.add(p);
            sizes.put(p, bytes);
            return new DeviceBuffer(p, bytes, DeviceMemoryPool.roundUp(bytes));
        }

        @Override
        public void free(DeviceBuffer buffer) {
            if (buffer != null) {
                assertTrue(live.remove(buffer.ptr()), "double free");
            }
        }

        @Override
        public void zero(DeviceBuffer buffer, long words) {
            assertTrue(live.contains(buffer.ptr()), "zeroing a freed buffer");
            assertTrue(4 * words <= buffer.bytes() + 3, "memset beyond the buffer");
        }

        @Override
        public DeviceBuffer upload(float[] values) {
            return alloc(4L * values.length);
        }

        @Override
        public DeviceBuffer upload(int[] values) {
            return alloc(4L * values.length);
        }

        @Override
        public DeviceBuffer upload(short[] values) {
            return alloc(2L * values.length);
        }

        @Override
        public float[] download(DeviceBuffer buffer, int count) {
            assertTrue(live.contains(buffer.ptr()), "download from a freed buffer");
            assertTrue(4L * count <= buffer.bytes(), "download beyond the buffer");
            return new float[count];
        }

        @Override
        public short[] downloadShorts(DeviceBuffer buffer, int count) {
            assertTrue(2L * count <= buffer.bytes(), "download beyond the buffer");
            return new short[count];
        }

        @Override
        public void launch(String module, String kernel, Launch launch, Object... args) {
            for (Object a : args) {
                if (a instanceof CUdeviceptr p) {
                    assertTrue(live.contains(p), kernel + " gets a pointer that is not a live allocation");
                }
            }
            calls.add(new Call(module, kernel, launch, args.clone()));
        }
    }

    private static final Path GOLDEN = Golden.path("");

    private static void checkAgainstPtx(List<Call> calls) {
        assertTrue(!calls.isEmpty());
        Map<String, String> ptx = Map.of("kda", PtxResources.load("kda"), "conv", PtxResources.load("conv"));
        for (Call c : calls) {
            PtxResources.Signature sig = PtxResources.signature(ptx.get(c.module()), c.kernel());
            List<String> types = sig.parameterTypes();
            assertEquals(types.size(), c.args().length, c.kernel() + ": argument count");
            for (int i = 0; i < types.size(); i++) {
                Object a = c.args()[i];
                String type = types.get(i);
                boolean ok = switch (type) {
                    case "u64" -> a == null || a instanceof CUdeviceptr;
                    case "u32", "s32" -> a instanceof Integer;
                    case "f32" -> a instanceof Float;
                    default -> false;
                };
                if (!ok) {
                    fail(c.kernel() + " parameter " + i + " is ." + type + " but gets "
                            + (a == null ? "null" : a.getClass().getSimpleName()));
                }
            }
            assertEquals(sig.maxThreads(), c.launch().block(), c.kernel() + ": block vs .maxntid");
            assertTrue(c.launch().sharedBytes() <= CudaDevice.MAX_DYNAMIC_SHARED, c.kernel() + ": dynamic smem");
            if (c.launch().sharedBytes() > 48 * 1024) {
                assertTrue(c.kernel().startsWith("kda_fwd_intra") || c.kernel().startsWith("kda_bwd_intra"),
                        c.kernel() + " needs the raised shared-memory limit that CudaDevice sets for the intra kernels");
            }
        }
    }

    private static List<String> names(List<Call> calls) {
        return calls.stream().map(Call::kernel).toList();
    }

    @Test
    void kdaForwardAndBackwardOnEveryGoldenCase() throws IOException {
        for (String name : List.of("01_single_seq_T64_plain", "03_chunk_edges_gva", "04_l2norm_gate_softplus_beta_sigmoid",
                "06_zero_length_seqs", "10_batched_segment_ids", "11_lowerbound_gate_no_A_log")) {
            KdaCase c = KdaCase.from(SafeTensors.read(GOLDEN.resolve("kda/" + name + ".safetensors")));
            RecordingDevice dev = new RecordingDevice();
            CudaKdaBackend backend = new CudaKdaBackend(dev);
            var result = backend.forward(c.inputs(), c.options());
            assertEquals(c.dO().length, result.o().length);
            assertEquals(List.of("kda_fwd_prep_f32", "kda_fwd_intra_f32", "kda_fwd_state", "kda_fwd_output_f32"),
                    names(dev.calls), name);
            var grads = backend.backward(c.inputs(), c.options(), c.dO(), c.dHt());
            assertEquals(c.inputs().q().length, grads.dq().length);
            assertEquals(c.inputs().aLog() == null, grads.dALog() == null, name);
            assertEquals(c.inputs().h0() == null, grads.dH0() == null, name);
            checkAgainstPtx(dev.calls);
            assertTrue(dev.live.isEmpty(), name + ": every buffer went back to the pool");
        }
    }

    @Test
    void bf16DeviceOpUsesTheBf16Kernels() throws IOException {
        KdaCase c = KdaCase.from(SafeTensors.read(GOLDEN.resolve("kda/04_l2norm_gate_softplus_beta_sigmoid.safetensors")));
        RecordingDevice dev = new RecordingDevice();
        var in = c.inputs();
        ChunkTable table = ChunkTable.of(in.segments());
        KdaLaunchPlan plan = KdaLaunchPlan.of(table, in.tokens(), in.heads(), in.valueHeads(), in.keyDim(), in.valueDim());
        KdaDeviceOp.Inputs inputs = new KdaDeviceOp.Inputs(dev.upload(new short[in.q().length]),
                dev.upload(new short[in.k().length]), dev.upload(new short[in.v().length]),
                dev.upload(new short[in.g().length]), dev.upload(new short[in.beta().length]), dev.upload(in.aLog()),
                dev.upload(in.dtBias()), null);
        try (KdaDeviceOp op = new KdaDeviceOp(dev, table, plan, c.options(), KdaDeviceOp.DType.BF16, inputs)) {
            op.forward();
            assertEquals(2 * plan.tokenValueElements(), op.o.bytes(), "o is bf16");
            op.backward(dev.upload(new short[c.dO().length]), null);
            op.backward(dev.upload(new short[c.dO().length]), null);
        }
        assertTrue(names(dev.calls).contains("kda_bwd_intra_bf16"));
        assertTrue(names(dev.calls).stream().noneMatch(n -> n.endsWith("_f32")));
        assertTrue(names(dev.calls).contains("kda_bwd_params"), "A_log and dt_bias gradients are reduced");
        checkAgainstPtx(dev.calls);
    }

    @Test
    void plainOptionsSkipTheParameterReduction() throws IOException {
        KdaCase c = KdaCase.from(SafeTensors.read(GOLDEN.resolve("kda/02_varlen_short_docs.safetensors")));
        assertEquals(KdaOptions.Gate.NONE, c.options().gate());
        RecordingDevice dev = new RecordingDevice();
        new CudaKdaBackend(dev).backward(c.inputs(), c.options(), c.dO(), null);
        assertTrue(!names(dev.calls).contains("kda_bwd_params"));
        Call state = dev.calls.stream().filter(x -> x.kernel().equals("kda_bwd_state_f32")).findFirst().orElseThrow();
        assertEquals(null, state.args()[1], "dHt absent → null pointer");
        checkAgainstPtx(dev.calls);
    }

    @Test
    void convForwardAndBackwardWithFinalStateGradient() throws IOException {
        for (String name : List.of("c01_single_seq_W4_silu_bias", "c02_varlen_short_docs_no_bias", "c04_initial_state")) {
            ShortConvInputs in = ShortConvFiles.inputs(SafeTensors.read(GOLDEN.resolve("conv/" + name + ".safetensors")));
            RecordingDevice dev = new RecordingDevice();
            CudaConvBackend conv = new CudaConvBackend(dev);
            var out = conv.forward(in);
            assertEquals(in.x().length, out.y().length);
            var g = conv.backward(in, new float[in.x().length], new float[in.sequences() * in.channels() * in.width()]);
            assertNotNull(g.dweight());
            assertEquals(in.bias() == null, g.dbias() == null);
            assertEquals(in.initialState() == null, g.dinitialState() == null);
            assertTrue(names(dev.calls).contains("conv_bwd_final_state"));
            checkAgainstPtx(dev.calls);
            assertTrue(dev.live.isEmpty(), name + ": every buffer went back to the pool");
        }
    }
}
