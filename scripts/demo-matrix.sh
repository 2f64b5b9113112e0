#!/usr/bin/env bash
# Runs the demo matrix of README.md ("Measured: isolation vs no isolation") and prints its table rows:
# train.seed 1234, 1 and 2, each with and without isolation, at the CPU's native vector width, then seed 1234 with
# and without isolation at the other width (256-bit vectors, -XX:MaxVectorSize=32, on an AVX-512 CPU; 128-bit on an
# AVX2 one). Eight runs of the default configuration, one after the other (about two minutes each on 2 idle cores);
# JOBS=N runs N at a time (on a machine with more cores, or a busy one where the wall time matters more than the
# wall column). The results do not depend on it: a run's numbers are the same for any thread count.
#
#   scripts/demo-matrix.sh [RUNS_DIR]        (default runs/matrix-<date-time>; extra train flags in TRAIN_FLAGS)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-$root/runs/matrix-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$runs"

# field NAME JSON: the value of a top-level number or boolean field of a one-line JSON object.
field() { grep -o "\"$1\":[^,}]*" <<<"$2" | head -1 | cut -d: -f2; }

echo "| seed | vectors | isolation | final loss (mean of last 20 steps) | held-out answer loss | recall | bound keys | NONE | packed_vs_alone_rel_err | wall | tokens/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
run() { # run SEED WIDTH_LABEL JAVA_OPTS ISOLATION
  local seed=$1 width=$2 opts=$3 isolation=$4 name flags=()
  name="seed$seed-$width$([ "$isolation" = true ] || echo -no-isolation)"
  [ "$isolation" = true ] || flags+=(--no-isolation)
  local start end json
  start=$(date +%s)
  json=$(KDAPACK_TRAIN_SEED=$seed KDAPACK_JAVA_OPTS="$opts" "$root/kdapack" train --out "$runs/$name" "${flags[@]}" \
      ${TRAIN_FLAGS:-} 2>"$runs/$name.log")
  end=$(date +%s)
  local metrics="$runs/$name/metrics.jsonl"
  local last20 tps
  last20=$(tail -n 20 "$metrics" | grep -o '"loss":[^,}]*' | cut -d: -f2 | awk '{s+=$1} END {printf "%.4f", s/NR}')
  tps=$(grep -o '"tokens_per_s":[^,}]*' "$metrics" | cut -d: -f2 | awk '{s+=$1} END {printf "%.0f", s/NR}')
  printf '| %s | %s | %s | %s | %.4f | %.1f%% | %.1f%% | %.1f%% | %.1e | %s s | %s |\n' "$seed" "$width" "$isolation" \
      "$last20" "$(field heldout_answer_loss "$json")" "$(awk "BEGIN {print 100*$(field recall_accuracy "$json")}")" \
      "$(awk "BEGIN {print 100*$(field bound_recall "$json")}")" "$(awk "BEGIN {print 100*$(field none_recall "$json")}")" \
      "$(field packed_vs_alone_rel_err "$json")" "$((end - start))" "$tps" >"$runs/$name.row"
}
jobs_max=${JOBS:-1}
order=()
queue() { # queue SEED WIDTH_LABEL JAVA_OPTS ISOLATION: run it, at most JOBS at a time
  order+=("$runs/seed$1-$2$([ "$4" = true ] || echo -no-isolation).row")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run "$@" &
}
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ] && java=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
native_bytes=$("$java" -XX:+PrintFlagsFinal -version 2>/dev/null | awk '$2 == "MaxVectorSize" {print $4}')
other_bytes=$([ "$native_bytes" -gt 32 ] && echo 32 || echo 16)
for seed in 1234 1 2; do
  queue "$seed" "$((8 * native_bytes))-bit" "" true
  queue "$seed" "$((8 * native_bytes))-bit" "" false
done
queue 1234 "$((8 * other_bytes))-bit" "-XX:MaxVectorSize=$other_bytes" true
queue 1234 "$((8 * other_bytes))-bit" "-XX:MaxVectorSize=$other_bytes" false
wait
for row in "${order[@]}"; do
  cat "$row" || echo "| (no result: see ${row%.row}.log) |"
done
