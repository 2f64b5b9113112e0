package io.kdapack.cli.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kdapack.training.StepResult;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

class ProgressBarTest {

    private static StepResult step(long step, Double mtp) {
        return new StepResult(step, 3.14159, mtp, 2048, 40, 0.5, 1e-3, 1234.4);
    }

    @Test
    void aLogGetsAboutTwentyLinesAndTheLastStep() {
        StringWriter out = new StringWriter();
        ProgressBar bar = new ProgressBar(new PrintWriter(out), 45, 0, false);
        for (int s = 1; s <= 45; s++) {
            bar.update(step(s, 2.5));
        }
        String[] lines = out.toString().split("\n");
        // Every 45/20 = 2 steps, and step 45.
        assertEquals(23, lines.length);
        assertTrue(lines[0].startsWith("step 2/45 ["), lines[0]);
        assertTrue(lines[22].startsWith("step 45/45 [========================]"), lines[22]);
        assertTrue(lines[22].contains("loss 3.1416  mtp 2.5000  1234 tok/s"), lines[22]);
    }

    @Test
    void aTerminalRedrawsOneLineAndEndsIt() {
        StringWriter out = new StringWriter();
        ProgressBar bar = new ProgressBar(new PrintWriter(out), 2, 0, true);
        bar.update(step(1, null));
        bar.update(step(2, null));
        String text = out.toString();
        assertTrue(text.startsWith("\rstep 1/2 [============>"), text);
        assertTrue(text.contains("\rstep 2/2 [") && text.endsWith("\n"), text);
        assertTrue(!text.contains("mtp"), "no MTP column without MTP: " + text);
    }

    @Test
    void aValidationLossGetsALineOfItsOwn() {
        StringWriter out = new StringWriter();
        ProgressBar bar = new ProgressBar(new PrintWriter(out), 10, 0, false);
        bar.validation(step(3, 2.5));
        assertEquals("", out.toString(), "no evaluation after this step: nothing printed");
        bar.validation(new StepResult(4, 3.0, 2.5, 2048, 40, 0.5, 1e-3, 1234.4, 2.71828, 2.9));
        assertEquals("validation loss at step 4: 2.7183  mtp 2.9000\n", out.toString().replace("\r\n", "\n"));
    }
}
