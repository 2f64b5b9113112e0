package io.kdapack.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The PTX the jar ships (built from gpu/src/main/cuda by gpu/build-ptx.sh and committed, so a machine without
 * nvcc still runs on a GPU): one file per module, compiled for {@code compute_75} (the oldest target CUDA 13
 * supports), which the driver compiles for the GPU at hand, Hopper included. (A separate {@code sm_90} build was the
 * same PTX but for its {@code .target} line: the kernels use no instruction newer than compute 7.5.)
 */
public final class PtxResources {

    /** Folder of the PTX files inside the jar. */
    public static final String FOLDER = "/io/kdapack/gpu/ptx/";
    /** The CUDA source files, in the order their bytes enter {@link #SOURCES_HASH}. */
    public static final List<String> SOURCES = List.of("kda_common.cuh", "kda.cu", "conv.cu");
    /** Resource holding the SHA-256 of the sources the committed PTX was built from. */
    public static final String SOURCES_HASH = FOLDER + "SOURCES.sha256";
    /** The virtual architecture the PTX is compiled for. */
    public static final String TARGET = "compute_75";

    private static final Pattern ENTRY = Pattern.compile("\\.visible\\s+\\.entry\\s+([A-Za-z_][A-Za-z0-9_]*)\\s*\\(");

    private PtxResources() {
    }

    /** Resource name of module {@code module} ("kda" or "conv"). */
    public static String resource(String module) {
        return FOLDER + module + ".ptx";
    }

    /** PTX text of a module, or an IllegalStateException naming the missing resource. */
    public static String load(String module) {
        String name = resource(module);
        try (InputStream in = PtxResources.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("PTX resource " + name + " is missing from the classpath; "
                        + "rebuild the gpu module (gpu/build-ptx.sh)");
            }
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + name, e);
        }
    }

    /**
     * Parameter types of kernel {@code entry} ({@code "u64"} for pointers, {@code "u32"}, {@code "f32"}, …) and its
     * {@code .maxntid} (threads per block it was compiled for, 0 when not declared).
     */
    public static Signature signature(String ptx, String entry) {
        Matcher m = Pattern.compile("\\.visible\\s+\\.entry\\s+" + Pattern.quote(entry) + "\\s*\\(([^)]*)\\)"
                + "\\s*(?:\\.maxntid\\s+(\\d+))?").matcher(ptx);
        if (!m.find()) {
            throw new IllegalArgumentException("PTX declares no kernel '" + entry + "'");
        }
        List<String> types = new ArrayList<>();
        Matcher p = Pattern.compile("\\.param\\s+\\.(\\w+)").matcher(m.group(1));
        while (p.find()) {
            types.add(p.group(1));
        }
        return new Signature(types, m.group(2) == null ? 0 : Integer.parseInt(m.group(2)));
    }

    /** A kernel's parameter types and declared threads per block. */
    public record Signature(List<String> parameterTypes, int maxThreads) {
    }

    /** Names of the kernels ({@code .visible .entry}) a PTX text declares, in order. */
    public static List<String> entryPoints(String ptx) {
        List<String> names = new ArrayList<>();
        Matcher m = ENTRY.matcher(ptx);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }
}
