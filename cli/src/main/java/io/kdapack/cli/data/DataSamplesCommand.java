package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.data.gpt.EpochPlan;
import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleDump;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.npy.MegatronIndexCache;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kdapack data samples}: Megatron's GPT samples, in Megatron's order, under the golden files' names. */
@Command(name = "samples", mixinStandardHelpOptions = true,
        description = "Build Megatron's GPTDataset order over PREFIX.bin/.idx and write the chosen samples (tokens, "
                + "labels, loss_mask, position_ids, segment_ids, raw_text) and the document, sample and shuffle "
                + "indices to a safetensors file. segment_ids: 1-based, a new one after each EOD when "
                + "--reset-attention-mask is set (else one per sample), padding 0.")
public final class DataSamplesCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prefix", required = true, paramLabel = "P", description = "Dataset prefix (P.bin, P.idx).")
    Path prefix;

    @Option(names = "--seq-length", required = true, paramLabel = "L", description = "Tokens per sample.")
    int seqLength;

    @Option(names = "--seed", defaultValue = "1234", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--split", defaultValue = "969,30,1", description = "Split weights (default: ${DEFAULT-VALUE}).")
    String split;

    @Option(names = "--split-name", defaultValue = "train", description = "train, valid or test (default: ${DEFAULT-VALUE}).")
    String splitName;

    @Option(names = "--num-samples", paramLabel = "N", description = "Samples requested; absent: one epoch.")
    Long numSamples;

    @Option(names = "--eod-id", required = true, paramLabel = "E", description = "End-of-document token id.")
    int eodId;

    @Option(names = "--pad-id", defaultValue = "-1", paramLabel = "P", description = "Pad id (default: ${DEFAULT-VALUE}).")
    int padId;

    @Option(names = "--eod-mask-loss", description = "Zero the loss where the input is EOD.")
    boolean eodMaskLoss;

    @Option(names = "--reset-position-ids", description = "Restart positions after each EOD.")
    boolean resetPositionIds;

    @Option(names = "--reset-attention-mask", description = "Start a new segment after each EOD.")
    boolean resetAttentionMask;

    @Option(names = "--inter-document-masking", description = "Megatron's packed path: segments and positions per "
            + "document read; also writes cu_seqlens and max_seqlen.")
    boolean interDocumentMasking;

    @Option(names = "--no-extra-token", description = "Samples read L tokens, not L+1 (add_extra_token_to_sequence off).")
    boolean noExtraToken;

    @Option(names = "--keep-last-partial", description = "Keep the last partial validation sample, padded.")
    boolean keepLastPartial;

    @Option(names = "--samples", paramLabel = "IDS", description = "Sample ids, e.g. 0-63,900-915 (default: all).")
    String samples;

    @Option(names = "--index-cache", paramLabel = "NPY_PREFIX", description = "Reuse Megatron's cached "
            + "<NPY_PREFIX>-{document,sample,shuffle}_index.npy instead of building the order.")
    Path indexCache;

    @Option(names = "--out", required = true, paramLabel = "F", description = "Output .safetensors file.")
    Path out;

    @Override
    public Integer call() throws IOException {
        IndexedDataset dataset = IndexedDataset.open(prefix);
        GptIndexConfig config = new GptIndexConfig(seqLength, seed, split, DatasetSplit.parse(splitName), numSamples,
                !noExtraToken, !keepLastPartial);
        SampleOptions options = new SampleOptions(eodId, padId, eodMaskLoss, resetPositionIds, resetAttentionMask,
                interDocumentMasking);
        EpochPlan plan = EpochPlan.of(GptIndices.tokensPerEpoch(dataset, config), config);
        GptIndices indices = indexCache != null ? MegatronIndexCache.load(indexCache) : GptIndices.build(dataset, config, plan);
        GptSampleAssembler assembler = new GptSampleAssembler(dataset, indices, seqLength, !noExtraToken, options);
        int[] ids = samples == null ? IntStream.range(0, indices.sampleCount()).toArray()
                : SampleDump.parseSampleIds(samples, indices.sampleCount());
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("format", "kdapack-samples-v1");
        meta.put("corpus_prefix", prefix.toString());
        meta.put("seq_length", Integer.toString(seqLength));
        meta.put("random_seed", Long.toString(seed));
        meta.put("split", split);
        meta.put("index_split", config.part().label());
        meta.put("num_samples", numSamples == null ? "None" : numSamples.toString());
        meta.put("tokens_per_epoch", Long.toString(plan.tokensPerEpoch()));
        meta.put("num_epochs", Integer.toString(plan.numEpochs()));
        meta.put("separate_final_epoch", Boolean.toString(plan.separateFinalEpoch()));
        meta.put("dataset_length", Integer.toString(indices.sampleCount()));
        meta.put("eod_id", Integer.toString(eodId));
        meta.put("pad_id", Integer.toString(padId));
        meta.put("eod_mask_loss", Boolean.toString(eodMaskLoss));
        meta.put("reset_position_ids", Boolean.toString(resetPositionIds));
        meta.put("reset_attention_mask", Boolean.toString(resetAttentionMask));
        meta.put("inter_document_masking", Boolean.toString(interDocumentMasking));
        meta.put("add_extra_token_to_sequence", Boolean.toString(!noExtraToken));
        meta.put("drop_last_partial_sequence", Boolean.toString(config.dropLastPartial()));
        meta.put("index_source", indexCache == null ? "built" : indexCache.toString());
        meta.put("segment_ids_convention", "kdapack: 1-based attention segments, padding 0");
        SafeTensors file = SampleDump.dump(assembler, ids, interDocumentMasking, meta);
        file.write(out);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("out", out.toString());
        json.put("samples_written", ids.length);
        json.put("dataset_length", indices.sampleCount());
        json.put("num_epochs", plan.numEpochs());
        json.put("separate_final_epoch", plan.separateFinalEpoch());
        json.put("tokens_per_epoch", plan.tokensPerEpoch());
        spec.commandLine().getOut().println(JsonLine.of(json));
        return 0;
    }
}
