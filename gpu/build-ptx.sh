#!/usr/bin/env bash
# Builds the PTX that the gpu jar ships, from src/main/cuda into src/main/resources/io/kdapack/gpu/ptx:
#   <module>.ptx             compute_75: the driver JIT-compiles it for any GPU of compute capability >= 7.5,
#                            Hopper (H100/H200) included (an sm_90 build was the same PTX but for its .target line)
#   SOURCES.sha256           SHA-256 of the sources (kda_common.cuh, kda.cu, conv.cu concatenated), which a unit
#                            test compares with the sources, so stale committed PTX fails the build anywhere.
# PTX is regenerated only when the sources changed; ptxas then reports registers, shared memory and spills of every
# kernel for sm_90. Without nvcc this does nothing and the committed PTX is used. Run by Maven (profile `nvcc`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/src/main/cuda"
out="$here/src/main/resources/io/kdapack/gpu/ptx"
nvcc="$(command -v nvcc || true)"
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "build-ptx: nvcc not found; the committed PTX in $out is used"
  exit 0
fi
ptxas="$(dirname "$nvcc")/ptxas"
[ -x "$ptxas" ] || ptxas="$(command -v ptxas)"
mkdir -p "$out"
hash="$(cat "$src/kda_common.cuh" "$src/kda.cu" "$src/conv.cu" | sha256sum | cut -d' ' -f1)"
modules="kda conv"
stale=0
[ "$(cat "$out/SOURCES.sha256" 2>/dev/null || true)" = "$hash" ] || stale=1
for m in $modules; do
  [ -f "$out/$m.ptx" ] || stale=1
done
if [ "$stale" = 1 ]; then
  echo "build-ptx: sources changed, compiling PTX with $("$nvcc" --version | tail -1)"
  pids=()
  for m in $modules; do
    "$nvcc" -ptx -O3 -std=c++17 -arch=compute_75 -o "$out/$m.ptx" "$src/$m.cu" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  echo "$hash" > "$out/SOURCES.sha256"
  echo "build-ptx: updated $out (commit it)"
else
  echo "build-ptx: PTX up to date with the sources ($hash)"
fi
for m in $modules; do
  echo "build-ptx: ptxas -arch=sm_90 -v $m.ptx"
  "$ptxas" -arch=sm_90 -v -o /dev/null "$out/$m.ptx" 2>&1 \
    | sed -n "s/^ptxas info    : Compiling entry function '\(.*\)' for 'sm_90'/  \1/p; s/^ptxas info    : \(Used .*\)/      \1/p; s/^ *\([0-9]* bytes stack frame.*\)/      \1/p"
done
