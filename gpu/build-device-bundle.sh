#!/usr/bin/env bash
# Builds gpu/target/device-bundle: what gpu/device-check.sh needs on a GPU machine that has no Java.
#   runtime.tar.xz  a jlink'ed Java runtime (java.base, java.logging for JCuda, the Vector API for core's CPU
#                   kernels), xz-compressed: libjvm.so alone is 29 MB unpacked; device-check.sh unpacks it to /tmp
#   lib/            the gpu jar, core and the runtime dependencies the check loads; JCuda's natives jar cut down
#                   to the driver binding. Config's Vert.x/Netty stack is left out (nothing here loads it).
# The device tool carries it with `carry: ["gpu/target/device-bundle"]`; the whole working tree that travels must
# stay under 64 MiB, so the bundle is held to a 30 MiB budget here.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/gpu/target/device-bundle"
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
budget_mib=30

rm -rf "$out"
mkdir -p "$out/lib"
mvn -B -q -f "$root/pom.xml" -pl gpu -am -DskipTests -Dptx.skip package \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$out/lib" \
    -DexcludeGroupIds=io.vertx,io.netty,org.yaml
# The device check lives in the gpu module's test sources, beside the code it checks: ship its test classes too.
cp "$root"/gpu/target/kdapack-gpu-*.jar "$out/lib/"
"$JAVA_HOME/bin/jar" cf "$out/lib/kdapack-gpu-check.jar" -C "$root/gpu/target/test-classes" .
# The reactor copies every module's dependencies: keep the newest version of each artifact.
for base in $(ls "$out/lib" | sed -E 's/-[0-9][0-9.]*(-SNAPSHOT|\.Final)?(-linux-x86_64)?\.jar$//' | sort | uniq -d); do
  ls "$out/lib/$base"-[0-9]*.jar | sort -V | head -n -1 | xargs rm -f
done

# JCuda's natives jar holds NVRTC, the PTX compiler and the runtime binding too (26 MB); the driver binding is all
# that is used (libJCudaDriver needs only libcuda.so.1 on the target).
natives="$(ls "$out"/lib/jcuda-natives-*-linux-x86_64.jar)"
tmp="$(mktemp -d)"
(cd "$tmp" && "$JAVA_HOME/bin/jar" xf "$natives" && rm -f "$natives" \
  && "$JAVA_HOME/bin/jar" cf "$natives" lib/libJCudaDriver-*-linux-x86_64.so)
rm -rf "$tmp"

modules="java.base,java.logging,jdk.incubator.vector"
rm -rf "$out/runtime"
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages --compress zip-6 \
    --output "$out/runtime"
tar -C "$out/runtime" -cf - . | xz -6 -T2 > "$out/runtime.tar.xz"
# Check here that the packed runtime reads the golden cases and runs the CPU reference (then stops at the driver).
set +e
"$out/runtime/bin/java" --add-modules jdk.incubator.vector -cp "$out/lib/*" io.kdapack.gpu.DeviceCheck \
    "$root/testkit/src/main/resources/golden" 2>/dev/null
status=$?
set -e
rm -rf "$out/runtime"
if [ "$status" != 3 ] && [ "$status" != 0 ]; then
  echo "device bundle: DeviceCheck failed on this machine (exit $status)" >&2
  exit 1
fi

size_kib="$(du -sk "$out" | cut -f1)"
echo "device bundle: $out ($((size_kib / 1024)) MiB; runtime modules $modules)"
if [ "$size_kib" -gt $((budget_mib * 1024)) ]; then
  echo "device bundle exceeds its $budget_mib MiB budget" >&2
  exit 1
fi
