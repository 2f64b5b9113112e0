package io.kdapack.gpu;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import jcuda.driver.CUdeviceptr;

/**
 * A caching device allocator: buffers are kept by their size rounded up to {@link #GRANULE} bytes and handed
 * out again, so the steady state of a training loop (the same shapes every step) performs no cuMemAlloc.
 * Owned by one {@link CudaDevice} and used on its thread only.
 */
final class DeviceMemoryPool implements AutoCloseable {

    static final long GRANULE = 512;

    private final Map<Long, ArrayDeque<CUdeviceptr>> free = new HashMap<>();
    private long allocatedBytes;

    static long roundUp(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes must be >= 0, got " + bytes);
        }
        return Math.max(GRANULE, (bytes + GRANULE - 1) / GRANULE * GRANULE);
    }

    DeviceBuffer acquire(long bytes) {
        long size = roundUp(bytes);
        ArrayDeque<CUdeviceptr> list = free.get(size);
        CUdeviceptr ptr = list == null ? null : list.poll();
        if (ptr == null) {
            ptr = new CUdeviceptr();
            cuMemAlloc(ptr, size);
            allocatedBytes += size;
        }
        return new DeviceBuffer(ptr, bytes, size);
    }

    void release(DeviceBuffer buffer) {
        free.computeIfAbsent(buffer.capacity(), k -> new ArrayDeque<>()).push(buffer.ptr());
    }

    long allocatedBytes() {
        return allocatedBytes;
    }

    @Override
    public void close() {
        for (ArrayDeque<CUdeviceptr> list : free.values()) {
            for (CUdeviceptr p : list) {
                cuMemFree(p);
            }
        }
        free.clear();
        allocatedBytes = 0;
    }

    /** A device allocation of at least {@code bytes} ({@code capacity} as allocated). */
    record DeviceBuffer(CUdeviceptr ptr, long bytes, long capacity) {
    }
}
