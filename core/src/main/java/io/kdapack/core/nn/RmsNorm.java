package io.kdapack.core.nn;

import io.kdapack.core.linalg.Workspace;
import java.util.List;

/**
 * RMSNorm over the last axis (Hugging Face {@code LlamaRMSNorm}): for each row {@code x [d]},
 * {@code y = weight ⊙ x / sqrt(mean(x²) + eps)}; {@code x, y [rows,d]}, {@code weight [d]} (initialised to 1).
 * Parameter {@code <name>.weight}.
 */
public final class RmsNorm implements Layer {
    private final int dim;
    private final float eps;
    private final Parameter weight;

    /** What backward needs: the input and the reciprocal RMS of each row ({@code [rows]}). */
    public record Saved(int rows, float[] input, float[] inverseRms, float[] output) {
    }

    public RmsNorm(String name, int dim, float eps) {
        if (dim < 1) {
            throw new IllegalArgumentException("rms norm '" + name + "': dim must be >= 1, got " + dim);
        }
        if (!(eps > 0)) {
            throw new IllegalArgumentException("rms norm '" + name + "': eps must be > 0, got " + eps);
        }
        this.dim = dim;
        this.eps = eps;
        this.weight = Parameter.filled(Parameter.join(name, "weight"), 1f, dim);
    }

    public int dim() {
        return dim;
    }

    public Parameter weight() {
        return weight;
    }

    @Override
    public List<Parameter> parameters() {
        return List.of(weight);
    }

    /** Normalises each of the {@code rows} rows of {@code x [rows,d]}. */
    public Saved forward(float[] x, int rows) {
        Shapes.check(weight.name() + " input", x, rows, dim);
        float[] y = Workspace.floats(rows * dim); // written whole below
        float[] inverseRms = new float[rows];
        float[] w = weight.values();
        Parallel.forBlocks(rows, 64, (from, to) -> {
            for (int r = from; r < to; r++) {
                int base = r * dim;
                double sumSquares = 0;
                for (int j = 0; j < dim; j++) {
                    sumSquares += (double) x[base + j] * x[base + j];
                }
                float inv = (float) (1.0 / Math.sqrt(sumSquares / dim + eps));
                inverseRms[r] = inv;
                for (int j = 0; j < dim; j++) {
                    y[base + j] = w[j] * (x[base + j] * inv);
                }
            }
        });
        return new Saved(rows, x, inverseRms, y);
    }

    /**
     * Returns {@code dx = r·(dx̂ − x̂·mean(dx̂ ⊙ x̂))} with {@code x̂ = x·r}, {@code dx̂ = dy ⊙ weight}; adds
     * {@code Σ_rows dy ⊙ x̂} to the weight gradient.
     */
    public float[] backward(Saved saved, float[] dy) {
        int rows = saved.rows();
        Shapes.check(weight.name() + " output gradient", dy, rows, dim);
        float[] x = saved.input();
        float[] inv = saved.inverseRms();
        float[] w = weight.values();
        float[] dx = Workspace.floats(rows * dim); // written whole below
        Parallel.forBlocks(rows, 64, (from, to) -> {
            for (int r = from; r < to; r++) {
                int base = r * dim;
                double dot = 0;
                for (int j = 0; j < dim; j++) {
                    dot += (double) dy[base + j] * w[j] * x[base + j] * inv[r];
                }
                float meanDot = (float) (dot / dim);
                for (int j = 0; j < dim; j++) {
                    float normalized = x[base + j] * inv[r];
                    dx[base + j] = inv[r] * (dy[base + j] * w[j] - normalized * meanDot);
                }
            }
        });
        float[] dw = weight.grads();
        Parallel.forBlocks(dim, 64, (from, to) -> {
            // Row by row, so the reads run along rows; each column still sums its rows in order.
            double[] sums = new double[to - from];
            for (int r = 0; r < rows; r++) {
                int base = r * dim;
                for (int j = from; j < to; j++) {
                    sums[j - from] += (double) dy[base + j] * (x[base + j] * inv[r]);
                }
            }
            for (int j = from; j < to; j++) {
                dw[j] += (float) sums[j - from];
            }
        });
        return dx;
    }
}
