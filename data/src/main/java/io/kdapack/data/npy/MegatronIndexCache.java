package io.kdapack.data.npy;

import io.kdapack.data.gpt.GptIndices;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Megatron's cached GPT dataset indices: {@code <PREFIX>-document_index.npy} (int32 [E·n]),
 * {@code <PREFIX>-sample_index.npy} (int32 or int64 [S+1, 2]) and {@code <PREFIX>-shuffle_index.npy} (uint32 or int64
 * [S]), where PREFIX is {@code <cache dir>/<hash>-GPTDataset-<split>}. Loading them reuses a Megatron run's exact order.
 */
public final class MegatronIndexCache {
    static final String DOCUMENT_INDEX = "-document_index.npy";
    static final String SAMPLE_INDEX = "-sample_index.npy";
    static final String SHUFFLE_INDEX = "-shuffle_index.npy";

    private MegatronIndexCache() {
    }

    /**
     * Loads the three arrays. {@code prefixOrFile} is the common prefix or any one of the three files.
     * Shapes are checked against each other; {@link io.kdapack.data.gpt.GptSampleAssembler} checks values against
     * the dataset.
     */
    public static GptIndices load(Path prefixOrFile) throws IOException {
        String name = prefixOrFile.getFileName().toString();
        for (String suffix : new String[] {DOCUMENT_INDEX, SAMPLE_INDEX, SHUFFLE_INDEX}) {
            if (name.endsWith(suffix)) {
                name = name.substring(0, name.length() - suffix.length());
            }
        }
        Path prefix = prefixOrFile.resolveSibling(name);
        NpyArray documents = NpyArray.read(prefix.resolveSibling(name + DOCUMENT_INDEX));
        NpyArray samples = NpyArray.read(prefix.resolveSibling(name + SAMPLE_INDEX));
        NpyArray shuffle = NpyArray.read(prefix.resolveSibling(name + SHUFFLE_INDEX));
        requireShape(documents, documents.shape().length == 1, "[E*n]");
        requireShape(samples, samples.shape().length == 2 && samples.shape()[1] == 2 && samples.shape()[0] >= 1,
                "[S+1, 2]");
        requireShape(shuffle, shuffle.shape().length == 1 && shuffle.shape()[0] == samples.shape()[0] - 1,
                "[" + (samples.shape()[0] - 1) + "] (sample_index rows - 1)");
        try {
            return new GptIndices(documents.toIntArray(), samples.toIntArray(), shuffle.toIntArray());
        } catch (IllegalArgumentException e) {
            throw new NpyFormatException(e.getMessage());
        }
    }

    private static void requireShape(NpyArray array, boolean ok, String expected) throws NpyFormatException {
        if (!ok) {
            throw new NpyFormatException(array.source() + ": shape: expected " + expected + ", found "
                    + Arrays.toString(array.shape()));
        }
    }
}
