package io.kdapack.gpu;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvBackend;
import io.kdapack.core.conv.ShortConvOutputs;
import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The short convolution on the GPU (conv.cu), fp32. Token-parallel kernels use one thread per (token, channel)
 * with 128 channels per CTA; the weight/bias gradients reduce over tokens with one CTA per channel.
 */
public final class CudaConvBackend implements ShortConvBackend {

    private final DeviceApi device;

    public CudaConvBackend(CudaDevice device) {
        this((DeviceApi) device);
    }

    CudaConvBackend(DeviceApi device) {
        this.device = device;
    }

    @Override
    public String name() {
        return "cuda";
    }

    /** Largest W the kernels take ({@code CONV_MAX_W} in conv.cu). */
    public static final int MAX_WIDTH = 8;

    /**
     * Launch geometry of the token- and sequence-parallel conv kernels: {@code (rows, ceil(D/128))} blocks of 128
     * threads; rows (tokens or sequences) go on x, whose limit is 2^31−1 (y stops at 65535).
     */
    static Launch tokenLaunch(int channels, int rows) {
        return Launch.of(rows, (channels + 127) / 128, 1, 128);
    }

    @Override
    public ShortConvOutputs forward(ShortConvInputs in) {
        checkWidth(in);
        try (Buffers b = new Buffers(in)) {
            int t = in.segments().tokens();
            int n = in.segments().count();
            int d = in.channels();
            DeviceBuffer y = b.temp(4L * t * d);
            DeviceBuffer state = b.temp(4L * n * d * in.width());
            if (t > 0) {
                device.launch("conv", "conv_fwd_f32", tokenLaunch(d, t), b.x.ptr(), b.w.ptr(), ptr(b.bias),
                        ptr(b.state0), b.tokSeq.ptr(), b.seqStart.ptr(), d, in.width(), silu(in), y.ptr());
            }
            if (n > 0) {
                device.launch("conv", "conv_final_state_f32", tokenLaunch(d, n), b.x.ptr(), ptr(b.state0),
                        b.seqStart.ptr(), b.seqEnd.ptr(), d, in.width(), state.ptr());
            }
            return new ShortConvOutputs(device.download(y, t * d), device.download(state, n * d * in.width()));
        }
    }

    @Override
    public ShortConvGradients backward(ShortConvInputs in, float[] dy, float[] dFinalState) {
        checkWidth(in);
        int t = in.segments().tokens();
        int n = in.segments().count();
        int d = in.channels();
        int w = in.width();
        KdaShapes.require("dy", dy, (long) t * d);
        if (dFinalState != null) {
            KdaShapes.require("dFinalState", dFinalState, (long) n * d * w);
        }
        try (Buffers b = new Buffers(in)) {
            DeviceBuffer dyBuf = b.keep(device.upload(dy));
            DeviceBuffer dz = b.temp(4L * t * d);
            DeviceBuffer dx = b.temp(4L * t * d);
            DeviceBuffer dw = b.temp(4L * d * w);
            DeviceBuffer db = b.temp(4L * d);
            DeviceBuffer ds = b.temp(4L * n * d * w);
            if (t > 0) {
                device.launch("conv", "conv_bwd_dz_f32", tokenLaunch(d, t), b.x.ptr(), b.w.ptr(), ptr(b.bias),
                        ptr(b.state0), dyBuf.ptr(), b.tokSeq.ptr(), b.seqStart.ptr(), d, w, silu(in), dz.ptr());
                device.launch("conv", "conv_bwd_dx", tokenLaunch(d, t), dz.ptr(), b.w.ptr(), b.tokSeq.ptr(),
                        b.seqEnd.ptr(), d, w, dx.ptr());
            }
            device.launch("conv", "conv_bwd_params_f32", Launch.of(d, 1, 1, 256), b.x.ptr(), ptr(b.state0), dz.ptr(),
                    b.tokSeq.ptr(), b.seqStart.ptr(), t, d, w, dw.ptr(), in.bias() == null ? null : db.ptr());
            if (n > 0) {
                device.launch("conv", "conv_bwd_state", tokenLaunch(d, n), dz.ptr(), b.w.ptr(), b.seqStart.ptr(),
                        b.seqEnd.ptr(), d, w, ds.ptr());
                if (dFinalState != null) {
                    DeviceBuffer dfs = b.keep(device.upload(dFinalState));
                    device.launch("conv", "conv_bwd_final_state", tokenLaunch(d, n), dfs.ptr(), b.seqStart.ptr(),
                            b.seqEnd.ptr(), d, w, in.initialState() == null ? 0 : 1, dx.ptr(), ds.ptr());
                }
            }
            return new ShortConvGradients(device.download(dx, t * d), device.download(dw, d * w),
                    in.bias() == null ? null : device.download(db, d),
                    in.initialState() == null ? null : device.download(ds, n * d * w));
        }
    }

    private static int silu(ShortConvInputs in) {
        return in.activation() == Activation.SILU ? 1 : 0;
    }

    private static void checkWidth(ShortConvInputs in) {
        if (in.width() > MAX_WIDTH) {
            throw new IllegalArgumentException("width W must be <= " + MAX_WIDTH + " on CUDA, got " + in.width());
        }
    }

    private static jcuda.driver.CUdeviceptr ptr(DeviceBuffer b) {
        return b == null ? null : b.ptr();
    }

    /** The inputs and tables on the device plus temporaries; closing hands all back to the pool. */
    private final class Buffers implements AutoCloseable {
        private final List<DeviceBuffer> all = new ArrayList<>();
        final DeviceBuffer x;
        final DeviceBuffer w;
        final DeviceBuffer bias;
        final DeviceBuffer state0;
        final DeviceBuffer tokSeq;
        final DeviceBuffer seqStart;
        final DeviceBuffer seqEnd;

        Buffers(ShortConvInputs in) {
            x = keep(device.upload(in.x()));
            w = keep(device.upload(in.weight()));
            bias = in.bias() == null ? null : keep(device.upload(in.bias()));
            state0 = in.initialState() == null ? null : keep(device.upload(in.initialState()));
            tokSeq = keep(device.upload(ChunkTable.tokenSequence(in.segments())));
            seqStart = keep(device.upload(in.segments().starts()));
            seqEnd = keep(device.upload(in.segments().ends()));
        }

        DeviceBuffer keep(DeviceBuffer b) {
            all.add(b);
            return b;
        }

        DeviceBuffer temp(long bytes) {
            return keep(device.alloc(bytes));
        }

        @Override
        public void close() {
            all.forEach(device::free);
        }
    }
}
