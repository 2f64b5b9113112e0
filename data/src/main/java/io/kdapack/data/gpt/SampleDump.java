package io.kdapack.data.gpt;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Chosen samples of a GPT dataset as a safetensors file under the golden files' names and dtypes: {@code sample_ids}
 * I64 [K], {@code raw_text} I64 [K,L+x], {@code num_real_tokens} I32 [K], {@code tokens, labels, position_ids} I64
 * [K,L], {@code loss_mask} F32 [K,L], {@code segment_ids} I32 [K,L] (kdapack's convention: 1-based, padding 0),
 * {@code cu_seqlens} I32 [K,L+1] and {@code max_seqlen} I32 [K] with inter-document masking, and the whole
 * {@code document_index} I32 [E·n], {@code sample_index} I32 [S+1,2] and {@code shuffle_index} I64 [S]. A blend
 * ({@link #dumpBlend}) has the blend's arrays instead of the three index arrays: {@code dataset_index} I32 [S],
 * {@code dataset_sample_index} I64 [S] and {@code size.<i>} I64 [1] per corpus, as in golden/megatron-blend.
 */
public final class SampleDump {
    /** Refuse dumps above this many sample positions (about 1 GiB of tensors); choose samples instead. */
    static final long MAX_POSITIONS = 1L << 25;

    private SampleDump() {
    }

    /** Parses {@code "0-63,900-915,1000"} (inclusive ranges) into sample ids, each checked against {@code sampleCount}. */
    public static int[] parseSampleIds(String spec, int sampleCount) {
        List<Integer> ids = new ArrayList<>();
        for (String part : spec.split(",")) {
            String p = part.strip();
            int dash = p.indexOf('-', 1);
            int first;
            int last;
            try {
                first = Integer.parseInt(dash < 0 ? p : p.substring(0, dash).strip());
                last = dash < 0 ? first : Integer.parseInt(p.substring(dash + 1).strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("samples '" + spec + "': '" + p + "' is not an id or a range a-b");
            }
            if (first < 0 || last >= sampleCount || first > last) {
                throw new IllegalArgumentException("samples '" + spec + "': range " + first + "-" + last
                        + " outside the dataset's samples [0, " + (sampleCount - 1) + "]");
            }
            for (int i = first; i <= last; i++) {
                ids.add(i);
            }
        }
        return ids.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Assembles {@code sampleIds} and returns the file's contents with {@code metadata}. */
    public static SafeTensors dump(GptSampleAssembler assembler, int[] sampleIds, boolean interDocumentMasking,
                                   Map<String, String> metadata) {
        GptIndices indices = assembler.indices();
        long[] shuffle = new long[indices.sampleCount()];
        for (int i = 0; i < shuffle.length; i++) {
            shuffle[i] = indices.shuffleIndex()[i];
        }
        return samples(assembler, sampleIds, interDocumentMasking, metadata)
                .put(Tensor.of("document_index", indices.documentIndex(), indices.documentIndex().length))
                .put(Tensor.of("sample_index", indices.sampleIndex(), indices.sampleIndex().length / 2, 2))
                .put(Tensor.of("shuffle_index", shuffle, shuffle.length))
                .build();
    }

    /** Assembles blended samples {@code sampleIds} and returns the file's contents with the blend's arrays. */
    public static SafeTensors dumpBlend(BlendedSampleAssembler assembler, int[] sampleIds, boolean interDocumentMasking,
                                        Map<String, String> metadata) {
        BlendedIndices indices = assembler.indices();
        long[] sampleIndex = new long[indices.sampleCount()];
        for (int i = 0; i < sampleIndex.length; i++) {
            sampleIndex[i] = indices.datasetSampleIndex()[i];
        }
        SafeTensors.Builder file = samples(assembler, sampleIds, interDocumentMasking, metadata)
                .put(Tensor.of("dataset_index", indices.datasetIndex(), indices.sampleCount()))
                .put(Tensor.of("dataset_sample_index", sampleIndex, sampleIndex.length));
        for (int i = 0; i < indices.corpora().size(); i++) {
            file.put(Tensor.of("size." + i, new long[] {indices.corpora().get(i).sampleCount()}, 1));
        }
        return file.build();
    }

    /** The sample tensors of {@code sampleIds}, assembled by {@code reader}. */
    private static SafeTensors.Builder samples(GptSampleReader reader, int[] sampleIds, boolean interDocumentMasking,
                                               Map<String, String> metadata) {
        GptSample sample = reader.newSample();
        int k = sampleIds.length;
        int length = sample.seqLength();
        int width = sample.rawText().length;
        if ((long) k * (length + 1) > MAX_POSITIONS) {
            throw new IllegalArgumentException(k + " samples of " + length + " positions exceed the dump limit of "
                    + MAX_POSITIONS + " positions; choose fewer with --samples");
        }
        long[] ids = new long[k];
        long[] raw = new long[k * width];
        int[] real = new int[k];
        long[] tokens = new long[k * length];
        long[] labels = new long[k * length];
        float[] lossMask = new float[k * length];
        long[] positions = new long[k * length];
        int[] segments = new int[k * length];
        int[] cuSeqlens = new int[k * (length + 1)];
        int[] maxSeqlen = new int[k];
        for (int r = 0; r < k; r++) {
            reader.assemble(sampleIds[r], sample);
            ids[r] = sampleIds[r];
            real[r] = sample.numRealTokens();
            maxSeqlen[r] = sample.maxSeqlen();
            for (int i = 0; i < width; i++) {
                raw[r * width + i] = sample.rawText()[i];
            }
            for (int i = 0; i < length; i++) {
                int at = r * length + i;
                tokens[at] = sample.tokens()[i];
                labels[at] = sample.labels()[i];
                lossMask[at] = sample.lossMask()[i];
                positions[at] = sample.positionIds()[i];
                segments[at] = sample.segmentIds()[i];
            }
            System.arraycopy(sample.cuSeqlens(), 0, cuSeqlens, r * (length + 1), length + 1);
        }
        SafeTensors.Builder file = SafeTensors.builder().metadata(metadata)
                .put(Tensor.of("sample_ids", ids, k))
                .put(Tensor.of("raw_text", raw, k, width))
                .put(Tensor.of("num_real_tokens", real, k))
                .put(Tensor.of("tokens", tokens, k, length))
                .put(Tensor.of("labels", labels, k, length))
                .put(Tensor.of("loss_mask", lossMask, k, length))
                .put(Tensor.of("position_ids", positions, k, length))
                .put(Tensor.of("segment_ids", segments, k, length));
        if (interDocumentMasking) {
            file.put(Tensor.of("cu_seqlens", cuSeqlens, k, length + 1)).put(Tensor.of("max_seqlen", maxSeqlen, k));
        }
        return file;
    }
}
