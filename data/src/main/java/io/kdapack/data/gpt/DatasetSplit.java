package io.kdapack.data.gpt;

import java.util.Locale;

/** The three parts of Megatron's {@code split} string, in order: part 0 train, part 1 valid, part 2 test. */
public enum DatasetSplit {
    TRAIN, VALID, TEST;

    /** {@code train}, {@code valid} or {@code test}; names the accepted values when unknown. */
    public static DatasetSplit parse(String name) {
        for (DatasetSplit s : values()) {
            if (s.name().equalsIgnoreCase(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("split name must be train, valid or test, got '" + name + "'");
    }

    /** Lower-case name as Megatron spells it. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
