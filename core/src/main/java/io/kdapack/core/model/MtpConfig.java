package io.kdapack.core.model;

/**
 * Multi-token prediction ({@code model.mtp}).
 *
 * @param depth      MTP layers: 0 (off) or 1
 * @param lossFactor the MTP loss is scaled by {@code lossFactor / depth} (Megatron's {@code mtp_loss_scaling_factor})
 */
public record MtpConfig(int depth, double lossFactor) {

    public static MtpConfig defaults() {
        return new MtpConfig(1, 0.1);
    }
}
