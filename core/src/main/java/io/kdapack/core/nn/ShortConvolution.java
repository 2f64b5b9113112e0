package io.kdapack.core.nn;

import io.kdapack.core.conv.Activation;
import io.kdapack.core.conv.ShortConv;
import io.kdapack.core.conv.ShortConvBackend;
import io.kdapack.core.conv.ShortConvGradients;
import io.kdapack.core.conv.ShortConvInputs;
import io.kdapack.core.conv.ShortConvOutputs;
import io.kdapack.core.kda.Segments;
import java.util.List;

/**
 * The short convolution as a layer (FLA {@code ShortConvolution}, KDA's {@code q_conv1d, k_conv1d, v_conv1d}):
 * depthwise causal conv1d of width W over each document of a packed batch, zero history at every document start
 * (see {@link ShortConv}), then the activation. {@code x, y [T,D]}. Parameters {@code <name>.weight [D,1,W]}
 * (PyTorch {@code Conv1d} layout with one input channel per group; {@code weight[d,0,W−1]} multiplies the current
 * token) and, when enabled, {@code <name>.bias [D]}.
 */
public final class ShortConvolution implements Layer {
    private final int channels;
    private final int width;
    private final Activation activation;
    private final ShortConvBackend backend;
    private final Parameter weight;
    private final Parameter bias;

    /** What backward needs: the op inputs. */
    public record Saved(ShortConvInputs inputs, float[] output) {
    }

    /**
     * @param backend where the op runs ({@link io.kdapack.core.conv.ShortConv#CPU}, or the device's)
     */
    public ShortConvolution(String name, int channels, int width, boolean hasBias, Activation activation,
                            ShortConvBackend backend) {
        if (channels < 1 || width < 1) {
            throw new IllegalArgumentException("short convolution '" + name + "': channels and width must be >= 1, got "
                    + channels + " and " + width);
        }
        this.channels = channels;
        this.width = width;
        this.activation = activation;
        this.backend = backend;
        this.weight = Parameter.filled(Parameter.join(name, "weight"), 0f, channels, 1, width);
        this.bias = hasBias ? Parameter.filled(Parameter.join(name, "bias"), 0f, channels) : null;
    }

    public Parameter weight() {
        return weight;
    }

    @Override
    public List<Parameter> parameters() {
        return bias == null ? List.of(weight) : List.of(weight, bias);
    }

    /** {@code y [T,D]}; padding tokens (in no segment) give 0. */
    public Saved forward(float[] x, Segments segments) {
        ShortConvInputs inputs = new ShortConvInputs(segments, channels, width, x, weight.values(),
                bias == null ? null : bias.values(), null, activation);
        return new Saved(inputs, backend.forward(inputs).y());
    }

    /** W, the kernel width; a decoding window holds the last {@code W−1} inputs. */
    public int width() {
        return width;
    }

    /**
     * The inference forward: piece {@code n} of {@code pieces} continues a sequence whose last {@code W−1} inputs are
     * {@code windows[n] [D,W−1]} (oldest first; zeros before a sequence's first token). Returns {@code y [T,D]} and
     * replaces each window by the last {@code W−1} inputs after its piece — the op's initial and final states
     * ({@link ShortConv}) without their never-read oldest column.
     */
    public float[] extend(float[] x, Segments pieces, float[][] windows) {
        int n = pieces.count();
        int kept = width - 1;
        if (windows.length != n) {
            throw new IllegalArgumentException(weight.name() + ": " + n + " pieces but " + windows.length + " windows");
        }
        float[] initial = new float[n * channels * width];
        for (int s = 0; s < n; s++) {
            if (windows[s] == null || windows[s].length != channels * kept) {
                throw new IllegalArgumentException(weight.name() + ": window " + s + " must hold [D,W-1] = "
                        + channels * kept + " values, got " + (windows[s] == null ? "null" : windows[s].length));
            }
            for (int d = 0; d < channels; d++) {
                System.arraycopy(windows[s], d * kept, initial, (s * channels + d) * width + 1, kept);
            }
        }
        ShortConvOutputs out = backend.forward(new ShortConvInputs(pieces, channels, width, x, weight.values(),
                bias == null ? null : bias.values(), initial, activation));
        for (int s = 0; s < n; s++) {
            for (int d = 0; d < channels; d++) {
                System.arraycopy(out.finalState(), (s * channels + d) * width + 1, windows[s], d * kept, kept);
            }
        }
        return out.y();
    }

    /** Returns {@code dx [T,D]}; adds the weight and bias gradients. */
    public float[] backward(Saved saved, float[] dy) {
        ShortConvGradients g = backend.backward(saved.inputs(), dy, null);
        Parallel.addInto(weight.grads(), g.dweight());
        if (bias != null) {
            Parallel.addInto(bias.grads(), g.dbias());
        }
        return g.dx();
    }
}
