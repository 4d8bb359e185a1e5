#!/usr/bin/env bash
# Builds rxe-jcstress (Maven profile "jcstress") and runs the ATOMIC WRITE jcstress tests on a JDK 25.
# Exits non-zero if the build fails, no test ran, any test failed (a FORBIDDEN outcome was seen)
# or errored. See docs/jcstress.md.
#
#   rxe-jcstress/run.sh                       # quick mode, tests matching "AtomicWrite" (~5 min on 2 cores),
#                                             # including the negative control (a plain store, whose
#                                             # reordering is ACCEPTABLE_INTERESTING)
#   JCSTRESS_MODE=sanity rxe-jcstress/run.sh  # smoke run (~1 min): checks the harness, proves little
#   JCSTRESS_SKIP_BUILD=1 ...                 # reuse rxe-jcstress/target/jcstress.jar
#
# Environment: JCSTRESS_MODE (sanity|quick|default|tough|stress, default quick), JCSTRESS_TESTS
# (test regexp, default AtomicWrite), JCSTRESS_ARGS (extra jcstress options), JAVA_HOME (used to
# run the tests if it is a JDK 25, else the first /usr/lib/jvm/*25* that is).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
mode=${JCSTRESS_MODE:-quick}
tests=${JCSTRESS_TESTS:-AtomicWrite}

# shellcheck source=../scripts/java25.sh
. "$root/scripts/java25.sh"

java=$(find_java25) || { echo "run.sh: no JDK 25 found (JAVA_HOME or /usr/lib/jvm/*25*)" >&2; exit 2; }
echo "run.sh: running jcstress with $java"

if [ -z "${JCSTRESS_SKIP_BUILD:-}" ]; then
    # Maven runs on its own JDK; the toolchain compiles with JDK 25 (see the parent pom).
    (cd "$root" && mvn -B -q -Pjcstress -DskipTests package -pl rxe-jcstress -am)
fi
jar="$here/target/jcstress.jar"
[ -f "$jar" ] || { echo "run.sh: $jar not built" >&2; exit 2; }

out="$here/target/jcstress-run"
rm -rf "$out"
mkdir -p "$out"
log="$out/jcstress.log"
status=0
# jcstress writes its result blob to the working directory
# --enable-native-access in the forked VMs: jcstress loads JNA (affinity), a restricted method on JDK 25
(cd "$out" && "$java" -jar "$jar" -t "$tests" -m "$mode" -v -r "$out/results" \
    -jvmArgsPrepend --enable-native-access=ALL-UNNAMED ${JCSTRESS_ARGS:-}) 2>&1 \
    | tee "$log" || status=$?

# jcstress 0.16 exits 0 even when tests fail: judge by its report.
# Last progress line: "(Results: 84 planned; 84 passed, 0 failed, 0 soft errs, 0 hard errs)"
counts=$(grep -E '^\(Results: ' "$log" | tail -1 || true)
num() { sed -nE "s/.* ([0-9]+) $1.*/\1/p" <<<"$counts"; }
planned=$(sed -nE 's/^\(Results: ([0-9]+) planned.*/\1/p' <<<"$counts")
passed=$(num passed); failed=$(num failed); soft=$(num 'soft errs'); hard=$(num 'hard errs')
planned=${planned:-0}; passed=${passed:-0}; failed=${failed:-0}; soft=${soft:-0}; hard=${hard:-0}

ok=1
[ "$status" -eq 0 ] || { echo "run.sh: jcstress exited with $status" >&2; ok=0; }
if [ "$planned" -eq 0 ]; then
    echo "run.sh: no test ran (selector \"$tests\")" >&2; ok=0
elif [ "$passed" -ne "$planned" ]; then
    echo "run.sh: $passed of $planned results passed" >&2; ok=0
fi
[ "$failed" -eq 0 ] && [ "$soft" -eq 0 ] && [ "$hard" -eq 0 ] || ok=0
grep -q '^  Failed tests: No matches\.' "$log" || { echo "run.sh: jcstress reports failed tests (FORBIDDEN outcomes)" >&2; ok=0; }
grep -q '^  Error tests: No matches\.' "$log" || { echo "run.sh: jcstress reports test errors" >&2; ok=0; }

# the negative control's reorderings are ACCEPTABLE_INTERESTING: say whether any was seen
interesting=$(grep -E '^  Interesting tests' "$log" | tail -1 || true)
echo "${interesting:-  Interesting tests: (none reported)}"
echo "report: $out/results/index.html"
echo "jcstress: $passed passed, $((failed + soft + hard)) failed"
[ "$ok" -eq 1 ] || exit 1
