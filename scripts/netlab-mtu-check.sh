#!/usr/bin/env bash
# netlab-mtu-check.sh: issue 19 item 2 across a real kernel IP stack (../shared/netlab, root).
#
# On `netlab.sh direct 1500` (nl-a 10.77.0.1 == veth MTU 1500 == nl-b 10.77.0.2), one process per
# namespace, with the tools' default options:
#   - bin/rxe-perf write_bw, read_bw and atomic_lat pass, and both sides report port active MTU 1024;
#   - bin/rxe-demo server/client pass and report port active MTU 1024;
#   - rxe-perf write_bw with an explicit -m 4096 fails fast (well before one ACK timeout series) with
#     LOC_QP_OP_ERR naming the MTUs, not RETRY_EXC_ERR "no acknowledgement";
#   - rxe-perf write_bw -D 10 with defaults survives a 2 s link flap (eth0 of nl-a down, then up);
# and on loopback (no lab) rxe-perf reports port active MTU 4096.
#
# Needs `mvn -B -o -q package -DskipTests` first (bin/ launchers). Holds /tmp/netlab.lock for the
# whole run (one lab at a time on a machine) and always runs `netlab.sh down` at the end.
# Usage: scripts/netlab-mtu-check.sh [OUT_DIR]   (logs of every process go to OUT_DIR)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETLAB=${NETLAB:-$ROOT/../shared/netlab/netlab.sh}
[ -x "$NETLAB" ] || NETLAB=/work/shared/netlab/netlab.sh
OUT=${1:-/tmp/rxe4j-netlab-mtu-$$}
mkdir -p "$OUT"
cd "$ROOT"

exec 9>/tmp/netlab.lock
flock 9
FAILS=0
ok() { echo "PASS  $*"; }
bad() { echo "FAIL  $*"; FAILS=$((FAILS + 1)); }
cleanup() {
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    "$NETLAB" down >/dev/null 2>&1
}
trap cleanup EXIT

# waits (at most 60 s) until file $1 contains $2
wait_for() {
    for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}

# loopback first, without the lab: one process, both devices on 127.0.0.1
bin/rxe-perf write_bw --transport nio -n 200 -w 0 >"$OUT/loopback.log" 2>&1
if grep -q "port active MTU 4096" "$OUT/loopback.log"; then ok "loopback: port active MTU 4096"
else bad "loopback: port active MTU 4096 (see $OUT/loopback.log)"; fi

"$NETLAB" down >/dev/null 2>&1
"$NETLAB" direct 1500 >"$OUT/netlab.log" 2>&1 || { bad "netlab direct 1500"; exit 1; }
ip -n nl-a addr show eth0 | grep -q "10.77.0.1" || { bad "the lab has no 10.77.0.1 in nl-a"; exit 1; }

PORT=18600
perf_pair() { # name test [extra args for both sides]
    local name=$1 test=$2; shift 2
    PORT=$((PORT + 1))
    ip netns exec nl-b bin/rxe-perf "$test" --server -p "$PORT" "$@" >"$OUT/$name.server.log" 2>&1 &
    local srv=$!
    wait_for "$OUT/$name.server.log" "waiting on TCP port" || { bad "$name: server did not start"; return 1; }
    local t0=$SECONDS
    timeout 300 ip netns exec nl-a bin/rxe-perf "$test" --connect "10.77.0.2:$PORT" "$@" >"$OUT/$name.client.log" 2>&1
    local rc=$?
    ELAPSED=$((SECONDS - t0))
    wait "$srv" 2>/dev/null
    return $rc
}

for t in write_bw read_bw atomic_lat; do
    if perf_pair "$t" "$t"; then
        if grep -q "MTU: 1024 (port active MTU 1024)" "$OUT/$t.client.log" \
                && grep -q "port active MTU 1024 (link MTU 1500)" "$OUT/$t.server.log"; then
            ok "rxe-perf $t with defaults over MTU 1500: path MTU 1024, port active MTU 1024 on both sides (${ELAPSED} s)"
        else
            bad "rxe-perf $t passed but did not report active MTU 1024 (see $OUT/$t.*.log)"
        fi
    else
        bad "rxe-perf $t with defaults over MTU 1500 (see $OUT/$t.*.log)"
    fi
done

# the demo, server in nl-b and client in nl-a, default options but the addresses
ip netns exec nl-b bin/rxe-demo server --bind 10.77.0.2 --udp-port 4791 --cm-port 7000 >"$OUT/demo.server.log" 2>&1 &
DEMO=$!
if wait_for "$OUT/demo.server.log" "LISTENING" \
        && timeout 300 ip netns exec nl-a bin/rxe-demo client --bind 10.77.0.1 --connect 10.77.0.2:7000 \
            >"$OUT/demo.client.log" 2>&1; then
    wait "$DEMO"; DRC=$?
    if [ $DRC -eq 0 ] && grep -q "port active MTU 1024 (link MTU 1500), path MTU 1024" "$OUT/demo.client.log" \
            && grep -q "port active MTU 1024 (link MTU 1500), path MTU 1024" "$OUT/demo.server.log"; then
        ok "rxe-demo server/client with defaults over MTU 1500: path MTU 1024, port active MTU 1024"
    else
        bad "rxe-demo: server exit $DRC or no active MTU 1024 line (see $OUT/demo.*.log)"
    fi
else
    bad "rxe-demo client with defaults over MTU 1500 (see $OUT/demo.*.log)"
    kill "$DEMO" 2>/dev/null
fi

# an explicit path MTU above the link: must fail fast with the local error naming the MTUs
if perf_pair write_bw-m4096 write_bw -m 4096; then
    bad "rxe-perf write_bw -m 4096 over MTU 1500 passed: its 4 KiB packets cannot cross the link"
else
    if grep -q "LOC_QP_OP_ERR" "$OUT/write_bw-m4096.client.log" \
            && grep -q "Message too long" "$OUT/write_bw-m4096.client.log" \
            && grep -q "path MTU 4096 > the port's active MTU 1024 for link MTU 1500" "$OUT/write_bw-m4096.client.log" \
            && ! grep -q "RETRY_EXC_ERR" "$OUT/write_bw-m4096.client.log"; then
        ok "rxe-perf write_bw -m 4096 over MTU 1500 fails with LOC_QP_OP_ERR naming the MTUs (${ELAPSED} s in all)"
    else
        bad "rxe-perf write_bw -m 4096: not the local error naming the MTUs (see $OUT/write_bw-m4096.client.log)"
    fi
fi

# a 2 s link flap during a 10 s write_bw with default options (issue 19 item 6): the refused sends
# ("Network is unreachable") are losses the retransmit timer recovers (ACK timeout 17: 4.3 s budget)
( sleep 4; ip netns exec nl-a ip link set eth0 down; sleep 2; ip netns exec nl-a ip link set eth0 up ) &
FLAP=$!
if perf_pair write_bw-flap write_bw -D 10; then
    wait "$FLAP"
    ok "rxe-perf write_bw -D 10 with defaults survives a 2 s link flap ($(grep 'requester counters' \
        "$OUT/write_bw-flap.client.log" | grep -o 'send_err=[0-9]*\|retransmit_timeouts=[0-9]*' | tr '\n' ' ')${ELAPSED} s)"
else
    wait "$FLAP"
    bad "rxe-perf write_bw -D 10 failed across a 2 s link flap (see $OUT/write_bw-flap.*.log)"
fi

echo "logs: $OUT"
[ $FAILS -eq 0 ] && echo "netlab-mtu-check: all passed" || echo "netlab-mtu-check: $FAILS failed"
exit $FAILS
