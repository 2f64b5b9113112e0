package io.kdapack.data.gpt;

/**
 * How many epochs a GPT dataset builds and whether its final epoch is shuffled separately.
 *
 * @param tokensPerEpoch      T, the tokens of the split's documents, EODs included
 * @param numEpochs           E, the smallest E >= 1 with {@code E·T >= numSamples·L + x} (1 without numSamples)
 * @param separateFinalEpoch  whether the final epoch's documents and samples are shuffled on their own
 * @param samplesSansFinalEpoch {@code ((E−1)·T − x) div L}; only meaningful when E > 1
 */
public record EpochPlan(long tokensPerEpoch, int numEpochs, boolean separateFinalEpoch, long samplesSansFinalEpoch) {

    /** Megatron's {@code _get_num_epochs} and the separate-final-epoch rule. */
    public static EpochPlan of(long tokensPerEpoch, GptIndexConfig config) {
        if (tokensPerEpoch <= 1) {
            throw new IllegalArgumentException("split part " + config.part().label() + " holds " + tokensPerEpoch
                    + " tokens; Megatron's helper asserts tokens_per_epoch > 1 (choose a split that gives it documents)");
        }
        int x = config.extraTokens();
        long seqLength = config.seqLength();
        if (config.numSamples() == null) {
            return new EpochPlan(tokensPerEpoch, 1, false, 0);
        }
        long requested = Math.addExact(Math.multiplyExact(config.numSamples(), seqLength), x);
        long epochs = Math.max(1, (requested + tokensPerEpoch - 1) / tokensPerEpoch);
        if (epochs > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("numSamples " + config.numSamples() + " needs " + epochs + " epochs");
        }
        int e = (int) epochs;
        if (e == 1) {
            return new EpochPlan(tokensPerEpoch, 1, false, 0);
        }
        long sans = ((e - 1) * tokensPerEpoch - x) / seqLength;
        long fromFinal = config.numSamples() - sans;
        long perEpoch = (tokensPerEpoch - x) / seqLength;
        if (fromFinal < 0 || fromFinal > perEpoch + 1) {
            throw new IllegalStateException("samples from the final epoch " + fromFinal + " outside [0, "
                    + (perEpoch + 1) + "] (Megatron asserts this)");
        }
        boolean separate = fromFinal < (long) (0.80 * perEpoch);
        return new EpochPlan(tokensPerEpoch, e, separate, sans);
    }
}
