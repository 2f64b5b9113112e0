package io.kdapack.data.segment;

/**
 * The multi-token-prediction roll inside packed segments: each MTP depth predicts one token further, so its targets
 * and loss mask are the previous depth's shifted left by one position <em>within each segment</em>. The last position
 * of every segment has nothing left to predict inside its document: target 0, mask 0. Padding (segment id 0) stays
 * target 0, mask 0.
 */
public final class MtpRoll {
    private MtpRoll() {
    }

    /**
     * Rolls {@code labels [B,L]} and {@code lossMask [B,L]} left by one within the segments of {@code segmentIds [B,L]},
     * writing {@code rolledLabels} and {@code rolledMask} (which may not alias the inputs). Apply d times for depth d.
     */
    public static void roll(int[] labels, float[] lossMask, int[] segmentIds, int batch, int length,
                            int[] rolledLabels, float[] rolledMask) {
        for (int[] a : new int[][] {labels, segmentIds, rolledLabels}) {
            checkShape(a.length, batch, length);
        }
        checkShape(lossMask.length, batch, length);
        checkShape(rolledMask.length, batch, length);
        if (rolledLabels == labels || rolledMask == lossMask) {
            throw new IllegalArgumentException("rolled outputs must not alias the inputs");
        }
        for (int b = 0; b < batch; b++) {
            int row = b * length;
            for (int i = 0; i < length; i++) {
                int at = row + i;
                int id = segmentIds[at];
                boolean next = i + 1 < length && id != 0 && segmentIds[at + 1] == id;
                rolledLabels[at] = next ? labels[at + 1] : 0;
                rolledMask[at] = next ? lossMask[at + 1] : 0f;
            }
        }
    }

    private static void checkShape(int size, int batch, int length) {
        if (batch < 0 || length < 0 || (long) batch * length != size) {
            throw new IllegalArgumentException("array of " + size + " values is not [B,L] = [" + batch + "," + length + "]");
        }
    }
}
