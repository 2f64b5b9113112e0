package io.kdapack.gpu;

import io.kdapack.core.kda.KdaOptions;
import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One KDA problem resident on the GPU: device inputs, chunk table, scratch and outputs, and the kernel sequence
 * of kda.cu. Inputs q, k, v, g, beta and dO are in the element type {@code dtype} (fp32 or bf16); A_log, dt_bias,
 * states and all gradients are fp32. Closing returns every buffer to the device's pool.
 */
final class KdaDeviceOp implements AutoCloseable {

    /** Element type of the activations. */
    enum DType {
        F32("f32", 4), BF16("bf16", 2);

        final String suffix;
        final int bytes;

        DType(String suffix, int bytes) {
            this.suffix = suffix;
            this.bytes = bytes;
        }
    }

    /** Device inputs; aLog, dtBias and h0 may be null. */
    record Inputs(DeviceBuffer q, DeviceBuffer k, DeviceBuffer v, DeviceBuffer g, DeviceBuffer beta,
                  DeviceBuffer aLog, DeviceBuffer dtBias, DeviceBuffer h0) {
    }

    private final DeviceApi dev;
    final KdaLaunchPlan plan;
    private final KdaOptions options;
    private final DType dtype;
    final Inputs in;
    private final float scale;
    private final List<DeviceBuffer> owned = new ArrayList<>();
    private final DeviceBuffer chunkStart;
    private final DeviceBuffer chunkLen;
    private final DeviceBuffer seqChunkStart;
    // forward scratch
    private final DeviceBuffer qhat;
    private final DeviceBuffer khat;
    private final DeviceBuffer gam;
    private final DeviceBuffer betah;
    private final DeviceBuffer aqk;
    private final DeviceBuffer linv;
    private final DeviceBuffer w;
    private final DeviceBuffer u;
    private final DeviceBuffer hchunk;
    private final DeviceBuffer vnew;
    final DeviceBuffer o;
    final DeviceBuffer ht;
    private Gradients gradients;

    KdaDeviceOp(DeviceApi dev, ChunkTable table, KdaLaunchPlan plan, KdaOptions options, DType dtype, Inputs in) {
        this.dev = dev;
        this.plan = plan;
        this.options = options;
        this.dtype = dtype;
        this.in = in;
        this.scale = options.scaleFor(plan.keyDim());
        chunkStart = own(dev.upload(table.chunkStart()));
        chunkLen = own(dev.upload(table.chunkLength()));
        seqChunkStart = own(dev.upload(table.seqChunkStart()));
        qhat = floats(plan.tokenKeyElements());
        khat = floats(plan.tokenKeyElements());
        gam = own(dev.alloc(8 * plan.tokenKeyElements()));
        betah = floats((long) plan.tokens() * plan.valueHeads());
        aqk = floats(plan.tokenChunkElements());
        linv = floats(plan.tokenChunkElements());
        w = floats(plan.tokenKeyElements());
        u = floats(plan.tokenValueElements());
        hchunk = floats(plan.chunkStateElements());
        vnew = floats(plan.tokenValueElements());
        o = own(dev.alloc((long) dtype.bytes * plan.tokenValueElements()));
        ht = floats(plan.stateElements());
    }

    private DeviceBuffer own(DeviceBuffer b) {
        owned.add(b);
        return b;
    }

    private DeviceBuffer floats(long count) {
        return own(dev.alloc(4 * count));
    }

    private static jcuda.driver.CUdeviceptr ptr(DeviceBuffer b) {
        return b == null ? null : b.ptr();
    }

    private String k(String base) {
        return base + "_" + dtype.suffix;
    }

    /** Everything but the output: prep, intra-chunk WY/UT transform and the state sweep. */
    private void forwardStates() {
        KdaLaunchPlan p = plan;
        if (p.chunks() > 0) {
            dev.launch("kda", k("kda_fwd_prep"), p.prep(), ptr(in.q), ptr(in.k), ptr(in.g), ptr(in.beta), ptr(in.aLog),
                    ptr(in.dtBias), chunkStart.ptr(), chunkLen.ptr(), p.heads(), p.valueHeads(), p.keyDim(),
                    options.gate().ordinal(), options.lowerBound(), options.qkL2Norm() ? 1 : 0,
                    options.betaSigmoid() ? 1 : 0, qhat.ptr(), khat.ptr(), gam.ptr(), betah.ptr());
            dev.launch("kda", k("kda_fwd_intra"), p.intra(), ptr(in.v), qhat.ptr(), khat.ptr(), gam.ptr(), betah.ptr(),
                    chunkStart.ptr(), chunkLen.ptr(), p.valueHeads(), p.keyDim(), p.valueDim(), scale,
                    aqk.ptr(), linv.ptr(), w.ptr(), u.ptr());
        }
        if (p.sequences() > 0) {
            dev.launch("kda", "kda_fwd_state", p.stateSweep(), w.ptr(), u.ptr(), khat.ptr(), gam.ptr(), ptr(in.h0),
                    seqChunkStart.ptr(), chunkStart.ptr(), chunkLen.ptr(), p.valueHeads(), p.keyDim(), p.valueDim(),
                    hchunk.ptr(), vnew.ptr(), ht.ptr());
        }
    }

    /** o [T,HV,V] (zero at padding) and ht [N,HV,K,V]. */
    void forward() {
        dev.zero(o, (plan.tokenValueElements() * dtype.bytes + 3) / 4);
        forwardStates();
        if (plan.chunks() > 0) {
            dev.launch("kda", k("kda_fwd_output"), plan.output(), qhat.ptr(), gam.ptr(), aqk.ptr(), hchunk.ptr(),
                    vnew.ptr(), chunkStart.ptr(), chunkLen.ptr(), plan.valueHeads(), plan.keyDim(), plan.valueDim(),
                    scale, o.ptr());
        }
    }

    /** Gradients (all fp32), shaped like the inputs; dALog, dDtBias, dh0 null when their input is. */
    record Gradients(DeviceBuffer dq, DeviceBuffer dk, DeviceBuffer dv, DeviceBuffer dg, DeviceBuffer dBeta,
                     DeviceBuffer dALog, DeviceBuffer dDtBias, DeviceBuffer dh0) {
    }

    /**
     * Recomputes the forward states (nothing is kept between calls), then runs the backward kernels. The
     * gradient buffers are allocated once and overwritten by every call.
     *
     * @param dO  {@code [T,HV,V]} in the activation dtype
     * @param dht {@code [N,HV,K,V]} fp32, or null for zero
     */
    Gradients backward(DeviceBuffer dO, DeviceBuffer dht) {
        KdaLaunchPlan p = plan;
        long tk = p.tokenKeyElements();
        long tv = p.tokenValueElements();
        long thv = (long) p.tokens() * p.valueHeads();
        long qk = (long) p.tokens() * p.heads() * p.keyDim();
        forwardStates();
        List<DeviceBuffer> scratch = new ArrayList<>();
        DeviceBuffer dhend = temp(scratch, p.chunkStateElements());
        DeviceBuffer dvnew = temp(scratch, tv);
        DeviceBuffer sQg = temp(scratch, tk);
        DeviceBuffer sKd = temp(scratch, tk);
        DeviceBuffer sW = temp(scratch, tk);
        DeviceBuffer sBk = temp(scratch, tk);
        DeviceBuffer sBv = temp(scratch, tv);
        DeviceBuffer sAqk = temp(scratch, p.tokenChunkElements());
        DeviceBuffer dqhat = temp(scratch, tk);
        DeviceBuffer dkhat = temp(scratch, tk);
        DeviceBuffer dbetah = temp(scratch, thv);
        DeviceBuffer dgam = temp(scratch, tk);
        DeviceBuffer dalogTok = temp(scratch, thv);
        if (gradients == null) {
            gradients = new Gradients(floats(qk), floats(qk), floats(tv), floats(tk), floats(thv),
                    in.aLog == null ? null : floats(p.valueHeads()),
                    in.dtBias == null ? null : floats((long) p.valueHeads() * p.keyDim()),
                    in.h0 == null ? null : floats(p.stateElements()));
        }
        Gradients grads = gradients;
        dev.zero(grads.dq, qk);
        dev.zero(grads.dk, qk);
        dev.zero(grads.dv, tv);
        dev.zero(grads.dg, tk);
        dev.zero(grads.dBeta, thv);
        dev.zero(dalogTok, thv);
        if (p.sequences() > 0) {
            dev.launch("kda", k("kda_bwd_state"), p.stateSweep(), ptr(dO), ptr(dht), aqk.ptr(), w.ptr(), qhat.ptr(),
                    khat.ptr(), gam.ptr(), seqChunkStart.ptr(), chunkStart.ptr(), chunkLen.ptr(), p.valueHeads(),
                    p.keyDim(), p.valueDim(), scale, dhend.ptr(), dvnew.ptr(), ptr(grads.dh0));
        }
        if (p.chunks() > 0) {
            dev.launch("kda", k("kda_bwd_intra"), p.backwardIntra(), ptr(in.v), ptr(dO), qhat.ptr(), khat.ptr(),
                    gam.ptr(), betah.ptr(), linv.ptr(), hchunk.ptr(), vnew.ptr(), dhend.ptr(), dvnew.ptr(),
                    chunkStart.ptr(), chunkLen.ptr(), p.valueHeads(), p.keyDim(), p.valueDim(), scale,
                    sQg.ptr(), sKd.ptr(), sW.ptr(), sBk.ptr(), sBv.ptr(), sAqk.ptr(),
                    grads.dv.ptr(), dqhat.ptr(), dkhat.ptr(), dbetah.ptr(), dgam.ptr());
            dev.launch("kda", k("kda_bwd_gate"), p.backwardGate(), ptr(in.g), ptr(in.beta), ptr(in.aLog),
                    ptr(in.dtBias), dgam.ptr(), dbetah.ptr(), chunkStart.ptr(), chunkLen.ptr(), p.valueHeads(),
                    p.keyDim(), options.gate().ordinal(), options.lowerBound(), options.betaSigmoid() ? 1 : 0,
                    grads.dg.ptr(), grads.dBeta.ptr(), dalogTok.ptr());
        }
        if (grads.dALog != null || grads.dDtBias != null) {
            dev.launch("kda", "kda_bwd_params", p.backwardParams(), grads.dg.ptr(), dalogTok.ptr(), p.tokens(),
                    p.valueHeads(), p.keyDim(), ptr(grads.dALog), ptr(grads.dDtBias));
        }
        if (p.chunks() > 0) {
            dev.launch("kda", k("kda_bwd_qk"), p.backwardQk(), ptr(in.q), ptr(in.k), dqhat.ptr(), dkhat.ptr(),
                    chunkStart.ptr(), chunkLen.ptr(), p.heads(), p.valueHeads(), p.keyDim(),
                    options.qkL2Norm() ? 1 : 0, grads.dq.ptr(), grads.dk.ptr());
        }
        // Stream order makes the scratch safe to hand back now: a later user runs after these kernels.
        scratch.forEach(dev::free);
        return grads;
    }

    private DeviceBuffer temp(List<DeviceBuffer> list, long floats) {
        DeviceBuffer b = dev.alloc(4 * floats);
        list.add(b);
        return b;
    }

    @Override
    public void close() {
        for (DeviceBuffer b : owned) {
            dev.free(b);
        }
        owned.clear();
    }
}
