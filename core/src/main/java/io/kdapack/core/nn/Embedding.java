package io.kdapack.core.nn;

import java.util.List;

/** Token embedding: {@code weight [vocab, d]}, {@code out[t] = weight[tokens[t]]}. Parameter {@code <name>.weight}. */
public final class Embedding implements Layer {
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
        for (int t = 0; t < tokens.length; t++) {
            System.arraycopy(weight.values(), tokens[t] * dim, out, t * dim, dim);
        }
        return out;
    }

    /** Adds {@code dOut [T,d]} into the gradient rows of the tokens, in token order (deterministic). */
    public void backward(int[] tokens, float[] dOut) {
        Shapes.check(weight.name() + " output gradient", dOut, tokens.length, dim);
        float[] grad = weight.grads();
        for (int t = 0; t < tokens.length; t++) {
            int row = tokens[t] * dim;
            for (int j = 0; j < dim; j++) {
                grad[row + j] += dOut[t * dim + j];
            }
        }
    }
}
