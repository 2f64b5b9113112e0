package io.kdapack.training.pipeline;

/**
 * How much heap a job's run is expected to hold at its peak, for admission control: the server refuses a job whose
 * estimate exceeds its memory budget and runs jobs together only while their estimates fit in it.
 *
 * @param bytes       estimated peak bytes (0: unknown, counted as nothing)
 * @param largestKey  the configuration key that contributes most to the estimate (the {@code field} of a refusal),
 *                    or null
 * @param explanation what the estimate is made of, with the keys and values behind each part, for error messages
 */
public record MemoryEstimate(long bytes, String largestKey, String explanation) {

    /** A backend that does not estimate its memory. */
    public static final MemoryEstimate UNKNOWN = new MemoryEstimate(0, null, "no estimate");

    public MemoryEstimate {
        if (bytes < 0) {
            throw new IllegalArgumentException("memory estimate must be >= 0 bytes, got " + bytes);
        }
    }

    /** {@code bytes} in binary units with three significant digits ("1.50 GiB"). */
    public static String format(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double value = bytes;
        int unit = 0;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return unit == 0 ? bytes + " B" : String.format(java.util.Locale.ROOT, "%.3g %s", value, units[unit]);
    }
}
