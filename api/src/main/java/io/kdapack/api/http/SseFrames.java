package io.kdapack.api.http;

import io.kdapack.actors.events.EndEvent;
import io.kdapack.actors.events.JobEventLog;
import io.kdapack.actors.events.StepEvent;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The server-sent-event frames of one job run ({@code id: <step>}, {@code event: step}, the step's metrics as JSON;
 * then {@code event: end}), each encoded once, into a direct buffer, and shared by every stream of the run: a step
 * costs each subscriber a write of the same bytes, not a JSON encoding and a copy of its own. Each frame is stored as
 * the HTTP/1.1 chunk that carries it ({@code <size in hex>\r\n<frame>\r\n}; the end frame followed by the last,
 * empty chunk {@code 0\r\n\r\n}), so that an event is one buffer and one socket write. Thread safe.
 */
public final class SseFrames {
    /** The last chunk of a chunked body, with no trailer. */
    private static final String LAST_CHUNK = "0\r\n\r\n";

    private ByteBuf[] steps = new ByteBuf[16];
    private ByteBuf end;

    /** The chunk of step event {@code index} of {@code log}, as a buffer of its own over the shared bytes. */
    public synchronized ByteBuf step(JobEventLog log, int index) {
        if (index >= steps.length) {
            steps = Arrays.copyOf(steps, Math.max(index + 1, 2 * steps.length));
        }
        if (steps[index] == null) {
            StepEvent step = log.get(index);
            steps[index] = chunk("id: " + step.step() + "\nevent: step\ndata: " + stepJson(step) + "\n\n", "");
        }
        return steps[index].duplicate();
    }

    /** The chunk of the run's end event, then the last chunk: the rest of the response. */
    public synchronized ByteBuf end(EndEvent event) {
        if (end == null) {
            end = chunk("event: end\ndata: " + endJson(event) + "\n\n", LAST_CHUNK);
        }
        return end.duplicate();
    }

    /**
     * {@code frame} as one chunk of a chunked HTTP/1.1 body, then {@code after}, in a direct buffer that writes may
     * share: duplicates have their own indices and releasing them frees nothing. The memory is the JDK's, freed when
     * the buffer is collected (a pooled or leak-tracked Netty buffer would have to be released, and never is here).
     */
    private static ByteBuf chunk(String frame, String after) {
        byte[] data = frame.getBytes(StandardCharsets.UTF_8);
        byte[] size = (Integer.toHexString(data.length) + "\r\n").getBytes(StandardCharsets.US_ASCII);
        byte[] tail = ("\r\n" + after).getBytes(StandardCharsets.US_ASCII);
        ByteBuffer memory = ByteBuffer.allocateDirect(size.length + data.length + tail.length);
        memory.put(size).put(data).put(tail).flip();
        return Unpooled.unreleasableBuffer(Unpooled.wrappedBuffer(memory));
    }

    /** The wire form of a step event (architecture §5 field names). */
    static String stepJson(StepEvent step) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("step", step.step());
        fields.put("loss", step.loss());
        fields.put("mtp_loss", step.mtpLoss());
        fields.put("tokens", step.tokens());
        fields.put("segments", step.segments());
        fields.put("grad_norm", step.gradNorm());
        fields.put("lr", step.lr());
        fields.put("tokens_per_s", step.tokensPerS());
        if (step.valLoss() != null) {
            fields.put("val_loss", step.valLoss());
            fields.put("val_mtp_loss", step.valMtpLoss());
        }
        if (step.exchangeBytes() != null) {
            fields.put("exchange_bytes", step.exchangeBytes());
            fields.put("exchange_s", step.exchangeS());
        }
        return new String(StrictJson.write(fields), StandardCharsets.UTF_8);
    }

    static String endJson(EndEvent end) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("state", end.state().name().toLowerCase());
        fields.put("step", end.step());
        fields.put("error", end.error());
        return new String(StrictJson.write(fields), StandardCharsets.UTF_8);
    }

    /**
     * The frames of every run that has streams, one per {@link JobEventLog}, held as long as the log is (a weak key:
     * the job manager dropping a run's history drops its frames too).
     */
    public static final class Registry {
        private final Map<JobEventLog, SseFrames> frames = Collections.synchronizedMap(new WeakHashMap<>());

        public SseFrames of(JobEventLog log) {
            return frames.computeIfAbsent(log, key -> new SseFrames());
        }
    }
}
