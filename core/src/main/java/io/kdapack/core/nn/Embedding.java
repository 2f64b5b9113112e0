package io.kdapack.core.nn;

import java.util.List;

/** Token embedding: {@code weight [vocab, d]}, {@code out[t] = weight[tokens[t]]}. Parameter {@code <name>.weight}. */
public final class Embedding implements Layer {
    /** Tokens per task of the forward's row copies. */
    private static final int ROWS_PER_TASK = 256;
    /** Gradient columns per task of the backward. */
    private static final int COLUMNS_PER_TASK = 32;
    private final int vocabSize;
    private final int dim;
    private final Parameter weight;

    public Embedding(String name, int vocabSize, int dim) {
        if (vocabSize < 1 || dim < 1) {
            throw new IllegalArgumentException("embedding '" + name + "': vocabSize and dim must be >= 1, got "
                    + vocabSize + " and " + dim);
        }
        this.vocabSize = vocabSize;
        this.dim = dim;
        this.weight = Parameter.filled(Parameter.join(name, "weight"), 0f, vocabSize, dim);
    }

    public Parameter weight() {
        return weight;
    }

    @Override
    public List<Parameter> parameters() {
        return List.of(weight);
    }

    /** {@code [T,d]} rows of the table; every token id must lie in {@code [0, vocab)}. */
    public float[] forward(int[] tokens) {
        for (int t = 0; t < tokens.length; t++) {
            if (tokens[t] < 0 || tokens[t] >= vocabSize) {
                throw new IllegalArgumentException(weight.name() + ": token id " + tokens[t] + " at position " + t
                        + " is outside [0, " + vocabSize + ")");
            }
        }
        float[] out = new float[tokens.length * dim];
        Parallel.forBlocks(tokens.length, ROWS_PER_TASK, (from, to) -> {
            for (int t = from; t < to; t++) {
                System.arraycopy(weight.values(), tokens[t] * dim, out, t * dim, dim);
            }
        });
        return out;
    }

    /**
     * Adds {@code dOut [T,d]} into the gradient rows of the tokens, in token order (deterministic): the columns are
     * split over the pool, and each column adds its tokens in order, so a row that several tokens share sums them in
     * the same order whatever the split.
     */
    public void backward(int[] tokens, float[] dOut) {
        Shapes.check(weight.name() + " output gradient", dOut, tokens.length, dim);
        float[] grad = weight.grads();
        Parallel.forBlocks(dim, COLUMNS_PER_TASK, (from, to) -> {
            for (int t = 0; t < tokens.length; t++) {
                int row = tokens[t] * dim;
                int in = t * dim;
                for (int j = from; j < to; j++) {
                    grad[row + j] += dOut[in + j];
                }
            }
        });
    }
}
