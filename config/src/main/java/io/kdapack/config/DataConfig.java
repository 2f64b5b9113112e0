package io.kdapack.config;

/**
 * The Megatron dataset and how samples become inputs ({@code train.data}).
 *
 * @param prefix             path prefix of the {@code .bin/.idx} pair; {@code null}: the demo dataset shipped with
 *                           the repository
 * @param split              Megatron split weights train,valid,test (e.g. {@code 969,30,1})
 * @param eodId              end-of-document token id
 * @param padId              padding token id; −1: none
 * @param eodMaskLoss        no loss at positions whose input is EOD
 * @param resetPositionIds   positions restart after each EOD
 * @param resetAttentionMask attention does not cross documents (segment ids restart after each EOD)
 */
public record DataConfig(String prefix, String split, int eodId, int padId, boolean eodMaskLoss,
                         boolean resetPositionIds, boolean resetAttentionMask) {

    public static DataConfig defaults() {
        return new DataConfig(null, "969,30,1", 129, 130, true, true, true);
    }
}
