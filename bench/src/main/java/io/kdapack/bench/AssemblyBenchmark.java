package io.kdapack.bench;

import io.kdapack.data.gpt.GptIndexConfig;
import io.kdapack.data.gpt.GptIndices;
import io.kdapack.data.gpt.GptSample;
import io.kdapack.data.gpt.GptSampleAssembler;
import io.kdapack.data.gpt.SampleOptions;
import io.kdapack.data.indexed.IndexedDataset;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Throughput of sample assembly on one thread: read through the shuffle and sample indices from the memory-mapped
 * {@code .bin}, then split into tokens, labels, loss mask, positions and segment ids (the training loader's hot path).
 */
public final class AssemblyBenchmark {

    /**
     * @param seqLength              L
     * @param datasetSamples         S of the dataset
     * @param samplesAssembled       samples assembled in the measured interval
     * @param seconds                length of the measured interval
     * @param samplesPerS            samples per second
     * @param tokensPerS             L·samples per second
     * @param allocatedBytesPerSample heap bytes the measuring thread allocated per sample (−1 if the JVM cannot tell)
     * @param indexBuildSeconds      time to build document, sample and shuffle indices
     * @param checksum               sum over samples of the last segment id and token (keeps the work observable)
     */
    public record Result(int seqLength, int datasetSamples, long samplesAssembled, double seconds, double samplesPerS,
                         double tokensPerS, double allocatedBytesPerSample, double indexBuildSeconds, long checksum) {
    }

    private AssemblyBenchmark() {
    }

    /** Builds the indices, warms up for a third of {@code seconds}, then measures for {@code seconds}. */
    public static Result run(IndexedDataset dataset, GptIndexConfig config, SampleOptions options, double seconds) {
        long t0 = System.nanoTime();
        GptIndices indices = GptIndices.build(dataset, config);
        double buildSeconds = (System.nanoTime() - t0) * 1e-9;
        GptSampleAssembler assembler = new GptSampleAssembler(dataset, indices, config.seqLength(),
                config.addExtraToken(), options);
        GptSample sample = assembler.newSample();
        Interval warmup = measure(assembler, sample, seconds / 3);
        Interval measured = measure(assembler, sample, seconds);
        double elapsed = measured.nanos * 1e-9;
        double samplesPerS = measured.samples / elapsed;
        return new Result(config.seqLength(), indices.sampleCount(), measured.samples, elapsed, samplesPerS,
                samplesPerS * config.seqLength(), measured.allocatedBytes < 0 ? -1
                : (double) measured.allocatedBytes / measured.samples, buildSeconds, warmup.checksum + measured.checksum);
    }

    private record Interval(long samples, long nanos, long allocatedBytes, long checksum) {
    }

    private static Interval measure(GptSampleAssembler assembler, GptSample sample, double seconds) {
        int count = assembler.sampleCount();
        int last = sample.seqLength() - 1;
        long budget = (long) (seconds * 1e9);
        long allocatedBefore = allocatedBytes();
        long start = System.nanoTime();
        long now = start;
        long samples = 0;
        long checksum = 0;
        int next = 0;
        while (now - start < budget) {
            for (int i = 0; i < 256; i++) {
                assembler.assemble(next, sample);
                checksum += sample.segmentIds()[last] + sample.tokens()[last];
                next = next + 1 == count ? 0 : next + 1;
            }
            samples += 256;
            now = System.nanoTime();
        }
        long allocatedAfter = allocatedBytes();
        long allocated = allocatedBefore < 0 ? -1 : allocatedAfter - allocatedBefore;
        return new Interval(samples, now - start, allocated, checksum);
    }

    private static long allocatedBytes() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        if (threads instanceof com.sun.management.ThreadMXBean hotspot && hotspot.isThreadAllocatedMemorySupported()) {
            return hotspot.getCurrentThreadAllocatedBytes();
        }
        return -1;
    }
}
