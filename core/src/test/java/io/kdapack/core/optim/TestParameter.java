package io.kdapack.core.optim;

/** The simplest {@link NamedParameter}: a record, as the model's parameter type is expected to be. */
record TestParameter(String name, int[] shape, float[] values, float[] grads) implements NamedParameter {

    static TestParameter of(String name, float[] values, float[] grads) {
        return new TestParameter(name, new int[] {values.length}, values, grads);
    }
}
