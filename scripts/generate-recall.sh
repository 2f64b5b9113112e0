#!/usr/bin/env bash
# Checks a finished demo run (default: `./kdapack train`) the way GenerateCommandTest checks its own short run: greedy
# `kdapack generate` on each held-out recall query (its document up to the queried key, one token) against the eval of
# `kdapack train` on the run's checkpoint, query by query, and that eval against the run's eval.json. Prints one line:
# queries, generate's recalled answers and accuracy, eval.json's recall_accuracy, greedy accuracy, the borderline
# queries (|loss − ln 2| within the tolerance) and the largest log-probability difference (docs/inference.md).
#
#   scripts/generate-recall.sh RUN_DIR        (builds with Maven; the test fails if they disagree)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 1 ] && [ -f "$1/eval.json" ] || { echo "usage: $0 RUN_DIR (a kdapack train run with eval.json)" >&2; exit 2; }
run="$(cd "$1" && pwd)"
[ -d /usr/lib/jvm/temurin-25-jdk-amd64 ] && export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if mvn -B -q -f "$root/pom.xml" -pl cli -am verify -Dptx.skip=true -Dsurefire.failIfNoSpecifiedTests=false \
    -Dtest='GenerateCommandTest#greedyGenerateAnswersTheHeldOutQueriesWithTheAccuracyOfTheTrainEval' \
    -Dkdapack.recall.run="$run" >"$log" 2>&1; then
  grep ' held-out queries; ' "$log"
else
  grep -v '^WARNING' "$log" | tail -40 >&2
  exit 1
fi
