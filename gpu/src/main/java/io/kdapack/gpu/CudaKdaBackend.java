package io.kdapack.gpu;

import io.kdapack.core.conv.ShortConvBackend;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;

/**
 * KDA on the GPU (kda.cu) behind the {@link KdaBackend} contract: fp32 host arrays in and out, the varlen
 * chunked kernels in between. Use it on the thread that opened the {@link CudaDevice}.
 */
public final class CudaKdaBackend implements KdaBackend {

    private final DeviceApi device;
    private final CudaConvBackend shortConv;

    public CudaKdaBackend(CudaDevice device) {
        this((DeviceApi) device);
    }

    CudaKdaBackend(DeviceApi device) {
        this.device = device;
        this.shortConv = new CudaConvBackend(device);
    }

    /** The convolutions of the model's KDA layers run on the same device. */
    @Override
    public ShortConvBackend shortConv() {
        return shortConv;
    }

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public KdaResult forward(KdaInputs in, KdaOptions options) {
        KdaShapes.validate(in, options);
        try (Upload up = new Upload(device, in, options)) {
            up.op.forward();
            int tv = (int) up.op.plan.tokenValueElements();
            return new KdaResult(device.download(up.op.o, tv), device.download(up.op.ht, (int) up.op.plan.stateElements()));
        }
    }

    @Override
    public KdaGradients backward(KdaInputs in, KdaOptions options, float[] dO, float[] dHt) {
        KdaShapes.validate(in, options);
        in.validateUpstream(dO, dHt);
        try (Upload up = new Upload(device, in, options)) {
            DeviceBuffer dOBuf = device.upload(dO);
            DeviceBuffer dHtBuf = dHt == null ? null : device.upload(dHt);
            try {
                KdaDeviceOp.Gradients g = up.op.backward(dOBuf, dHtBuf);
                KdaLaunchPlan p = up.op.plan;
                int qk = in.tokens() * in.heads() * in.keyDim();
                return new KdaGradients(device.download(g.dq(), qk), device.download(g.dk(), qk),
                        device.download(g.dv(), (int) p.tokenValueElements()),
                        device.download(g.dg(), (int) p.tokenKeyElements()),
                        device.download(g.dBeta(), in.tokens() * in.valueHeads()),
                        g.dALog() == null ? null : device.download(g.dALog(), in.valueHeads()),
                        g.dDtBias() == null ? null : device.download(g.dDtBias(), in.valueHeads() * in.keyDim()),
                        g.dh0() == null ? null : device.download(g.dh0(), (int) p.stateElements()));
            } finally {
                device.free(dOBuf);
                device.free(dHtBuf);
            }
        }
    }

    /** Host inputs uploaded as fp32 plus the device op over them; closing frees both. */
    private static final class Upload implements AutoCloseable {
        private final DeviceApi device;
        private final KdaDeviceOp.Inputs inputs;
        final KdaDeviceOp op;

        Upload(DeviceApi device, KdaInputs in, KdaOptions options) {
            this.device = device;
            ChunkTable table = ChunkTable.of(in.segments());
            KdaLaunchPlan plan = KdaLaunchPlan.of(table, in.tokens(), in.heads(), in.valueHeads(), in.keyDim(),
                    in.valueDim());
            inputs = new KdaDeviceOp.Inputs(device.upload(in.q()), device.upload(in.k()), device.upload(in.v()),
                    device.upload(in.g()), device.upload(in.beta()),
                    in.aLog() == null ? null : device.upload(in.aLog()),
                    in.dtBias() == null ? null : device.upload(in.dtBias()),
                    in.h0() == null ? null : device.upload(in.h0()));
            op = new KdaDeviceOp(device, table, plan, options, KdaDeviceOp.DType.F32, inputs);
        }

        @Override
        public void close() {
            op.close();
            for (DeviceBuffer b : new DeviceBuffer[] {inputs.q(), inputs.k(), inputs.v(), inputs.g(), inputs.beta(),
                    inputs.aLog(), inputs.dtBias(), inputs.h0()}) {
                device.free(b);
            }
        }
    }
}
