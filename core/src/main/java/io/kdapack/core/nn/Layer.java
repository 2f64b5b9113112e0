package io.kdapack.core.nn;

import java.util.List;

/**
 * Something with parameters. Layers work on plain row-major float arrays with the token axis flattened
 * ({@code [T,d]}); each has a {@code forward} that returns a {@code Saved} record (the output plus what the
 * backward pass needs) and a {@code backward} that takes that record and the output gradient, returns the
 * input gradient and adds parameter gradients into {@link Parameter#grad()}. Keeping the saved state in a record
 * rather than the layer lets one layer run several times before its backward passes (a shared LM head).
 */
public interface Layer {

    /** Every parameter of this layer and its sub-layers, in a fixed order, with full names. */
    List<Parameter> parameters();
}
