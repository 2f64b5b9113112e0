package io.kdapack.api.http;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.kdapack.core.io.SafeTensors;
import io.kdapack.core.io.SafeTensorsException;
import io.kdapack.core.io.Tensor;
import io.kdapack.core.model.MicroBatch;

/**
 * Body of {@code POST /v1/steps}: a job id and one packed batch, every array {@code [B,T]} (JSON arrays of
 * rows), or the same tensors by name in a safetensors body with the job id in the query.
 */
public record StepsRequest(String job, int[][] tokens, int[][] labels, @JsonProperty("loss_mask") float[][] lossMask,
                           @JsonProperty("segment_ids") int[][] segmentIds,
                           @JsonProperty("position_ids") int[][] positionIds) {

    /** Reads a JSON body. */
    public static StepsRequest fromJson(byte[] body) {
        return StrictJson.read(body, StepsRequest.class);
    }

    /** The packed batch, checked: every array present, rows of one length, shapes equal, values in range. */
    public MicroBatch toBatch() {
        if (job == null) {
            throw ApiException.badRequest("job is required", "job");
        }
        int rows = rows("tokens", tokens);
        int length = tokens[0].length;
        return batch(rows, length, flatten("tokens", tokens, rows, length), flatten("labels", labels, rows, length),
                flattenFloats(lossMask, rows, length), flatten("position_ids", positionIds, rows, length),
                flatten("segment_ids", segmentIds, rows, length));
    }

    /** Reads the tensors {@code tokens, labels, loss_mask, segment_ids, position_ids} (all {@code [B,T]}). */
    public static MicroBatch fromSafeTensors(byte[] body) {
        SafeTensors file;
        try {
            file = SafeTensors.parse("request body", body);
        } catch (SafeTensorsException e) {
            throw ApiException.badRequest("malformed safetensors: " + e.getMessage(), null);
        }
        Tensor tokens = tensor(file, "tokens");
        if (tokens.rank() != 2) {
            throw ApiException.badRequest("must have shape [B,T], got rank " + tokens.rank(), "tokens");
        }
        int rows = (int) tokens.dim(0);
        int length = (int) tokens.dim(1);
        String[] names = {"labels", "loss_mask", "segment_ids", "position_ids"};
        for (String name : names) {
            Tensor t = tensor(file, name);
            if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != length) {
                throw ApiException.badRequest("must have the shape of tokens [" + rows + "," + length + "]", name);
            }
        }
        try {
            return batch(rows, length, tokens.toIntArray(), tensor(file, "labels").toIntArray(),
                    tensor(file, "loss_mask").toFloatArray(), tensor(file, "position_ids").toIntArray(),
                    tensor(file, "segment_ids").toIntArray());
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest(e.getMessage(), null);
        }
    }

    /** The micro-batch (without MTP targets: the compute derives them if its model has an MTP head). */
    private static MicroBatch batch(int rows, int length, int[] tokens, int[] labels, float[] mask, int[] positions,
                                    int[] segments) {
        requireNonNegative("tokens", tokens);
        requireNonNegative("labels", labels);
        requireNonNegative("position_ids", positions);
        requireNonNegative("segment_ids", segments);
        for (int i = 0; i < mask.length; i++) {
            if (mask[i] != 0f && mask[i] != 1f) {
                throw ApiException.badRequest("entry " + i + " must be 0 or 1, got " + mask[i], "loss_mask");
            }
            // Segment id 0 is padding: it belongs to no segment, so counting its loss would make the per-segment
            // losses not add up to the total.
            if (mask[i] == 1f && segments[i] == 0) {
                throw ApiException.badRequest("entry " + i + " is padding (segment_ids 0) but has loss_mask 1; padding "
                        + "is never scored: give it loss_mask 0", "loss_mask");
            }
        }
        return new MicroBatch(rows, length, tokens, labels, mask, positions, segments, null, null);
    }

    private static void requireNonNegative(String field, int[] values) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] < 0) {
                throw ApiException.badRequest("entry " + i + " must be >= 0, got " + values[i], field);
            }
        }
    }

    private static Tensor tensor(SafeTensors file, String name) {
        if (!file.has(name)) {
            throw ApiException.badRequest("tensor " + name + " is missing", name);
        }
        return file.get(name);
    }

    private static int rows(String field, int[][] values) {
        if (values == null) {
            throw ApiException.badRequest(field + " is required", field);
        }
        if (values.length == 0 || values[0] == null || values[0].length == 0) {
            throw ApiException.badRequest("must have at least one non-empty row", field);
        }
        return values.length;
    }

    private static int[] flatten(String field, int[][] values, int rows, int length) {
        checkShape(field, values, rows);
        int[] flat = new int[rows * length];
        for (int r = 0; r < rows; r++) {
            checkRow(field, r, values[r] == null ? -1 : values[r].length, length);
            System.arraycopy(values[r], 0, flat, r * length, length);
        }
        return flat;
    }

    private float[] flattenFloats(float[][] values, int rows, int length) {
        checkShape("loss_mask", values, rows);
        float[] flat = new float[rows * length];
        for (int r = 0; r < rows; r++) {
            checkRow("loss_mask", r, values[r] == null ? -1 : values[r].length, length);
            System.arraycopy(values[r], 0, flat, r * length, length);
        }
        return flat;
    }

    private static void checkShape(String field, Object[] values, int rows) {
        if (values == null) {
            throw ApiException.badRequest(field + " is required", field);
        }
        if (values.length != rows) {
            throw ApiException.badRequest("has " + values.length + " rows, tokens has " + rows, field);
        }
    }

    private static void checkRow(String field, int row, int actual, int length) {
        if (actual != length) {
            throw ApiException.badRequest("row " + row + " has " + Math.max(actual, 0) + " entries, tokens rows have "
                    + length, field + "[" + row + "]");
        }
    }
}
