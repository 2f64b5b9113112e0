package io.kdapack.core.nn;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.kda.KdaBackend;
import io.kdapack.core.kda.KdaInputs;
import io.kdapack.core.kda.KdaOptions;
import io.kdapack.core.kda.KdaTape;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.linalg.Workspace;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.KdaState;
import io.kdapack.core.nn.GatedRmsNorm;
import io.kdapack.core.nn.Layer;
import io.kdapack.core.nn.Linear;
import io.kdapack.core.nn.Parallel;
import io.kdapack.core.nn.Parameter;
import io.kdapack.core.nn.ShortConvolution;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The KimiDeltaAttention layer of architecture §3 with FLA's parameter names. Letters: {@code T} tokens, {@code d} hidden,
 * {@code H} q/k heads, {@code HV} value heads, {@code K = V = head_dim}.
 *
 * <pre>
 * q = silu(q_conv1d(q_proj(x)))          q_proj [H·K, d],  q_conv1d.weight [H·K, 1, W]     q [T,H,K]
 * k = silu(k_conv1d(k_proj(x)))          k_proj [H·K, d],  k_conv1d.weight [H·K, 1, W]     k [T,H,K]
 * v = silu(v_conv1d(v_proj(x)))          v_proj [HV·V, d], v_conv1d.weight [HV·V, 1, W]    v [T,HV,V]
 * g = f_proj.1(f_proj.0(x))              f_proj.0 [V, d], f_proj.1 [HV·K, V]               g [T,HV,K] raw gate
 * b = b_proj(x)                          b_proj [HV, d]                                    beta logit [T,HV]
 * o = KDA(q, k, v, g, b; A_log [HV], dt_bias [HV·K])   with qk-l2norm, the gate and the beta sigmoid in the op:
 *       decay = −exp(A_log)·softplus(g + dt_bias), or lb·sigmoid(exp(A_log)·(g + dt_bias)) with kda.lower_bound
 * z = g_proj.1(g_proj.0(x))              g_proj.0 [V, d], g_proj.1 [HV·V, V] + bias [HV·V]
 * y = o_proj(o_norm(o, z))               o_norm.weight [V] (per-head RMSNorm, times sigmoid(z)), o_proj [d, HV·V]
 * </pre>
 *
 * The convolutions and the KDA recurrence restart at every segment start (no state crosses a boundary); tokens in no
 * segment (padding) get {@code y = 0} and send no gradient. All linears are bias-free except {@code g_proj.1}; the
 * convolutions have no bias.
 */
public final class KimiDeltaAttention implements Layer {
    private final int heads;
    private final int valueHeads;
    private final int headDim;
    private final KdaBackend backend;
    private final KdaOptions options;
    private final Linear qProj;
    private final Linear kProj;
    private final Linear vProj;
    private final ShortConvolution qConv;
    private final ShortConvolution kConv;
    private final ShortConvolution vConv;
    private final Linear fProj0;
    private final Linear fProj1;
    private final Linear bProj;
    private final Parameter aLog;
    private final Parameter dtBias;
    private final Linear gProj0;
    private final Linear gProj1;
    private final GatedRmsNorm oNorm;
    private final Linear oProj;
    private final List<Parameter> parameters;

    /** What backward needs: every sub-layer's saved state and the op inputs. */
    public record Saved(Linear.Saved q, Linear.Saved k, Linear.Saved v, ShortConvolution.Saved qConv,
                        ShortConvolution.Saved kConv, ShortConvolution.Saved vConv, Linear.Saved f0, Linear.Saved f1,
                        Linear.Saved beta, KdaTape kda, Linear.Saved g0, Linear.Saved g1, GatedRmsNorm.Saved norm,
                        Linear.Saved out) {
        /** {@code y [T,d]}. */
        public float[] output() {
            return out.output();
        }
    }

    /**
     * @param name    prefix of the parameter names ({@code model.layers.0.self_attn})
     * @param hidden  d
     * @param config  heads, head dim, conv size, gate form and norm eps
     * @param backend the KDA op implementation
     */
    public KimiDeltaAttention(String name, int hidden, KdaConfig config, KdaBackend backend) {
        if (config.numHeads() < 1 || config.numVHeads() < 1 || config.numVHeads() % config.numHeads() != 0) {
            throw new IllegalArgumentException("kda: num_v_heads (" + config.numVHeads()
                    + ") must be a positive multiple of num_heads (" + config.numHeads() + ")");
        }
        if (backend == null) {
            throw new IllegalArgumentException("kda '" + name + "': backend must not be null");
        }
        this.heads = config.numHeads();
        this.valueHeads = config.numVHeads();
        this.headDim = config.headDim();
        this.backend = backend;
        this.options = options(config);
        int keyWidth = heads * headDim;
        int valueWidth = valueHeads * headDim;
        int conv = config.convSize();
        qProj = new Linear(Parameter.join(name, "q_proj"), hidden, keyWidth, false);
        kProj = new Linear(Parameter.join(name, "k_proj"), hidden, keyWidth, false);
        vProj = new Linear(Parameter.join(name, "v_proj"), hidden, valueWidth, false);
        qConv = new ShortConvolution(Parameter.join(name, "q_conv1d"), keyWidth, conv, false, Activation.SILU,
                backend.shortConv());
        kConv = new ShortConvolution(Parameter.join(name, "k_conv1d"), keyWidth, conv, false, Activation.SILU,
                backend.shortConv());
        vConv = new ShortConvolution(Parameter.join(name, "v_conv1d"), valueWidth, conv, false, Activation.SILU,
                backend.shortConv());
        fProj0 = new Linear(Parameter.join(name, "f_proj.0"), hidden, headDim, false);
        fProj1 = new Linear(Parameter.join(name, "f_proj.1"), headDim, valueHeads * headDim, false);
        bProj = new Linear(Parameter.join(name, "b_proj"), hidden, valueHeads, false);
        aLog = Parameter.filled(Parameter.join(name, "A_log"), 0f, valueHeads);
        dtBias = Parameter.filled(Parameter.join(name, "dt_bias"), 0f, valueHeads * headDim);
        gProj0 = new Linear(Parameter.join(name, "g_proj.0"), hidden, headDim, false);
        gProj1 = new Linear(Parameter.join(name, "g_proj.1"), headDim, valueWidth, true);
        oNorm = new GatedRmsNorm(Parameter.join(name, "o_norm"), valueHeads, headDim, (float) config.normEps());
        oProj = new Linear(Parameter.join(name, "o_proj"), valueWidth, hidden, false);

        List<Parameter> all = new ArrayList<>();
        for (Layer layer : List.of(qProj, kProj, vProj, qConv, kConv, vConv, fProj0, fProj1, bProj)) {
            all.addAll(layer.parameters());
        }
        all.add(aLog);
        all.add(dtBias);
        for (Layer layer : List.of(gProj0, gProj1, oNorm, oProj)) {
            all.addAll(layer.parameters());
        }
        parameters = Collections.unmodifiableList(all);
    }

    @Override
    public List<Parameter> parameters() {
        return parameters;
    }

    /**
     * The op's options of a layer of {@code config}: in-op l2 norm, the softplus gate ({@code lower_bound} null) or the
     * lower-bound gate, the beta sigmoid.
     */
    public static KdaOptions options(KdaConfig config) {
        return config.lowerBound() == null
                ? KdaOptions.layer(KdaOptions.Gate.SOFTPLUS, 0f)
                : KdaOptions.layer(KdaOptions.Gate.LOWER_BOUND, config.lowerBound().floatValue());
    }

    /** The op flags this layer runs KDA with. */
    public KdaOptions options() {
        return options;
    }

    /**
     * @param x        {@code [T,d]}
     * @param segments the sequences the convolutions and the recurrence run over; tokens in none are padding
     */
    public Saved forward(float[] x, Segments segments) {
        int tokens = segments.tokens();
        Linear.Saved q = qProj.forward(x, tokens);
        Linear.Saved k = kProj.forward(x, tokens);
        Linear.Saved v = vProj.forward(x, tokens);
        ShortConvolution.Saved qc = qConv.forward(q.output(), segments);
        ShortConvolution.Saved kc = kConv.forward(k.output(), segments);
        ShortConvolution.Saved vc = vConv.forward(v.output(), segments);
        Linear.Saved f0 = fProj0.forward(x, tokens);
        Linear.Saved f1 = fProj1.forward(f0.output(), tokens);
        Linear.Saved beta = bProj.forward(x, tokens);
        KdaInputs inputs = new KdaInputs(segments, heads, valueHeads, headDim, headDim, qc.output(), kc.output(),
                vc.output(), f1.output(), beta.output(), aLog.values(), dtBias.values(), null);
        KdaTape kda = backend.forwardForBackward(inputs, options, false); // training needs no final states
        float[] o = kda.result().o();
        Linear.Saved g0 = gProj0.forward(x, tokens);
        Linear.Saved g1 = gProj1.forward(g0.output(), tokens);
        GatedRmsNorm.Saved norm = oNorm.forward(o, g1.output(), tokens);
        Linear.Saved out = oProj.forward(norm.output(), tokens);
        return new Saved(q, k, v, qc, kc, vc, f0, f1, beta, kda, g0, g1, norm, out);
    }

    /** An empty (all-zero) decoding state for {@link #extend}. */
    public KdaState newState() {
        int kept = qConv.width() - 1;
        return new KdaState(new float[valueHeads * headDim * headDim], new float[heads * headDim * kept],
                new float[heads * headDim * kept], new float[valueHeads * headDim * kept]);
    }

    /**
     * The inference forward (no tape): piece {@code n} of {@code pieces} continues the sequence whose state is
     * {@code states[n]}; its convolution windows and recurrent state are the op's initial states, and are replaced
     * by the final ones. The same arithmetic as {@link #forward} with those initial states.
     *
     * @param x      {@code [T,d]} hidden states of the pieces, back to back ({@code pieces} cover all T tokens)
     * @param states {@code [N]} one distinct state per piece, updated in place
     * @param op     the KDA implementation for this call (the chunked kernels for prefill, the recurrence for decode)
     * @return {@code y [T,d]}
     */
    public float[] extend(float[] x, Segments pieces, KdaState[] states, KdaBackend op) {
        int tokens = pieces.tokens();
        int n = pieces.count();
        if (states.length != n) {
            throw new IllegalArgumentException("kda: " + n + " pieces but " + states.length + " states");
        }
        float[][] qWindows = new float[n][];
        float[][] kWindows = new float[n][];
        float[][] vWindows = new float[n][];
        int stateSize = valueHeads * headDim * headDim;
        float[] h0 = new float[n * stateSize];
        for (int s = 0; s < n; s++) {
            qWindows[s] = states[s].qWindow();
            kWindows[s] = states[s].kWindow();
            vWindows[s] = states[s].vWindow();
            if (states[s].recurrent().length != stateSize) {
                throw new IllegalArgumentException("kda: state " + s + " holds " + states[s].recurrent().length
                        + " values, expected [HV,K,V] = " + stateSize);
            }
            System.arraycopy(states[s].recurrent(), 0, h0, s * stateSize, stateSize);
        }
        float[] q = qConv.extend(qProj.forward(x, tokens).output(), pieces, qWindows);
        float[] k = kConv.extend(kProj.forward(x, tokens).output(), pieces, kWindows);
        float[] v = vConv.extend(vProj.forward(x, tokens).output(), pieces, vWindows);
        float[] g = fProj1.forward(fProj0.forward(x, tokens).output(), tokens).output();
        float[] beta = bProj.forward(x, tokens).output();
        KdaBackend.KdaResult result = op.forward(new KdaInputs(pieces, heads, valueHeads, headDim, headDim, q, k, v,
                g, beta, aLog.values(), dtBias.values(), h0), options);
        for (int s = 0; s < n; s++) {
            System.arraycopy(result.ht(), s * stateSize, states[s].recurrent(), 0, stateSize);
        }
        float[] z = gProj1.forward(gProj0.forward(x, tokens).output(), tokens).output();
        return oProj.forward(oNorm.forward(result.o(), z, tokens).output(), tokens).output();
    }

    /** Returns {@code dx [T,d]} and adds every parameter's gradient. */
    public float[] backward(Saved saved, float[] dy) {
        GatedRmsNorm.Gradients normGrads = oNorm.backward(saved.norm(), oProj.backward(saved.out(), dy));
        float[] dx = gProj0.backward(saved.g0(), gProj1.backward(saved.g1(), normGrads.dgate()));
        KdaBackend.KdaGradients op = backend.backward(saved.kda(), normGrads.dx(), null);
        Parallel.addInto(aLog.grads(), op.dALog());
        Parallel.addInto(dtBias.grads(), op.dDtBias());
        addBackward(dx, qProj, saved.q(), qConv.backward(saved.qConv(), op.dq()));
        addBackward(dx, kProj, saved.k(), kConv.backward(saved.kConv(), op.dk()));
        addBackward(dx, vProj, saved.v(), vConv.backward(saved.vConv(), op.dv()));
        addBackward(dx, fProj0, saved.f0(), fProj1.backward(saved.f1(), op.dg()));
        addBackward(dx, bProj, saved.beta(), op.dBeta());
        return dx;
    }

    /**
     * {@code dx += proj.backward(saved, dy)}; that product and {@code dy}, dead from here on, go back to the step's
     * workspace (where it lent them).
     */
    private static void addBackward(float[] dx, Linear proj, Linear.Saved saved, float[] dy) {
        float[] part = proj.backward(saved, dy);
        Parallel.addInto(dx, part);
        Workspace.release(part, dy);
    }
}
