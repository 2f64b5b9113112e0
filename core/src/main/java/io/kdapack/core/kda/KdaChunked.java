package io.kdapack.core.kda;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fast CPU backend: the chunked WY/UT form of architecture §2 ({@link KdaChunk}) with chunks of 64 tokens laid
 * over runs of consecutive documents whatever their lengths (the seed RFC's "Alt1"): a boundary inside a chunk is
 * handled by masks, so the cost of a packed batch is that of the same tokens as one document. One task per (run,
 * value head) on all cores. A run is a stretch of documents with no padding between them, cut at a document start
 * once it holds {@value #RUN_TOKENS} tokens (a rule that depends on the documents only, never on the thread count);
 * only the last chunk of a run is partial, and padding is never computed.
 *
 * <p>A training forward keeps every chunk's start state and, while the intermediates kept by this backend's live
 * tapes stay within {@link #KEPT_FLOATS} (all layers together), every chunk's intermediates, so the backward walks
 * the chunks in reverse without running the forward again; beyond the budget a call keeps only the start states
 * and its backward recomputes each chunk's intermediates (bitwise the same result). Kept intermediates return to a
 * pool, and to the budget, after the backward, or once a tape that never had a backward is garbage collected; the
 * start states likewise return to the backend's buffer pool ({@link HeadParallelBackend#buffers}).
 */
public final class KdaChunked extends HeadParallelBackend<KdaChunked.HeadTape> {

    /**
     * Floats of chunk intermediates that the live tapes of one backend may keep (256 MiB); a call that does not fit
     * recomputes them. One chunk-head of K=V=64 holds 96 KiB, of K=V=128 144 KiB ({@link KdaChunk.Intermediates}):
     * the budget holds 2730 chunk-heads of K=V=64, about 175 000 tokens of one value head (the 23.7 M-parameter
     * benchmark model's six KDA layers over two rows of 2048 tokens need 1536 chunk-heads).
     */
    static final long KEPT_FLOATS = 64L << 20;

    /** Tokens after which a run of documents is cut at the next document start: at most one partial chunk each. */
    static final int RUN_TOKENS = 2048;

    /** Returns the intermediates of tapes that were dropped without a backward. */
    private static final Cleaner CLEANER = Cleaner.create();

    /** Chunk scratch per worker thread, reused across tasks. */
    private final ThreadLocal<KdaChunk> scratch = new ThreadLocal<>();
    /** The document layout of the current chunk, per worker thread. */
    private final ThreadLocal<KdaChunk.Documents> layout = ThreadLocal.withInitial(KdaChunk.Documents::new);
    /** Intermediates returned by finished backwards, lent to the next training forward. */
    private final ConcurrentLinkedQueue<KdaChunk.Intermediates> spare = new ConcurrentLinkedQueue<>();
    private final long keptFloatsBudget;
    /** Each document a run of its own: its chunks start at its first token (see {@link #documentAligned()}). */
    private final boolean documentAligned;
    /** Whether the chunks prepare their own rows where the call allows it ({@link #preparesRows}). */
    private final boolean rowsInChunks;
    /** Floats of intermediates held by live tapes. */
    private final AtomicLong keptFloats = new AtomicLong();

    /** A chunked backend on all available processors. */
    public KdaChunked() {
        this(Runtime.getRuntime().availableProcessors());
    }

    public KdaChunked(int threads) {
        this(threads, KEPT_FLOATS);
    }

    /** With a budget for kept intermediates other than the default (0 recomputes them all). */
    KdaChunked(int threads, long keptFloatsBudget) {
        this(threads, keptFloatsBudget, false, true);
    }

    private KdaChunked(int threads, long keptFloatsBudget, boolean documentAligned, boolean rowsInChunks) {
        super(threads);
        this.keptFloatsBudget = keptFloatsBudget;
        this.documentAligned = documentAligned;
        this.rowsInChunks = rowsInChunks;
    }

    /**
     * A backend on as many threads whose chunks start at each document's first token (the first design's
     * alignment, on the same kernels): a packed call then gives every document bitwise its result alone, whatever
     * else is packed beside it, at the cost of a partial chunk and a state update per document. The inference
     * engine prefills with it, so that a request's tokens and logprobs do not depend on its batch.
     */
    public KdaChunked documentAligned() {
        return new KdaChunked(threads(), keptFloatsBudget, true, rowsInChunks);
    }

    /**
     * The same backend with the preprocessing run once per call into head-major tensors that the chunks read, as
     * under grouped value heads, even where the chunks could prepare their rows themselves: bitwise the same results,
     * for the tests and the benchmark that compare the two.
     */
    public KdaChunked preparedPerCall() {
        return new KdaChunked(threads(), keptFloatsBudget, documentAligned, false);
    }

    /**
     * Each chunk prepares its rows from the raw inputs, in the forward and again in the backward (not kept: see
     * {@link KdaChunk}), and maps their gradients back to the raw inputs in its backward,
     * where each value head has a q/k head of its own ({@code HV = H}): the preprocessing then costs no pass over
     * memory of its own (see docs/kda.md). Under grouped value heads the gradient of a q/k row sums over the value
     * heads of its group, which are other tasks; there the preprocessing runs once per call.
     */
    @Override
    boolean preparesRows(KdaInputs in) {
        return rowsInChunks && in.valueHeads() == in.heads();
    }

    /**
     * The chunks write their rows of the outputs and of dv, and of the raw gradients where they prepare rows, whole;
     * each document's final state and initial-state gradient is written whole where it ends and where it starts.
     */
    @Override
    boolean writesWholeResults() {
        return true;
    }

    @Override
    public String name() {
        return "cpu-chunked";
    }

    /**
     * What one task's training forward kept: {@code [chunks,K,V]} carried start states (written, and read, only for
     * the chunks that continue a document), and maybe intermediates.
     */
    static final class HeadTape {
        private final float[] starts;
        private final KdaChunk.Intermediates[] kept;
        /** Gives the start states and intermediates back, once: after the backward, or when this tape is collected. */
        private Cleaner.Cleanable release;

        private HeadTape(float[] starts, KdaChunk.Intermediates[] kept) {
            this.starts = starts;
            this.kept = kept;
        }
    }

    /** Floats of intermediates the live tapes of this backend keep. */
    long keptFloats() {
        return keptFloats.get();
    }

    @Override
    int[] runs(Segments segments) {
        if (documentAligned) {
            return super.runs(segments);
        }
        int n = segments.count();
        int[] runs = new int[n + 1];
        int count = 0;
        int runStart = -1; // first token of the current run, −1 before the first non-empty document
        int previousEnd = -1;
        for (int d = 0; d < n; d++) {
            if (segments.length(d) == 0) {
                continue;
            }
            int start = segments.start(d);
            if (runStart < 0 || start != previousEnd || start - runStart >= RUN_TOKENS) {
                runs[count++] = d;
                runStart = start;
            }
            previousEnd = segments.end(d);
        }
        if (count == 0) {
            return new int[] {0, n};
        }
        runs[0] = 0; // leading zero-length documents join the first run
        runs[count] = n;
        return Arrays.copyOf(runs, count + 1);
    }

    @Override
    public Keep keepForBackward(KdaInputs in) {
        Segments seg = in.segments();
        int[] runs = runs(seg);
        long chunks = 0;
        for (int r = 0; r + 1 < runs.length; r++) {
            chunks += chunks(runTokens(seg, runs, r));
        }
        long floats = chunks * in.valueHeads()
                * KdaChunk.Intermediates.floats(in.keyDim(), in.valueDim());
        // Concurrent calls may each see room and overshoot the budget by one call's worth, no more.
        return keptFloats.get() + floats <= keptFloatsBudget ? Keep.INTERMEDIATES : Keep.STATES;
    }

    /**
     * The heads of a task chunk by chunk, each chunk for every head before the next chunk: the heads' rows of a
     * chunk's tokens are neighbours in the token-major tensors (see {@link HeadParallelBackend}), and each head's
     * arithmetic is the same as alone.
     */
    @Override
    List<HeadTape> forwardHeads(List<HeadSequence> group, float[] h0, float[] ht, float[] o, Keep keep) {
        HeadSequence first = group.get(0);
        KdaChunk chunk = chunkFor(first);
        KdaChunk.Documents docs = documentsFor();
        int heads = group.size();
        int size = first.keyDim() * first.valueDim();
        int chunks = chunks(first.length());
        int from = first.segments().start(first.firstDoc());
        // With a tape, each chunk reads the state it continues from its place in the starts and writes the state it
        // carries on to the next place; without, one state per head is updated in place.
        float[][] starts = keep == Keep.NOTHING ? null : new float[heads][];
        float[][] state = starts == null ? new float[heads][size] : null;
        for (int h = 0; starts != null && h < heads; h++) {
            // Not zeroed: a chunk reads its place only when it continues a document, after the chunk before wrote it
            // (a call's fresh start states, 4 MiB at T 4096, 4 heads, K = V = 64, zeroed by the JVM, cost 1.4 % of the
            // training call on one thread).
            starts[h] = buffers().take(chunks * size);
        }
        KdaChunk.Intermediates[][] kept = keep == Keep.INTERMEDIATES ? new KdaChunk.Intermediates[heads][] : null;
        for (int h = 0; kept != null && h < heads; h++) {
            kept[h] = borrow(chunk, chunks);
        }
        for (int c = 0; c < chunks; c++) {
            int offset = c * KdaChunk.SIZE;
            int len = Math.min(KdaChunk.SIZE, first.length() - offset);
            docs.layOut(first.segments(), first.firstDoc(), first.endDoc(), from + offset, len);
            for (int h = 0; h < heads; h++) {
                HeadSequence s = group.get(h);
                float[] carried = starts != null ? starts[h] : state[h];
                int at = starts != null ? c * size : 0;
                int nextAt = starts != null ? at + size : 0; // within the starts: the last chunk of a run carries none
                chunk.forward(s, s.row0() + offset, len, docs, carried, at, carried, nextAt, h0, ht, o,
                        kept == null ? null : kept[h][c]);
            }
        }
        List<HeadTape> tapes = new ArrayList<>(heads);
        for (int h = 0; h < heads; h++) {
            tapes.add(starts == null ? null : tape(starts[h], kept == null ? null : kept[h], first));
        }
        return tapes;
    }

    /** A head's tape of its chunks' start states and, when kept, intermediates, which it gives back when released. */
    private HeadTape tape(float[] starts, KdaChunk.Intermediates[] kept, HeadSequence s) {
        HeadTape tape = new HeadTape(starts, kept);
        long floats = kept == null ? 0 : kept.length * KdaChunk.Intermediates.floats(s.keyDim(), s.valueDim());
        keptFloats.addAndGet(floats);
        // The release must not reach the HeadTape, or the tape could never be collected.
        Runnable release = () -> {
            buffers().give(starts);
            if (kept != null) {
                for (KdaChunk.Intermediates intermediates : kept) {
                    spare.add(intermediates);
                }
            }
            keptFloats.addAndGet(-floats);
        };
        tape.release = CLEANER.register(tape, release);
        return tape;
    }

    /** The heads of a task chunk by chunk, in reverse, each chunk for every head before the one before it. */
    @Override
    void backwardHeads(List<HeadSequence> group, float[] h0, List<HeadTape> tapes, float[] dO, float[] dHt,
                       float[] dH0, HeadGradients grads) {
        HeadSequence first = group.get(0);
        KdaChunk chunk = chunkFor(first);
        KdaChunk.Documents docs = documentsFor();
        int heads = group.size();
        int size = first.keyDim() * first.valueDim();
        int from = first.segments().start(first.firstDoc());
        float[][] dState = new float[heads][size];
        for (int c = chunks(first.length()) - 1; c >= 0; c--) {
            int offset = c * KdaChunk.SIZE;
            int len = Math.min(KdaChunk.SIZE, first.length() - offset);
            docs.layOut(first.segments(), first.firstDoc(), first.endDoc(), from + offset, len);
            for (int h = 0; h < heads; h++) {
                HeadSequence s = group.get(h);
                HeadTape tape = tapes.get(h);
                chunk.backward(s, s.row0() + offset, len, docs, tape.starts, c * size, h0, dO, dState[h], dHt, dH0,
                        grads, tape.kept == null ? null : tape.kept[c]);
            }
        }
        for (HeadTape tape : tapes) {
            tape.release.clean();
        }
    }

    private static int chunks(int length) {
        return (length + KdaChunk.SIZE - 1) / KdaChunk.SIZE;
    }

    /** {@code chunks} intermediates that fit {@code chunk}'s dimensions, spare first. */
    private KdaChunk.Intermediates[] borrow(KdaChunk chunk, int chunks) {
        KdaChunk.Intermediates[] out = new KdaChunk.Intermediates[chunks];
        for (int c = 0; c < chunks; c++) {
            KdaChunk.Intermediates candidate = spare.poll();
            // A spare of another shape (another layer) is dropped for the garbage collector.
            while (candidate != null && !chunk.fits(candidate)) {
                candidate = spare.poll();
            }
            out[c] = candidate != null ? candidate : chunk.newIntermediates();
        }
        return out;
    }

    private KdaChunk.Documents documentsFor() {
        return layout.get();
    }

    private KdaChunk chunkFor(HeadSequence s) {
        KdaChunk current = scratch.get();
        if (current == null || !current.fits(s.keyDim(), s.valueDim())) {
            current = new KdaChunk(s.keyDim(), s.valueDim());
            scratch.set(current);
        }
        return current;
    }
}
