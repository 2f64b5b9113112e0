package io.kdapack.gpu;

import io.kdapack.gpu.DeviceMemoryPool.DeviceBuffer;

/**
 * What the kernel sequences need from a device: memory, copies, launches. {@link CudaDevice} is the real one; the
 * tests record the launches of a whole forward/backward without a GPU and check them against the PTX signatures.
 */
interface DeviceApi {

    DeviceBuffer alloc(long bytes);

    /** Returns a buffer to the pool (null is ignored); stream order makes this safe right after a launch. */
    void free(DeviceBuffer buffer);

    /** Sets {@code words} 32-bit words to zero. */
    void zero(DeviceBuffer buffer, long words);

    DeviceBuffer upload(float[] values);

    DeviceBuffer upload(int[] values);

    DeviceBuffer upload(short[] values);

    float[] download(DeviceBuffer buffer, int count);

    short[] downloadShorts(DeviceBuffer buffer, int count);

    /**
     * Launches a kernel of module {@code module} ("kda" or "conv"). Arguments in the kernel's parameter order:
     * {@link jcuda.driver.CUdeviceptr} (null for a null pointer), {@link Integer} or {@link Float}.
     */
    void launch(String module, String kernel, Launch launch, Object... args);
}
