package io.kdapack.data.synthetic;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Multi-query associative recall inside variable-length documents: a task that document leakage breaks.
 *
 * <p>Each document binds a random set of keys to random values, then asks for each of them again and, in the same
 * shuffled query list, for every key of the <em>previous document</em> (in generation order) that it did not bind
 * itself, whose answer is {@code NONE}:
 * <pre>
 *   k₁ v₁ … kₙ vₙ  QUERY  (k v | k' NONE)…  EOD
 * </pre>
 * Every answer is a function of the document alone. Packed in file order (the held-out eval), the key of a
 * {@code NONE} query is bound to a value in the document just before it: a model whose recurrent state, short
 * convolution or attention crosses the boundary finds that stale binding, the most recent one it has seen, and answers
 * it. The delta rule overwrites a rebound key, so leakage costs little on the keys a document binds; the
 * {@code NONE} queries are what it breaks. The first document has no previous one and asks only its own keys.
 *
 * <p>Vocabulary: keys {@code [0, keys)}, values {@code [keys, keys + values)}, then {@code QUERY}, {@code EOD},
 * {@code PAD}, {@code NONE}.
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

    /** The task of the shipped demo dataset: 64 keys, 64 values, 1 or 2 bindings per document (ids up to NONE = 131). */
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

    /** The answer to a query for a key the document did not bind. */
    public int noneId() {
        return keys + values + 3;
    }

    /** Token ids in use: keys, values, QUERY, EOD, PAD, NONE. */
    public int vocabularySize() {
        return keys + values + 4;
    }

    /**
     * {@code count} documents, each ending in EOD, deterministic in {@code seed}; document {@code d > 0} also asks
     * for the keys of document {@code d − 1} that it does not bind (answer {@code NONE}).
     */
    public List<int[]> documents(long seed, int count) {
        SplittableRandom random = new SplittableRandom(seed);
        List<int[]> docs = new ArrayList<>(count);
        int[] previousKeys = new int[0];
        for (int d = 0; d < count; d++) {
            int pairs = random.nextInt(minPairs, maxPairs + 1);
            int[] keyOrder = permutation(random, keys);
            docs.add(document(random, Arrays.copyOf(keyOrder, pairs), previousKeys));
            previousKeys = Arrays.copyOf(keyOrder, pairs);
        }
        return docs;
    }

    /** The document binding {@code bound} keys; queries those and, answered NONE, the previous keys not among them. */
    private int[] document(SplittableRandom random, int[] bound, int[] previousKeys) {
        int pairs = bound.length;
        int[] unbound = Arrays.stream(previousKeys).filter(k -> Arrays.stream(bound).noneMatch(b -> b == k)).toArray();
        int[] value = new int[pairs];
        int[] doc = new int[2 * pairs + 1 + 2 * (pairs + unbound.length) + 1];
        int t = 0;
        for (int i = 0; i < pairs; i++) {
            value[i] = keys + random.nextInt(values);
            doc[t++] = bound[i];
            doc[t++] = value[i];
        }
        doc[t++] = queryId();
        // Query i < pairs asks bound key i, query pairs + j asks unbound key j.
        for (int i : permutation(random, pairs + unbound.length)) {
            boolean own = i < pairs;
            doc[t++] = own ? bound[i] : unbound[i - pairs];
            doc[t++] = own ? value[i] : noneId();
        }
        doc[t] = eodId();
        return doc;
    }

    /**
     * Marks the answer tokens of a row of packed tokens: position {@code t} is an answer when it is a value or
     * {@code NONE} that follows a key after the document's {@code QUERY}. Used to score recall on held-out documents.
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
