package io.kdapack.cli.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LossPlotTest {
    private static final Color BLUE = new Color(0x1f77b4);
    private static final Color RED = new Color(0xd62728);
    private static final Color GREEN = new Color(0x2ca02c);

    private static BufferedImage image(byte[] png) throws IOException {
        return ImageIO.read(new ByteArrayInputStream(png));
    }

    /**
     * Pixels within 40 (per channel) of {@code color} in the left half of the image: the plot area, away from the
     * legend (top right), so a colour counted here is a curve, not its legend swatch.
     */
    private static int pixelsNear(BufferedImage image, Color color) {
        int count = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth() / 2; x++) {
                Color c = new Color(image.getRGB(x, y));
                if (Math.abs(c.getRed() - color.getRed()) < 40 && Math.abs(c.getGreen() - color.getGreen()) < 40
                        && Math.abs(c.getBlue() - color.getBlue()) < 40) {
                    count++;
                }
            }
        }
        return count;
    }

    @Test
    void drawsTheLossTheMtpLossAndTheValidationPointsInTheirColours() throws Exception {
        double[] steps = {1, 2, 3, 4, 5};
        byte[] png = new LossPlot("loss")
                .add(new LossPlot.Series("loss", steps, new double[] {5.0, 4.0, Double.NaN, 2.5, 2.0}))
                .add(new LossPlot.Series("mtp_loss", steps, new double[] {5.5, 4.6, 3.8, 3.1, 2.7}))
                .add(new LossPlot.Series("val_loss", new double[] {1, 2}, new double[] {4.6, 3.9}, true))
                .toPng();
        BufferedImage image = image(png);
        assertEquals(LossPlot.WIDTH, image.getWidth());
        assertEquals(LossPlot.HEIGHT, image.getHeight());
        // A 1.8-px line across half of an ~800-px plot covers hundreds of pixels; two 6-px dots a few dozen.
        assertTrue(pixelsNear(image, BLUE) > 200, "the loss curve is drawn: " + pixelsNear(image, BLUE));
        assertTrue(pixelsNear(image, RED) > 200, "the MTP curve is drawn: " + pixelsNear(image, RED));
        assertTrue(pixelsNear(image, GREEN) > 20, "the validation points are drawn: " + pixelsNear(image, GREEN));
    }

    @Test
    void aSeriesWithoutAFiniteValueIsLeftOutAndAnEmptyPlotStillRenders(@TempDir Path dir) throws Exception {
        double[] steps = {1, 2, 3};
        BufferedImage withoutMtp = image(new LossPlot("loss")
                .add(new LossPlot.Series("loss", steps, new double[] {3, 2, 1}))
                .add(new LossPlot.Series("mtp_loss", steps, new double[] {Double.NaN, Double.NaN, Double.NaN}))
                .toPng());
        assertEquals(0, pixelsNear(withoutMtp, RED), "no MTP curve");
        Path file = dir.resolve("loss.png");
        new LossPlot("nothing yet").write(file);
        assertEquals(LossPlot.WIDTH, image(Files.readAllBytes(file)).getWidth());
    }

    @Test
    void rejectsMismatchedSeries() {
        assertThrows(IllegalArgumentException.class, () -> new LossPlot.Series("x", new double[2], new double[3]));
    }
}
