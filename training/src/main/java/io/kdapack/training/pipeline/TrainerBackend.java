package io.kdapack.training.pipeline;

import io.kdapack.config.KdapackConfig;
import io.kdapack.config.TrainConfig;
import io.kdapack.data.gpt.DatasetSplit;
import io.kdapack.training.MegatronSamples;
import io.kdapack.training.MicroBatchAssembler;
import io.kdapack.training.ModelFactory;
import io.kdapack.training.Trainer;
import io.kdapack.training.pipeline.BatchSegmenter;
import io.kdapack.training.pipeline.SampleSource;
import io.kdapack.training.pipeline.StepCompute;
import io.kdapack.training.pipeline.TrainingBackend;
import io.kdapack.training.pipeline.TrainingPlan;
import io.kdapack.training.TrainingCorpora;
import io.kdapack.training.checkpoint.CheckpointStore;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The training loop of {@code kdapack train} ({@link Trainer}) cut into the actor pipeline's stages: the loader reads
 * the Megatron-order {@code raw_text} of each micro-batch ({@link MicroBatchAssembler#raw}), the segmenter splits it
 * ({@link MicroBatchAssembler#segment}), the model stage runs a {@link Trainer} ({@link TrainerCompute}). Both halves
 * are the code {@code kdapack train} runs, so a job gives the same losses bit for bit.
 *
 * <p>Nothing is opened before the stages run: a missing or corrupt dataset fails the job (with the reason), not the
 * request that created it.
 */
public final class TrainerBackend implements TrainingBackend {
    private final KdapackConfig config;
    private final ModelFactory models;
    private final TrainingCorpora corpora;
    private final Path checkpointDir;
    private MicroBatchAssembler assembler;

    /**
     * @param datasetPrefix the {@code .bin/.idx} prefix to train on, already resolved and confined
     * @param checkpointDir the job's checkpoint directory (resume reads the newest complete checkpoint there)
     */
    public TrainerBackend(KdapackConfig config, ModelFactory models, Path datasetPrefix, Path checkpointDir) {
        this(config, models, TrainingCorpora.single(datasetPrefix), checkpointDir);
    }

    /**
     * @param corpora       the prefix or weighted blend to train on, already resolved and confined
     * @param checkpointDir the job's checkpoint directory (resume reads the newest complete checkpoint there)
     */
    public TrainerBackend(KdapackConfig config, ModelFactory models, TrainingCorpora corpora, Path checkpointDir) {
        this.config = config;
        this.models = models;
        this.corpora = corpora;
        this.checkpointDir = checkpointDir;
    }

    @Override
    public TrainingPlan plan() {
        TrainConfig train = config.train();
        int interval = train.checkpoint().interval();
        return new TrainingPlan(train.steps(), train.numMicrobatches(), interval > 0 ? interval : train.steps());
    }

    @Override
    public long resumeStep() throws IOException {
        return new CheckpointStore(checkpointDir).latest().map(CheckpointStore::stepOf).orElse(0L);
    }

    @Override
    public SampleSource samples() {
        return index -> assembler().raw(index);
    }

    @Override
    public BatchSegmenter segmenter() {
        return raw -> assembler().segment(raw);
    }

    @Override
    public StepCompute createCompute() throws IOException {
        return new TrainerCompute(Trainer.create(config, models, corpora, checkpointDir));
    }

    /**
     * The loader's assembler, opened on first use (by the loader, which reads before the segmenter splits; the
     * segmenter only uses its immutable shape and options).
     */
    private synchronized MicroBatchAssembler assembler() throws IOException {
        if (assembler == null) {
            TrainConfig train = config.train();
            MegatronSamples samples = MegatronSamples.open(corpora, train.data(), DatasetSplit.TRAIN, train.seqLength(),
                    train.seed(), (long) train.steps() * train.globalBatchSize());
            assembler = new MicroBatchAssembler(samples, train.microBatchSize(), config.model().mtp().depth());
        }
        return assembler;
    }
}
