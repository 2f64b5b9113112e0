package io.kdapack.core.optim;

/** The simplest {@link NamedParameter}: a record, as the model's parameter type is expected to be. */
record TestParameter(String name, int[] shape, float[] value, float[] grad) implements NamedParameter {

    static TestParameter of(String name, float[] value, float[] grad) {
        return new TestParameter(name, new int[] {value.length}, value, grad);
    }
}
