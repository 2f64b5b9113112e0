package io.kdapack.cli.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.cli.Main;
import io.kdapack.config.DataConfig;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.model.MicroBatch;
import io.kdapack.data.indexed.IndexedDataset;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.training.MegatronSamples;
import io.kdapack.training.MicroBatchAssembler;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class DataSynthCommandTest {

    @Test
    void writesTheTaskDocumentsAsAMegatronDataset(@TempDir Path dir) throws Exception {
        Path prefix = dir.resolve("mqar");
        String out = run(0, "data", "synth", "--out", prefix.toString(), "--docs", "40", "--seed", "5");
        assertTrue(out.contains("\"documents\":40") && out.contains("\"eod_id\":129"), out);

        List<int[]> expected = AssociativeRecall.demo().documents(5, 40);
        IndexedDataset written = IndexedDataset.open(prefix);
        assertEquals(40, written.sequenceCount());
        assertEquals(40, written.documentCount());
        for (int d = 0; d < 40; d++) {
            assertArrayEquals(expected.get(d), written.sequence(d), "document " + d);
        }
    }

    @Test
    void pairBoundsSetTheDocumentLengthsAndKeepTheTokenIds(@TempDir Path dir) throws Exception {
        Path prefix = dir.resolve("three");
        String out = run(0, "data", "synth", "--out", prefix.toString(), "--docs", "10", "--seed", "5",
                "--min-pairs", "3", "--max-pairs", "3");
        assertTrue(out.contains("\"eod_id\":129") && out.contains("\"query_id\":128"), out);
        assertTrue(out.contains("\"none_id\":131"), out);
        IndexedDataset written = IndexedDataset.open(prefix);
        for (int d = 0; d < 10; d++) {
            int[] doc = written.sequence(d);
            long none = Arrays.stream(doc).filter(t -> t == 131).count();
            assertEquals(3 * 2 + 1 + 2 * (3 + none) + 1, doc.length, "3 bindings, QUERY, 3 + NONE queries, EOD");
            assertTrue(d == 0 ? none == 0 : none >= 1, "NONE queries for the previous document's keys: " + none);
            assertEquals(128, doc[6]);
            assertEquals(129, doc[doc.length - 1]);
        }
        String err = runErr(Main.EXIT_BAD_INPUT, "data", "synth", "--out", prefix.toString(), "--docs", "10", "--seed",
                "5", "--min-pairs", "4", "--max-pairs", "3");
        assertTrue(err.contains("minPairs=4 maxPairs=3"), err);
    }

    /**
     * Round trip through {@code data samples}: the dumped samples of the synthetic set are the training loop's
     * micro-batches (same Megatron order, masks, positions and segments).
     */
    @Test
    void dataSamplesOfTheSynthSetAreTheTrainersMicroBatches(@TempDir Path dir) throws Exception {
        Path prefix = dir.resolve("mqar");
        run(0, "data", "synth", "--out", prefix.toString(), "--docs", "60", "--seed", "11");
        Path dump = dir.resolve("samples.safetensors");
        run(0, "data", "samples", "--prefix", prefix.toString(), "--seq-length", "32", "--seed", "7",
                "--num-samples", "8", "--eod-id", "129", "--pad-id", "130", "--eod-mask-loss", "--reset-position-ids",
                "--reset-attention-mask", "--samples", "0-3", "--out", dump.toString());
        SafeTensors samples = SafeTensors.read(dump);

        MicroBatchAssembler assembler = new MicroBatchAssembler(
                MegatronSamples.open(prefix, DataConfig.defaults(), 32, 7, 8), 2, 0);
        MicroBatch first = assembler.microBatch(0);
        MicroBatch second = assembler.microBatch(1);
        assertArrayEquals(concat(first.tokens(), second.tokens()), samples.get("tokens").toIntArray());
        assertArrayEquals(concat(first.labels(), second.labels()), samples.get("labels").toIntArray());
        assertArrayEquals(concat(first.positionIds(), second.positionIds()), samples.get("position_ids").toIntArray());
        assertArrayEquals(concat(first.segmentIds(), second.segmentIds()), samples.get("segment_ids").toIntArray());
        float[] mask = samples.get("loss_mask").toFloatArray();
        assertArrayEquals(Arrays.copyOf(mask, 64), first.lossMask());
        assertArrayEquals(Arrays.copyOfRange(mask, 64, 128), second.lossMask());
    }

    @Test
    void badArgumentsEndInOneLineAndExitCode2(@TempDir Path dir) {
        String err = runErr(Main.EXIT_BAD_INPUT, "data", "synth", "--out", dir.resolve("x").toString(), "--docs", "0",
                "--seed", "1");
        assertTrue(err.contains("--docs must be >= 1, got 0"), err);
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static String run(int expectedExit, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        assertEquals(expectedExit, cli.execute(args), err.toString());
        return out.toString();
    }

    private static String runErr(int expectedExit, String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(new StringWriter()));
        cli.setErr(new PrintWriter(err));
        assertEquals(expectedExit, cli.execute(args), err.toString());
        return err.toString();
    }
}
