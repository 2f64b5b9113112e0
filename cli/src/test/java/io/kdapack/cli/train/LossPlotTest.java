package io.kdapack.cli.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;

class LossPlotTest {

    @Test
    void drawsAReadablePngWithTheCurve() throws Exception {
        double[] steps = {1, 2, 3, 4, 5};
        double[] loss = {5.0, 4.0, Double.NaN, 2.5, 2.0};
        byte[] png = new LossPlot("loss").add(new LossPlot.Series("train", steps, loss)).toPng();
        BufferedImage image = ImageIO.read(new ByteArrayInputStream(png));
        assertEquals(900, image.getWidth());
        assertEquals(520, image.getHeight());
        int colored = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int rgb = image.getRGB(x, y) & 0xFFFFFF;
                int r = rgb >> 16, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
                if (b > 150 && r < 100) {
                    colored++;
                }
            }
        }
        assertNotEquals(0, colored, "the blue curve is drawn");
    }

    @Test
    void rejectsMismatchedSeries() {
        assertThrows(IllegalArgumentException.class, () -> new LossPlot.Series("x", new double[2], new double[3]));
    }
}
