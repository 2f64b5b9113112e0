package io.kdapack.cli;

import io.kdapack.cli.train.ProgressBar;
import io.kdapack.cli.train.RunDirectory;
import io.kdapack.config.ConfigLoader;
import io.kdapack.config.KdapackConfig;
import io.kdapack.data.synthetic.AssociativeRecall;
import io.kdapack.training.DatasetPaths;
import io.kdapack.training.HybridModels;
import io.kdapack.training.ModelFactory;
import io.kdapack.training.RecallEval;
import io.kdapack.training.StepResult;
import io.kdapack.training.Trainer;
import io.kdapack.training.TrainingCorpora;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kdapack train}: the main job. Trains the configured model on the configured Megatron dataset (by default the
 * tiny hybrid model on the shipped associative-recall set), showing progress on stderr, and leaves in the run
 * directory the metrics, a loss plot, checkpoints and the held-out recall eval ({@link RunDirectory}). Prints a JSON
 * summary on stdout.
 */
@Command(name = "train", mixinStandardHelpOptions = true,
        description = "Train the hybrid KDA model (default: the demo model on the shipped associative-recall dataset).")
final class TrainCommand implements Callable<Integer> {
    /** Held-out rows scored at the end (whole documents packed side by side). */
    static final int EVAL_ROWS = 64;

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", description = "YAML configuration (docs/configuration.md).")
    Path config;

    @Option(names = "--steps", paramLabel = "N", description = "Override train.steps (also the end of the cosine decay).")
    Integer steps;

    @Option(names = "--threads", paramLabel = "N", description = "Override train.threads (0 = all processors).")
    Integer threads;

    @Option(names = "--no-isolation", description = "Train the same model without document isolation (train.isolation = false).")
    boolean noIsolation;

    @Option(names = "--resume", description = "Continue from the newest checkpoint of the run (--out, or the newest "
            + "run under runs/); the losses that follow equal those of an uninterrupted run bit for bit.")
    boolean resume;

    @Option(names = "--out", paramLabel = "DIR", description = "Run directory (default: runs/<date-time>).")
    Path out;

    private final ModelFactory models;

    TrainCommand() {
        this(HybridModels.FACTORY);
    }

    TrainCommand(ModelFactory models) {
        this.models = models;
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter err = spec.commandLine().getErr();
        KdapackConfig cfg = ConfigLoader.load(config, System.getenv(), overrides());
        Path runDir = runDirectory();
        TrainingCorpora data = TrainingCorpora.of(cfg.train().data());
        for (Path prefix : data.prefixes()) {
            requireDataset(prefix);
        }
        if (!resume && hasCheckpoints(runDir.resolve("checkpoints"))) {
            throw new IllegalArgumentException("--out " + runDir + " already holds checkpoints: add --resume to continue "
                    + "that run, or choose another --out");
        }
        try (Trainer trainer = Trainer.create(cfg, models, data, runDir.resolve("checkpoints"))) {
            long start = 0;
            if (resume) {
                start = trainer.restoreLatest().orElseThrow(() -> new IOException("--resume: no complete checkpoint in "
                        + trainer.checkpoints().root()));
            }
            try (RunDirectory run = RunDirectory.open(runDir, start)) {
                run.writeConfig(cfg);
                err.printf(Locale.ROOT, "kdapack train: %s, %d steps of %d×%d×%d tokens%s on %s%n", runDir,
                        trainer.totalSteps(), cfg.train().numMicrobatches(), cfg.train().microBatchSize(),
                        cfg.train().seqLength(), cfg.train().isolation() ? "" : " (no isolation)", data);
                if (start > 0) {
                    err.println("kdapack train: resumed at step " + start);
                }
                train(trainer, run, err, start);
                Map<String, Object> summary = new LinkedHashMap<>();
                summary.put("run_dir", runDir.toString());
                summary.put("steps", trainer.stepsDone());
                summary.put("isolation", cfg.train().isolation());
                summary.put("first_loss", run.metrics().get(0).path("loss").asDouble());
                summary.put("final_loss", run.metrics().get(run.metrics().size() - 1).path("loss").asDouble());
                if (run.metrics().get(run.metrics().size() - 1).path("val_loss").isNumber()) {
                    summary.put("final_val_loss", run.metrics().get(run.metrics().size() - 1).path("val_loss").asDouble());
                }
                summary.put("plot", run.writePlot("kdapack train " + runDir.getFileName()).toString());
                summary.putAll(eval(trainer, data, run, err));
                spec.commandLine().getOut().println(new com.fasterxml.jackson.databind.ObjectMapper()
                        .writeValueAsString(summary));
            }
        }
        return 0;
    }

    private void train(Trainer trainer, RunDirectory run, PrintWriter err, long start) throws IOException {
        ProgressBar bar = new ProgressBar(err, trainer.totalSteps(), start, System.console() != null);
        while (!trainer.finished()) {
            StepResult step = trainer.step();
            run.record(step);
            bar.update(step);
            bar.validation(step);
            if (trainer.checkpointDue()) {
                trainer.saveCheckpoint();
            }
        }
    }

    /** The held-out recall eval, when the dataset has a held-out companion and uses the demo task's token ids. */
    private Map<String, Object> eval(Trainer trainer, TrainingCorpora data, RunDirectory run, PrintWriter err)
            throws IOException {
        AssociativeRecall task = AssociativeRecall.demo();
        KdapackConfig cfg = trainer.config();
        Optional<Path> heldOut = data.blended() ? Optional.empty() : DatasetPaths.heldOutPrefix(data.prefixes().get(0));
        if (heldOut.isEmpty() || cfg.train().data().eodId() != task.eodId() || cfg.train().data().padId() != task.padId()
                || cfg.model().vocabSize() < task.vocabularySize()) {
            err.println("kdapack train: no held-out recall eval (needs one prefix <name>-train with <name>-heldout "
                    + "beside it and the demo task's token ids)");
            return Map.of();
        }
        RecallEval evaluator = recallEval(cfg, trainer.model().mtpDepth());
        RecallEval.Result r = evaluator.score(evaluator.batches(heldOut.get(), EVAL_ROWS), trainer::evaluate);
        RecallEval.PackingCheck packing = evaluator.packedVsAlone(heldOut.get(), EVAL_ROWS, trainer::evaluate);
        Map<String, Object> eval = new LinkedHashMap<>();
        eval.put("heldout", heldOut.get().toString());
        eval.put("isolation", cfg.train().isolation());
        eval.put("heldout_documents", r.documents());
        eval.put("heldout_answers", r.answers());
        eval.put("heldout_answer_loss", r.answerLoss());
        eval.put("recall_accuracy", r.recallAccuracy());
        eval.put("heldout_none_answers", r.noneAnswers());
        eval.put("bound_recall", r.boundRecall());
        eval.put("none_recall", r.noneRecall());
        eval.put("packed_vs_alone_documents", packing.documents());
        eval.put("packed_vs_alone_rel_err", packing.maxRelErr());
        run.writeEval(eval);
        err.printf(Locale.ROOT, "kdapack train: held-out answer loss %.4f, recall %.1f%% (%d answers in %d documents; "
                + "bound keys %.1f%%, NONE %.1f%% of %d)%n", r.answerLoss(), 100 * r.recallAccuracy(), r.answers(),
                r.documents(), 100 * r.boundRecall(), 100 * r.noneRecall(), r.noneAnswers());
        err.printf(Locale.ROOT, "kdapack train: per-document loss packed vs alone: largest relative difference %.2e "
                + "(%d documents)%n", packing.maxRelErr(), packing.documents());
        return eval;
    }

    /**
     * The held-out recall eval of a run of {@code cfg}: the demo task in rows of {@code train.seq_length}, as many to a
     * forward pass as a micro-batch holds. Score its {@code batches(heldOut, EVAL_ROWS)}.
     */
    static RecallEval recallEval(KdapackConfig cfg, int mtpDepth) {
        return new RecallEval(AssociativeRecall.demo(), cfg.train().seqLength(), cfg.train().microBatchSize(), mtpDepth);
    }

    /** The command-line overrides as {@code kdapack.train.*} properties, over the JVM's own. */
    private Properties overrides() {
        Properties p = new Properties();
        p.putAll(System.getProperties());
        if (steps != null) {
            p.setProperty("kdapack.train.steps", steps.toString());
        }
        if (threads != null) {
            p.setProperty("kdapack.train.threads", threads.toString());
        }
        if (noIsolation) {
            p.setProperty("kdapack.train.isolation", "false");
        }
        return p;
    }

    private Path runDirectory() throws IOException {
        if (out != null) {
            return out.toAbsolutePath().normalize();
        }
        Path runs = Path.of("runs").toAbsolutePath();
        if (resume) {
            return RunDirectory.newestWithCheckpoints(runs);
        }
        String name = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        return runs.resolve(noIsolation ? name + "-no-isolation" : name);
    }

    private static void requireDataset(Path prefix) throws IOException {
        Path idx = prefix.resolveSibling(prefix.getFileName() + ".idx");
        if (!Files.isRegularFile(idx)) {
            throw new NoSuchFileException(idx.toString(), null, "dataset not found (train.data.prefix; the demo set is "
                    + "written by: kdapack data synth --out " + prefix + " --docs N --seed S)");
        }
    }

    private static boolean hasCheckpoints(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (var entries = Files.list(dir)) {
            return entries.anyMatch(p -> p.getFileName().toString().startsWith("step-"));
        }
    }
}
