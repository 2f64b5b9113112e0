package io.kdapack.data.synthetic;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Multi-query associative recall inside variable-length documents: a task that rewards document
 * isolation.
 *
 * <p>Each document binds a random set of keys to random values, then asks for them again:
 * <pre>
 *   k₁ v₁ k₂ v₂ … kₙ vₙ  QUERY  k_{π(1)} v_{π(1)} … k_{π(n)} v_{π(n)}  EOD
 * </pre>
 * The bindings are drawn afresh for every document, so a key seen in an earlier document of the same
 * packed row is bound to a different value there. A model whose recurrent state leaks across the
 * document boundary recalls stale bindings; an isolated model can only use the current document. The
 * answer tokens (each value after {@code QUERY}) are fully predictable from the document itself, every
 * other token is random: the loss on answers measures recall.
 *
 * <p>Vocabulary: keys {@code [0, keys)}, values {@code [keys, keys + values)}, then {@code QUERY},
 * {@code EOD}, {@code PAD}.
 */
public final class AssociativeRecall {
    private final int keys;
    private final int values;
    private final int minPairs;
    private final int maxPairs;

    /**
     * @param keys     number of distinct key tokens (≥ maxPairs, so that a document's keys are distinct)
     * @param values   number of distinct value tokens
     * @param minPairs fewest bindings in a document (≥ 1)
     * @param maxPairs most bindings in a document
     */
    public AssociativeRecall(int keys, int values, int minPairs, int maxPairs) {
        if (minPairs < 1 || maxPairs < minPairs) {
            throw new IllegalArgumentException("need 1 <= minPairs <= maxPairs, got minPairs=" + minPairs
                    + " maxPairs=" + maxPairs);
        }
        if (keys < maxPairs) {
            throw new IllegalArgumentException("keys must be >= maxPairs (" + maxPairs + "), got " + keys);
        }
        if (values < 2) {
            throw new IllegalArgumentException("values must be >= 2, got " + values);
        }
        this.keys = keys;
        this.values = values;
        this.minPairs = minPairs;
        this.maxPairs = maxPairs;
    }

    /** The task of the shipped demo dataset: 64 keys, 64 values, 1 or 2 bindings per document. */
    public static AssociativeRecall demo() {
        return new AssociativeRecall(64, 64, 1, 2);
    }

    public int queryId() {
        return keys + values;
    }

    public int eodId() {
        return keys + values + 1;
    }

    public int padId() {
        return keys + values + 2;
    }

    /** Token ids in use: keys, values, QUERY, EOD, PAD. */
    public int vocabularySize() {
        return keys + values + 3;
    }

    /** {@code count} documents, each ending in EOD, deterministic in {@code seed}. */
    public List<int[]> documents(long seed, int count) {
        SplittableRandom random = new SplittableRandom(seed);
        List<int[]> docs = new ArrayList<>(count);
        for (int d = 0; d < count; d++) {
            docs.add(document(random));
        }
        return docs;
    }

    private int[] document(SplittableRandom random) {
        int pairs = random.nextInt(minPairs, maxPairs + 1);
        int[] keyOrder = permutation(random, keys);
        int[] bound = new int[pairs];
        int[] doc = new int[4 * pairs + 2];
        int t = 0;
        for (int i = 0; i < pairs; i++) {
            bound[i] = keys + random.nextInt(values);
            doc[t++] = keyOrder[i];
            doc[t++] = bound[i];
        }
        doc[t++] = queryId();
        int[] asked = permutation(random, pairs);
        for (int i : asked) {
            doc[t++] = keyOrder[i];
            doc[t++] = bound[i];
        }
        doc[t] = eodId();
        return doc;
    }

    /**
     * Marks the answer tokens of a row of packed tokens: position {@code t} is an answer when it is a value
     * that follows a key after the document's {@code QUERY}. Used to score recall on held-out documents.
     *
     * @param tokens {@code [L]} one row of tokens
     * @return {@code [L]} true at answer positions
     */
    public boolean[] answerPositions(int[] tokens) {
        boolean[] answer = new boolean[tokens.length];
        boolean inQueries = false;
        int sinceQuery = 0;
        for (int t = 0; t < tokens.length; t++) {
            int token = tokens[t];
            if (token == queryId()) {
                inQueries = true;
                sinceQuery = 0;
            } else if (token == eodId() || token == padId()) {
                inQueries = false;
            } else if (inQueries) {
                sinceQuery++;
                answer[t] = sinceQuery % 2 == 0;
            }
        }
        return answer;
    }

    private static int[] permutation(SplittableRandom random, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }
}
