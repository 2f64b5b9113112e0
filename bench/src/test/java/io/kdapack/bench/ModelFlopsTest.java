package io.kdapack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kdapack.core.kda.KdaChunked;
import io.kdapack.core.kda.Segments;
import io.kdapack.core.model.BatchLayout;
import io.kdapack.core.model.HybridModel;
import io.kdapack.core.model.KdaConfig;
import io.kdapack.core.model.MlaConfig;
import io.kdapack.core.model.ModelConfig;
import io.kdapack.core.model.MtpConfig;
import org.junit.jupiter.api.Test;

class ModelFlopsTest {

    /**
     * One KDA and one MLA layer, no MTP, a batch of two documents (3 and 5 tokens): the count written out by hand from
     * the layers' shapes, independently of the parameter walk.
     */
    @Test
    void countsProjectionsAttentionAndKdaOfAStep() {
        int d = 16, vocab = 40, inner = 24;
        ModelConfig config = new ModelConfig(vocab, d, 2, 2, inner, 1e-6, false, new KdaConfig(2, 2, 8, 4, -1.0, 1e-5),
                new MlaConfig(2, null, 8, 4, 2, 4, 10000.0), new MtpConfig(0, 0.1), null);
        HybridModel model = new HybridModel(config, new KdaChunked(1), true);
        Segments docs = new Segments(8, new int[] {0, 3}, new int[] {3, 8});
        BatchLayout layout = new BatchLayout(docs, docs, new int[8]);

        int kdaWidth = 2 * 8; // H·K = HV·V
        double kdaProjections = 3.0 * kdaWidth * d // q, k, v
                + 2 * (8.0 * d + kdaWidth * 8) // f_proj and g_proj: d → head_dim → HV·K
                + 2.0 * d // b_proj: one beta per value head
                + (double) d * kdaWidth; // o_proj
        double mlaProjections = 2.0 * (4 + 2) * d // q_proj
                + (8.0 + 2) * d // kv_a_proj_with_mqa
                + 2.0 * (4 + 4) * 8 // kv_b_proj
                + (double) d * 2 * 4; // o_proj
        double mlp = 3.0 * inner * d;
        double projections = kdaProjections + mlaProjections + 2 * mlp + (double) vocab * d;
        double pairs = 3 * 4 / 2 + 5 * 6 / 2;
        double attention = 6.0 * 2 * (4 + 2 + 4) * pairs;
        double kda = KdaBenchmark.chunkedFlops(docs, 2, 8, 8, false, false);
        assertEquals(6 * 8 * projections + attention + kda,
                ModelFlops.trainingStep(config, model.parameters(), layout), 1e-6);
    }
}
