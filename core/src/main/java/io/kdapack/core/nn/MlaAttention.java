package io.kdapack.core.nn;

import io.kdapack.core.kda.Segments;
import io.kdapack.core.linalg.Gemm;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Multi-head Latent Attention as in DeepSeek-V2 and Ling 3, over packed documents. Letters: {@code T} tokens,
 * {@code d} hidden, {@code H} heads, {@code P = qk_nope_head_dim}, {@code R = qk_rope_head_dim},
 * {@code Dv = v_head_dim}, {@code Cq = q_lora_rank}, {@code Ckv = kv_lora_rank}. All projections are bias-free.
 *
 * <pre>
 * queries   q  = q_b_proj(q_a_layernorm(q_a_proj(x)))              q_a_proj [Cq,d], q_b_proj [H·(P+R), Cq]
 *              = q_proj(x)  when q_lora_rank is null                q_proj [H·(P+R), d]
 *           q[t,h] = [q_nope (P) | q_rope (R)]                      q viewed as [T,H,P+R]
 * latent    c  = kv_a_proj_with_mqa(x)                              [T, Ckv+R], weight [Ckv+R, d]
 *           c_kv = c[:, :Ckv],  k_rope = c[:, Ckv:]                 k_rope [T,R] is shared by all heads
 * keys/vals kv = kv_b_proj(kv_a_layernorm(c_kv))                    kv_b_proj [H·(P+Dv), Ckv]
 *           kv[t,h] = [k_nope (P) | v (Dv)]                         kv viewed as [T,H,P+Dv]
 * rotary    q_rope[t,h] ← RoPE(q_rope[t,h], pos[t]),  k_rope[t] ← RoPE(k_rope[t], pos[t])   (see {@link Rope})
 * attention Q[t,h] = [q_nope | q_rope],  K[t,h] = [k_nope[t,h] | k_rope[t]],  V[t,h] = v
 *           o[t,h] = Σ_{s ∈ seg(t), s ≤ t} softmax_s(Q[t,h]·K[s,h] / sqrt(P+R)) · V[s,h]   (see {@link SegmentAttention})
 * output    y  = o_proj(o)                                          o viewed as [T,H·Dv], o_proj [d, H·Dv]
 * </pre>
 *
 * {@code q_a_layernorm} and {@code kv_a_layernorm} are {@link RmsNorm}s with weights {@code [Cq]} and
 * {@code [Ckv]}. Positions {@code pos [T]} are given per token; they restart at 0 in each document. Padding tokens
 * (in no segment) get {@code y = 0} and receive zero gradient. Parameters, under the layer's name:
 * {@code q_a_proj, q_a_layernorm, q_b_proj} (or {@code q_proj}), {@code kv_a_proj_with_mqa, kv_a_layernorm,
 * kv_b_proj, o_proj}, each {@code .weight}.
 */
public final class MlaAttention implements Layer {
    private static final int TOKEN_BLOCK = 64;

    private final String name;
    private final MlaShape shape;
    private final Linear qAProj;
    private final RmsNorm qALayerNorm;
    /** {@code q_b_proj} with a query low rank, else {@code q_proj}. */
    private final Linear qOut;
    private final Linear kvAProj;
    private final RmsNorm kvALayerNorm;
    private final Linear kvBProj;
    private final Linear oProj;
    private final Rope rope;
    private final SegmentAttention attention;

    /** What backward needs; the {@code qA*} fields are null without a query low rank. */
    public record Saved(Segments segments, int[] positions, Linear.Saved qA, RmsNorm.Saved qANormed, Linear.Saved q,
                        Linear.Saved kvA, RmsNorm.Saved kvNormed, Linear.Saved kvB, SegmentAttention.Saved attention,
                        Linear.Saved out) {
        /** {@code y [T,d]}. */
        public float[] output() {
            return out.output();
        }
    }

    public MlaAttention(String name, MlaShape shape) {
        this.name = name;
        this.shape = shape;
        int d = shape.hidden();
        int h = shape.heads();
        if (shape.qLoraRank() == null) {
            qAProj = null;
            qALayerNorm = null;
            qOut = new Linear(Parameter.join(name, "q_proj"), d, h * shape.qkHeadDim(), false);
        } else {
            int rank = shape.qLoraRank();
            qAProj = new Linear(Parameter.join(name, "q_a_proj"), d, rank, false);
            qALayerNorm = new RmsNorm(Parameter.join(name, "q_a_layernorm"), rank, shape.latentNormEps());
            qOut = new Linear(Parameter.join(name, "q_b_proj"), rank, h * shape.qkHeadDim(), false);
        }
        kvAProj = new Linear(Parameter.join(name, "kv_a_proj_with_mqa"), d,
                shape.kvLoraRank() + shape.qkRopeHeadDim(), false);
        kvALayerNorm = new RmsNorm(Parameter.join(name, "kv_a_layernorm"), shape.kvLoraRank(), shape.latentNormEps());
        kvBProj = new Linear(Parameter.join(name, "kv_b_proj"), shape.kvLoraRank(),
                h * (shape.qkNopeHeadDim() + shape.vHeadDim()), false);
        oProj = new Linear(Parameter.join(name, "o_proj"), h * shape.vHeadDim(), d, false);
        rope = new Rope(shape.qkRopeHeadDim(), shape.ropeTheta());
        attention = new SegmentAttention(h, shape.qkHeadDim(), shape.vHeadDim(), shape.softmaxScale());
    }

    public MlaShape shape() {
        return shape;
    }

    /** An empty decoding cache for {@link #extend}: {@code Ckv + R} floats per token. */
    public LatentCache newCache() {
        return new LatentCache(shape.kvLoraRank() + shape.qkRopeHeadDim());
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> all = new ArrayList<>();
        if (qAProj != null) {
            all.addAll(qAProj.parameters());
            all.addAll(qALayerNorm.parameters());
        }
        all.addAll(qOut.parameters());
        all.addAll(kvAProj.parameters());
        all.addAll(kvALayerNorm.parameters());
        all.addAll(kvBProj.parameters());
        all.addAll(oProj.parameters());
        return Collections.unmodifiableList(all);
    }

    /**
     * @param x         {@code [T,d]} hidden states
     * @param segments  the documents; tokens in none are padding
     * @param positions {@code [T]} RoPE positions (≥ 0), restarting in each document
     */
    public Saved forward(float[] x, Segments segments, int[] positions) {
        int tokens = segments.tokens();
        Shapes.check(Parameter.join(name, "input"), x, tokens, shape.hidden());
        checkPositions(positions, tokens);
        Linear.Saved qA = null;
        RmsNorm.Saved qANormed = null;
        Linear.Saved q;
        if (qAProj != null) {
            qA = qAProj.forward(x, tokens);
            qANormed = qALayerNorm.forward(qA.output(), tokens);
            q = qOut.forward(qANormed.output(), tokens);
        } else {
            q = qOut.forward(x, tokens);
        }
        Linear.Saved kvA = kvAProj.forward(x, tokens);
        RmsNorm.Saved kvNormed = kvALayerNorm.forward(latentPart(kvA.output(), tokens), tokens);
        Linear.Saved kvB = kvBProj.forward(kvNormed.output(), tokens);

        int heads = shape.heads();
        int nope = shape.qkNopeHeadDim();
        int ropeDim = shape.qkRopeHeadDim();
        int qk = shape.qkHeadDim();
        int kvWidth = nope + shape.vHeadDim();
        int latentWidth = shape.kvLoraRank() + ropeDim;
        float[] queries = q.output().clone();
        float[] keys = new float[tokens * heads * qk];
        float[] values = new float[tokens * heads * shape.vHeadDim()];
        Parallel.forBlocks(tokens, TOKEN_BLOCK, (from, to) -> {
            float[] keyRope = new float[ropeDim];
            for (int t = from; t < to; t++) {
                System.arraycopy(kvA.output(), t * latentWidth + shape.kvLoraRank(), keyRope, 0, ropeDim);
                rope.rotate(keyRope, 0, positions[t]);
                for (int h = 0; h < heads; h++) {
                    int qkRow = (t * heads + h) * qk;
                    int kvRow = (t * heads + h) * kvWidth;
                    rope.rotate(queries, qkRow + nope, positions[t]);
                    System.arraycopy(kvB.output(), kvRow, keys, qkRow, nope);
                    System.arraycopy(keyRope, 0, keys, qkRow + nope, ropeDim);
                    System.arraycopy(kvB.output(), kvRow + nope, values, (t * heads + h) * shape.vHeadDim(),
                            shape.vHeadDim());
                }
            }
        });
        SegmentAttention.Saved attended = attention.forward(segments, queries, keys, values);
        Linear.Saved out = oProj.forward(attended.output(), tokens);
        return new Saved(segments, positions, qA, qANormed, q, kvA, kvNormed, kvB, attended, out);
    }

    /** Returns {@code dx [T,d]} and adds every parameter's gradient. */
    public float[] backward(Saved saved, float[] dy) {
        int tokens = saved.segments().tokens();
        int heads = shape.heads();
        int nope = shape.qkNopeHeadDim();
        int ropeDim = shape.qkRopeHeadDim();
        int qk = shape.qkHeadDim();
        int kvWidth = nope + shape.vHeadDim();
        int latentWidth = shape.kvLoraRank() + ropeDim;
        int[] positions = saved.positions();

        float[] dAttended = oProj.backward(saved.out(), dy);
        SegmentAttention.Gradients g = attention.backward(saved.attention(), dAttended);
        float[] dq = g.dq();
        float[] dkvB = new float[tokens * heads * kvWidth];
        float[] dkvA = new float[tokens * latentWidth];
        Parallel.forBlocks(tokens, TOKEN_BLOCK, (from, to) -> {
            for (int t = from; t < to; t++) {
                int ropeOut = t * latentWidth + shape.kvLoraRank();
                for (int h = 0; h < heads; h++) {
                    int qkRow = (t * heads + h) * qk;
                    int kvRow = (t * heads + h) * kvWidth;
                    rope.rotateBack(dq, qkRow + nope, positions[t]);
                    System.arraycopy(g.dk(), qkRow, dkvB, kvRow, nope);
                    System.arraycopy(g.dv(), (t * heads + h) * shape.vHeadDim(), dkvB, kvRow + nope,
                            shape.vHeadDim());
                    // The rotary key is shared by all heads: its gradient sums over them (in head order).
                    for (int j = 0; j < ropeDim; j++) {
                        dkvA[ropeOut + j] += g.dk()[qkRow + nope + j];
                    }
                }
                rope.rotateBack(dkvA, ropeOut, positions[t]);
            }
        });
        float[] dLatent = kvALayerNorm.backward(saved.kvNormed(), kvBProj.backward(saved.kvB(), dkvB));
        for (int t = 0; t < tokens; t++) {
            System.arraycopy(dLatent, t * shape.kvLoraRank(), dkvA, t * latentWidth, shape.kvLoraRank());
        }
        float[] dx = kvAProj.backward(saved.kvA(), dkvA);
        float[] dxQuery;
        if (qAProj != null) {
            float[] dqA = qALayerNorm.backward(saved.qANormed(), qOut.backward(saved.q(), dq));
            dxQuery = qAProj.backward(saved.qA(), dqA);
        } else {
            dxQuery = qOut.backward(saved.q(), dq);
        }
        Parallel.addInto(dx, dxQuery);
        return dx;
    }

    /**
     * The inference forward (no tape): piece {@code n} of {@code pieces} continues the sequence whose cache is
     * {@code caches[n]} at positions {@code L_n … L_n+len−1} ({@code L_n} its cached tokens). Each token's latent row
     * is appended to its cache, then every token attends to its sequence's cache up to itself. Absorbed form (same
     * scores and outputs as {@link #forward} up to float rounding): with {@code W_uk[h] [P,Ckv]} and
     * {@code W_uv[h] [Dv,Ckv]} the rows of {@code kv_b_proj} of head {@code h},
     *
     * <pre>
     * score[t,s] = (q_nope[t,h]·W_uk[h]) · c_kv[s] + q_rope[t,h] · k_pe[s]       (times 1/sqrt(P+R))
     * o[t,h]     = W_uv[h] · Σ_s softmax_s(score[t,s]) c_kv[s]
     * </pre>
     *
     * so a token costs {@code O(L·H·(Ckv+R))} however many heads share the latent. Each (sequence, head) is one task
     * that reads only its own cache, so a sequence's result does not depend on the others in the call.
     *
     * @param x      {@code [T,d]} hidden states of the pieces, back to back ({@code pieces} cover all T tokens)
     * @param caches {@code [N]} one distinct cache per piece, extended in place
     * @return {@code y [T,d]}
     */
    public float[] extend(float[] x, Segments pieces, LatentCache[] caches) {
        int tokens = pieces.tokens();
        Shapes.check(Parameter.join(name, "input"), x, tokens, shape.hidden());
        if (caches.length != pieces.count()) {
            throw new IllegalArgumentException(name + ": " + pieces.count() + " pieces but " + caches.length
                    + " caches");
        }
        float[] q;
        if (qAProj != null) {
            q = qOut.forward(qALayerNorm.forward(qAProj.forward(x, tokens).output(), tokens).output(), tokens).output();
        } else {
            q = qOut.forward(x, tokens).output();
        }
        float[] c = kvAProj.forward(x, tokens).output();
        float[] latent = kvALayerNorm.forward(latentPart(c, tokens), tokens).output();

        int heads = shape.heads();
        int rank = shape.kvLoraRank();
        int nope = shape.qkNopeHeadDim();
        int ropeDim = shape.qkRopeHeadDim();
        int qk = shape.qkHeadDim();
        int vDim = shape.vHeadDim();
        int width = rank + ropeDim;
        int kvWidth = nope + vDim;
        float[] kvB = kvBProj.weight().values();

        int[] cached = new int[caches.length];
        for (int n = 0; n < caches.length; n++) {
            LatentCache cache = caches[n];
            if (cache.width() != width) {
                throw new IllegalArgumentException(name + ": cache " + n + " has width " + cache.width()
                        + ", expected Ckv+R = " + width);
            }
            cached[n] = cache.length();
            cache.reserve(pieces.length(n));
        }
        // Latent rows of the new tokens into their caches, the rotary key at the token's position.
        Parallel.forEach(caches.length, n -> {
            float[] rows = caches[n].rows();
            for (int i = 0; i < pieces.length(n); i++) {
                int t = pieces.start(n) + i;
                int row = (cached[n] + i) * width;
                System.arraycopy(latent, t * rank, rows, row, rank);
                System.arraycopy(c, t * width + rank, rows, row + rank, ropeDim);
                rope.rotate(rows, row + rank, cached[n] + i);
            }
            caches[n].advance(pieces.length(n));
        });

        // Absorbed queries [T,H,Ckv+R] = [q_nope·W_uk[h] | RoPE(q_rope)].
        float[] queries = new float[tokens * heads * width];
        for (int h = 0; h < heads; h++) {
            Parallel.gemm(false, false, tokens, rank, nope, 1f, q, h * qk, heads * qk, kvB, h * kvWidth * rank, rank,
                    0f, queries, h * width, heads * width);
        }
        Parallel.forEach(caches.length, n -> {
            for (int i = 0; i < pieces.length(n); i++) {
                int t = pieces.start(n) + i;
                for (int h = 0; h < heads; h++) {
                    int to = (t * heads + h) * width + rank;
                    System.arraycopy(q, (t * heads + h) * qk + nope, queries, to, ropeDim);
                    rope.rotate(queries, to, cached[n] + i);
                }
            }
        });

        // Per (sequence, head): probabilities over the cache, then the attended latent [T,H,Ckv].
        float[] attendedLatent = new float[tokens * heads * rank];
        float scale = shape.softmaxScale();
        Parallel.forEach(heads * caches.length, task -> {
            int h = task % heads;
            int n = task / heads;
            int start = pieces.start(n);
            int length = pieces.length(n);
            float[] rows = caches[n].rows();
            float[] p = new float[Math.min(TOKEN_BLOCK, length) * (cached[n] + length)];
            for (int r0 = 0; r0 < length; r0 += TOKEN_BLOCK) {
                int blockRows = Math.min(TOKEN_BLOCK, length - r0);
                int cols = cached[n] + r0 + blockRows;
                Gemm.sgemm(false, true, blockRows, cols, width, scale, queries, ((start + r0) * heads + h) * width,
                        heads * width, rows, 0, width, 0f, p, 0, cols);
                for (int i = 0; i < blockRows; i++) {
                    SegmentAttention.causalSoftmax(p, i * cols, cached[n] + r0 + i + 1, cols);
                }
                Gemm.sgemm(false, false, blockRows, rank, cols, 1f, p, 0, cols, rows, 0, width, 0f, attendedLatent,
                        ((start + r0) * heads + h) * rank, heads * rank);
            }
        });

        // o[t,h] = W_uv[h] · attended latent, then o_proj.
        float[] o = new float[tokens * heads * vDim];
        for (int h = 0; h < heads; h++) {
            Parallel.gemm(false, true, tokens, vDim, rank, 1f, attendedLatent, h * rank, heads * rank, kvB,
                    (h * kvWidth + nope) * rank, rank, 0f, o, h * vDim, heads * vDim);
        }
        return oProj.forward(o, tokens).output();
    }

    /** {@code c_kv = c[:, :Ckv]} as its own {@code [T,Ckv]} array. */
    private float[] latentPart(float[] c, int tokens) {
        int rank = shape.kvLoraRank();
        int width = rank + shape.qkRopeHeadDim();
        float[] latent = new float[tokens * rank];
        for (int t = 0; t < tokens; t++) {
            System.arraycopy(c, t * width, latent, t * rank, rank);
        }
        return latent;
    }

    private static void checkPositions(int[] positions, int tokens) {
        if (positions == null || positions.length != tokens) {
            throw new IllegalArgumentException("positions: expected " + tokens + " values, got "
                    + (positions == null ? "null" : positions.length));
        }
        for (int t = 0; t < tokens; t++) {
            if (positions[t] < 0) {
                throw new IllegalArgumentException("positions[" + t + "] must be >= 0, got " + positions[t]);
            }
        }
    }
}
