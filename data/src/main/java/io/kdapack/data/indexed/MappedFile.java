package io.kdapack.data.indexed;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A read-only memory map of a whole file of any size, as {@code MappedByteBuffer} windows (a buffer addresses at most
 * 2 GiB). Window {@code k} starts at byte {@code k·W} and extends {@value #OVERLAP} bytes into the next window, so a
 * scalar of up to 8 bytes at any position lies inside the window of its first byte. All reads are little-endian.
 *
 * <p>Callers check positions against {@link #length()} before reading; this class only asserts them.
 */
final class MappedFile {
    /** Default window size: 1 GiB, a multiple of every element size. */
    static final long DEFAULT_WINDOW_BYTES = 1L << 30;
    /** Bytes each window reaches into the next one: the largest scalar read. */
    static final int OVERLAP = 8;

    private final Path path;
    private final long length;
    private final long windowBytes;
    private final ByteBuffer[] windows;

    private MappedFile(Path path, long length, long windowBytes, ByteBuffer[] windows) {
        this.path = path;
        this.length = length;
        this.windowBytes = windowBytes;
        this.windows = windows;
    }

    /** Maps {@code path} read-only with 1 GiB windows. */
    static MappedFile map(Path path) throws IOException {
        return map(path, DEFAULT_WINDOW_BYTES);
    }

    /** Maps {@code path} with windows of {@code windowBytes} (a multiple of 8; small values exercise the windowing). */
    static MappedFile map(Path path, long windowBytes) throws IOException {
        checkWindow(windowBytes);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long length = channel.size();
            int count = Math.toIntExact((length + windowBytes - 1) / windowBytes);
            ByteBuffer[] windows = new ByteBuffer[count];
            for (int k = 0; k < count; k++) {
                long start = k * windowBytes;
                long size = Math.min(length - start, windowBytes + OVERLAP);
                windows[k] = channel.map(FileChannel.MapMode.READ_ONLY, start, size).order(ByteOrder.LITTLE_ENDIAN);
            }
            return new MappedFile(path, length, windowBytes, windows);
        }
    }

    /** The same windows over bytes in memory, named {@code path} in messages (tests without files). */
    static MappedFile wrap(Path path, byte[] bytes, long windowBytes) {
        checkWindow(windowBytes);
        int count = (int) ((bytes.length + windowBytes - 1) / windowBytes);
        ByteBuffer[] windows = new ByteBuffer[count];
        for (int k = 0; k < count; k++) {
            int start = (int) (k * windowBytes);
            int size = (int) Math.min(bytes.length - start, windowBytes + OVERLAP);
            windows[k] = ByteBuffer.wrap(bytes, start, size).slice().order(ByteOrder.LITTLE_ENDIAN);
        }
        return new MappedFile(path, bytes.length, windowBytes, windows);
    }

    private static void checkWindow(long windowBytes) {
        if (windowBytes < OVERLAP || windowBytes % OVERLAP != 0 || windowBytes > Integer.MAX_VALUE - OVERLAP) {
            throw new IllegalArgumentException("windowBytes must be a multiple of 8 in [8, 2^31-16], got " + windowBytes);
        }
    }

    Path path() {
        return path;
    }

    long length() {
        return length;
    }

    /** Index of the window that holds byte {@code position}. */
    int windowOf(long position) {
        return (int) (position / windowBytes);
    }

    /** Offset of byte {@code position} inside window {@link #windowOf}. */
    int offsetInWindow(long position) {
        return (int) (position % windowBytes);
    }

    /** The buffer of window {@code k} (little-endian, absolute reads only). */
    ByteBuffer window(int k) {
        return windows[k];
    }

    byte getByte(long position) {
        return windows[windowOf(position)].get(offsetInWindow(position));
    }

    short getShort(long position) {
        return windows[windowOf(position)].getShort(offsetInWindow(position));
    }

    int getInt(long position) {
        return windows[windowOf(position)].getInt(offsetInWindow(position));
    }

    long getLong(long position) {
        return windows[windowOf(position)].getLong(offsetInWindow(position));
    }

    float getFloat(long position) {
        return windows[windowOf(position)].getFloat(offsetInWindow(position));
    }

    double getDouble(long position) {
        return windows[windowOf(position)].getDouble(offsetInWindow(position));
    }

    /** Bytes readable from {@code position} without leaving window {@link #windowOf}(position). */
    long bytesInWindow(long position) {
        int k = windowOf(position);
        return windows[k].limit() - offsetInWindow(position);
    }
}
