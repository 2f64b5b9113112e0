package io.kdapack.cli.train;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** A PNG line plot of loss curves against the optimizer step, drawn headless by XChart. */
public final class LossPlot {
    static final int WIDTH = 900;
    static final int HEIGHT = 520;
    private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0x9467bd)};

    private final String title;
    private final List<Series> series = new ArrayList<>();

    /**
     * One named curve: {@code steps[i]} against {@code values[i]}.
     *
     * @param markers a dot at each point, for sparse series such as the validation loss (else a plain line)
     */
    public record Series(String name, double[] steps, double[] values, boolean markers) {
        public Series {
            if (steps.length != values.length) {
                throw new IllegalArgumentException("series '" + name + "': " + steps.length + " steps but "
                        + values.length + " values");
            }
        }

        /** A plain line. */
        public Series(String name, double[] steps, double[] values) {
            this(name, steps, values, false);
        }
    }

    public LossPlot(String title) {
        this.title = title;
    }

    public LossPlot add(Series s) {
        series.add(s);
        return this;
    }

    /** Renders to PNG bytes; non-finite values are skipped, and a series without a finite value is left out. */
    public byte[] toPng() throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title).xAxisTitle("step")
                .yAxisTitle("loss").build();
        Styler styler = chart.getStyler();
        styler.setChartBackgroundColor(Color.WHITE);
        styler.setPlotBackgroundColor(Color.WHITE);
        styler.setLegendPosition(Styler.LegendPosition.InsideNE);
        styler.setAntiAlias(true);
        styler.setMarkerSize(6);
        for (int i = 0; i < series.size(); i++) {
            Series s = series.get(i);
            double[][] finite = finitePoints(s);
            if (finite[0].length == 0) {
                continue;
            }
            XYSeries line = chart.addSeries(s.name(), finite[0], finite[1]);
            Color color = PALETTE[i % PALETTE.length];
            line.setLineColor(color);
            line.setMarkerColor(color);
            line.setLineStyle(new BasicStroke(1.8f));
            line.setMarker(s.markers() ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
        }
        if (chart.getSeriesMap().isEmpty()) {
            // Nothing to draw (no finite value at all): an empty frame with the title, axes 0..1.
            chart.addSeries(" ", new double[] {0, 1}, new double[] {0, 1}).setMarker(SeriesMarkers.NONE)
                    .setLineColor(new Color(0, 0, 0, 0));
            styler.setLegendVisible(false);
        }
        return BitmapEncoder.getBitmapBytes(chart, BitmapEncoder.BitmapFormat.PNG);
    }

    /** Writes the PNG atomically. */
    public void write(Path file) throws IOException {
        io.kdapack.core.io.SafeTensors.writeAtomically(file, toPng());
    }

    /** {steps, values} of the points whose step and value are both finite. */
    private static double[][] finitePoints(Series s) {
        int n = 0;
        for (int i = 0; i < s.steps().length; i++) {
            if (Double.isFinite(s.steps()[i]) && Double.isFinite(s.values()[i])) {
                n++;
            }
        }
        double[] x = new double[n];
        double[] y = new double[n];
        for (int i = 0, j = 0; i < s.steps().length; i++) {
            if (Double.isFinite(s.steps()[i]) && Double.isFinite(s.values()[i])) {
                x[j] = s.steps()[i];
                y[j++] = s.values()[i];
            }
        }
        return new double[][] {x, y};
    }
}
