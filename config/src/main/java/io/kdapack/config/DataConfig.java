package io.kdapack.config;

import java.util.List;

/**
 * The Megatron dataset and how samples become inputs ({@code train.data}).
 *
 * @param prefix             path prefix of the {@code .bin/.idx} pair; {@code null}: the demo dataset shipped with
 *                           the repository
 * @param blend              a weighted blend of several corpora (Megatron's {@code --data-path W1 P1 W2 P2 …}) instead
 *                           of {@code prefix}; {@code null}: train on {@code prefix} alone. A blend of one corpus is
 *                           that corpus as {@code prefix}
 * @param split              Megatron split weights train,valid,test (e.g. {@code 969,30,1})
 * @param eodId              end-of-document token id
 * @param padId              padding token id; −1: none
 * @param eodMaskLoss        no loss at positions whose input is EOD
 * @param resetPositionIds   positions restart after each EOD
 * @param resetAttentionMask attention does not cross documents (segment ids restart after each EOD)
 */
public record DataConfig(String prefix, List<BlendEntry> blend, String split, int eodId, int padId, boolean eodMaskLoss,
                         boolean resetPositionIds, boolean resetAttentionMask) {

    public DataConfig {
        blend = blend == null ? null : List.copyOf(blend);
    }

    public static DataConfig defaults() {
        return new DataConfig(null, null, "969,30,1", 129, 130, true, true, true);
    }
}
