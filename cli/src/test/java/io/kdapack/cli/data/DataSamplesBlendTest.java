package io.kdapack.cli.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.cli.Main;
import io.kdapack.core.io.SafeTensors;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import io.kdapack.testkit.Golden;

/**
 * {@code kdapack data samples --blend} against golden/megatron-blend (the test library's copy, read from beside this
 * module so that it lives once in the repository): every tensor of a case bit for bit, and the errors of bad blends.
 */
class DataSamplesBlendTest {
    private static final Path GOLDEN = Golden.path("megatron-blend");
    private static final String SHORT = GOLDEN.resolve("b_short_v500").resolve("docs").toString();
    private static final String LONG = GOLDEN.resolve("b_long_v500").resolve("docs").toString();

    @TempDir
    Path dir;

    @Test
    void blendDumpMatchesMegatronBitForBit() throws IOException {
        Path out = dir.resolve("blend.safetensors");
        Result r = run(args("--blend", "0.7 " + SHORT + " 0.3 " + LONG, "--samples", "0-47", "--out", out.toString()));
        assertEquals(0, r.code, r.err);
        SafeTensors golden = SafeTensors.read(GOLDEN.resolve("blend2_L32_s1234_70_30.safetensors"));
        SafeTensors dump = SafeTensors.read(out);
        assertArrayEquals(golden.get("dataset_index").toIntArray(), dump.get("dataset_index").toIntArray());
        assertArrayEquals(golden.get("dataset_sample_index").toLongArray(), dump.get("dataset_sample_index").toLongArray());
        for (String size : List.of("size.0", "size.1")) {
            assertArrayEquals(golden.get(size).toLongArray(), dump.get(size).toLongArray(), size);
        }
        for (String name : List.of("tokens", "labels", "position_ids")) {
            assertArrayEquals(golden.get(name).toLongArray(), dump.get(name).toLongArray(), name);
        }
        assertArrayEquals(golden.get("loss_mask").toFloatArray(), dump.get("loss_mask").toFloatArray(), "loss_mask");
        assertTrue(r.out.contains("\"corpus_lengths\":[217,696]"), r.out);
    }

    @Test
    void aBlendOfOneIsThatPrefix() throws IOException {
        Path blended = dir.resolve("one.safetensors");
        Path plain = dir.resolve("plain.safetensors");
        assertEquals(0, run(args("--blend", "0.3 " + SHORT, "--out", blended.toString())).code);
        assertEquals(0, run(args("--prefix", SHORT, "--out", plain.toString())).code);
        SafeTensors a = SafeTensors.read(blended);
        SafeTensors b = SafeTensors.read(plain);
        for (String name : List.of("tokens", "shuffle_index", "document_index")) {
            assertArrayEquals(b.get(name).toLongArray(), a.get(name).toLongArray(), name);
        }
    }

    @Test
    void badBlendsEndInOneLineNamingTheProblem() {
        expect("weight 1 = 0.0 of " + LONG + " must be a positive finite number",
                args("--blend", "0.5 " + SHORT + " 0 " + LONG, "--out", dir.resolve("x").toString()));
        expect("weight 0 = -1.0", args("--blend", "-1 " + SHORT + " 2 " + LONG, "--out", dir.resolve("x").toString()));
        expect("is listed twice (pairs 0 and 1)",
                args("--blend", "1 " + SHORT + " 2 " + SHORT, "--out", dir.resolve("x").toString()));
        expect("expected pairs 'WEIGHT PREFIX …'", args("--blend", "1 " + SHORT + " 2", "--out", dir.resolve("x").toString()));
        expect("give one of --prefix P and --blend", args("--prefix", SHORT, "--blend", "1 " + LONG, "--out",
                dir.resolve("x").toString()));
        // 98,2,0 has no test part: every corpus of the blend must cover the split part asked for.
        expect("blend corpus 0 (" + SHORT + "): split '98,2,0' has no test part", args("--blend",
                "1 " + SHORT + " 1 " + LONG, "--split-name", "test", "--out", dir.resolve("x").toString()));
        List<String> noCount = new ArrayList<>(List.of("data", "samples", "--blend", "1 " + SHORT + " 1 " + LONG,
                "--seq-length", "32", "--eod-id", "499", "--out", dir.resolve("x").toString()));
        expect("--blend needs --num-samples", noCount.toArray(String[]::new));
    }

    /** The golden case's settings (blend2_L32_s1234_70_30) and {@code extra}. */
    private static String[] args(String... extra) {
        List<String> a = new ArrayList<>(List.of("data", "samples", "--seq-length", "32", "--seed", "1234", "--split",
                "98,2,0", "--num-samples", "200", "--eod-id", "499", "--eod-mask-loss", "--reset-position-ids",
                "--reset-attention-mask"));
        a.addAll(List.of(extra));
        return a.toArray(String[]::new);
    }

    private static void expect(String message, String... args) {
        Result r = run(args);
        assertEquals(Main.EXIT_BAD_INPUT, r.code, r.err);
        assertTrue(r.err.startsWith("kdapack samples: ") && r.err.contains(message), r.err);
        assertEquals(1, r.err.strip().lines().count(), r.err);
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
