package io.kdapack.data.npy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.core.io.SafeTensors;
import io.kdapack.data.GoldenFiles;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** .npy files written by numpy itself, Megatron's index cache, and malformed headers. */
class NpyArrayTest {
    private static final String GOLDEN = "megatron/v1000_u16/L64_s7_eodmask_resetpos_2ep_separate.safetensors";

    @Test
    void megatronCacheReproducesTheGoldenOrderAndSamples() throws IOException {
        SafeTensors golden = GoldenFiles.read(GOLDEN);
        GptIndices indices = MegatronIndexCache.load(resource("npy/cache/0123456789abcdef-GPTDataset-train"));
        assertArrayEquals(golden.get("document_index").toIntArray(), indices.documentIndex());
        assertArrayEquals(golden.get("sample_index").toIntArray(), indices.sampleIndex());
        assertArrayEquals(golden.get("shuffle_index").toIntArray(), indices.shuffleIndex());
        GptIndices viaFile = MegatronIndexCache.load(
                resource("npy/cache/0123456789abcdef-GPTDataset-train-shuffle_index.npy"));
        assertArrayEquals(indices.sampleIndex(), viaFile.sampleIndex());

        IndexedDataset corpus = IndexedDataset.open(GoldenFiles.path("megatron/v1000_u16").resolve("docs"));
        GptSampleAssembler assembler = new GptSampleAssembler(corpus, indices, 64, true,
                new SampleOptions(999, -1, true, true, false, false));
        GptSample sample = assembler.newSample();
        long[] ids = golden.get("sample_ids").toLongArray();
        int[] tokens = golden.get("tokens").toIntArray();
        for (int k = 0; k < ids.length; k++) {
            assembler.assemble((int) ids[k], sample);
            assertArrayEquals(Arrays.copyOfRange(tokens, 64 * k, 64 * k + 64), sample.tokens(), "sample " + ids[k]);
        }
    }

    @Test
    void versionTwoHeaderInt64AndBigEndian() throws IOException {
        NpyArray v2 = NpyArray.read(resource("npy/v2_int64_sample_index.npy"));
        assertEquals("<i8", v2.descr());
        assertArrayEquals(GoldenFiles.read(GOLDEN).get("sample_index").toIntArray(), v2.toIntArray());
        NpyArray big = NpyArray.read(resource("npy/bigendian_u4.npy"));
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, big.toIntArray());
        assertArrayEquals(new long[] {10}, big.shape());
    }

    @Test
    void refusedArraysNameTheProblem() {
        expect(resource("npy/float64.npy"), "descr");
        expect(resource("npy/fortran_2d.npy"), "fortran_order");
    }

    @Test
    void corruptHeadersAndData() throws IOException {
        byte[] good = Files.readAllBytes(resource("npy/bigendian_u4.npy"));
        expectBytes(Arrays.copyOf(good, 5), "header");
        byte[] magic = good.clone();
        magic[1] = 'X';
        expectBytes(magic, "magic");
        byte[] version = good.clone();
        version[6] = 9;
        expectBytes(version, "version");
        byte[] length = good.clone();
        length[8] = (byte) 0xFF;
        length[9] = (byte) 0x7F;
        expectBytes(length, "header length");
        expectBytes(Arrays.copyOf(good, good.length - 1), "data");
        expectBytes(Arrays.copyOf(good, good.length + 4), "data");
        String header = new String(good, 10, good.length - 50, java.nio.charset.StandardCharsets.ISO_8859_1);
        byte[] noShape = good.clone();
        int at = header.indexOf("'shape'");
        noShape[10 + at + 1] = 'X';
        expectBytes(noShape, "shape");
        byte[] notInteger = good.clone();
        notInteger[10 + header.indexOf("(10,") + 1] = 'x';
        expectBytes(notInteger, "shape");
        byte[] negative = good.clone();
        negative[10 + header.indexOf("(10,")] = '-';
        negative[10 + header.indexOf("(10,") - 1] = '(';
        expectBytes(negative, "shape");
    }

    @Test
    void cacheShapesMustAgree(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        Path source = resource("npy/cache/0123456789abcdef-GPTDataset-train-document_index.npy").getParent();
        for (String suffix : new String[] {"-document_index.npy", "-sample_index.npy"}) {
            Files.copy(source.resolve("0123456789abcdef-GPTDataset-train" + suffix), dir.resolve("x" + suffix));
        }
        Files.copy(resource("npy/bigendian_u4.npy"), dir.resolve("x-shuffle_index.npy"));
        NpyFormatException e = assertThrows(NpyFormatException.class, () -> MegatronIndexCache.load(dir.resolve("x")));
        assertTrue(e.getMessage().contains("x-shuffle_index.npy") && e.getMessage().contains("shape"), e.getMessage());
    }

    private static void expect(Path file, String field) {
        NpyFormatException e = assertThrows(NpyFormatException.class, () -> NpyArray.read(file));
        assertTrue(e.getMessage().contains(file.getFileName().toString()) && e.getMessage().contains(field),
                e.getMessage());
    }

    private static void expectBytes(byte[] bytes, String field) {
        NpyFormatException e = assertThrows(NpyFormatException.class,
                () -> NpyArray.parse("mutated.npy", ByteBuffer.wrap(bytes)));
        assertTrue(e.getMessage().startsWith("mutated.npy: ") && e.getMessage().contains(field), e.getMessage());
    }

    private static Path resource(String relative) {
        try {
            return Path.of(NpyArrayTest.class.getResource("/" + relative.substring(0, relative.lastIndexOf('/')))
                    .toURI()).resolve(relative.substring(relative.lastIndexOf('/') + 1));
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
