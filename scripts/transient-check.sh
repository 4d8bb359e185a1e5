#!/usr/bin/env bash
# Transient check (issue 19 item 6): N fresh two-process rxe-perf runs (a server JVM and a client JVM,
# default options except a short -n and no warm-up, so the measured WQEs are the first ones) on
# loopback while BUSY busy processes load the machine (default: 2x its cores). Counts failed runs and,
# from both sides' device counters, resent_pkts and retransmit_timeouts. A fresh pair of JVMs with the
# defaults must never fail, and should not resend, its first operations on a loss-free path.
#
#   scripts/transient-check.sh                 # N=20 BUSY=2xcores TESTS="write_bw read_bw send_lat atomic_lat"
#   N=5 BUSY=0 scripts/transient-check.sh      # idle machine
#   EXTRA="--ack-timeout 14" scripts/transient-check.sh   # extra options for both sides
#
# Uses bin/rxe-perf (build the tools first: mvn -B package -DskipTests -pl rxe-examples -am).
# Exit code: 0 when no run failed, 1 otherwise. The busy processes are bounded (timeout) and killed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
perf="$root/bin/rxe-perf"
n=${N:-20}
cores=$(nproc 2>/dev/null || echo 2)
busy=${BUSY:-$((2 * cores))}
tests=(${TESTS:-write_bw read_bw send_lat atomic_lat})
iters=${ITERS:-300}
transport=${TRANSPORT:-nio}
extra=${EXTRA:-}
work=$(mktemp -d)
busy_pids=()
cleanup() {
    for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
for ((b = 0; b < busy; b++)); do
    timeout 1800 sh -c 'yes > /dev/null' &
    busy_pids+=($!)
done
# num NAME FILE LINE: NAME=<n> of the line of FILE that matches LINE (0 if none): the client's own
# "requester counters: {...}" line, the server's "client says DONE; counters {...}" line
num() { grep -m1 -e "$3" "$2" | grep -o "[{ ,]$1=[0-9]*" | sed 's/.*=//' | awk '{s += $1} END {print s + 0}'; }
failed=0 resent_c=0 resent_s=0 timeouts_c=0 timeouts_s=0 dirty=0
echo "transient-check: $n runs, $busy busy processes on $cores cores, tests ${tests[*]}, -n $iters -w 0, --transport $transport ${extra:+($extra)}"
for ((i = 0; i < n; i++)); do
    t=${tests[$((i % ${#tests[@]}))]}
    port=$((21000 + (RANDOM % 8000)))
    slog="$work/server-$i.log" clog="$work/client-$i.log"
    # shellcheck disable=SC2086
    timeout 120 "$perf" "$t" --server -p "$port" --transport "$transport" $extra > "$slog" 2>&1 &
    spid=$!
    for ((w = 0; w < 600; w++)); do # until the server listens (at most 60 s)
        grep -q "waiting on TCP port" "$slog" 2>/dev/null && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    # shellcheck disable=SC2086
    timeout 120 "$perf" "$t" --connect "127.0.0.1:$port" --transport "$transport" -n "$iters" -w 0 $extra > "$clog" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    spid=
    rc_=$(num resent_pkts "$clog" "requester counters\|; counters {") rs_=$(num resent_pkts "$slog" "client says")
    tc_=$(num retransmit_timeouts "$clog" "requester counters\|; counters {") ts_=$(num retransmit_timeouts "$slog" "client says")
    resent_c=$((resent_c + rc_)) resent_s=$((resent_s + rs_))
    timeouts_c=$((timeouts_c + tc_)) timeouts_s=$((timeouts_s + ts_))
    status=ok
    if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
        status="FAILED (client rc $crc, server rc $src)"
        failed=$((failed + 1))
    fi
    [ $((rc_ + rs_ + tc_ + ts_)) -gt 0 ] && dirty=$((dirty + 1))
    printf 'run %2d %-10s %s  resent_pkts client=%d server=%d  retransmit_timeouts client=%d server=%d\n' \
        "$i" "$t" "$status" "$rc_" "$rs_" "$tc_" "$ts_"
    if [ "$status" != ok ]; then
        echo "  --- client:"; grep -v '^[[:space:]]*at ' "$clog" | tail -n 4 | cut -c1-400 | sed 's/^/  /'
        echo "  --- server:"; grep -v '^[[:space:]]*at ' "$slog" | tail -n 4 | cut -c1-400 | sed 's/^/  /'
    fi
done
echo "transient-check: $failed of $n runs failed; $dirty of $n resent; resent_pkts client=$resent_c server=$resent_s;" \
    "retransmit_timeouts client=$timeouts_c server=$timeouts_s"
[ "$failed" = 0 ]
