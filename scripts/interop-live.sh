#!/usr/bin/env bash
# Live interop checks of rxe4j against a real Linux 6.12 rdma_rxe peer: the qemu guest of
# ../shared/kernel-rxe-vm (see its README.md). Run as root, from anywhere:
#
#   scripts/interop-live.sh [OUTDIR]       # default OUTDIR: /tmp/rxe4j-interop-<date>
#
# What it does:
#   1. builds rxe-examples in the reactor (no install) and asks Maven for its runtime class path;
#   2. boots the VM with `run.sh live OUTDIR` unless that VM is already running (OUTDIR/ready
#      exists, OUTDIR/stop does not) and waits for OUTDIR/ready;
#   3. runs, inside `ip netns exec rxelab`, with JDK 25:
#      (a) RxePingpong as client of the guest's ibv_rc_pingpong servers: TCP 18515 (IPv4),
#          18516 (IPv4, MTU 256, -s 600), 18517 (IPv6 link-local);
#      (b) the guest's ibv_rc_pingpong as client (a cmd script) of an RxePingpong server: IPv4,
#          IPv4 MTU 256 -s 600, IPv6 link-local;
#      (c) RxeOpsPeer against the guest's rxe_ops, both directions, IPv4 and IPv6, ops
#          write,writeimm,send,sendimm,read,cas,fadd,awrite,read8,flush,flushmr;
#      (d) rxe-perf --perftest against the guest's perftest, both directions: ib_{write,read,send,
#          atomic}_{bw,lat} over IPv4, ib_write_bw over IPv6 (PT_ITERS iterations, default 200);
#      (e1) RxePingpong dropping 2% of its own packets against the guest's ibv_rc_pingpong (loss);
#      (f1-f4) RxePingpong --ud against the guest's ibv_ud_pingpong, both directions, IPv4 and IPv6;
#      (g1-g4) RxePingpong --uc against the guest's ibv_uc_pingpong, the same four;
#      (h1-h4) RxePingpong --srq against the guest's ibv_srq_pingpong (16 QPs on one SRQ), the same four;
#      (i1-i10) RxeMwPeer against scripts/interop/rxe_mw.c (compiled in the guest): memory windows of
#          type 1 and 2B, SEND_WITH_INV, LOCAL_INV, a WRITE half outside a window, an invalid SEND_WITH_INV;
#          both directions, IPv4 (all four tests) and IPv6 (windows);
#      (j1-j4) GsiProbe: rxe4j's QP1 against the kernel's: a CM REQ answered by the kernel CM's REJ 8, and the
#          CM REQ of the guest's rping -c received by rxe4j's QP1, IPv4 and IPv6;
#      (k1-k8) CmProbe: rxe4j's IB CM against rping -s / rping -c (the CM part) and udaddy both ways, IPv4, IPv6;
#      (k9-k12) RxeRping: rping's whole flow (10 verified pings) against the kernel's rping, both ways, IPv4, IPv6;
#      (k13-k16) CmProbe --exchange against librdmacm's rdma_server / rdma_client, both ways, IPv4 and IPv6;
#      (k21-k24) the same through the public API (CmProbe --exchange --public-api: RdmaListener, RdmaConnection);
#      (k17-k20) CmProbe --cmatose against ucmatose, both ways, IPv4 and IPv6;
#      (k25-k48) rxe-perf --perftest -R against perftest -R (rdma_cm connects a control QP that carries perftest's
#          exchange, then the test QPs, on port -p), both ways: ib_{write,read,send}_bw over IPv4 (k25-k30) and
#          IPv6 with --ipv6-addr (k31-k36), ib_write_bw -q 4 (k37, k38), ib_atomic_bw (k39, k40),
#          ib_{write,read,send}_lat (k41-k46), ib_atomic_lat (k47, k48); odd IDs rxe4j client -> kernel server;
#      (d-*-q4-loops2) rxe-perf --perftest with 4 QPs on a 2-loop device against the kernel's ib_*_bw -q 4;
#      IPv4 runs between 10.99.0.1 (br0, host) and 10.99.0.11 (guest), IPv6 between br0's fe80::
#      address and fe80::5054:ff:fe00:11;
#   4. collects rdma_rxe's counters (`rdma statistic`) and the namespace's UDP counters before,
#      between and after the IPv4 and IPv6 blocks, stops the VM (touch OUTDIR/stop), runs
#      pcap_icrc.py over OUTDIR/host-br0.pcap, looks at the UDP checksums of the guest's IPv6
#      packets, and prints a summary table.
#
# IPv6 works since rxe4j's IPv6 sockets accept the zero UDP checksums rdma_rxe sends (UDP_NO_CHECK6_RX,
# extensions.md section 6); an IPv6 failure fails the run. LENIENT_IPV6=1 reports IPv6 failures as
# "FAIL(ignored)" without changing the exit status (for a build without that fix).
#
# Exit status: 0 when every case passed and every ICRC in the capture is right, 1 otherwise,
# 2 when the setup failed.
#
# Environment: ITERS (ibv_rc_pingpong iterations, default 1000; written to OUTDIR/guest.env for the
# guest's servers), RXE_VM (default <repo>/../shared/kernel-rxe-vm), SKIP_BUILD=1 (reuse
# rxe-examples/target), CASES (an extended regex of the case IDs to run, e.g. 'd-.*-q4-.*|a1'; default all),
# KEEP_VM=1 (leave the VM running), LIVE_TIMEOUT (guest lifetime, default 1800 s),
# JAVA_HOME (used if it is a JDK 25, else the first /usr/lib/jvm/*25*), OPFN=1 (run every rxe4j
# process with --opfn: OPFN and TID RDMA on, BTH bit 24 on every packet; the kernel must not mind).
set -uo pipefail

t_start=$(date +%s)
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
VM=${RXE_VM:-$(cd "$root/.." && pwd)/shared/kernel-rxe-vm}
OUT=$(realpath -m "${1:-/tmp/rxe4j-interop-$(date +%Y%m%d-%H%M%S)}")
NS=rxelab
ITERS=${ITERS:-1000}
PT_ITERS=${PT_ITERS:-200}   # perftest iterations per case (64 KiB each for the BW tests)
OPFN_ARG=""
[ "${OPFN:-0}" = 1 ] && OPFN_ARG="--opfn"
OPS=write,writeimm,send,sendimm,read,cas,fadd,awrite,read8,flush,flushmr
GUEST_IP=10.99.0.11
HOST_IP=10.99.0.1
GUEST_IP6=fe80::5054:ff:fe00:11
JAVA_TIMEOUT=300        # hard limit per rxe4j process (s)
KCLIENT_TIMEOUT_V4=180  # `timeout` around a kernel client over IPv4 (s)
KCLIENT_TIMEOUT_V6=25   # over IPv6: rdma_rxe retries forever (retry_cnt 7), so this ends it
STALL_V4=30             # rxe4j: give up after this long without a completion (s)
STALL_V6=15

die() { echo "interop-live: $*" >&2; exit 2; }
log() { echo "[$(date +%H:%M:%S)] $*"; }

[ "$(id -u)" = 0 ] || die "must run as root (ip netns, qemu)"
[ -x "$VM/run.sh" ] || die "no kernel VM at $VM (set RXE_VM)"
# the guest image is built once per machine (about 2 minutes; see $VM/README.md)
if [ ! -f "${BUILD_DIR:-$VM/build/trixie}/root.img" ]; then  # BUILD_DIR as run.sh reads it
  log "no guest image yet: building it with $VM/build.sh (once per machine, about 2 minutes)"
  "$VM/build.sh" > "${TMPDIR:-/tmp}/rxe4j-vm-build.log" 2>&1 \
    || { tail -20 "${TMPDIR:-/tmp}/rxe4j-vm-build.log"; die "building the guest image failed"; }
fi
# shellcheck source=java25.sh
. "$here/java25.sh"
JAVA=$(find_java25) || die "no JDK 25 found (JAVA_HOME or /usr/lib/jvm/*25*)"
mkdir -p "$OUT/cases" || die "cannot create $OUT"

# ---------------------------------------------------------------- 1. build
t_build=$(date +%s)
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "building rxe-examples (mvn verify -pl rxe-examples -am -DskipTests) and its class path"
  (cd "$root" && mvn -B -q verify dependency:build-classpath -pl rxe-examples -am -DskipTests \
      -Dmdep.includeScope=runtime -Dmdep.outputFile=target/cp.txt) > "$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; die "build failed (log: $OUT/build.log)"; }
fi
[ -f "$root/rxe-examples/target/cp.txt" ] || die "no rxe-examples/target/cp.txt (build first)"
CP="$root/rxe-examples/target/classes:$(cat "$root/rxe-examples/target/cp.txt")"

# ---------------------------------------------------------------- 2. the VM
VM_PID=""
vm_alive() {  # the run.sh live process for OUT (ours or found)
  if [ -n "$VM_PID" ]; then kill -0 "$VM_PID" 2>/dev/null; return; fi
  pgrep -f "run.sh live $OUT\$" > /dev/null
}
if ip netns list | grep -qw "^$NS"; then
  if [ -f "$OUT/ready" ] && [ ! -f "$OUT/stop" ] && pgrep -f "run.sh live $OUT\$" > /dev/null; then
    log "reusing the running VM of $OUT"
    ITERS=$(sed -n 's/.* iters=\([0-9]*\).*/\1/p' "$OUT/ready" | head -1)
  else
    die "namespace $NS exists: another run.sh is running (one at a time); pass its OUTDIR or stop it"
  fi
else
  rm -f "$OUT/ready" "$OUT/stop"
  echo "ITERS=$ITERS" > "$OUT/guest.env"
  log "booting the VM: $VM/run.sh live $OUT (log $OUT/run.log)"
  LIVE_TIMEOUT=${LIVE_TIMEOUT:-1800} setsid "$VM/run.sh" live "$OUT" > "$OUT/run.log" 2>&1 < /dev/null &
  VM_PID=$!
fi
stop_vm() {
  [ "${KEEP_VM:-0}" = 1 ] && { log "KEEP_VM=1: the VM keeps running (touch $OUT/stop)"; return; }
  log "stopping the VM (touch $OUT/stop)"
  touch "$OUT/stop"
  for _ in $(seq 1 240); do vm_alive || break; sleep 0.5; done
  if vm_alive; then
    log "warning: run.sh still running after 120 s"
    # only the run.sh this script started, by its PID (its EXIT trap stops qemu and removes the netns)
    [ -n "$VM_PID" ] && kill "$VM_PID" 2>/dev/null
  fi
}
trap 'stop_vm; exit 2' INT TERM
t_boot=$(date +%s)
ready() { grep -qs ' gid_index_ll=' "$OUT/ready" && grep -qs '^gid\[' "$OUT/ready"; }  # written in steps
for _ in $(seq 1 600); do
  ready && break
  vm_alive || { cat "$OUT/run.log"; die "run.sh exited before the guest was ready"; }
  sleep 0.5
done
ready || { stop_vm; die "the guest was not ready after 300 s (console: $OUT/console-A.log)"; }
log "guest ready after $(( $(date +%s) - t_boot )) s: $(head -1 "$OUT/ready")"
G=$(sed -n 's/.* gid_index=\([0-9]*\) .*/\1/p' "$OUT/ready")
G6=$(sed -n 's/.* gid_index_ll=\([0-9]*\) .*/\1/p' "$OUT/ready")

# br0's link-local address (wait for DAD to finish)
BR6=""
for _ in $(seq 1 40); do
  BR6=$(ip -n "$NS" -6 -o addr show dev br0 scope link -tentative | awk '{print $4}' | cut -d/ -f1 | head -1)
  [ -n "$BR6" ] && break
  sleep 0.5
done
[ -n "$BR6" ] || { stop_vm; die "br0 has no usable IPv6 link-local address"; }
log "host: $HOST_IP and $BR6%br0; guest: $GUEST_IP and $GUEST_IP6 (GID index $G, $G6); ITERS=$ITERS${OPFN_ARG:+; rxe4j with $OPFN_ARG}"

# ---------------------------------------------------------------- helpers
jrun() {  # CLASS ARGS... : rxe4j in the namespace
  local cls=$1; shift
  ip netns exec "$NS" timeout -k 5 "$JAVA_TIMEOUT" "$JAVA" --enable-native-access=ALL-UNNAMED -cp "$CP" \
    "io.rxe4j.examples.interop.$cls" $OPFN_ARG "$@"
}
exits() { local n; n=$(grep -c '^=== exit' "$OUT/logs/live-$1.log" 2>/dev/null); echo "${n:-0}"; }
last_exit() { grep '^=== exit' "$OUT/logs/live-$1.log" | tail -1 | awk '{print $3}'; }
drop_cmd() {  # NAME SCRIPT-TEXT: the guest runs it; rc in OUT/cmd/NAME.rc
  rm -f "$OUT/cmd/$1.rc"
  printf '%s\n' "$2" > "$OUT/cmd/$1.sh.tmp" && mv "$OUT/cmd/$1.sh.tmp" "$OUT/cmd/$1.sh"
}
wait_rc() {  # NAME SECONDS -> prints the rc or "none"
  local i
  for i in $(seq 1 $(( $2 * 2 ))); do
    [ -f "$OUT/cmd/$1.rc" ] && { cat "$OUT/cmd/$1.rc"; return; }
    sleep 0.5
  done
  echo none
}
snapshot() {  # LABEL: kernel and namespace counters
  drop_cmd "counters_$1" "rdma statistic show link rxe0/1; echo; rdma resource show qp"
  ip netns exec "$NS" sh -c 'grep -E "^Udp:" /proc/net/snmp; grep -E "^Udp6(InDatagrams|InErrors|InCsumErrors|NoPorts|OutDatagrams)" /proc/net/snmp6' \
    > "$OUT/cases/netns-udp-$1.txt" 2>&1
  [ "$(wait_rc "counters_$1" 30)" = 0 ] || log "warning: no rdma counters for $1"
}
kcounter() {  # LABEL NAME -> value from `rdma statistic` in the counters_LABEL log
  tr ' ' '\n' < "$OUT/logs/cmd-counters_$1.log" 2>/dev/null | awk -v n="$2" 'p{print; exit} $0==n{p=1}'
}
udp6csum() { awk '/^Udp6InCsumErrors/{print $2}' "$OUT/cases/netns-udp-$1.txt" 2>/dev/null; }

ROWS=()
FAILS=0
want() {  # ID: whether CASES (an extended regex of case IDs, default: all) selects this case
  [ -z "${CASES:-}" ] || [[ "$1" =~ ^(${CASES})$ ]]
}
record() {  # ID DESC FAMILY RXE_RC KERNEL_RC SECONDS NOTE
  local id=$1 desc=$2 fam=$3 jrc=$4 krc=$5 secs=$6 note=$7 res
  if [ "$jrc" = 0 ] && [ "$krc" = 0 ]; then
    res=PASS
  elif [ "$fam" = IPv6 ] && [ "${LENIENT_IPV6:-0}" = 1 ]; then
    res="FAIL(ignored)"
  else
    res=FAIL
    FAILS=$((FAILS + 1))
  fi
  ROWS+=("$id|$desc|$fam|$jrc|$krc|$res|${secs}s|$note")
  log "$id $desc [$fam]: $res (rxe4j rc=$jrc, kernel rc=$krc, ${secs}s)${note:+ - $note}"
}
why() {  # LOG...: a short reason from the logs (the counters are in the evidence section)
  grep -hE 'Failed status|no completion|FAILED|Couldn.t|peer closed|Exception|refused|timed out|failures \[' "$@" 2>/dev/null \
    | head -1 | sed -e 's/[;,]* *rxe4j counters.*//' -e 's/^ *//' | cut -c1-110
}
stall_for() { [ "$1" = IPv6 ] && echo "$STALL_V6" || echo "$STALL_V4"; }
guest_exit_wait() {  # GUESTLOG BEFORE RXE4J_RC -> the guest server's exit code, or "none"
  local i n=30
  [ "$3" = 0 ] || n=10   # after a failure the kernel server may be stuck retrying forever
  for i in $(seq 1 $n); do [ "$(exits "$1")" -gt "$2" ] && { last_exit "$1"; return; }; sleep 0.5; done
  echo none
}

# (a) rxe4j client -> guest ibv_rc_pingpong server
case_pp_client() {  # ID FAMILY TCPPORT GUESTLOG LOCALIP ARGS...
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 glog=$4 ip=$5; shift 5
  local before lines t0 jrc krc note
  before=$(exits "$glog"); lines=$(cat "$OUT/logs/live-$glog.log" 2>/dev/null | wc -l)
  t0=$(date +%s)
  jrun RxePingpong --ip "$ip" -p "$port" -n "$ITERS" --stall-timeout "$(stall_for "$fam")" "$@" "$GUEST_IP" \
    > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(guest_exit_wait "$glog" "$before" "$jrc")
  sed -n "$((lines + 1)),\$p" "$OUT/logs/live-$glog.log" > "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = none ] && note="kernel server did not exit${note:+; $note}"
  record "$id" "rxe4j client -> kernel ibv_rc_pingpong :$port $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# (b) guest ibv_rc_pingpong client -> rxe4j server
case_pp_server() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT ARGS...
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6; shift 6
  local t0 jpid jrc krc i note
  t0=$(date +%s)
  jrun RxePingpong --ip "$ip" -p "$port" -n "$ITERS" --stall-timeout "$(stall_for "$fam")" --tcp-timeout 60 "$@" \
    > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'listening on TCP' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  drop_cmd "$id" "timeout -k 5 $kt ibv_rc_pingpong -d rxe0 -g \$$gvar -n $ITERS -p $port $* $HOST_IP"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel client killed by timeout ${kt}s${note:+; $note}"
  record "$id" "kernel ibv_rc_pingpong client -> rxe4j :$port $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# Two shapes of case: a kernel server started through the guest's command runner with an rxe4j client, and an
# rxe4j server with the kernel's client started the same way.
case_vs_guest_server() {  # ID FAMILY KTIMEOUT DESC GUESTCMD CLASS ARGS... : rxe4j CLASS client -> guest server
  local id=$1 fam=$2 kt=$3 desc=$4 gcmd=$5; shift 5
  local t0 jrc krc note
  t0=$(date +%s)
  drop_cmd "$id" "timeout -k 5 $kt $gcmd"
  sleep 4  # the guest's command runner polls; the server then listens
  jrun "$@" > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel server killed by timeout ${kt}s${note:+; $note}"
  record "$id" "$desc" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}
case_vs_guest_client() {  # ID FAMILY KTIMEOUT DESC GUESTCMD CLASS ARGS... : guest client -> rxe4j CLASS server
  local id=$1 fam=$2 kt=$3 desc=$4 gcmd=$5; shift 5
  local t0 jpid jrc krc i note
  t0=$(date +%s)
  jrun "$@" > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs "${READY_PATTERN:-listening on TCP}" "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  drop_cmd "$id" "timeout -k 5 $kt $gcmd"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel client killed by timeout ${kt}s${note:+; $note}"
  record "$id" "$desc" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# (f1) rxe4j client -> guest ibv_ud_pingpong / ibv_uc_pingpong / ibv_srq_pingpong server; KIND is ud, uc or srq
case_udpp_client() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT GUESTIP ARGS...
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6 gip=$7 kind=${KIND:-ud}; shift 7
  case_vs_guest_server "$id" "$fam" "$kt" "rxe4j client -> kernel ibv_${kind}_pingpong :$port $*" \
    "ibv_${kind}_pingpong -d rxe0 -g \$$gvar -n $ITERS -p $port $*" \
    RxePingpong "--$kind" --ip "$ip" -p "$port" -n "$ITERS" --stall-timeout "$(stall_for "$fam")" "$@" "$gip"
}

# (f2) guest ibv_ud_pingpong / ibv_uc_pingpong / ibv_srq_pingpong client -> rxe4j server (KIND as above)
case_udpp_server() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT HOSTIP ARGS...
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6 hip=$7 kind=${KIND:-ud}; shift 7
  case_vs_guest_client "$id" "$fam" "$kt" "kernel ibv_${kind}_pingpong client -> rxe4j :$port $*" \
    "ibv_${kind}_pingpong -d rxe0 -g \$$gvar -n $ITERS -p $port $* $hip" \
    RxePingpong "--$kind" --ip "$ip" -p "$port" -n "$ITERS" --stall-timeout "$(stall_for "$fam")" --tcp-timeout 60 "$@"
}

# (c1) rxe4j rxe_ops client -> guest rxe_ops server
case_ops_client() {  # ID FAMILY TCPPORT GUESTLOG LOCALIP
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 glog=$4 ip=$5
  local before lines t0 jrc krc note
  before=$(exits "$glog"); lines=$(cat "$OUT/logs/live-$glog.log" 2>/dev/null | wc -l)
  t0=$(date +%s)
  jrun RxeOpsPeer --ip "$ip" -p "$port" -m 1024 --rxe-flush-compat -o "$OPS" --stall-timeout "$(stall_for "$fam")" \
    "$GUEST_IP" > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(guest_exit_wait "$glog" "$before" "$jrc")
  sed -n "$((lines + 1)),\$p" "$OUT/logs/live-$glog.log" > "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = none ] && note="kernel server did not exit${note:+; $note}"
  record "$id" "rxe4j rxe_ops client -> kernel rxe_ops :$port" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# (c2) guest rxe_ops client -> rxe4j rxe_ops server
case_ops_server() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6
  local t0 jpid jrc krc i note
  t0=$(date +%s)
  jrun RxeOpsPeer --ip "$ip" -p "$port" -m 1024 --rxe-flush-compat -o "$OPS" --tcp-timeout $((kt + 20)) \
    > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'listening on TCP' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  drop_cmd "$id" "timeout -k 5 $kt \$BIN/rxe_ops -d rxe0 -g \$$gvar -m 1024 -p $port -o $OPS $HOST_IP"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel client killed by timeout ${kt}s${note:+; $note}"
  record "$id" "kernel rxe_ops client -> rxe4j rxe_ops :$port" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# (i) memory windows and invalidation (issue 22): RxeMwPeer against the guest's rxe_mw, built once in the
# guest from scripts/interop/rxe_mw.c (the guest has gcc and libibverbs-dev)
MW_BIN=/tmp/rxe_mw
MW_BUILT=""
mw_build() {  # compiles rxe_mw in the guest once; returns its status
  if [ -z "$MW_BUILT" ]; then
    cp "$here/interop/rxe_mw.c" "$OUT/rxe_mw.c"
    drop_cmd build_mw "gcc -O2 -Wall -o $MW_BIN \$OUT/rxe_mw.c -libverbs"
    if [ "$(wait_rc build_mw 240)" = 0 ]; then MW_BUILT=0; else MW_BUILT=1; log "rxe_mw did not compile: $OUT/logs/cmd-build_mw.log"; fi
  fi
  return "$MW_BUILT"
}
case_mw_client() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT TEST JARGS... : rxe4j client -> guest rxe_mw server
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6 test=$7; shift 7
  local desc="rxe4j rxe_mw client -t $test $* -> kernel rxe_mw :$port"
  mw_build || { record "$id" "$desc" "$fam" 1 1 0 "rxe_mw did not compile"; return 0; }
  case_vs_guest_server "$id" "$fam" "$kt" "$desc" "$MW_BIN -d rxe0 -g \$$gvar -p $port" \
    RxeMwPeer --ip "$ip" -p "$port" -t "$test" --stall-timeout "$(stall_for "$fam")" "$@" "$GUEST_IP"
}
case_mw_server() {  # ID FAMILY TCPPORT LOCALIP GIDVAR KTIMEOUT TEST CARGS... : guest rxe_mw client -> rxe4j server
  want "$1" || return 0
  local id=$1 fam=$2 port=$3 ip=$4 gvar=$5 kt=$6 test=$7; shift 7
  local desc="kernel rxe_mw client -t $test $* -> rxe4j rxe_mw :$port"
  mw_build || { record "$id" "$desc" "$fam" 1 1 0 "rxe_mw did not compile"; return 0; }
  case_vs_guest_client "$id" "$fam" "$kt" "$desc" "$MW_BIN -d rxe0 -g \$$gvar -p $port -t $test $* $HOST_IP" \
    RxeMwPeer --ip "$ip" -p "$port" --stall-timeout "$(stall_for "$fam")" --tcp-timeout 60
}

# (j) the GSI QP (QP1, issue 22) before rxe4j has a CM: GsiProbe sends the kernel's QP1 a CM REQ for a service
# ID nobody listens on and must get the kernel CM's REJ 8 back from QP1; with --listen it must receive the CM REQ
# the guest's rping -c sends to rxe4j's QP1 (rping then gives up: there is no CM to answer yet)
case_gsi_probe() {  # ID FAMILY LOCALIP PEERIP
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 peer=$4 t0 jrc
  t0=$(date +%s)
  # the kernel CM's MAD agent exists only once ib_cm is loaded (rdma_cm's first user loads it): before that a
  # CM MAD finds no agent and is dropped without an answer (seen live: 10 REQs, no REJ, until rping had run)
  drop_cmd "${id}_cm" "modprobe ib_cm && lsmod | grep -w ib_cm"
  [ "$(wait_rc "${id}_cm" 60)" = 0 ] || log "warning: modprobe ib_cm failed in the guest"
  jrun GsiProbe --ip "$ip" "$peer" > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  record "$id" "rxe4j QP1 CM REQ -> kernel QP1, REJ 8 expected" "$fam" "$jrc" 0 $(( $(date +%s) - t0 )) \
    "$(why "$OUT/cases/$id.rxe4j.log")"
}
case_gsi_listen() {  # ID FAMILY LOCALIP RPINGADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4 t0 jpid jrc krc i
  t0=$(date +%s)
  jrun GsiProbe --ip "$ip" --listen --timeout 40 > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'listening on QP1' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  drop_cmd "$id" "timeout -k 5 20 rping -c -v -C 1 -a $addr -p 7174"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" 60)
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  # rping fails by design (nothing answers its REQ yet): only rxe4j's side decides the case
  record "$id" "kernel rping -c REQ -> rxe4j QP1 (rping exit $krc, expected to fail)" "$fam" "$jrc" 0 \
    $(( $(date +%s) - t0 )) "$(why "$OUT/cases/$id.rxe4j.log")"
}

# (k) rxe4j's IB CM (issue 23) against rping's rdma_cm: CmProbe connects to the guest's rping -s (REQ, REP, RTU,
# then DREQ/DREP), and accepts the guest's rping -c; rping itself fails afterwards (CmProbe does not speak rping's
# data protocol), so only rxe4j's side decides the case
case_cm_connect() {  # ID FAMILY LOCALIP RPINGBIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5 t0 jrc krc
  t0=$(date +%s)
  # rping -s binds 0.0.0.0 by default, an IPv4-only rdma_cm listener (an IPv6 REQ gets REJ 28): -a :: takes both
  drop_cmd "$id" "timeout -k 5 30 rping -s -v -C 1 -a $bind -p 7174"
  sleep 4
  jrun CmProbe --ip "$ip" -p 7174 "$peer" > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(wait_rc "$id" 60)
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  record "$id" "rxe4j IB CM connect -> kernel rping -s (rping exit $krc)" "$fam" "$jrc" 0 $(( $(date +%s) - t0 )) \
    "$(why "$OUT/cases/$id.rxe4j.log")"
}
case_cm_accept() {  # ID FAMILY LOCALIP RPINGADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4 t0 jpid jrc krc i
  t0=$(date +%s)
  jrun CmProbe --ip "$ip" -p 7174 --listen --hold 3 > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'listening on rdma_cm' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  drop_cmd "$id" "timeout -k 5 30 rping -c -v -C 1 -a $addr -p 7174"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" 60)
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  record "$id" "kernel rping -c -> rxe4j IB CM accept (rping exit $krc)" "$fam" "$jrc" 0 $(( $(date +%s) - t0 )) \
    "$(why "$OUT/cases/$id.rxe4j.log")"
}

# (k5-k8) udaddy through SIDR (its port is always 7174; its -p is the port space): CmProbe --udaddy against the
# guest's udaddy, both ways; here both sides check
# (10 UD datagrams each way), so the kernel's exit status counts
case_udaddy_client() {  # ID FAMILY LOCALIP UDADDYBIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5
  case_vs_guest_server "$id" "$fam" 60 "rxe4j udaddy client (IB CM SIDR) -> kernel udaddy -s" \
    "udaddy -b $bind" CmProbe --udaddy --ip "$ip" -p 7174 "$peer"
}
case_udaddy_server() {  # ID FAMILY LOCALIP HOSTADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4
  READY_PATTERN='listening on rdma_cm' case_vs_guest_client "$id" "$fam" 60 \
    "kernel udaddy -s client -> rxe4j udaddy server (IB CM SIDR)" \
    "udaddy -s $addr" CmProbe --udaddy --listen --ip "$ip" -p 7174
}

# (k9-k12) rping's whole flow: RxeRping (rping's SEND/READ/WRITE protocol over rxe4j's IB CM) against the guest's
# rping, both ways, 10 pings with data verification; both sides check, so the kernel's exit status counts
case_rping_client() {  # ID FAMILY LOCALIP RPINGBIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5
  case_vs_guest_server "$id" "$fam" 60 "rxe4j rping client (IB CM) -> kernel rping -s" \
    "rping -s -a $bind -p 7174" RxeRping -c -a "$peer" -C 10 -V --ip "$ip"
}
case_rping_server() {  # ID FAMILY LOCALIP HOSTADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4
  READY_PATTERN='listening on rdma_cm' case_vs_guest_client "$id" "$fam" 60 \
    "kernel rping -c -V -> rxe4j rping server (IB CM)" \
    "rping -c -a $addr -p 7174 -C 10 -V -v" RxeRping -s --ip "$ip"
}

# (k13-k16) librdmacm's rdma_server / rdma_client (port 7471, rdma_getaddrinfo, a 16-byte SEND each way, the
# client disconnects) against CmProbe --exchange, both ways; both sides check
case_rdmacm_example_client() {  # ID FAMILY LOCALIP BIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5
  case_vs_guest_server "$id" "$fam" 60 "rxe4j rdma_client (IB CM) -> kernel rdma_server" \
    "rdma_server -s $bind -p 7471" CmProbe --exchange -p 7471 --ip "$ip" "$peer"
}
case_rdmacm_example_server() {  # ID FAMILY LOCALIP HOSTADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4
  READY_PATTERN='listening on rdma_cm' case_vs_guest_client "$id" "$fam" 60 \
    "kernel rdma_client -> rxe4j rdma_server (IB CM)" \
    "rdma_client -s $addr -p 7471" CmProbe --exchange --listen --hold 10 -p 7471 --ip "$ip"
}

# (k21-k24) the same exchange through the public connection manager (RdmaListener / RdmaConnection)
case_public_client() {  # ID FAMILY LOCALIP BIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5
  case_vs_guest_server "$id" "$fam" 60 "rxe4j RdmaConnection.connect -> kernel rdma_server" \
    "rdma_server -s $bind -p 7471" CmProbe --exchange --public-api -p 7471 --ip "$ip" "$peer"
}
case_public_server() {  # ID FAMILY LOCALIP HOSTADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4
  READY_PATTERN='listening on rdma_cm' case_vs_guest_client "$id" "$fam" 60 \
    "kernel rdma_client -> rxe4j RdmaListener.accept" \
    "rdma_client -s $addr -p 7471" CmProbe --exchange --public-api --listen --hold 10 -p 7471 --ip "$ip"
}

# (k17-k20) ucmatose (port 7471; 10 SENDs of 100 bytes each way, the server first; the server disconnects) against
# CmProbe --cmatose, both ways; both sides check
case_cmatose_client() {  # ID FAMILY LOCALIP BIND PEERADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 bind=$4 peer=$5
  case_vs_guest_server "$id" "$fam" 60 "rxe4j ucmatose client (IB CM) -> kernel ucmatose" \
    "ucmatose -b $bind" CmProbe --cmatose -p 7471 --ip "$ip" "$peer"
}
case_cmatose_server() {  # ID FAMILY LOCALIP HOSTADDR
  want "$1" || return 0
  local id=$1 fam=$2 ip=$3 addr=$4
  READY_PATTERN='listening on rdma_cm' case_vs_guest_client "$id" "$fam" 60 \
    "kernel ucmatose client -> rxe4j ucmatose server (IB CM)" \
    "ucmatose -s $addr" CmProbe --cmatose --listen -p 7471 --ip "$ip"
}

# (d) perftest: rxe-perf --perftest as the peer of the guest's ib_*_bw, both directions
prun() {  # ARGS... : rxe-perf in the namespace (OPFN=1 maps to --tid)
  ip netns exec "$NS" timeout -k 5 "$JAVA_TIMEOUT" "$JAVA" --enable-native-access=ALL-UNNAMED -cp "$CP" \
    io.rxe4j.examples.perf.RxePerf ${OPFN_ARG:+--tid} "$@"
}
case_pt_server() {  # ID FAMILY TEST TCPPORT GIDVAR KTIMEOUT PEER ARGS... : guest ib_TEST client -> rxe-perf server
  want "$1" || return 0
  local id=$1 fam=$2 test=$3 port=$4 gvar=$5 kt=$6 peer=$7; shift 7
  local t0 jpid jrc krc i note
  t0=$(date +%s)
  prun "$test" --perftest --server -p "$port" -n "$PT_ITERS" -m 1024 ${JARGS:-} "$@" > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'Waiting for client' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  local v6=""; [ "$fam" = IPv6 ] && v6=--ipv6-addr   # perftest's own TCP exchange is IPv4 unless told
  drop_cmd "$id" "timeout -k 5 $kt ib_$test -d rxe0 -x \$$gvar -F -p $port -n $PT_ITERS -m 1024 $v6 $* $peer"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel client killed by timeout ${kt}s${note:+; $note}"
  record "$id" "kernel ib_$test client -> rxe-perf --perftest $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}
case_pt_client() {  # ID FAMILY TEST TCPPORT GIDVAR KTIMEOUT GUESTADDR ARGS... : rxe-perf client -> guest ib_TEST server
  want "$1" || return 0
  local id=$1 fam=$2 test=$3 port=$4 gvar=$5 kt=$6 gaddr=$7; shift 7
  local t0 jrc krc note
  t0=$(date +%s)
  local v6=""; [ "$fam" = IPv6 ] && v6=--ipv6-addr
  drop_cmd "$id" "timeout -k 5 $kt ib_$test -d rxe0 -x \$$gvar -F -p $port -n $PT_ITERS -m 1024 $v6 $*"
  sleep 2   # the guest starts its server; rxe-perf retries the TCP connection for 10 s anyway
  prun "$test" --perftest --connect "$gaddr" -p "$port" -n "$PT_ITERS" -m 1024 ${JARGS:-} "$@" > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel server killed by timeout ${kt}s${note:+; $note}"
  record "$id" "rxe-perf --perftest client -> kernel ib_$test $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# (k25-k48) perftest -R: rdma_cm (rxe4j's IB CM) connects perftest's control QP and the test QPs on port -p; the
# exchange runs as SENDs on the control QP. The guest's CM answers on QP1 only once ib_cm is loaded (j cases);
# perftest loads rdma_ucm (and with it rdma_cm, ib_cm) itself, but rxe4j's first REQ may come before that
CM_LOADED=0
load_cm() {
  [ "$CM_LOADED" = 1 ] && return 0
  drop_cmd load_cm "modprobe ib_cm && modprobe rdma_ucm && lsmod | grep -wE 'ib_cm|rdma_cm|rdma_ucm'"
  [ "$(wait_rc load_cm 60)" = 0 ] && CM_LOADED=1 || log "warning: modprobe ib_cm rdma_ucm failed in the guest"
}
case_ptcm_server() {  # ID FAMILY TEST PORT GIDVAR KTIMEOUT LOCALIP PEER ARGS... : guest ib_TEST -R client -> rxe-perf -R server
  want "$1" || return 0
  local id=$1 fam=$2 test=$3 port=$4 gvar=$5 kt=$6 ip=$7 peer=$8; shift 8
  local t0 jpid jrc krc i note
  load_cm
  t0=$(date +%s)
  prun "$test" --perftest -R --server --ip "$ip" -p "$port" -n "$PT_ITERS" -m 1024 ${JARGS:-} "$@" \
    > "$OUT/cases/$id.rxe4j.log" 2>&1 &
  jpid=$!
  for i in $(seq 1 60); do grep -qs 'Waiting for client' "$OUT/cases/$id.rxe4j.log" && break; sleep 0.5; done
  local v6=""; [ "$fam" = IPv6 ] && v6=--ipv6-addr   # perftest -R resolves its addresses as AF_INET unless told
  drop_cmd "$id" "timeout -k 5 $kt ib_$test -d rxe0 -R -x \$$gvar -F -p $port -n $PT_ITERS -m 1024 $v6 $* $peer"
  wait "$jpid"; jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel client killed by timeout ${kt}s${note:+; $note}"
  record "$id" "kernel ib_$test -R client -> rxe-perf --perftest -R $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}
case_ptcm_client() {  # ID FAMILY TEST PORT GIDVAR KTIMEOUT GUESTADDR ARGS... : rxe-perf -R client -> guest ib_TEST -R server
  want "$1" || return 0
  local id=$1 fam=$2 test=$3 port=$4 gvar=$5 kt=$6 gaddr=$7; shift 7
  local t0 jrc krc note
  load_cm
  t0=$(date +%s)
  local v6=""; [ "$fam" = IPv6 ] && v6=--ipv6-addr   # the server then listens on :: (else 0.0.0.0: IPv4 only)
  drop_cmd "$id" "timeout -k 5 $kt ib_$test -d rxe0 -R -x \$$gvar -F -p $port -n $PT_ITERS -m 1024 $v6 $*"
  sleep 2   # the guest starts its server; rxe-perf retries while the rdma_cm port answers REJ 8 (30 s)
  prun "$test" --perftest -R --connect "$gaddr" -p "$port" -n "$PT_ITERS" -m 1024 ${JARGS:-} "$@" \
    > "$OUT/cases/$id.rxe4j.log" 2>&1
  jrc=$?
  krc=$(wait_rc "$id" $((kt + 30)))
  cp "$OUT/logs/cmd-$id.log" "$OUT/cases/$id.kernel.log" 2>/dev/null
  note=$(why "$OUT/cases/$id.rxe4j.log" "$OUT/cases/$id.kernel.log")
  [ "$krc" = 124 ] && note="kernel server killed by timeout ${kt}s${note:+; $note}"
  record "$id" "rxe-perf --perftest -R client -> kernel ib_$test -R $*" "$fam" "$jrc" "$krc" $(( $(date +%s) - t0 )) "$note"
}

# ---------------------------------------------------------------- 3. the cases
t_cases=$(date +%s)
snapshot start
log "IPv4 block"
case_pp_client  a1 IPv4 18515 rc_pingpong        "$HOST_IP"
case_pp_client  a2 IPv4 18516 rc_pingpong_mtu256 "$HOST_IP" -m 256 -s 600
case_pp_server  b1 IPv4 18520 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4"
case_pp_server  b2 IPv4 18521 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" -m 256 -s 600
# UD (issue 22): ud_pingpong's Q_Key 0x11111111, 1024-byte datagrams (the active MTU of a 1500-byte link)
case_udpp_client f1 IPv4 18540 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP" -s 1024
case_udpp_server f2 IPv4 18541 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$HOST_IP" -s 1024
# UC: uc_pingpong's defaults (4096-byte messages at path MTU 1024: SEND FIRST/MIDDLE/LAST)
KIND=uc case_udpp_client g1 IPv4 18544 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP"
KIND=uc case_udpp_server g2 IPv4 18545 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$HOST_IP"
# SRQ: srq_pingpong's defaults (16 RC QPs on one SRQ of 500 receives, 4096-byte messages)
KIND=srq case_udpp_client h1 IPv4 18548 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP"
KIND=srq case_udpp_server h2 IPv4 18549 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" "$HOST_IP"
case_ops_client c1 IPv4 18530 rxe_ops            "$HOST_IP"
case_ops_server c2 IPv4 18525 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4"
# memory windows: the windows test both ways; a WRITE half outside a window (rdma_rxe accepts it: it checks
# the MR only; rxe4j refuses it, IBV_WC_REM_ACCESS_ERR = 10); SEND_WITH_INV of a type 1 window (the
# responder acknowledges it and fails its receive with IBV_WC_REM_INV_REQ_ERR = 9)
case_mw_client i1 IPv4 18560 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" windows
case_mw_server i2 IPv4 18561 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" windows
case_mw_client i9 IPv4 18568 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" localinv
case_mw_server i10 IPv4 18569 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" localinv
case_mw_client i3 IPv4 18562 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" outside --expect-outside SUCCESS
case_mw_server i4 IPv4 18563 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" outside -x 10
case_mw_client i5 IPv4 18564 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" badinv
case_mw_server i6 IPv4 18565 "$HOST_IP" G "$KCLIENT_TIMEOUT_V4" badinv -x 0 -y 9
case_gsi_probe  j1 IPv4 "$HOST_IP" "$GUEST_IP"
case_gsi_listen j2 IPv4 "$HOST_IP" "$HOST_IP"
case_cm_connect k1 IPv4 "$HOST_IP" 0.0.0.0 "$GUEST_IP"
case_cm_accept  k2 IPv4 "$HOST_IP" "$HOST_IP"
case_udaddy_client k5 IPv4 "$HOST_IP" 0.0.0.0 "$GUEST_IP"
case_udaddy_server k6 IPv4 "$HOST_IP" "$HOST_IP"
case_rping_client k9 IPv4 "$HOST_IP" 0.0.0.0 "$GUEST_IP"
case_rping_server k10 IPv4 "$HOST_IP" "$HOST_IP"
case_rdmacm_example_client k13 IPv4 "$HOST_IP" "$GUEST_IP" "$GUEST_IP"
case_rdmacm_example_server k14 IPv4 "$HOST_IP" "$HOST_IP"
case_public_client k21 IPv4 "$HOST_IP" "$GUEST_IP" "$GUEST_IP"
case_public_server k22 IPv4 "$HOST_IP" "$HOST_IP"
case_cmatose_client k17 IPv4 "$HOST_IP" "$GUEST_IP" "$GUEST_IP"
case_cmatose_server k18 IPv4 "$HOST_IP" "$HOST_IP"
# loss: rxe4j drops 2% of the packets it sends; its retransmissions and the kernel's must recover
case_pp_client  e1 IPv4 18515 rc_pingpong        "$HOST_IP" --faults drop=0.02,dir=out --fault-seed 7
for t in write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat; do
  case_pt_server "d-$t-k2j" IPv4 "$t" 18600 G "$KCLIENT_TIMEOUT_V4" "$HOST_IP"
  case_pt_client "d-$t-j2k" IPv4 "$t" 18601 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP"
done
# multi-core rxe4j (issue 13): 4 QPs over 2 event loops (2 SO_REUSEPORT sockets on 4791, steered by QPN),
# against the kernel's 4 QPs; JARGS go to rxe-perf only
JARGS="--loops 2" case_pt_server d-write_bw-q4-loops2-k2j IPv4 write_bw 18604 G "$KCLIENT_TIMEOUT_V4" "$HOST_IP" -q 4
JARGS="--loops 2" case_pt_client d-write_bw-q4-loops2-j2k IPv4 write_bw 18605 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP" -q 4
# READ with 4 QPs: the TCG guest's rdma_rxe stalls a READ response stream for up to ~0.6 s (measured in the
# host capture: a READ's FIRST response, then nothing for that QP for 560 ms, with no request of rxe4j's
# outstanding beyond its window), longer than perftest's default QP timeout allows (-u 14: 67 ms x 8 =
# 537 ms). rdma_rxe as requester never fails there (it takes retry_cnt 7 as infinite); rxe4j counts 7
# retries (extensions.md section 6), so its side gets perftest's -u 17 (537 ms x 8 = 4.3 s)
JARGS="--loops 2 -u 17" case_pt_client d-read_bw-q4-loops2-j2k IPv4 read_bw 18606 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP" -q 4
# perftest -R (k25-k30, k37-k48): odd IDs rxe4j client -> kernel server, even IDs kernel client -> rxe4j server
k=25
for t in write_bw read_bw send_bw; do
  case_ptcm_client "k$k" IPv4 "$t" 18610 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP"
  case_ptcm_server "k$((k + 1))" IPv4 "$t" 18611 G "$KCLIENT_TIMEOUT_V4" "$HOST_IP" "$HOST_IP"
  k=$((k + 2))
done
case_ptcm_client k37 IPv4 write_bw 18612 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP" -q 4
case_ptcm_server k38 IPv4 write_bw 18613 G "$KCLIENT_TIMEOUT_V4" "$HOST_IP" "$HOST_IP" -q 4
k=39
for t in atomic_bw write_lat read_lat send_lat atomic_lat; do
  case_ptcm_client "k$k" IPv4 "$t" 18610 G "$KCLIENT_TIMEOUT_V4" "$GUEST_IP"
  case_ptcm_server "k$((k + 1))" IPv4 "$t" 18611 G "$KCLIENT_TIMEOUT_V4" "$HOST_IP" "$HOST_IP"
  k=$((k + 2))
done
snapshot ipv4
log "IPv6 link-local block"
case_pp_client  a3 IPv6 18517 rc_pingpong_ipv6   "$BR6%br0"
case_pp_server  b3 IPv6 18522 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6"
case_udpp_client f3 IPv6 18542 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$GUEST_IP" -s 1024
case_udpp_server f4 IPv6 18543 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$HOST_IP" -s 1024
KIND=uc case_udpp_client g3 IPv6 18546 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$GUEST_IP"
KIND=uc case_udpp_server g4 IPv6 18547 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$HOST_IP"
KIND=srq case_udpp_client h3 IPv6 18550 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$GUEST_IP"
KIND=srq case_udpp_server h4 IPv6 18551 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" "$HOST_IP"
case_ops_client c3 IPv6 18531 rxe_ops_ipv6       "$BR6%br0"
case_ops_server c4 IPv6 18526 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6"
case_mw_client i7 IPv6 18566 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" windows
case_mw_server i8 IPv6 18567 "$BR6%br0" G6 "$KCLIENT_TIMEOUT_V6" windows
case_gsi_probe  j3 IPv6 "$BR6%br0" "$GUEST_IP6%br0"
case_gsi_listen j4 IPv6 "$BR6%br0" "$BR6%eth0"
case_cm_connect k3 IPv6 "$BR6%br0" :: "$GUEST_IP6%br0"
case_cm_accept  k4 IPv6 "$BR6%br0" "$BR6%eth0"
case_udaddy_client k7 IPv6 "$BR6%br0" :: "$GUEST_IP6%br0"
case_udaddy_server k8 IPv6 "$BR6%br0" "$BR6%eth0"
case_rping_client k11 IPv6 "$BR6%br0" :: "$GUEST_IP6%br0"
case_rping_server k12 IPv6 "$BR6%br0" "$BR6%eth0"
case_rdmacm_example_client k15 IPv6 "$BR6%br0" "$GUEST_IP6%eth0" "$GUEST_IP6%br0"
case_rdmacm_example_server k16 IPv6 "$BR6%br0" "$BR6%eth0"
case_public_client k23 IPv6 "$BR6%br0" "$GUEST_IP6%eth0" "$GUEST_IP6%br0"
case_public_server k24 IPv6 "$BR6%br0" "$BR6%eth0"
case_cmatose_client k19 IPv6 "$BR6%br0" "$GUEST_IP6%eth0" "$GUEST_IP6%br0"
case_cmatose_server k20 IPv6 "$BR6%br0" "$BR6%eth0"
case_pt_server  d-write_bw-k2j-v6 IPv6 write_bw 18602 G6 "$KCLIENT_TIMEOUT_V6" "$BR6%eth0"
case_pt_client  d-write_bw-j2k-v6 IPv6 write_bw 18603 G6 "$KCLIENT_TIMEOUT_V6" "$GUEST_IP6%br0"
# perftest -R over IPv6 link-local (k31-k36): perftest needs --ipv6-addr (AF_INET6) on both sides for rdma_cm;
# a kernel timeout of 60 s: the control connection, the sleep(1) of the bw tests and the test QPs' CM exchanges
k=31
for t in write_bw read_bw send_bw; do
  case_ptcm_client "k$k" IPv6 "$t" 18614 G6 60 "$GUEST_IP6%br0"
  case_ptcm_server "k$((k + 1))" IPv6 "$t" 18615 G6 60 "$BR6%br0" "$BR6%eth0"
  k=$((k + 2))
done
snapshot ipv6
t_cases_end=$(date +%s)

# ---------------------------------------------------------------- 4. stop, captures, summary
stop_vm
trap - INT TERM

PCAP="$OUT/host-br0.pcap"
icrc_line="no capture"
icrc_rc=1
if [ -s "$PCAP" ]; then
  python3 "$VM/pcap_icrc.py" "$PCAP" > "$OUT/pcap_icrc.txt" 2>&1
  icrc_rc=$?
  icrc_line=$(tail -1 "$OUT/pcap_icrc.txt")
fi
# per direction and family: packets, bad ICRCs (the script prints "v6->v6" for IPv6)
icrc_by_dir=$(awk '/ icrc=/ {
    for (i = 1; i <= NF; i++) if ($i ~ /->/) d = $i
    n[d]++; if ($0 ~ / BAD /) b[d]++
  } END { for (d in n) printf "%s: %d packets, %d bad ICRC; ", d, n[d], b[d] + 0 }' "$OUT/pcap_icrc.txt" 2>/dev/null)
# the guest's IPv6 RoCE packets and their UDP checksums
v6_total=0; v6_zero=0
if [ -s "$PCAP" ] && command -v tshark > /dev/null; then
  tshark -r "$PCAP" -Y "ipv6.src==$GUEST_IP6 && udp.dstport==4791" -T fields -e udp.checksum \
    > "$OUT/cases/guest-ipv6-udp-checksums.txt" 2>/dev/null
  v6_total=$(wc -l < "$OUT/cases/guest-ipv6-udp-checksums.txt")
  v6_zero=$(grep -c '^0x0*0$' "$OUT/cases/guest-ipv6-udp-checksums.txt")
  tshark -r "$PCAP" -Y "ipv6.dst==$GUEST_IP6 && udp.dstport==4791" -T fields -e udp.checksum \
    > "$OUT/cases/host-ipv6-udp-checksums.txt" 2>/dev/null
fi
h6_total=$(wc -l < "$OUT/cases/host-ipv6-udp-checksums.txt" 2>/dev/null || echo 0)
# request retransmissions by sender: how long after the previous send of the same (QPN, PSN)?
# With timeout 14 (4.096 us x 2^14 = 67 ms) a timer-driven resend should come >= 67 ms later.
retx=""
[ -s "$PCAP" ] && retx=$(python3 - "$PCAP" <<'PY' 2>&1
import ipaddress, struct, sys
RESP = {0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12}
last, stats = {}, {}
with open(sys.argv[1], "rb") as f:
    le = struct.unpack("<I", f.read(24)[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D)
    while len(h := f.read(16)) == 16:
        ts, tu, incl, _ = struct.unpack(("<" if le else ">") + "IIII", h)
        fr, t = f.read(incl), ts + tu / 1e6
        et = struct.unpack("!H", fr[12:14])[0]
        if et == 0x0800 and fr[23] == 17:
            src, udp = str(ipaddress.ip_address(fr[26:30])), fr[14 + (fr[14] & 15) * 4:]
        elif et == 0x86DD and fr[20] == 17:
            src, udp = str(ipaddress.ip_address(fr[22:38])), fr[54:]
        else:
            continue
        if struct.unpack("!H", udp[2:4])[0] != 4791 or udp[8] in RESP:
            continue
        k = (src, int.from_bytes(udp[13:16], "big"), int.from_bytes(udp[17:20], "big"))
        st = stats.setdefault(src, [0, 0, 0])
        st[0] += 1
        if k in last:
            st[1] += 1
            st[2] += (t - last[k]) < 0.060
        last[k] = t
for src, (n, r, early) in sorted(stats.items()):
    print(f"  {src}: {n} request packets, {r} resent, {early} of them < 60 ms after the previous send of that PSN")
PY
)
csum6_before=$(udp6csum ipv4); csum6_after=$(udp6csum ipv6)

ICRC_RES=PASS; [ "$icrc_rc" = 0 ] || { ICRC_RES=FAIL; FAILS=$((FAILS + 1)); }
ROWS+=("pcap|pcap_icrc.py host-br0.pcap|both|-|-|$ICRC_RES|-|$icrc_line")

echo
echo "==================== rxe4j <-> Linux rdma_rxe live interop ($(uname -n), $(date '+%F %T'))"
echo "guest: $(head -1 "$OUT/ready")"
printf '%-4s %-62s %-5s %-5s %-6s %-15s %-5s %s\n' id case fam rxe4j kernel result time note
for r in "${ROWS[@]}"; do
  IFS='|' read -r id desc fam jrc krc res secs note <<< "$r"
  printf '%-4s %-62s %-5s %-5s %-6s %-15s %-5s %s\n' "$id" "$desc" "$fam" "$jrc" "$krc" "$res" "$secs" "$note"
done
echo
echo "evidence:"
echo "  ICRC by direction (host-br0.pcap): ${icrc_by_dir:-n/a}"
echo "  guest IPv6 RoCE packets: $v6_total, with UDP checksum 0: $v6_zero; host->guest IPv6 RoCE packets: $h6_total"
echo "  netns Udp6InCsumErrors: ${csum6_before:-?} after the IPv4 block, ${csum6_after:-?} after the IPv6 block"
echo "  request retransmissions in host-br0.pcap (local ACK timeout 14 = 67 ms on both sides):"
echo "${retx:-  n/a}"
for k in rcvd_pkts sent_pkts duplicate_request out_of_seq_request completer_retry_err retry_exceeded_err \
         send_rnr_err rcvd_rnr_err rcvd_seq_err; do
  printf '  rdma_rxe %-21s start %-8s after IPv4 %-8s after IPv6 %s\n' "$k" "$(kcounter start $k)" \
    "$(kcounter ipv4 $k)" "$(kcounter ipv6 $k)"
done
echo "  rxe4j counters per case (stderr/stdout of each run, 'rxe4j counters:'):"
for f in "$OUT"/cases/*.rxe4j.log; do
  printf '    %-4s %s\n' "$(basename "$f" .rxe4j.log)" "$(grep -h 'rxe4j counters' "$f" | tail -1 | cut -c1-200)"
done
echo
echo "logs: $OUT/cases (per case *.rxe4j.log, *.kernel.log), $OUT/logs (guest), $OUT/pcap_icrc.txt"
echo "time: $(( $(date +%s) - t_start )) s in all: build $(( t_boot - t_build )) s, boot until ready $(( t_cases - t_boot )) s, cases $(( t_cases_end - t_cases )) s, stop and analysis $(( $(date +%s) - t_cases_end )) s"
if [ "$FAILS" -eq 0 ]; then
  echo "RESULT: PASS"
  exit 0
fi
echo "RESULT: FAIL ($FAILS failed)"
exit 1
