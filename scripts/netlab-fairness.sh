#!/usr/bin/env bash
# netlab-fairness.sh: two rxe4j process pairs through one netlab bottleneck at once; Jain's fairness index
# of their goodputs (issue 21: "two processes Jain >= 0.95"). Root; ../shared/netlab.
#
# Builds `netlab.sh wire 1500` (offloads off) unless the lab is up, applies SPEC (default: the matrix's
# 1 Gbit/s bottleneck, 1 MiB queue, 1 ms each way), starts two rxe-perf servers in nl-b and two clients in
# nl-a at the same moment (QPS QPs x DEPTH WRs each, DURATION s, no warm-up) and prints each client's
# goodput, resent share and IB timeouts, their sum and J = (x1 + x2)^2 / (2 (x1^2 + x2^2)).
#
# Usage: scripts/netlab-fairness.sh [OUT_DIR]
# Environment: SPEC, TEST (write_bw), DURATION (20), QPS (64), DEPTH (8). Needs bin/rxe-perf
# (`mvn -B -o -q package -DskipTests`). Leaves the lab up (`netlab.sh down` removes it).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETLAB=${NETLAB:-$ROOT/../shared/netlab/netlab.sh}
[ -x "$NETLAB" ] || NETLAB=/work/shared/netlab/netlab.sh
OUT=${1:-/tmp/rxe4j-netlab-fairness-$$}
SPEC=${SPEC:-rate=1e9,qlimit=1048576,delay=1000}
TEST=${TEST:-write_bw}
DURATION=${DURATION:-20}
QPS=${QPS:-64}
DEPTH=${DEPTH:-8}
mkdir -p "$OUT"
cd "$ROOT"
[ -x bin/rxe-perf ] || { echo "netlab-fairness: no bin/rxe-perf (run mvn -B package -DskipTests first)" >&2; exit 2; }
exec 9>/tmp/netlab.lock
flock 9
if ! ip netns list | grep -q nl-w; then
    "$NETLAB" down >/dev/null 2>&1
    "$NETLAB" wire 1500 >"$OUT/netlab.log" 2>&1 || { echo "netlab wire failed (see $OUT/netlab.log)" >&2; exit 1; }
    for ns in nl-a nl-b; do ip netns exec $ns ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1; done
fi
"$NETLAB" wirem "all=1,$SPEC" >"$OUT/wirem.log" 2>&1
sleep 0.5
for k in 1 2; do
    ip netns exec nl-b bin/rxe-perf "$TEST" --server -p $((19500 + k)) -q "$QPS" -t "$DEPTH" >"$OUT/server$k.log" 2>&1 &
done
for k in 1 2; do
    for _ in $(seq 100); do grep -q "waiting on TCP" "$OUT/server$k.log" && break; sleep 0.1; done
done
for k in 1 2; do
    ip netns exec nl-a timeout $((DURATION * 4 + 120)) bin/rxe-perf "$TEST" --connect 10.77.0.2:$((19500 + k)) \
        -q "$QPS" -t "$DEPTH" -D "$DURATION" -w 0 --json --watchdog $((DURATION * 4 + 60)) \
        >"$OUT/client$k.json" 2>"$OUT/client$k.log" &
done
wait
"$NETLAB" wirem-stop >"$OUT/wirem-stats.json" 2>&1
python3 - "$OUT" <<'PY'
import json, sys
xs = []
for k in (1, 2):
    try:
        d = json.load(open(f"{sys.argv[1]}/client{k}.json"))
    except Exception as e:
        print(f"client {k}: no result ({e}); see {sys.argv[1]}/client{k}.log")
        sys.exit(1)
    r = d["results"][0]["rxe4j"]
    q = d["counters"]["requester"]
    xs.append(r["bw_mb_s"])
    print(f"client {k}: {r['bw_mb_s']:.1f} MB/s, resent {100.0 * q.get('resent_pkts', 0) / max(1, q['sent_pkts']):.2f} %,"
          f" IB timeouts {q.get('retransmit_timeouts', 0)}, losses judged noise {q.get('cc_random_losses', 0)}")
print(f"sum {sum(xs):.1f} MB/s, Jain {sum(xs) ** 2 / (2 * sum(x * x for x in xs)):.3f}")
PY
