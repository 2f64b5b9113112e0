package io.kdapack.gpu;

import io.kdapack.core.backend.DeviceBackendProvider;
import io.kdapack.core.kda.KdaBackend;

/** The CUDA backend as core's {@link DeviceBackendProvider}: GPU 0 through the JCuda driver API. */
public final class CudaBackendProvider implements DeviceBackendProvider {

    @Override
    public String unavailableReason() {
        return CudaDevice.unavailableReason();
    }

    @Override
    public KdaBackend openKda() {
        return new CudaKdaBackend(CudaDevice.open(0));
    }
}
