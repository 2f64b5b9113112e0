package io.kdapack.config;

import java.util.ArrayList;
import java.util.List;

/**
 * One corpus of a weighted blend ({@code train.data.blend}): Megatron's {@code --data-path W1 P1 W2 P2 …} pairs.
 *
 * @param weight its share before normalisation, a positive finite number
 * @param prefix path prefix of its {@code .bin/.idx} pair
 */
public record BlendEntry(double weight, String prefix) {

    /**
     * Megatron's {@code --data-path} form {@code "W1 P1 W2 P2 …"} (whitespace separated, weights first).
     *
     * @throws IllegalArgumentException naming the token when the count is odd or a weight is not a number
     */
    public static List<BlendEntry> parseMegatron(String text) {
        String[] parts = text.trim().split("\\s+");
        if (text.isBlank() || parts.length % 2 != 0) {
            throw new IllegalArgumentException("expected pairs 'WEIGHT PREFIX …' (Megatron's --data-path form), got "
                    + (text.isBlank() ? 0 : parts.length) + " words");
        }
        List<BlendEntry> out = new ArrayList<>();
        for (int i = 0; i < parts.length; i += 2) {
            double weight;
            try {
                weight = Double.parseDouble(parts[i]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("word " + (i + 1) + " '" + parts[i] + "' is not a weight (expected "
                        + "pairs 'WEIGHT PREFIX …')");
            }
            out.add(new BlendEntry(weight, parts[i + 1]));
        }
        return out;
    }
}
