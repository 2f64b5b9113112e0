package io.kdapack.data.gpt;

/**
 * How a sample of raw tokens becomes model inputs (GPTDatasetConfig fields of the same meaning).
 *
 * @param eodId                 end-of-document token id
 * @param padId                 pad id (−1 when the tokenizer has none); also masks and zeroes that id in the data
 * @param eodMaskLoss           zero the loss where the input token is EOD
 * @param resetPositionIds      restart positions at 0 after each input EOD
 * @param resetAttentionMask    start a new attention segment after each input EOD
 * @param interDocumentMasking  Megatron's packed-sequence path: segments and positions from the document parts read
 */
public record SampleOptions(int eodId, int padId, boolean eodMaskLoss, boolean resetPositionIds,
                            boolean resetAttentionMask, boolean interDocumentMasking) {

    public SampleOptions {
        if (padId == eodId) {
            throw new IllegalArgumentException("pad id " + padId + " equals the EOD id; Megatron resets such a pad id "
                    + "to -1 (pass -1)");
        }
    }

    /** Plain options: no masking flags. */
    public static SampleOptions plain(int eodId, int padId) {
        return new SampleOptions(eodId, padId, false, false, false, false);
    }
}
