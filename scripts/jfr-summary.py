#!/usr/bin/env python3
"""Summarises a JFR recording's samples into buckets, overall and per thread group.

    scripts/jfr-summary.py RECORDING.jfr

Counts jdk.ExecutionSample (threads running Java code) and jdk.NativeMethodSample (threads inside a
native method: a send/receive syscall, or blocked in epoll_wait/select, which is idle time, not CPU)
events. Each sample goes to the bucket of its innermost frame that matches one. The JDK's own
poller, JFR and virtual-thread poller threads are left out. Needs a JDK 25 `jfr` (JFR below).
Record with e.g. RXE4J_JAVA_OPTS="-Xms1g -Xmx1g -Dio.netty.leakDetection.level=disabled
-XX:StartFlightRecording=filename=/tmp/x.jfr,settings=profile" bin/rxe-perf ...
"""
import re, subprocess, sys, collections
import os
JFR = os.environ.get("JFR", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr")
rec = sys.argv[1]
out = subprocess.run([JFR, "print", "--events", "jdk.ExecutionSample,jdk.NativeMethodSample", "--stack-depth", "40", rec],
                     capture_output=True, text=True).stdout
events = out.split("\njdk.")
BUCKETS = [
    ("ICRC / CRC32", ("io.rxe4j.core.wire.Icrc", "java.util.zip.CRC32")),
    ("payload copy", ("io.rxe4j.core.memory.MemoryCopy", "io.rxe4j.core.qp.SgeCopy", "copyMemory")),
    ("idle: blocked in epoll_wait/select (not CPU)", ("epollWait", "Native.epoll", "SelectorImpl.select", "EPoll.wait", "Net.poll", "epollBusyWait")),
    ("UDP send/receive syscalls", ("sendmmsg", "recvmmsg", "sendmsg", "recvmsg", "DatagramChannelImpl.send", "DatagramChannelImpl.receive", "IOUtil.write", "IOUtil.read", "DatagramDispatcher", "sendTo", "recvFrom", "writeAddress", "readAddress")),
    ("event-loop hand-off / wake-up", ("SingleThreadEventExecutor.execute", "wakeup", "eventFdWrite", "LockSupport.unpark", "LockSupport.park", "Unsafe.park", "Unsafe.unpark")),
    ("CQ polling / waiting (application)", ("CompletionQueue.poll", "CompletionQueue.await", "RxeCq.poll", "RxeCq.size", "RdmaBench$Side.idle", "onSpinWait", "RxeCq.await")),
    ("rxe4j engine (requester, responder, completer, receive checks)", ("io.rxe4j.core.",)),
    ("Netty buffers and pipeline", ("io.netty.buffer", "io.netty.channel", "io.netty.util")),
    ("other (rxe-perf's own loop, raw-UDP bench, JDK)", ("",)),
]
by_thread = collections.defaultdict(collections.Counter)
total = collections.Counter()
for e in events:
    if not (e.startswith("ExecutionSample") or e.startswith("NativeMethodSample") or e.startswith("jdk.ExecutionSample")):
        continue
    m = re.search(r'sampledThread = "([^"]+)"', e)
    t = m.group(1) if m else "?"
    if t.startswith("MasterPoller") or t.startswith("JFR") or t.startswith("Read-Poller") or t.startswith("Write-Poller"):
        continue
    tg = re.sub(r"[-#]?\d+$", "", t)
    tg = re.sub(r"-\d+-\d+$", "", tg)
    frames = re.findall(r"^\s+([\w$.<>]+\(.*?\))\s+line:", e, re.M)
    if not frames:
        frames = re.findall(r"^\s+(\S+\(.*?\))", e, re.M)
    stack = " ".join(frames)
    b = None
    for f in frames:  # innermost frame first: the first frame that matches a bucket decides
        for name, keys in BUCKETS[:-1]:
            if any(k in f for k in keys):
                b = name
                break
        if b:
            break
    b = b or BUCKETS[-1][0]
    by_thread[tg][b] += 1
    total[b] += 1
n = sum(total.values())
print(f"samples: {n}")
for b, c in total.most_common():
    print(f"  {100*c/n:5.1f} %  {b}")
print("by thread group:")
for tg, cnt in sorted(by_thread.items(), key=lambda kv: -sum(kv[1].values())):
    s = sum(cnt.values())
    print(f"  {tg}: {s} ({100*s/n:.0f} %): " + ", ".join(f"{k.split(' (')[0]} {100*v/s:.0f} %" for k, v in cnt.most_common(4)))
