package io.kdapack.cli.train;

import io.kdapack.training.StepResult;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * The training progress line on stderr: {@code step 12/300 [====>      ] loss 3.2145  mtp 3.4012  2345 tok/s  eta 3m02s}.
 * On a terminal the line is redrawn in place after every step; otherwise (a log file) a full line is printed about
 * twenty times per run and after the last step.
 *
 * <p>Kept by hand rather than through a progress-bar library: {@code me.tongfei:progressbar} 0.10.1 (tried) redraws
 * from a timer thread of its own, not once per step, with its own layout ({@code step 46% [==   ] 14/30 (0:00:00 /
 * 0:00:01) …}), and into a log file writes every redraw after a {@code \r} on one endless line instead of the ~20
 * lines above; a validation line printed between two redraws would race with its thread.
 */
public final class ProgressBar {
    private static final int WIDTH = 24;

    private final PrintWriter out;
    private final long totalSteps;
    private final boolean interactive;
    private final long startNanos = System.nanoTime();
    private final long firstStep;

    /**
     * @param firstStep   steps already done when the bar starts (after a resume), for the time estimate
     * @param interactive redraw in place (a terminal) rather than print lines
     */
    public ProgressBar(PrintWriter out, long totalSteps, long firstStep, boolean interactive) {
        this.out = out;
        this.totalSteps = totalSteps;
        this.firstStep = firstStep;
        this.interactive = interactive;
    }

    public void update(StepResult step) {
        boolean last = step.step() >= totalSteps;
        long every = Math.max(1, totalSteps / 20);
        if (!interactive && !last && step.step() % every != 0) {
            return;
        }
        String line = line(step);
        if (interactive) {
            out.print("\r" + line + (last ? "\n" : ""));
        } else {
            out.println(line);
        }
        out.flush();
    }

    /** Prints the validation loss of a step followed by an evaluation ({@code train.eval_interval}) on its own line. */
    public void validation(StepResult step) {
        if (step.valLoss() == null) {
            return;
        }
        out.println((interactive && step.step() < totalSteps ? "\n" : "") + validationLine(step));
        out.flush();
    }

    static String validationLine(StepResult step) {
        String mtp = step.valMtpLoss() == null ? "" : String.format(Locale.ROOT, "  mtp %.4f", step.valMtpLoss());
        return String.format(Locale.ROOT, "validation loss at step %d: %.4f%s", step.step(), step.valLoss(), mtp);
    }

    String line(StepResult step) {
        int filled = (int) (WIDTH * step.step() / Math.max(1, totalSteps));
        String bar = "=".repeat(filled) + (filled < WIDTH ? ">" + " ".repeat(WIDTH - filled - 1) : "");
        String mtp = step.mtpLoss() == null ? "" : String.format(Locale.ROOT, "  mtp %.4f", step.mtpLoss());
        return String.format(Locale.ROOT, "step %d/%d [%s] loss %.4f%s  %.0f tok/s  eta %s", step.step(), totalSteps, bar,
                step.loss(), mtp, step.tokensPerS(), eta(step.step()));
    }

    private String eta(long step) {
        long done = step - firstStep;
        if (done <= 0) {
            return "?";
        }
        double seconds = (System.nanoTime() - startNanos) / 1e9 / done * (totalSteps - step);
        long s = Math.round(seconds);
        return s >= 60 ? String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60) : s + "s";
    }
}
