package io.kdapack.data.gpt;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Megatron's {@code split} string ({@code "969,30,1"}) turned into document ranges. Every number (regex
 * {@code [.0-9]+}) is a weight; the list is padded with zeros to three and normalised by its sum. The bookends are
 * the running sums {@code [0, w0, w0+w1, w0+w1+w2]}; part i covers documents
 * {@code [round(edge_i·n), round(edge_{i+1}·n))} with Python's round (half to even), and is absent when
 * {@code edge_{i+1} <= edge_i}.
 */
public final class SplitRanges {
    private static final Pattern NUMBER = Pattern.compile("[.0-9]+");

    /** A half-open range of document (sequence) ids {@code [begin, end)}. */
    public record DocumentRange(int begin, int end) {
        public int size() {
            return end - begin;
        }
    }

    private SplitRanges() {
    }

    /** The three normalised weights of {@code split}. */
    public static double[] weights(String split) {
        List<Double> values = new ArrayList<>();
        Matcher m = NUMBER.matcher(split);
        while (m.find()) {
            try {
                values.add(Double.parseDouble(m.group()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("split '" + split + "': '" + m.group() + "' is not a number");
            }
        }
        if (values.isEmpty() || values.size() > 3) {
            throw new IllegalArgumentException("split '" + split + "' must hold 1 to 3 numbers (train,valid,test), found "
                    + values.size());
        }
        double[] w = new double[3];
        double sum = 0;
        for (int i = 0; i < values.size(); i++) {
            w[i] = values.get(i);
            sum += w[i];
        }
        if (!(sum > 0)) {
            throw new IllegalArgumentException("split '" + split + "' must have a positive sum, got " + sum);
        }
        for (int i = 0; i < 3; i++) {
            w[i] = w[i] / sum;
        }
        return w;
    }

    /** The documents of {@code part} among {@code documents}, or {@code null} when the part is absent. */
    public static DocumentRange range(String split, DatasetSplit part, int documents) {
        double[] w = weights(split);
        double[] bookends = new double[4];
        for (int i = 0; i < 3; i++) {
            bookends[i + 1] = w[i] + bookends[i];
        }
        int p = part.ordinal();
        if (bookends[p + 1] <= bookends[p]) {
            return null;
        }
        // Math.rint rounds half to even, as Python's round does for floats.
        int begin = (int) Math.rint(bookends[p] * (double) documents);
        int end = (int) Math.rint(bookends[p + 1] * (double) documents);
        return new DocumentRange(begin, end);
    }
}
