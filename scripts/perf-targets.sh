#!/usr/bin/env bash
# Runs the issue-13 target matrix of rxe-perf --compare RUNS times per row and keeps every JSON result,
# for scripts/perf-targets.py to turn into medians. Both ends run in this process, on loopback.
#
#   scripts/perf-targets.sh OUTDIR [RUNS]      (default RUNS=5; build the tools first, see README)
#   ONLY='io_uring|epoll' scripts/perf-targets.sh OUTDIR 5     (only the rows whose name matches the regex)
#
# Nothing else should run on the machine meanwhile: the ratios are same-run, but a busy machine
# still shifts them. Takes about 25 minutes for 5 runs of every row.
#
#   BW='-D 5 -w 2' scripts/perf-targets.sh OUTDIR 5   (the bandwidth rows' duration and warm-up; default
#   issue 25's -D 3 -w 1: a 0.5 s warm-up leaves the engine's hot paths partly uncompiled)
set -euo pipefail
out=${1:?usage: perf-targets.sh OUTDIR [RUNS]}
runs=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
perf="$here/bin/rxe-perf"
mkdir -p "$out"
read -r -a bw <<< "${BW:--D 3 -w 1}"
only=${ONLY:-}
row() {  # NAME ARGS...
  local name=$1; shift
  if [[ -n "$only" && ! "$name" =~ $only ]]; then return 0; fi
  for r in $(seq 1 "$runs"); do
    "$perf" "$@" --compare --json > "$out/$name.$r.json" 2> "$out/$name.$r.err" || {
      echo "perf-targets: $name run $r failed, see $out/$name.$r.err" >&2; exit 1; }
    printf '%s run %d done\n' "$name" "$r"
  done
}
for t in write_bw read_bw send_bw; do
  row "$t-64k-nio"           "$t" -s 65536 --transport nio "${bw[@]}"
  row "$t-64k-epoll"         "$t" -s 65536 --transport epoll "${bw[@]}"
  # GSO over IPv6 (::1): over IPv4 its segments carry IP IDs that break the ICRC for non-rxe4j peers
  row "$t-64k-epoll-gso-gro" "$t" -s 65536 --transport epoll --gso --gro --ipv6 "${bw[@]}"
  row "$t-64k-io_uring"      "$t" -s 65536 --transport io_uring "${bw[@]}"
  row "$t-64k-io_uring-gso"  "$t" -s 65536 --transport io_uring --gso --ipv6 "${bw[@]}"
done
row write_bw-64-nio           write_bw -s 64 --transport nio "${bw[@]}"
row write_bw-64-epoll         write_bw -s 64 --transport epoll "${bw[@]}"
row write_bw-64-epoll-gso-gro write_bw -s 64 --transport epoll --gso --gro --ipv6 "${bw[@]}"
row write_bw-64-io_uring      write_bw -s 64 --transport io_uring "${bw[@]}"
row atomic_bw-nio             atomic_bw --transport nio "${bw[@]}"
row atomic_bw-epoll           atomic_bw --transport epoll "${bw[@]}"
row atomic_bw-io_uring        atomic_bw --transport io_uring "${bw[@]}"
lat=(--transport epoll -n 5000 -w 0.5)
row atomic_lat-busy    atomic_lat "${lat[@]}"
row atomic_lat-events  atomic_lat "${lat[@]}" --events
row atomic_lat-backoff atomic_lat "${lat[@]}" --backoff
row atomic_lat-io_uring-busy   atomic_lat --transport io_uring -n 5000 -w 0.5
row atomic_lat-io_uring-events atomic_lat --transport io_uring -n 5000 -w 0.5 --events
