#!/usr/bin/env bash
# Reproducible builds (issue 24): builds this commit twice from two clean clones in different
# directories and compares every jar the build makes (main, tests, sources, Javadoc) byte for byte.
# Usage: scripts/reproducible-check.sh [REV]   (default HEAD; Maven flags from MVN_FLAGS, e.g. -o)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
work=$(mktemp -d /tmp/rxe4j-repro.XXXXXX)
trap 'rm -rf "$work"' EXIT
for n in 1 2; do
  git clone -q "$repo" "$work/b$n"
  git -C "$work/b$n" checkout -q "$rev"
  # verify (the jars are made reproducible there), not install: the second build must not read the
  # first's jars from the local repository
  (cd "$work/b$n" && mvn -B -q ${MVN_FLAGS:-} -DskipTests verify) > "$work/build$n.log" 2>&1 || {
    echo "build $n failed:"; tail -30 "$work/build$n.log"; exit 1; }
  (cd "$work/b$n" && find . -path ./.git -prune -o -path '*/target/*.jar' -print | sort | xargs sha256sum) \
    > "$work/sums$n.txt"
done
n=$(wc -l < "$work/sums1.txt")
if [ "$n" -lt 5 ]; then
  echo "only $n jars built: nothing to compare"; exit 1
fi
if diff "$work/sums1.txt" "$work/sums2.txt" > "$work/diff.txt"; then
  echo "REPRODUCIBLE: $n jars byte-identical across two clean builds of $(git -C "$repo" rev-parse --short "$rev")"
else
  echo "NOT REPRODUCIBLE: jars that differ:"; cat "$work/diff.txt"; exit 1
fi
