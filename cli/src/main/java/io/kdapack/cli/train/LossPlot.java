package io.kdapack.cli.train;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/** A PNG line plot of loss curves against the optimizer step, drawn headless with Java 2D. */
public final class LossPlot {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 520;
    private static final int LEFT = 70;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 50;
    private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0x9467bd)};

    private final String title;
    private final List<Series> series = new ArrayList<>();

    /** One named curve: {@code steps[i]} against {@code values[i]}. */
    public record Series(String name, double[] steps, double[] values) {
        public Series {
            if (steps.length != values.length) {
                throw new IllegalArgumentException("series '" + name + "': " + steps.length + " steps but "
                        + values.length + " values");
            }
        }
    }

    public LossPlot(String title) {
        this.title = title;
    }

    public LossPlot add(Series s) {
        series.add(s);
        return this;
    }

    /** Renders to PNG bytes; non-finite values are skipped. */
    public byte[] toPng() throws IOException {
        System.setProperty("java.awt.headless", "true");
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, HEIGHT);
            double[] range = range();
            drawAxes(g, range);
            for (int i = 0; i < series.size(); i++) {
                drawSeries(g, series.get(i), range, PALETTE[i % PALETTE.length], i);
            }
        } finally {
            g.dispose();
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(image, "png", out);
        return out.toByteArray();
    }

    /** Writes the PNG atomically. */
    public void write(Path file) throws IOException {
        io.kdapack.core.io.SafeTensors.writeAtomically(file, toPng());
    }

    /** {minStep, maxStep, minValue, maxValue} over all finite points, widened so no axis has zero length. */
    private double[] range() {
        double x0 = Double.MAX_VALUE, x1 = -Double.MAX_VALUE, y0 = Double.MAX_VALUE, y1 = -Double.MAX_VALUE;
        for (Series s : series) {
            for (int i = 0; i < s.steps().length; i++) {
                if (Double.isFinite(s.values()[i])) {
                    x0 = Math.min(x0, s.steps()[i]);
                    x1 = Math.max(x1, s.steps()[i]);
                    y0 = Math.min(y0, s.values()[i]);
                    y1 = Math.max(y1, s.values()[i]);
                }
            }
        }
        if (x0 > x1) {
            return new double[] {0, 1, 0, 1};
        }
        if (x1 == x0) {
            x1 = x0 + 1;
        }
        if (y1 == y0) {
            y1 = y0 + 1;
        }
        double pad = 0.05 * (y1 - y0);
        return new double[] {x0, x1, y0 - pad, y1 + pad};
    }

    private void drawAxes(Graphics2D g, double[] r) {
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
        g.drawString(title, LEFT, TOP - 14);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.drawRect(LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        for (int i = 0; i <= 5; i++) {
            double y = r[2] + (r[3] - r[2]) * i / 5;
            int py = py(y, r);
            g.setColor(new Color(0xE0E0E0));
            g.drawLine(LEFT + 1, py, WIDTH - RIGHT - 1, py);
            g.setColor(Color.BLACK);
            g.drawString(String.format(Locale.ROOT, "%.3f", y), 8, py + 4);
            double x = r[0] + (r[1] - r[0]) * i / 5;
            g.drawString(String.format(Locale.ROOT, "%.0f", x), px(x, r) - 10, HEIGHT - BOTTOM + 18);
        }
        g.drawString("step", WIDTH / 2 - 10, HEIGHT - 12);
    }

    private void drawSeries(Graphics2D g, Series s, double[] r, Color color, int index) {
        Path2D.Double path = new Path2D.Double();
        boolean started = false;
        for (int i = 0; i < s.steps().length; i++) {
            if (!Double.isFinite(s.values()[i])) {
                continue;
            }
            double x = px(s.steps()[i], r);
            double y = py(s.values()[i], r);
            if (started) {
                path.lineTo(x, y);
            } else {
                path.moveTo(x, y);
                started = true;
            }
        }
        g.setColor(color);
        g.setStroke(new BasicStroke(1.8f));
        g.draw(path);
        int legendY = TOP + 20 + 18 * index;
        g.fillRect(WIDTH - RIGHT - 190, legendY - 9, 14, 10);
        g.setColor(Color.BLACK);
        g.drawString(s.name(), WIDTH - RIGHT - 170, legendY);
    }

    private static int px(double x, double[] r) {
        return (int) Math.round(LEFT + (x - r[0]) / (r[1] - r[0]) * (WIDTH - LEFT - RIGHT));
    }

    private static int py(double y, double[] r) {
        return (int) Math.round(HEIGHT - BOTTOM - (y - r[2]) / (r[3] - r[2]) * (HEIGHT - TOP - BOTTOM));
    }
}
