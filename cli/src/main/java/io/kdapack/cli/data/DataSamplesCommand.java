package io.kdapack.cli.data;

import io.kdapack.cli.JsonLine;
import io.kdapack.config.BlendEntry;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.gpt.BlendedIndices;
import io.kdapack.data.gpt.BlendedSampleAssembler;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
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
                + "--reset-attention-mask is set (else one per sample), padding 0. With --blend 'W1 P1 W2 P2 …' "
                + "(Megatron's --data-path form) instead of --prefix: Megatron's weighted blend (BlendedDataset), its "
                + "dataset_index, dataset_sample_index and size.<i> (each corpus's GPTDataset length) instead of the "
                + "three index arrays; --num-samples is then required. A blend of one corpus is that --prefix.")
public final class DataSamplesCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--prefix", paramLabel = "P", description = "Dataset prefix (P.bin, P.idx); or --blend.")
    Path prefix;

    @Option(names = "--blend", paramLabel = "'W1 P1 W2 P2 …'", description = "Weighted blend of prefixes (Megatron's "
            + "--data-path form): positive weights, each prefix once.")
    String blend;

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
        if ((prefix == null) == (blend == null)) {
            throw new IllegalArgumentException("give one of --prefix P and --blend 'W1 P1 W2 P2 …'");
        }
        if (blend != null) {
            List<BlendEntry> entries = parseBlend(blend);
            if (entries.size() > 1) {
                return callBlend(entries);
            }
            prefix = Path.of(entries.get(0).prefix());
        }
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

    /** {@code --blend}: Megatron's form, positive finite weights, no prefix twice; errors name the option. */
    static List<BlendEntry> parseBlend(String text) {
        List<BlendEntry> entries;
        try {
            entries = BlendEntry.parseMegatron(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--blend '" + text + "': " + e.getMessage());
        }
        Map<Path, Integer> seen = new HashMap<>();
        for (int i = 0; i < entries.size(); i++) {
            BlendEntry e = entries.get(i);
            if (!(e.weight() > 0) || !Double.isFinite(e.weight())) {
                throw new IllegalArgumentException("--blend '" + text + "': weight " + i + " = " + e.weight()
                        + " of " + e.prefix() + " must be a positive finite number");
            }
            Integer first = seen.putIfAbsent(Path.of(e.prefix()).toAbsolutePath().normalize(), i);
            if (first != null) {
                throw new IllegalArgumentException("--blend '" + text + "': prefix " + e.prefix() + " is listed twice "
                        + "(pairs " + first + " and " + i + "); list each corpus once");
            }
        }
        return entries;
    }

    private Integer callBlend(List<BlendEntry> entries) throws IOException {
        if (numSamples == null) {
            throw new IllegalArgumentException("--blend needs --num-samples: Megatron sizes each corpus of a blend from "
                    + "the samples requested");
        }
        if (indexCache != null) {
            throw new IllegalArgumentException("--index-cache reads one corpus's cached indices; it does not apply to "
                    + "--blend");
        }
        List<IndexedDataset> datasets = new ArrayList<>();
        double[] weights = new double[entries.size()];
        for (int i = 0; i < entries.size(); i++) {
            datasets.add(IndexedDataset.open(Path.of(entries.get(i).prefix())));
            weights[i] = entries.get(i).weight();
        }
        GptIndexConfig config = new GptIndexConfig(seqLength, seed, split, DatasetSplit.parse(splitName), numSamples,
                !noExtraToken, !keepLastPartial);
        SampleOptions options = new SampleOptions(eodId, padId, eodMaskLoss, resetPositionIds, resetAttentionMask,
                interDocumentMasking);
        BlendedIndices indices = BlendedIndices.build(datasets, entries.stream().map(BlendEntry::prefix).toList(),
                weights, config);
        BlendedSampleAssembler assembler = new BlendedSampleAssembler(datasets, indices, seqLength, !noExtraToken,
                options);
        int[] ids = samples == null ? IntStream.range(0, indices.sampleCount()).toArray()
                : SampleDump.parseSampleIds(samples, indices.sampleCount());
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("format", "kdapack-samples-v1");
        meta.put("blend", blend);
        meta.put("corpora", entries.stream().map(BlendEntry::prefix).toList().toString());
        meta.put("weights", Arrays.toString(weights));
        meta.put("mid_level_dataset_surplus", Double.toString(BlendedIndices.MID_LEVEL_DATASET_SURPLUS));
        meta.put("seq_length", Integer.toString(seqLength));
        meta.put("random_seed", Long.toString(seed));
        meta.put("split", split);
        meta.put("index_split", config.part().label());
        meta.put("num_samples", numSamples.toString());
        meta.put("dataset_length", Integer.toString(indices.sampleCount()));
        meta.put("eod_id", Integer.toString(eodId));
        meta.put("pad_id", Integer.toString(padId));
        meta.put("eod_mask_loss", Boolean.toString(eodMaskLoss));
        meta.put("reset_position_ids", Boolean.toString(resetPositionIds));
        meta.put("reset_attention_mask", Boolean.toString(resetAttentionMask));
        meta.put("inter_document_masking", Boolean.toString(interDocumentMasking));
        meta.put("add_extra_token_to_sequence", Boolean.toString(!noExtraToken));
        meta.put("segment_ids_convention", "kdapack: 1-based attention segments, padding 0");
        SampleDump.dumpBlend(assembler, ids, interDocumentMasking, meta).write(out);
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("out", out.toString());
        json.put("samples_written", ids.length);
        json.put("dataset_length", indices.sampleCount());
        json.put("corpus_lengths", indices.corpora().stream().map(GptIndices::sampleCount).toList());
        spec.commandLine().getOut().println(JsonLine.of(json));
        return 0;
    }
}
