#!/usr/bin/env bash
# The serial share of `kdapack bench model`'s step: runs the benchmark under JFR's CPU-time sampler (JDK 25) and
# prints the fraction of the step's CPU samples that run on one thread whatever the pool's size, and where
# (scripts/serial-profile.py; docs/kda.md, "Serial sections of the step"). The arguments go to `bench model`, e.g.
#
#   scripts/serial-profile.sh --config bench/configs/ling-23m.yaml --rows 2 --length 2048 --mean-doc 512 \
#       --warmup 0 --repeats 1 --no-blas
#
# JAR=path/to/kdapack.jar profiles another build (default: this checkout's, built by ./kdapack when stale).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -d /usr/lib/jvm/temurin-25-jdk-amd64 ] && export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/cpu.jfc" <<'JFC'
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0">
  <event name="jdk.CPUTimeSample">
    <setting name="enabled">true</setting><setting name="throttle">5 ms</setting><setting name="stackTrace">true</setting>
  </event>
</configuration>
JFC
jfr_opts="-XX:FlightRecorderOptions:stackdepth=512 -XX:StartFlightRecording=filename=$work/rec.jfr,settings=$work/cpu.jfc"
if [ -n "${JAR:-}" ]; then
  "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector $jfr_opts -jar "$JAR" bench model "$@" 2>/dev/null
else
  KDAPACK_JAVA_OPTS="${KDAPACK_JAVA_OPTS:-} $jfr_opts" "$root/kdapack" bench model "$@" 2>/dev/null
fi
"$JAVA_HOME/bin/jfr" print --json --events jdk.CPUTimeSample "$work/rec.jfr" >"$work/rec.json"
python3 "$root/scripts/serial-profile.py" "$work/rec.json"
