package io.kdapack.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * One GPU through the CUDA driver API (libcuda only, via JCuda): its primary context, bound to the thread that
 * opened it (the KDA-layer actor's pinned thread; any other thread is refused), one non-blocking stream, the
 * PTX modules, and a caching memory pool. Every driver call is checked (JCuda exceptions enabled); a failing
 * launch is reported with the kernel's name and geometry.
 */
public final class CudaDevice implements DeviceApi, AutoCloseable {

    /** Largest dynamic shared memory a kernel is allowed ({@link KdaLaunchPlan} needs < 60 KB at K = 128). */
    static final int MAX_DYNAMIC_SHARED = 96 * 1024;
    /** Kernels whose dynamic shared memory may exceed the default 48 KB. */
    private static final List<String> LARGE_SHARED = List.of("kda_fwd_intra_f32", "kda_fwd_intra_bf16",
            "kda_bwd_intra_f32", "kda_bwd_intra_bf16");

    /** fp32 quiet NaN; two of them make an fp64 NaN. */
    private static final int QUIET_NAN_BITS = 0x7fc00000;

    private static String unavailableReason;
    private static boolean driverReady;

    private final Thread owner = Thread.currentThread();
    private final CUdevice device = new CUdevice();
    private final CUcontext context = new CUcontext();
    private final CUstream stream = new CUstream();
    private final Map<String, CUmodule> modules = new HashMap<>();
    private final Map<String, CUfunction> functions = new HashMap<>();
    private final DeviceMemoryPool pool = new DeviceMemoryPool();
    private final String name;
    private final int major;
    private final int minor;
    private final int multiprocessors;
    private boolean syncAfterLaunch = Boolean.getBoolean("kdapack.cuda.syncCheck");
    private boolean poisonAllocations;
    private boolean closed;

    private CudaDevice(int ordinal) {
        cuDeviceGet(device, ordinal);
        cuDevicePrimaryCtxRetain(context, device);
        cuCtxSetCurrent(context);
        cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
        byte[] nameBytes = new byte[256];
        cuDeviceGetName(nameBytes, nameBytes.length, device);
        int len = 0;
        while (len < nameBytes.length && nameBytes[len] != 0) {
            len++;
        }
        name = new String(nameBytes, 0, len, StandardCharsets.US_ASCII);
        major = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        minor = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        multiprocessors = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    }

    /**
     * Opens GPU {@code ordinal} and binds it to the calling thread.
     *
     * @throws CudaUnavailableException without a CUDA driver or device
     */
    public static CudaDevice open(int ordinal) {
        String reason = unavailableReason();
        if (reason != null) {
            throw new CudaUnavailableException(reason, null);
        }
        int[] count = new int[1];
        cuDeviceGetCount(count);
        if (ordinal < 0 || ordinal >= count[0]) {
            throw new IllegalArgumentException("CUDA device ordinal must be in [0, " + count[0] + "), got " + ordinal);
        }
        return new CudaDevice(ordinal);
    }

    /**
     * Why CUDA cannot be used here, or null when a driver and at least one device answer. Loads the JCuda
     * driver library on first call: without libcuda that throws UnsatisfiedLinkError, which is caught here.
     */
    public static synchronized String unavailableReason() {
        if (driverReady || unavailableReason != null) {
            return unavailableReason;
        }
        try {
            JCudaDriver.setExceptionsEnabled(true);
            cuInit(0);
            int[] count = new int[1];
            cuDeviceGetCount(count);
            if (count[0] == 0) {
                unavailableReason = "no CUDA device: the driver reports 0 devices";
            } else {
                driverReady = true;
            }
        } catch (LinkageError e) {
            unavailableReason = "no CUDA driver: the JCuda driver library could not be loaded ("
                    + keyLine(e) + ")";
        } catch (CudaException e) {
            unavailableReason = "no usable CUDA driver: cuInit failed (" + firstLine(e.getMessage()) + ")";
        }
        return unavailableReason;
    }

    /** The line of a load failure that names the missing library (JCuda lists every attempt), else the first. */
    private static String keyLine(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            String m = t.getMessage();
            if (m != null) {
                for (String line : m.lines().toList()) {
                    if (line.contains("libcuda") || line.contains("cannot open shared object")) {
                        return firstLine(line);
                    }
                }
            }
        }
        return firstLine(e.getMessage());
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "no message";
        }
        String line = s.strip().lines().findFirst().orElse(s);
        return line.length() > 240 ? line.substring(0, 240) + "…" : line;
    }

    /** Driver version as reported by cuDriverGetVersion, e.g. 13000. */
    public int driverVersion() {
        int[] v = new int[1];
        cuDriverGetVersion(v);
        return v[0];
    }

    public String name() {
        return name;
    }

    public int computeMajor() {
        return major;
    }

    public int computeMinor() {
        return minor;
    }

    public int multiprocessors() {
        return multiprocessors;
    }

    /** Synchronise after every launch so that an asynchronous fault is pinned on the kernel that caused it. */
    public void setSyncAfterLaunch(boolean sync) {
        syncAfterLaunch = sync;
    }

    /**
     * Fill every buffer handed out with NaN (as fp32 words; also a NaN as fp64), so that a kernel reading memory
     * nothing wrote shows up as NaN in the results. For checks; the op zeroes what it relies on being zero.
     */
    public void setPoisonAllocations(boolean poison) {
        poisonAllocations = poison;
    }

    private int attribute(int attribute) {
        int[] v = new int[1];
        cuDeviceGetAttribute(v, attribute, device);
        return v[0];
    }

    /** Refuses use from any thread but the one that opened the device. */
    void checkThread() {
        if (closed) {
            throw new IllegalStateException("CUDA device " + name + " is closed");
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("CUDA device " + name + " is bound to thread '" + owner.getName()
                    + "', called from '" + Thread.currentThread().getName() + "'");
        }
    }

    CUstream stream() {
        return stream;
    }

    /** A kernel of module {@code module} ("kda" or "conv"), loading the module's PTX on first use. */
    CUfunction function(String module, String kernel) {
        checkThread();
        CUfunction f = functions.get(kernel);
        if (f != null) {
            return f;
        }
        CUmodule m = modules.get(module);
        if (m == null) {
            m = new CUmodule();
            try {
                cuModuleLoadData(m, PtxResources.load(module));
            } catch (CudaException e) {
                throw new CudaException("loading PTX " + PtxResources.resource(module) + " on " + name
                        + " (compute " + major + "." + minor + ", driver " + driverVersion() + "): " + e.getMessage());
            }
            modules.put(module, m);
        }
        f = new CUfunction();
        cuModuleGetFunction(f, m, kernel);
        if (LARGE_SHARED.contains(kernel)) {
            cuFuncSetAttribute(f, CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    MAX_DYNAMIC_SHARED);
        }
        functions.put(kernel, f);
        return f;
    }

    @Override
    public void launch(String module, String kernel, Launch launch, Object... args) {
        CUfunction f = function(module, kernel);
        Pointer[] params = new Pointer[args.length];
        for (int i = 0; i < args.length; i++) {
            params[i] = switch (args[i]) {
                case null -> Pointer.to(new CUdeviceptr());
                case CUdeviceptr p -> Pointer.to(p);
                case Integer v -> Pointer.to(new int[] {v});
                case Float v -> Pointer.to(new float[] {v});
                default -> throw new IllegalArgumentException("kernel argument " + i + " of " + kernel
                        + " has unsupported type " + args[i].getClass().getName());
            };
        }
        try {
            cuLaunchKernel(f, launch.gridX(), launch.gridY(), launch.gridZ(), launch.block(), 1, 1,
                    launch.sharedBytes(), stream, Pointer.to(params), null);
            if (syncAfterLaunch) {
                cuStreamSynchronize(stream);
            }
        } catch (CudaException e) {
            throw new CudaException(kernel + " grid " + launch.gridX() + "x" + launch.gridY() + "x" + launch.gridZ()
                    + " block " + launch.block() + " smem " + launch.sharedBytes() + ": " + e.getMessage());
        }
    }

    @Override
    public DeviceMemoryPool.DeviceBuffer alloc(long bytes) {
        checkThread();
        DeviceMemoryPool.DeviceBuffer b = pool.acquire(bytes);
        if (poisonAllocations) {
            cuMemsetD32Async(b.ptr(), QUIET_NAN_BITS, b.capacity() / 4, stream);
        }
        return b;
    }

    @Override
    public void free(DeviceMemoryPool.DeviceBuffer buffer) {
        if (buffer != null) {
            pool.release(buffer);
        }
    }

    @Override
    public void zero(DeviceMemoryPool.DeviceBuffer buffer, long words) {
        if (words > 0) {
            cuMemsetD32Async(buffer.ptr(), 0, words, stream);
        }
    }

    @Override
    public DeviceMemoryPool.DeviceBuffer upload(float[] values) {
        return upload(Pointer.to(values), 4L * values.length);
    }

    @Override
    public DeviceMemoryPool.DeviceBuffer upload(int[] values) {
        return upload(Pointer.to(values), 4L * values.length);
    }

    @Override
    public DeviceMemoryPool.DeviceBuffer upload(short[] values) {
        return upload(Pointer.to(values), 2L * values.length);
    }

    private DeviceMemoryPool.DeviceBuffer upload(Pointer host, long bytes) {
        DeviceMemoryPool.DeviceBuffer b = alloc(bytes);
        if (bytes > 0) {
            copyIn(b, host, bytes);
        }
        return b;
    }

    /**
     * Synchronous copy from a Java array. Our stream is non-blocking, so it does not wait for the legacy stream
     * that cuMemcpyHtoD uses, and from pageable memory that call may return before the DMA has landed: the context
     * synchronise makes the data visible to every later launch. (Async copies from Java arrays are unsafe: JCuda
     * releases the array when the call returns.)
     */
    private void copyIn(DeviceMemoryPool.DeviceBuffer b, Pointer host, long bytes) {
        synchronize();
        cuMemcpyHtoD(b.ptr(), host, bytes);
        cuCtxSynchronize();
    }

    @Override
    public float[] download(DeviceMemoryPool.DeviceBuffer buffer, int count) {
        float[] out = new float[count];
        synchronize();
        if (count > 0) {
            cuMemcpyDtoH(Pointer.to(out), buffer.ptr(), 4L * count);
        }
        return out;
    }

    @Override
    public short[] downloadShorts(DeviceMemoryPool.DeviceBuffer buffer, int count) {
        short[] out = new short[count];
        synchronize();
        if (count > 0) {
            cuMemcpyDtoH(Pointer.to(out), buffer.ptr(), 2L * count);
        }
        return out;
    }

    public void synchronize() {
        checkThread();
        cuStreamSynchronize(stream);
    }

    /** Mean milliseconds of {@code body} over {@code reps} runs on the stream, timed with CUDA events. */
    public double timeMillis(Runnable body, int reps) {
        checkThread();
        CUevent start = new CUevent();
        CUevent stop = new CUevent();
        cuEventCreate(start, CUevent_flags.CU_EVENT_DEFAULT);
        cuEventCreate(stop, CUevent_flags.CU_EVENT_DEFAULT);
        try {
            cuEventRecord(start, stream);
            for (int i = 0; i < reps; i++) {
                body.run();
            }
            cuEventRecord(stop, stream);
            cuEventSynchronize(stop);
            float[] ms = new float[1];
            cuEventElapsedTime(ms, start, stop);
            return ms[0] / reps;
        } finally {
            cuEventDestroy(start);
            cuEventDestroy(stop);
        }
    }

    /** Bytes the memory pool holds on the device. */
    public long pooledBytes() {
        return pool.allocatedBytes();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        checkThread();
        cuCtxSynchronize();
        pool.close();
        for (CUmodule m : new ArrayList<>(modules.values())) {
            cuModuleUnload(m);
        }
        cuStreamDestroy(stream);
        cuDevicePrimaryCtxRelease(device);
        closed = true;
    }
}
