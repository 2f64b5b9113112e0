package io.kdapack.cli.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kdapack.cli.Main;
import io.kdapack.core.io.SafeTensors;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code data build → data samples} round trip on a small corpus: every dumped sample equals the window of the
 * documents concatenated in the dumped document_index order, with masks, positions and segment ids derived from it;
 * plus {@code data stats}, {@code bench data} and bad input.
 */
class DataCommandsTest {
    private static final int EOD = 256;
    private static final int L = 32;
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private List<String> documents;
    private Path prefix;

    @BeforeEach
    void buildCorpus() throws IOException {
        Random random = new Random(11);
        documents = new ArrayList<>();
        StringBuilder jsonl = new StringBuilder();
        for (int d = 0; d < 40; d++) {
            StringBuilder text = new StringBuilder();
            int words = 1 + random.nextInt(d % 7 == 0 ? 60 : 8);
            for (int w = 0; w < words; w++) {
                text.append(w == 0 ? "" : " ").append("wörd").append(random.nextInt(100));
            }
            documents.add(text.toString());
            jsonl.append(JSON.writeValueAsString(java.util.Map.of("text", text.toString(), "id", d))).append('\n');
            if (d == 10) {
                jsonl.append('\n');
            }
        }
        Path input = dir.resolve("corpus.jsonl");
        Files.writeString(input, jsonl);
        prefix = dir.resolve("out/corpus");
        Result build = run("data", "build", "--input", input.toString(), "--tokenizer", "byte", "--out", prefix.toString());
        assertEquals(0, build.code, build.err);
        JsonNode summary = JSON.readTree(build.out);
        assertEquals(40, summary.get("documents").asInt());
        assertEquals(streamOf(allDocuments()).length, summary.get("tokens").asLong());
        assertEquals("uint16", summary.get("dtype").asText());
    }

    @Test
    void samplesRoundTripThroughBuild() throws IOException {
        Path out = dir.resolve("train.safetensors");
        Result r = run("data", "samples", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L), "--seed", "7",
                "--split", "80,20,0", "--split-name", "train", "--num-samples", "150", "--eod-id", Integer.toString(EOD),
                "--pad-id", "257", "--eod-mask-loss", "--reset-position-ids", "--reset-attention-mask", "--out", out.toString());
        assertEquals(0, r.code, r.err);
        SafeTensors file = SafeTensors.read(out);
        int[] documentIndex = file.get("document_index").toIntArray();
        assertTrue(JSON.readTree(r.out).get("num_epochs").asInt() > 1, "150 samples need several epochs");
        for (int d : documentIndex) {
            assertTrue(d < 32, "train part of 80,20,0 holds documents 0..31, found " + d);
        }
        checkSamples(file, streamOf(documentIndex), true);
    }

    @Test
    void validationSamplesKeepThePaddedLastOne() throws IOException {
        Path out = dir.resolve("valid.safetensors");
        Result r = run("data", "samples", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L),
                "--split", "80,20,0", "--split-name", "valid", "--eod-id", Integer.toString(EOD), "--keep-last-partial",
                "--samples", "0-2,3", "--out", out.toString());
        assertEquals(0, r.code, r.err);
        SafeTensors file = SafeTensors.read(out);
        assertArrayEquals(new long[] {0, 1, 2, 3}, file.get("sample_ids").toLongArray());
        int[] documentIndex = file.get("document_index").toIntArray();
        assertEquals(8, documentIndex.length);
        checkSamples(file, streamOf(documentIndex), false);
        Path all = dir.resolve("valid_all.safetensors");
        assertEquals(0, run("data", "samples", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L),
                "--split", "80,20,0", "--split-name", "valid", "--eod-id", Integer.toString(EOD), "--keep-last-partial",
                "--out", all.toString()).code);
        int[] real = SafeTensors.read(all).get("num_real_tokens").toIntArray();
        assertTrue(java.util.Arrays.stream(real).anyMatch(n -> n < L + 1), "one sample is padded");
        checkSamples(SafeTensors.read(all), streamOf(documentIndex), false);
    }

    @Test
    void statsDescribeTheCorpus() throws IOException {
        Result r = run("data", "stats", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L));
        assertEquals(0, r.code, r.err);
        JsonNode stats = JSON.readTree(r.out);
        int[] stream = streamOf(allDocuments());
        assertEquals(40, stats.get("documents").asInt());
        assertEquals(stream.length, stats.get("tokens").asLong());
        int longest = documents.stream().mapToInt(t -> t.getBytes(StandardCharsets.UTF_8).length + 1).max().orElseThrow();
        assertEquals(longest, stats.get("document_length").get("max").asInt());
        assertEquals((stream.length - 1) / L, stats.get("samples").asLong());
        int maxPerSample = 0;
        for (long k = 0; k < (stream.length - 1) / L; k++) {
            int count = 1;
            for (int i = (int) k * L; i < k * L + L - 1; i++) {
                count += stream[i] == EOD ? 1 : 0;
            }
            maxPerSample = Math.max(maxPerSample, count);
        }
        assertEquals(maxPerSample, stats.get("documents_per_sample").get("max").asInt());
    }

    @Test
    void benchPrintsThroughput() throws IOException {
        Result r = run("bench", "data", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L),
                "--seconds", "0.2");
        assertEquals(0, r.code, r.err);
        JsonNode result = JSON.readTree(r.out);
        assertTrue(result.get("samples_per_s").asDouble() > 0, r.out);
        assertEquals(result.get("samples_per_s").asDouble() * L, result.get("tokens_per_s").asDouble(), 1e-6 * L
                * result.get("samples_per_s").asDouble());
    }

    @Test
    void badInputEndsInOneLineAndExitCodeTwo() throws IOException {
        Result missing = run("data", "stats", "--prefix", dir.resolve("nothing").toString(), "--seq-length", "8");
        assertEquals(Main.EXIT_BAD_INPUT, missing.code);
        assertTrue(missing.err.contains("nothing.idx"), missing.err);
        Path idx = dir.resolve("out/corpus.idx");
        byte[] bytes = Files.readAllBytes(idx);
        bytes[9] = 7;
        Files.write(idx, bytes);
        Result corrupt = run("data", "stats", "--prefix", prefix.toString(), "--seq-length", "8");
        assertEquals(Main.EXIT_BAD_INPUT, corrupt.code);
        assertTrue(corrupt.err.contains("version: expected 1, found 7") && corrupt.err.strip().lines().count() == 1,
                corrupt.err);
        Path text = dir.resolve("bad.jsonl");
        Files.writeString(text, "{\"txt\": \"no text field\"}\n");
        Result badJson = run("data", "build", "--input", text.toString(), "--out", dir.resolve("bad").toString());
        assertEquals(Main.EXIT_BAD_INPUT, badJson.code);
        assertTrue(badJson.err.contains("line 1") && badJson.err.contains("'text'"), badJson.err);
    }

    @Test
    void sampleSelectionOutsideTheDatasetIsRefused() throws IOException {
        Result r = run("data", "samples", "--prefix", prefix.toString(), "--seq-length", Integer.toString(L),
                "--split", "80,20,0", "--eod-id", Integer.toString(EOD), "--samples", "0-100000", "--out",
                dir.resolve("x.safetensors").toString());
        assertEquals(Main.EXIT_BAD_INPUT, r.code);
        assertTrue(r.err.contains("0-100000"), r.err);
    }

    /**
     * Every dumped sample is the window {@code stream[j·L, j·L+L+1)} (j from the shuffle index), padded with −1;
     * tokens/labels/loss mask/positions/segment ids follow from it under eod_mask_loss, reset_position_ids and
     * reset_attention_mask (when {@code flags}).
     */
    private static void checkSamples(SafeTensors file, int[] stream, boolean flags) {
        long[] ids = file.get("sample_ids").toLongArray();
        int[] shuffle = file.get("shuffle_index").toIntArray();
        int[] raw = file.get("raw_text").toIntArray();
        int[] real = file.get("num_real_tokens").toIntArray();
        int[] tokens = file.get("tokens").toIntArray();
        int[] labels = file.get("labels").toIntArray();
        float[] mask = file.get("loss_mask").toFloatArray();
        int[] positions = file.get("position_ids").toIntArray();
        int[] segments = file.get("segment_ids").toIntArray();
        int pad = Integer.parseInt(file.meta("pad_id"));
        for (int k = 0; k < ids.length; k++) {
            int start = shuffle[(int) ids[k]] * L;
            int segment = 1;
            int position = 0;
            for (int i = 0; i <= L; i++) {
                int expected = start + i < stream.length ? stream[start + i] : pad;
                assertEquals(expected, raw[k * (L + 1) + i], "sample " + ids[k] + " raw_text " + i);
            }
            assertEquals(Math.min(L + 1, stream.length - start), real[k], "num_real_tokens");
            for (int i = 0; i < L; i++) {
                int at = k * L + i;
                int input = raw[k * (L + 1) + i];
                int label = raw[k * (L + 1) + i + 1];
                boolean padded = i >= real[k];
                assertEquals(input == pad ? 0 : input, tokens[at]);
                assertEquals(label == pad ? 0 : label, labels[at]);
                float expectedMask = label == pad || flags && input == EOD ? 0f : 1f;
                assertEquals(expectedMask, mask[at], "loss_mask " + i);
                assertEquals(padded ? 0 : segment, segments[at], "sample " + ids[k] + " segment " + i);
                assertEquals(position, positions[at], "position " + i);
                position++;
                if (input == EOD && flags) {
                    segment++;
                    position = 0;
                }
            }
        }
    }

    private int[] allDocuments() {
        int[] all = new int[documents.size()];
        java.util.Arrays.setAll(all, i -> i);
        return all;
    }

    /** UTF-8 bytes of the documents in {@code order}, each followed by EOD. */
    private int[] streamOf(int[] order) {
        List<Integer> stream = new ArrayList<>();
        for (int d : order) {
            for (byte b : documents.get(d).getBytes(StandardCharsets.UTF_8)) {
                stream.add(b & 0xFF);
            }
            stream.add(EOD);
        }
        return stream.stream().mapToInt(Integer::intValue).toArray();
    }

    private record Result(int code, String out, String err) {
    }

    private static Result run(String... args) {
        CommandLine cli = Main.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int code = cli.execute(args);
        return new Result(code, out.toString(), err.toString());
    }
}
