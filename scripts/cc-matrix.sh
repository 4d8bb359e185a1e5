#!/usr/bin/env bash
# Aggregate goodput and duplicate ratio of rxe-perf write_bw over epoll for a matrix of QP counts x
# outstanding WRs x message sizes (docs/performance.md, "Many QPs"). One process by default; TWO=1 runs
# the server and the client as two processes. Prints a markdown table.
#
#   scripts/cc-matrix.sh                      # QPS="1 16 128 1024" DEPTHS="1 8 16" SIZES="4096 65536" SECONDS_PER_RUN=3
#   TWO=1 QPS="128" DEPTHS="8" SIZES="65536" scripts/cc-matrix.sh
#   EXTRA="--no-cc" scripts/cc-matrix.sh      # extra rxe-perf options (e.g. to compare)
#
# Needs a JDK 25 (JAVA_HOME or /usr/lib/jvm/*25*) and the rxe-examples class path (built here).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/java25.sh"
java=$(find_java25) || { echo "no JDK 25 found" >&2; exit 2; }
cd "$root"
if [ -z "${SKIP_BUILD:-}" ]; then
  mvn -B -q package -DskipTests dependency:build-classpath -pl rxe-examples -am \
      -Dmdep.includeScope=runtime -Dmdep.outputFile=target/cp.txt >/dev/null
fi
cp="rxe-examples/target/classes:$(cat rxe-examples/target/cp.txt)"
perf() { "$java" --enable-native-access=ALL-UNNAMED -Xmx2g -cp "$cp" io.rxe4j.examples.perf.RxePerf "$@"; }
secs=${SECONDS_PER_RUN:-3}
echo "| QPs × outstanding | size | goodput MB/s | duplicate_request / received | resent / sent | timeouts | mode |"
echo "|---|---:|---:|---:|---:|---:|---|"
for q in ${QPS:-1 16 128 1024}; do
  for t in ${DEPTHS:-1 8 16}; do
    for s in ${SIZES:-4096 65536}; do
      log=$(mktemp)
      if [ -n "${TWO:-}" ]; then
        port=$((20000 + RANDOM % 20000))
        slog=$(mktemp)
        perf write_bw --server -p "$port" --transport epoll ${EXTRA:-} > "$slog" 2>&1 &
        spid=$!
        sleep 2
        perf write_bw --connect "127.0.0.1:$port" --transport epoll -q "$q" -t "$t" -s "$s" -D "$secs" ${EXTRA:-} > "$log" 2>&1 || true
        wait "$spid" || true
        cat "$slog" >> "$log"
        rm -f "$slog"
        mode=two
      else
        perf write_bw --transport epoll -q "$q" -t "$t" -s "$s" -D "$secs" ${EXTRA:-} > "$log" 2>&1 || true
        mode=one
      fi
      python3 - "$log" "$q" "$t" "$s" "$mode" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
q, t, s, mode = sys.argv[2:6]
bw = re.search(r'^\s*' + s + r'\s+\d+\s+([\d.]+)', text, re.M)
bw = bw.group(1) if bw else 'failed'
def num(name, where):
    m = re.search(name + r'=(\d+)', where)
    return int(m.group(1)) if m else None
m = re.search(r'counters: requester (.*?); responder (.*)', text)
if m:
    req, resp = m.group(1), m.group(2)
else:
    # two processes: the client's and the server's device counters
    mc = re.search(r'client counters: \{(.*?)\}', text) or re.search(r'requester counters: \{(.*?)\}', text)
    ms = re.search(r'counters \{(.*?)\}', text)
    req = mc.group(1) if mc else ''
    resp = ms.group(1) if ms else ''
rcvd, dup = num('rcvd_pkts', resp), num('duplicate_request', resp) or 0
sent, resent, to = num('sent_pkts', req), num('resent_pkts', req) or 0, num('retransmit_timeouts', req) or 0
dupr = f"{100.0 * dup / rcvd:.2f} %" if rcvd else 'n/a'
resr = f"{100.0 * resent / sent:.2f} %" if sent else 'n/a'
print(f"| {q} × {t} | {int(s) // 1024} KiB | {bw} | {dupr} | {resr} | {to} | {mode} |")
PY
      rm -f "$log"
    done
  done
done
