package io.kdapack.core.nn;

/** Argument checks shared by the layers. */
final class Shapes {

    private Shapes() {
    }

    /** {@code values} must be a {@code [rows, cols]} matrix. */
    static void check(String name, float[] values, int rows, int cols) {
        if (rows < 0) {
            throw new IllegalArgumentException(name + ": token count must be >= 0, got " + rows);
        }
        if (values == null || values.length != (long) rows * cols) {
            throw new IllegalArgumentException(name + ": expected " + (long) rows * cols + " values for shape ["
                    + rows + "," + cols + "], got " + (values == null ? "null" : values.length));
        }
    }
}
