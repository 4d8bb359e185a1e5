#!/usr/bin/env bash
# Builds rxe-benchmarks (Maven profile "bench") and runs JMH on a JDK 25 with the GC profiler
# (gc.alloc.rate.norm = bytes allocated per operation). See docs/performance.md, "JMH".
#
#   rxe-benchmarks/run.sh                                  # every benchmark (~30 min on 2 cores)
#   rxe-benchmarks/run.sh 'WireBench|PostSendBench|CqBench' # a regexp of benchmarks
#   rxe-benchmarks/run.sh PostSendBench -p size=64 -wi 2 -i 3   # any further JMH options
#   BENCH_SKIP_BUILD=1 rxe-benchmarks/run.sh ...            # reuse rxe-benchmarks/target/benchmarks.jar
#   rxe-benchmarks/run.sh PostSendBench -jvmArgsAppend -Dio.netty.leakDetection.level=disabled
#       # extra fork JVM options: -jvmArgsAppend (the benchmarks keep theirs in @Fork(jvmArgsPrepend))
#
# Environment: JAVA_HOME (used if it is a JDK 25, else the first /usr/lib/jvm/*25* that is).
# Results also go to rxe-benchmarks/target/jmh-result.txt. Note `uptime` next to any figure:
# other builds on the machine skew them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

# shellcheck source=../scripts/java25.sh
. "$root/scripts/java25.sh"

java=$(find_java25) || { echo "run.sh: no JDK 25 found (JAVA_HOME or /usr/lib/jvm/*25*)" >&2; exit 2; }

if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
    # Maven runs on its own JDK; the toolchain compiles with JDK 25 (see the parent pom).
    (cd "$root" && mvn -B -q -Pbench -DskipTests package -pl rxe-benchmarks -am)
fi
jar="$here/target/benchmarks.jar"
[ -f "$jar" ] || { echo "run.sh: $jar not built" >&2; exit 2; }

echo "run.sh: $java, load: $(uptime)"
exec "$java" --enable-native-access=ALL-UNNAMED -jar "$jar" -prof gc -rf text -rff "$here/target/jmh-result.txt" "$@"
