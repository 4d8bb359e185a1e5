#!/usr/bin/env bash
# netlab-matrix.sh: rxe4j against iperf3 TCP over an emulated network (issue 21 item 7; ../shared/netlab, root).
#
# Builds `netlab.sh wire MTU` (nl-a 10.77.0.1 == nl-w: wirem == nl-b 10.77.0.2, segmentation offloads off),
# and for every impairment of the matrix (both directions) runs, REPS times each:
#   - iperf3 TCP, nl-a -> nl-b, DURATION s (the reference on the same link, in the same run);
#   - bin/rxe-perf write_bw and read_bw, 64 KiB messages, DURATION s, no warm-up (so that the counters
#     cover exactly the measured messages), one process per namespace (--json);
#   - with DEMO=1 (default), bin/rxe-demo server/client, which checks every byte it moves.
# Impairments hit TCP and UDP alike (wirem all=1).
# It prints one markdown table (medians over REPS): goodput in MB/s, the share of the clean-link rate each
# keeps, rxe4j/TCP, resent packets, retransmit timeouts, READ amplification (payload bytes the READ
# responder sent / READ bytes completed, from the responder's sent_pkts), and failures (RETRY_EXC_ERR,
# non-zero exits). Raw JSON and logs go to OUT_DIR.
#
# Needs `mvn -B -o -q package -DskipTests` first (bin/ launchers), iperf3 and ethtool. Holds
# /tmp/netlab.lock for the whole run and always runs `netlab.sh down` at the end.
#
# Usage: scripts/netlab-matrix.sh [OUT_DIR]
# Environment: REPS (3), DURATION (5 s), WARMUP (0: rxe-perf -w, whole seconds; with more, the counters include the
# warm-up's messages), MTU (1500), DEMO (1), MATRIX (the impairment names to run, an
# extended regex over the names below; default all), PERF_ARGS (extra rxe-perf options for both sides).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETLAB=${NETLAB:-$ROOT/../shared/netlab/netlab.sh}
[ -x "$NETLAB" ] || NETLAB=/work/shared/netlab/netlab.sh
OUT=${1:-/tmp/rxe4j-netlab-matrix-$$}
REPS=${REPS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-0}
MTU=${MTU:-1500}
DEMO=${DEMO:-1}
MATRIX=${MATRIX:-.*}
PERF_ARGS=${PERF_ARGS:-}
mkdir -p "$OUT"
cd "$ROOT"
command -v iperf3 >/dev/null || { echo "netlab-matrix: iperf3 is missing (apt install iperf3)" >&2; exit 2; }
command -v ethtool >/dev/null || { echo "netlab-matrix: ethtool is missing (apt install ethtool)" >&2; exit 2; }
[ -x bin/rxe-perf ] || { echo "netlab-matrix: no bin/rxe-perf (run mvn -B package -DskipTests first)" >&2; exit 2; }

# name|wirem SPEC (both directions)[|extra rxe-perf options for that row]
SPECS=(
  "clean|-"
  "loss-0.1%|loss=0.001"
  "loss-1%|loss=0.01"
  "loss-5%|loss=0.05"
  "dup-1%|dup=0.01"
  "delay-1ms|delay=1000"
  "reorder-5%-1ms|delay=1000,reorder=0.05"
  "delay-10ms-jitter-2ms-reorder|delay=10000,jitter=2000,jitter_reorder=1"
  "bottleneck-1Gbit-1ms|rate=1e9,qlimit=1048576,delay=1000"
  "bottleneck-1Gbit-1ms-16qp|rate=1e9,qlimit=1048576,delay=1000|-q 16"
  "bottleneck-1Gbit-1ms-128qp|rate=1e9,qlimit=1048576,delay=1000|-q 128 -t 8"
  "bottleneck-100Mbit-1ms|rate=1e8,qlimit=1048576,delay=1000"
  "corrupt-0.1%|corrupt=0.0005,corrupt_icrc=0.0005"
  "1Gbit-20ms-rtt|rate=1e9,qlimit=4194304,delay=10000"
)

exec 9>/tmp/netlab.lock
flock 9
cleanup() {
    for p in $(jobs -p); do kill "$p" 2>/dev/null; done
    "$NETLAB" down >/dev/null 2>&1
}
trap cleanup EXIT

wait_for() { # file pattern: at most 60 s
    for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}

"$NETLAB" down >/dev/null 2>&1
"$NETLAB" wire "$MTU" >"$OUT/netlab.log" 2>&1 || { echo "netlab wire $MTU failed (see $OUT/netlab.log)" >&2; exit 1; }
for ns in nl-a nl-b; do ip netns exec $ns ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1; done

PORT=18700
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
for entry in "${SPECS[@]}"; do
    name=${entry%%|*}; spec=${entry#*|}; rowargs=
    if [[ "$spec" == *"|"* ]]; then rowargs=${spec#*|}; spec=${spec%%|*}; fi
    [[ "$name" =~ ^($MATRIX)$ ]] || continue
    # all=1: loss, duplication, reordering and corruption hit TCP as well (wirem's default spares TCP),
    # so that iperf3 is the reference on the very same link
    wspec=$spec
    [ "$spec" != "-" ] && wspec="all=1,$spec"
    "$NETLAB" wirem "$wspec" >"$OUT/$name.wirem.log" 2>&1
    sleep 0.5
    for rep in $(seq "$REPS"); do
        tag="$name.$rep"
        # TCP reference
        ip netns exec nl-b iperf3 -s -1 -p 5201 >"$OUT/$tag.iperf-server.log" 2>&1 &
        sleep 0.5
        ip netns exec nl-a timeout $((DURATION + 30)) iperf3 -c 10.77.0.2 -p 5201 -t "$DURATION" -J \
            >"$OUT/$tag.iperf.json" 2>"$OUT/$tag.iperf.err"
        wait 2>/dev/null
        # rxe4j, one process per namespace
        for t in write_bw read_bw; do
            PORT=$((PORT + 1))
            ip netns exec nl-b bin/rxe-perf "$t" --server -p "$PORT" $PERF_ARGS $rowargs >"$OUT/$tag.$t.server.log" 2>&1 &
            srv=$!
            if wait_for "$OUT/$tag.$t.server.log" "waiting on TCP port"; then
                ip netns exec nl-a timeout $((DURATION * 4 + WARMUP + 10 + 120)) bin/rxe-perf "$t" --connect "10.77.0.2:$PORT" \
                    -D "$DURATION" -w "$WARMUP" --json --watchdog $((DURATION * 4 + WARMUP + 10 + 90)) $PERF_ARGS $rowargs >"$OUT/$tag.$t.json" 2>"$OUT/$tag.$t.client.log"
                rc=$?
                echo "$rc" >"$OUT/$tag.$t.rc"
                # a client that failed before the exchange leaves the server waiting for it for ever
                [ "$rc" = 0 ] || kill "$srv" 2>/dev/null
            else
                echo "server did not start" >"$OUT/$tag.$t.client.log"; echo 99 >"$OUT/$tag.$t.rc"
                kill "$srv" 2>/dev/null
            fi
            wait "$srv" 2>/dev/null
        done
        if [ "$DEMO" = 1 ]; then
            PORT=$((PORT + 1))
            ip netns exec nl-b bin/rxe-demo server --bind 10.77.0.2 --udp-port 4791 --cm-port "$PORT" >"$OUT/$tag.demo.server.log" 2>&1 &
            srv=$!
            sleep 1
            t0=$(date +%s.%N)
            ip netns exec nl-a timeout 300 bin/rxe-demo client --bind 10.77.0.1 --connect "10.77.0.2:$PORT" \
                >"$OUT/$tag.demo.client.log" 2>&1
            echo "$? $(echo "$(date +%s.%N) - $t0" | bc)" >"$OUT/$tag.demo.rc"
            wait "$srv" 2>/dev/null
        fi
        echo "$name	$rep" >>"$RESULTS"
    done
    "$NETLAB" wirem-stop >"$OUT/$name.wirem-stats.json" 2>&1
done

python3 - "$OUT" "$REPS" "$DEMO" "$MTU" <<'EOF'
import json, os, re, statistics, sys
out, reps, demo, mtu = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
names = []
for line in open(os.path.join(out, "results.tsv")):
    n = line.split("\t")[0]
    if n not in names:
        names.append(n)

def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

rows = {}
for n in names:
    r = {"tcp": [], "write": [], "read": [], "resent": [], "timeouts": [], "amp": [], "fail": [], "demo": []}
    for k in range(1, reps + 1):
        tag = f"{n}.{k}"
        j = load(os.path.join(out, tag + ".iperf.json"))
        try:
            r["tcp"].append(j["end"]["sum_received"]["bits_per_second"] / 8e6)
        except Exception:
            r["tcp"].append(None)
        for t, key in (("write_bw", "write"), ("read_bw", "read")):
            rc = open(os.path.join(out, f"{tag}.{t}.rc")).read().strip() if os.path.exists(os.path.join(out, f"{tag}.{t}.rc")) else "?"
            j = load(os.path.join(out, f"{tag}.{t}.json"))
            log = open(os.path.join(out, f"{tag}.{t}.client.log"), errors="replace").read()
            if rc != "0" or j is None:
                m = re.search(r"(RETRY_EXC_ERR|RNR_RETRY_EXC_ERR|LOC_\w+|REM_\w+)", log)
                r["fail"].append(f"{t}: rc {rc}" + (f" {m.group(1)}" if m else ""))
                r[key].append(None)
                continue
            res = j["results"][0]["rxe4j"]
            r[key].append(res["bw_mb_s"])
            c = j.get("counters", {})
            req = c.get("requester", {})
            resp = c.get("responder", {})
            if t == "write_bw":
                sent = req.get("sent_pkts", 0)
                r["resent"].append(100.0 * req.get("resent_pkts", 0) / sent if sent else None)
                r["timeouts"].append(req.get("retransmit_timeouts"))
            else:
                pmtu = j.get("mtu", 1024)
                read_bytes = res["bytes"] * res["iterations"]
                if resp and read_bytes:
                    # the READ responder's packets are nearly all full-MTU responses (ACKs are not sent for READs)
                    r["amp"].append(resp.get("sent_pkts", 0) * pmtu / read_bytes)
        if demo:
            p = os.path.join(out, tag + ".demo.rc")
            if os.path.exists(p):
                rc, secs = open(p).read().split()
                r["demo"].append(float(secs) if rc == "0" else None)
                if rc != "0":
                    r["fail"].append(f"demo: rc {rc}")
    rows[n] = r

clean = rows.get("clean")
def share(n, key):
    if not clean:
        return None
    c, v = med(clean[key]), med(rows[n][key])
    return v / c if c and v is not None else None

def f(x, fmt="%.1f"):
    return "—" if x is None else fmt % x

print(f"\nnetlab wire, MTU {mtu}, both directions impaired, medians of {reps}; MB/s = 10^6 bytes/s of payload")
print("| impairment | TCP MB/s | write MB/s | read MB/s | TCP keeps | write keeps | read keeps | write/TCP | resent % | timeouts | READ amp. | demo s | failures |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for n in names:
    r = rows[n]
    t, w, rd = med(r["tcp"]), med(r["write"]), med(r["read"])
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        n, f(t), f(w), f(rd), f(share(n, "tcp"), "%.2f"), f(share(n, "write"), "%.2f"), f(share(n, "read"), "%.2f"),
        f(w / t if w and t else None, "%.2f"), f(med(r["resent"]), "%.2f"), f(med(r["timeouts"]), "%.0f"),
        f(med(r["amp"]), "%.2f"), f(med(r["demo"]), "%.1f"), "; ".join(r["fail"]) or "none"))
EOF
