package io.kdapack.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in a real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}, driven by Selenium)
 * against a real server on loopback: the token prompt and no data without it; the page with it; a bad configuration
 * shows the server's own error beside the document; a short job's charts reach its step count; a dropped and resumed
 * event stream draws no step twice; cancel ends a job and resume continues it, the charts going on after the last step
 * drawn; a streamed completion shows the server's text. A screenshot
 * goes to {@code target/dashboard.png}, its path printed.
 *
 * <p>Without Chromium the test fails, naming the packages (CI installs them, {@code .ci/run}); a developer without
 * them can skip it with {@code -Dkdapack.skipBrowserTests=true}. Paths: {@code -Dkdapack.chromium=…},
 * {@code -Dkdapack.chromedriver=…}. Bounded: 90 s in all, each wait 30 s.
 */
class DashboardBrowserTest {
    private static final Path MQAR = TrainingServer.repositoryRoot().resolve("datasets/mqar");
    private static final Path CHROMIUM = Path.of(System.getProperty("kdapack.chromium", "/usr/bin/chromium"));
    private static final Path CHROMEDRIVER = Path.of(System.getProperty("kdapack.chromedriver", "/usr/bin/chromedriver"));
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int SHORT_STEPS = 6;
    /** Far more steps than the test lasts: the job is still running when it is cancelled. */
    private static final int LONG_STEPS = 20000;

    @TempDir
    Path temp;
    private final long started = System.nanoTime();

    /** Prints how long the test has run at each phase (where its time goes, on a loaded machine too). */
    private void phase(String name) {
        System.out.printf("DashboardBrowserTest: %5.1f s %s%n", (System.nanoTime() - started) / 1e9, name);
    }

    @BeforeAll
    static void requireChromium() {
        if (Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER)) {
            return;
        }
        String missing = "no Chromium at " + CHROMIUM + " or no chromedriver at " + CHROMEDRIVER;
        Assumptions.assumeFalse(Boolean.getBoolean("kdapack.skipBrowserTests"),
                missing + ": skipped (-Dkdapack.skipBrowserTests=true)");
        fail(missing + ". Install Debian's packages (apt-get install -y chromium chromium-driver; .ci/run does), "
                + "point -Dkdapack.chromium / -Dkdapack.chromedriver at them, or skip with -Dkdapack.skipBrowserTests=true");
    }

    private static ChromeDriver chromium() {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,2000", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--mute-audio");
        LoggingPreferences logs = new LoggingPreferences();
        logs.enable(LogType.BROWSER, Level.ALL);
        options.setCapability("goog:loggingPrefs", logs);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(new File(CHROMEDRIVER.toString())).usingAnyFreePort().build();
        ChromeDriver driver = new ChromeDriver(service, options);
        driver.manage().timeouts().scriptTimeout(WAIT).pageLoadTimeout(WAIT);
        return driver;
    }

    @Test
    @Timeout(90)
    void theDashboardFollowsStartsCancelsAndCompletesJobsInARealBrowser() throws Exception {
        // Chromium starts while the server does (each takes seconds on a loaded machine).
        CompletableFuture<ChromeDriver> browser = CompletableFuture.supplyAsync(DashboardBrowserTest::chromium);
        try (TrainingServer server = new TrainingServer(MQAR.getParent(), temp.resolve("jobs"))) {
            String base = "http://127.0.0.1:" + server.address().getPort();
            run(server, base, browser.get(WAIT.toSeconds(), TimeUnit.SECONDS));
        } finally {
            browser.thenAccept(ChromeDriver::quit); // at once if it started, else when it does
        }
    }

    private void run(TrainingServer server, String base, ChromeDriver driver) throws Exception {
        phase("chromium and server started");
        // Without the token: the prompt, and no data (no job row, the app hidden).
        server.startJob(TrainingServer.JSON.writeValueAsString(tinyJob(SHORT_STEPS, 3)), "application/json");
        driver.get(base + "/");
        await(driver, d -> d.findElement(By.id("login")).isDisplayed());
        assertFalse(driver.findElement(By.id("app")).isDisplayed(), "no dashboard before the token");
        assertEquals(0, driver.findElements(By.cssSelector("#jobs-body tr")).size(), "no job shown without the token");

        phase("token prompt shown");
        // A wrong token is refused by the server and the prompt stays.
        type(driver, "token-input", "not-the-token");
        driver.findElement(By.id("token-submit")).click();
        await(driver, d -> d.findElement(By.id("login-error")).getText().contains("refused"));
        assertFalse(driver.findElement(By.id("app")).isDisplayed());

        // The token, typed once: the job list appears; the token is in session storage and in no URL.
        type(driver, "token-input", TrainingServer.TOKEN);
        driver.findElement(By.id("token-submit")).click();
        await(driver, d -> !d.findElements(By.cssSelector("#jobs-body tr")).isEmpty());
        assertEquals(TrainingServer.TOKEN, js(driver, "return sessionStorage.getItem('kdapack.token')"));
        assertFalse(driver.getCurrentUrl().contains(TrainingServer.TOKEN), driver.getCurrentUrl());
        driver.navigate().refresh();
        await(driver, d -> d.findElement(By.id("app")).isDisplayed() && !d.findElement(By.id("login")).isDisplayed());

        phase("signed in");
        // A bad configuration: the server's own error and field, beside the document, at the line that sets it.
        String bad = "train:\n  steps: 3\n  optimizer:\n    warmup_steps: 5\n";
        HttpResponse<String> refused = server.send(server.request("/v1/jobs").header("Content-Type", "application/yaml")
                .POST(HttpRequest.BodyPublishers.ofString(bad)).build());
        assertEquals(400, refused.statusCode(), refused.body());
        JsonNode serverError = TrainingServer.JSON.readTree(refused.body());
        setValue(driver, "config-doc", bad);
        driver.findElement(By.id("config-submit")).click();
        await(driver, d -> d.findElement(By.id("config-error")).isDisplayed());
        assertEquals(serverError.get("field").asText(), driver.findElement(By.id("config-error-field")).getText());
        assertEquals("train.optimizer.warmup_steps", driver.findElement(By.id("config-error-field")).getText());
        assertEquals(serverError.get("error").asText(), driver.findElement(By.id("config-error-message")).getText());
        assertEquals("line 4", driver.findElement(By.id("config-error-line")).getText());
        assertEquals("true", driver.findElement(By.id("config-doc")).getAttribute("aria-invalid"));

        phase("bad configuration shown");
        // A short job started from the page: its charts reach the job's step count, steps 1..N once each.
        setValue(driver, "config-doc", TrainingServer.JSON.writeValueAsString(tinyJob(SHORT_STEPS, 3)));
        driver.findElement(By.id("config-submit")).click();
        await(driver, d -> !d.findElement(By.id("config-error")).isDisplayed()
                && d.findElement(By.id("job-panel")).isDisplayed());
        String shortJob = driver.findElement(By.id("job-title")).getText();
        await(driver, d -> points(d) == SHORT_STEPS && "succeeded".equals(d.findElement(By.id("job-state")).getText()));
        JsonNode shortStatus = server.status(shortJob);
        assertEquals(SHORT_STEPS, shortStatus.get("step").asInt());
        // The list shows the server's loss and tokens/s of the last step, as the server gives them.
        double speed = shortStatus.get("last_tokens_per_s").asDouble();
        assertTrue(speed > 0, shortStatus.toString());
        await(driver, d -> String.format(java.util.Locale.ROOT, "%.0f", speed).equals(
                d.findElement(By.cssSelector("#jobs-body tr[data-job='" + shortJob + "'] td.speed")).getText()));
        // Read through await too: the list is redrawn every 2 s, and a cell found just before a redraw goes stale.
        String loss = String.format(java.util.Locale.ROOT, "%.4f", shortStatus.get("last_loss").asDouble());
        await(driver, d -> loss.equals(
                d.findElement(By.cssSelector("#jobs-body tr[data-job='" + shortJob + "'] td.loss")).getText()));
        assertEquals(steps(1, SHORT_STEPS), chartSteps(driver));
        assertEquals("0", charts(driver).getAttribute("data-resent"));
        Path screenshot = Path.of("target", "dashboard.png").toAbsolutePath();
        Files.createDirectories(screenshot.getParent());
        Files.write(screenshot, driver.getScreenshotAs(OutputType.BYTES));
        System.out.println("DashboardBrowserTest: screenshot of the dashboard at " + screenshot);

        phase("short job charted");
        // A long job: drop its stream mid-run; the page reconnects with Last-Event-ID and draws no step twice.
        String longJob = server.startJob(TrainingServer.JSON.writeValueAsString(tinyJob(LONG_STEPS, 20)), "application/json");
        await(driver, d -> { // the list is redrawn every 2 s: find the row and click it in one go
            d.findElement(By.cssSelector("#jobs-body tr[data-job='" + longJob + "'] button.link")).click();
            return true;
        });
        await(driver, d -> longJob.equals(d.findElement(By.id("job-title")).getText()) && points(d) >= 2);
        int beforeDrop = points(driver);
        assertEquals(Boolean.TRUE, js(driver, "return window.kdapackDashboard.dropStream()"));
        await(driver, d -> "2".equals(charts(d).getAttribute("data-connections")) && points(d) > beforeDrop + 1);

        phase("stream dropped and resumed");
        // Cancel from the page: the job ends cancelled, and the charts hold exactly its steps.
        driver.findElement(By.id("job-cancel")).click();
        await(driver, d -> "cancelled".equals(d.findElement(By.id("job-state")).getText())
                && d.findElement(By.id("stream-state")).getText().equals("ended: cancelled"));
        JsonNode cancelled = server.status(longJob);
        assertEquals("cancelled", cancelled.get("state").asText());
        long done = cancelled.get("step").asLong();
        assertTrue(done < LONG_STEPS, "stopped early: " + cancelled);
        await(driver, d -> points(d) == done);
        assertEquals(steps(1, done), chartSteps(driver), "each step once, in order, across the reconnection");
        assertEquals("0", charts(driver).getAttribute("data-resent"), "the server resumed after Last-Event-ID");

        phase("cancelled");
        // Resume from the page: the new run restores its last checkpoint, and the charts go on after step N, none twice.
        await(driver, d -> d.findElement(By.id("job-resume")).isEnabled());
        driver.findElement(By.id("job-resume")).click();
        await(driver, d -> "running".equals(d.findElement(By.id("job-state")).getText()) && points(d) > done + 2);
        driver.findElement(By.id("job-cancel")).click();
        await(driver, d -> "cancelled".equals(d.findElement(By.id("job-state")).getText())
                && d.findElement(By.id("stream-state")).getText().equals("ended: cancelled"));
        long resumedTo = server.status(longJob).get("step").asLong();
        await(driver, d -> points(d) == resumedTo);
        assertEquals(steps(1, resumedTo), chartSteps(driver), "the resumed run's steps follow the first run's");
        assertEquals("0", charts(driver).getAttribute("data-resent"));

        phase("resumed and cancelled again");
        // A streamed completion from the short job's last checkpoint: the text the server gives the same request.
        await(driver, d -> {
            js(d, "document.getElementById('prompt-model').dispatchEvent(new Event('focus'))");
            return !d.findElements(By.cssSelector("#prompt-model option[value='" + shortJob + "']")).isEmpty();
        });
        js(driver, "document.getElementById('prompt-model').value = arguments[0]", shortJob);
        setValue(driver, "prompt-text", "ab");
        setValue(driver, "prompt-max-tokens", "8");
        setValue(driver, "prompt-temperature", "0");
        driver.findElement(By.id("prompt-submit")).click();
        await(driver, d -> "true".equals(d.findElement(By.id("completion")).getAttribute("data-done")));
        HttpResponse<String> whole = server.send(server.request("/v1/completions").header("Content-Type",
                "application/json").POST(HttpRequest.BodyPublishers.ofString(TrainingServer.JSON.writeValueAsString(
                Map.of("model", shortJob, "prompt", "ab", "max_tokens", 8, "temperature", 0)))).build());
        assertEquals(200, whole.statusCode(), whole.body());
        assertEquals(TrainingServer.JSON.readTree(whole.body()).at("/choices/0/text").asText(),
                js(driver, "return document.getElementById('completion').textContent"));
        assertEquals("", driver.findElement(By.id("prompt-error")).getText());

        phase("completion streamed");
        // The page's event-stream parser on the line ends and fields the format allows, fed three characters at a time.
        Object parsed = js(driver, """
                const events = [];
                const parser = new KdapackSse.Parser((e) => events.push(e.type + '|' + e.id + '|' + e.data));
                const text = 'id: 1\\r\\nevent: step\\r\\ndata: {"a":1}\\r\\n\\r\\n: a comment\\nid: 2\\nevent: step\\n'
                    + 'data: x\\ndata:y\\n\\ndata\\n\\nevent: end\\rdata: z\\r\\r';
                for (let i = 0; i < text.length; i += 3) { parser.push(text.slice(i, i + 3)); }
                parser.finish();
                return events;""");
        assertEquals(List.of("step|1|{\"a\":1}", "step|2|x\ny", "message|2|", "end|2|z"), parsed);

        // No cluster on this server: its panel stays hidden. Nothing was refused by the Content-Security-Policy.
        assertFalse(driver.findElement(By.id("cluster-panel")).isDisplayed());
        List<LogEntry> console = driver.manage().logs().get(LogType.BROWSER).getAll();
        for (LogEntry entry : console) {
            assertFalse(entry.getMessage().contains("Content Security Policy") || entry.getMessage().contains("Refused to"),
                    "blocked by the policy: " + entry.getMessage());
        }
    }

    /** The integration tests' tiny model for {@code steps} steps, a checkpoint every {@code checkpointInterval}. */
    private static ObjectNode tinyJob(int steps, int checkpointInterval) {
        ObjectNode config = TrainingServer.JSON.valueToTree(TrainingServer.tinyConfig(steps, "mqar/mqar-train"));
        ((ObjectNode) config.path("train").path("checkpoint")).put("interval", checkpointInterval);
        return config;
    }

    private static List<Long> steps(long first, long last) {
        return LongStream.rangeClosed(first, last).boxed().toList();
    }

    private static WebElement charts(WebDriver driver) {
        return driver.findElement(By.id("charts"));
    }

    private static int points(WebDriver driver) {
        return Integer.parseInt(charts(driver).getAttribute("data-points"));
    }

    @SuppressWarnings("unchecked")
    private static List<Long> chartSteps(WebDriver driver) {
        return ((List<Object>) js(driver, "return window.kdapackDashboard.chartSteps()")).stream()
                .map(value -> ((Number) value).longValue()).toList();
    }

    private static Object js(WebDriver driver, String script, Object... arguments) {
        return ((JavascriptExecutor) driver).executeScript(script, arguments);
    }

    private static void type(WebDriver driver, String id, String text) {
        WebElement input = driver.findElement(By.id(id));
        input.clear();
        input.sendKeys(text);
    }

    /** Sets a field's value at once (typing a whole document key by key would take seconds). */
    private static void setValue(WebDriver driver, String id, String value) {
        js(driver, "document.getElementById(arguments[0]).value = arguments[1]", id, value);
    }

    private static void await(WebDriver driver, Function<WebDriver, Boolean> condition) {
        new WebDriverWait(driver, WAIT, Duration.ofMillis(100)).ignoring(StaleElementReferenceException.class)
                .until(condition::apply);
    }
}
