package io.kdapack.training;

import io.kdapack.core.nn.Parameter;
import io.kdapack.core.optim.NamedParameter;
import java.util.List;

/**
 * A model's {@link Parameter} as the optimizer, clipping and checkpoints see it ({@link NamedParameter}); the arrays
 * are shared, not copied, so updates land in the model.
 */
record ParameterView(Parameter parameter) implements NamedParameter {

    static List<ParameterView> of(List<Parameter> parameters) {
        return parameters.stream().map(ParameterView::new).toList();
    }

    @Override
    public String name() {
        return parameter.name();
    }

    @Override
    public int[] shape() {
        return parameter.shape();
    }

    @Override
    public float[] values() {
        return parameter.value();
    }

    @Override
    public float[] grads() {
        return parameter.grad();
    }
}
