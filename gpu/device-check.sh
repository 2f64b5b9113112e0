#!/usr/bin/env bash
# The one GPU check of the gpu module, for a lent GPU machine (no Java there). From the repository root:
#   gpu/device-check.sh [bundle dir]        (default gpu/target/device-bundle, built by gpu/build-device-bundle.sh)
# Runs io.kdapack.gpu.DeviceCheck: every golden case of testkit/src/main/resources/golden/{kda,conv} on the CUDA backend
# (fp32: rel. err <= 1e-5 outputs, <= 1e-4 gradients), fresh random problems against the CPU backends (fp32 and
# bf16), then fwd and fwd+bwd timings at T=8192, H=16, K=V=128, bf16, one document vs 64 packed documents; the
# timing table comes last. Exit status: 0 all passed, 1 a check failed, 2 no bundle, 3 no CUDA driver or device.
# Set SANITIZE=1 to run the golden and random checks (no timings) under compute-sanitizer memcheck instead.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="${1:-$root/gpu/target/device-bundle}"
if [ ! -f "$bundle/runtime.tar.xz" ]; then
  echo "device-check: no bundle at $bundle; run gpu/build-device-bundle.sh and carry gpu/target/device-bundle" >&2
  exit 2
fi
runtime="${TMPDIR:-/tmp}/kdapack-runtime"
rm -rf "$runtime" && mkdir -p "$runtime"
if ! tar -C "$runtime" -xJf "$bundle/runtime.tar.xz" 2>/dev/null; then
  # no xz on the machine: Python's lzma reads it
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
      "$bundle/runtime.tar.xz" "$runtime" || { echo "device-check: cannot unpack the runtime" >&2; exit 2; }
fi
# libcuda.so.1 comes with the driver; the container images mount it here when ldconfig does not list it.
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/nvidia/lib64:/usr/local/nvidia/lib"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
java=("$runtime/bin/java" -Xmx8g --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp "$bundle/lib/*")
golden="$root/testkit/src/main/resources/golden"
if [ "${SANITIZE:-0}" = 1 ]; then
  exec compute-sanitizer --tool memcheck --error-exitcode 1 "${java[@]}" io.kdapack.gpu.DeviceCheck "$golden" --no-bench
fi
exec "${java[@]}" io.kdapack.gpu.DeviceCheck "$golden"
