#!/usr/bin/env bash
# Runs the CUDA kernel sources on the CPU (src/test/cuda/emu.h: blocks in sequence, threads as OS threads meeting
# at a barrier) through the same launch sequence as the Java host, on every golden case, fp32 and bf16 inputs.
# Needs g++ with C++20; about 2-3 minutes per precision on 2 cores. Exit status 1 when a tolerance is missed.
#   fp32: rel. err <= 1e-5 outputs/final states, <= 1e-4 gradients (the golden README's bounds)
#   bf16: <= 2e-2 outputs, <= 5e-2 gradients (inputs rounded to bf16, compared with the fp32-input reference)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/target/golden_check"
mkdir -p "$here/target"
g++ -std=c++20 -O2 -pthread -o "$bin" "$here/src/test/cuda/golden_check.cpp"
status=0
for precision in ${1:-fp32 bf16}; do
  "$bin" "$here/../testkit/src/main/resources/golden" "$precision" || status=1
done
exit $status
