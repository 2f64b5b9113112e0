package io.kdapack.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

class PtxResourcesTest {

    /** Every kernel the host code launches. */
    static final Set<String> KDA_ENTRIES = Set.of(
            "kda_fwd_prep_f32", "kda_fwd_intra_f32", "kda_fwd_output_f32", "kda_bwd_state_f32",
            "kda_bwd_intra_f32", "kda_bwd_gate_f32", "kda_bwd_qk_f32",
            "kda_fwd_prep_bf16", "kda_fwd_intra_bf16", "kda_fwd_output_bf16", "kda_bwd_state_bf16",
            "kda_bwd_intra_bf16", "kda_bwd_gate_bf16", "kda_bwd_qk_bf16",
            "kda_fwd_state", "kda_bwd_params");
    static final Set<String> CONV_ENTRIES = Set.of(
            "conv_fwd_f32", "conv_final_state_f32", "conv_bwd_dz_f32", "conv_bwd_params_f32",
            "conv_fwd_bf16", "conv_final_state_bf16", "conv_bwd_dz_bf16", "conv_bwd_params_bf16",
            "conv_bwd_dx", "conv_bwd_state", "conv_bwd_final_state");

    @Test
    void bothModulesDeclareTheKernelsTheHostLaunches() {
        String kda = PtxResources.load("kda");
        String conv = PtxResources.load("conv");
        assertEquals(KDA_ENTRIES, new TreeSet<>(PtxResources.entryPoints(kda)), "kda");
        assertEquals(CONV_ENTRIES, new TreeSet<>(PtxResources.entryPoints(conv)), "conv");
        String expectedTarget = ".target " + PtxResources.TARGET.replace("compute_", "sm_");
        assertTrue(kda.contains(expectedTarget), "kda declares " + expectedTarget);
        assertTrue(conv.contains(expectedTarget), "conv declares " + expectedTarget);
    }

    @Test
    void committedPtxWasBuiltFromTheCurrentSources() throws IOException, NoSuchAlgorithmException {
        // build-ptx.sh records sha256(kda_common.cuh ‖ kda.cu ‖ conv.cu); a source edit without rebuilding and
        // committing the PTX fails here, also on machines without nvcc.
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (String file : PtxResources.SOURCES) {
            sha.update(Files.readAllBytes(Path.of("src/main/cuda", file)));
        }
        String actual = HexFormat.of().formatHex(sha.digest());
        String recorded;
        try (InputStream in = PtxResources.class.getResourceAsStream(PtxResources.SOURCES_HASH)) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            in.transferTo(buf);
            recorded = buf.toString(StandardCharsets.US_ASCII).strip();
        }
        assertEquals(recorded, actual, "PTX is stale: run gpu/build-ptx.sh (needs nvcc) and commit the PTX");
    }

    @Test
    void entryPointParsing() {
        String ptx = "//\n.visible .entry foo_f32(\n\t.param .u64 a\n)\n.func bar(\n.visible .entry  baz (\n";
        assertEquals(List.of("foo_f32", "baz"), PtxResources.entryPoints(ptx));
    }

    @Test
    void missingModuleIsReportedByName() {
        IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> PtxResources.load("nope"));
        assertTrue(e.getMessage().contains("/io/kdapack/gpu/ptx/nope.ptx"), e.getMessage());
    }
}
