#!/usr/bin/env python3
"""Medians of the issue-13 target runs (scripts/perf-targets.sh) as a Markdown table.

    scripts/perf-targets.py OUTDIR

Per row: the median over the runs of rxe4j's figure, raw UDP's figure, and the same-run ratio
rxe4j / raw (for bandwidth MB/s or Mpps; for latency the p50 and p99 ratios raw / rxe4j are shown
as rxe4j / raw, lower is better), the range of the ratio over the runs, and the target verdict.
No third-party packages.
"""
import glob
import json
import os
import statistics
import sys


def load(outdir, name):
    runs = []
    for f in sorted(glob.glob(os.path.join(outdir, name + ".*.json"))):
        with open(f) as fh:
            runs.append(json.load(fh)["results"][0])
    return runs


def med(xs):
    return statistics.median(xs)


def bw_row(outdir, name, label, metric, target_ratio=None, target_abs=None):
    runs = load(outdir, name)
    if not runs:
        return None
    r = [x["rxe4j"][metric] for x in runs]
    w = [x["raw"][metric] for x in runs]
    q = [a / b for a, b in zip(r, w)]
    verdict = []
    if target_ratio is not None:
        verdict.append(("met" if med(q) >= target_ratio else "missed") + f" (≥ {target_ratio}× raw)")
    if target_abs is not None:
        gbs = med([x["rxe4j"]["bw_mb_s"] for x in runs]) * 1048576 / 1e9
        verdict.append(("met" if gbs >= target_abs else "missed") + f" ({gbs:.2f} GB/s, target ≥ {target_abs} GB/s)")
    unit = "MiB/s" if metric == "bw_mb_s" else "Mpps"
    fmt = "{:,.0f}" if metric == "bw_mb_s" else "{:.3f}"
    return (f"| {label} | {fmt.format(med(r))} {unit} | {fmt.format(med(w))} {unit} | {med(q):.2f} "
            f"({min(q):.2f}–{max(q):.2f}) | {'; '.join(verdict)} | {len(runs)} |")


def lat_row(outdir, name, label):
    runs = load(outdir, name)
    if not runs:
        return None
    r50 = [x["rxe4j"]["t_p50_us"] for x in runs]
    w50 = [x["raw"]["t_p50_us"] for x in runs]
    r99 = [x["rxe4j"]["t_p99_us"] for x in runs]
    w99 = [x["raw"]["t_p99_us"] for x in runs]
    q50 = [a / b for a, b in zip(r50, w50)]
    q99 = [a / b for a, b in zip(r99, w99)]
    v50 = "met" if med(q50) <= 1.2 else "missed"
    v99 = "met" if med(q99) <= 2.0 else "missed"
    return (f"| {label} | {med(r50):.1f} / {med(r99):,.0f} µs | {med(w50):.1f} / {med(w99):,.0f} µs | "
            f"{med(q50):.2f} ({min(q50):.2f}–{max(q50):.2f}) / {med(q99):.2f} ({min(q99):.2f}–{max(q99):.2f}) | "
            f"p50 {v50} (≤ 1.2×), p99 {v99} (≤ 2×) | {len(runs)} |")


def main():
    outdir = sys.argv[1]
    print("| row | rxe4j (median) | raw UDP (median) | ratio rxe4j / raw, median (range) | target | runs |")
    print("|---|---:|---:|---|---|---:|")
    rows = []
    for t in ("write_bw", "read_bw", "send_bw"):
        rows.append(bw_row(outdir, f"{t}-64k-nio", f"{t} 64 KiB, nio", "bw_mb_s", 0.9))
        rows.append(bw_row(outdir, f"{t}-64k-epoll", f"{t} 64 KiB, epoll", "bw_mb_s", 0.9))
        rows.append(bw_row(outdir, f"{t}-64k-epoll-gso-gro", f"{t} 64 KiB, epoll + GSO + GRO, IPv6", "bw_mb_s", 0.8))
        rows.append(bw_row(outdir, f"{t}-64k-io_uring", f"{t} 64 KiB, io_uring", "bw_mb_s", 0.9))
        rows.append(bw_row(outdir, f"{t}-64k-io_uring-gso", f"{t} 64 KiB, io_uring + GSO, IPv6", "bw_mb_s", 0.8))
    rows.append(bw_row(outdir, "write_bw-64-nio", "write_bw 64 B (message rate), nio", "mpps", 0.8))
    rows.append(bw_row(outdir, "write_bw-64-epoll", "write_bw 64 B, epoll", "mpps", 0.8))
    rows.append(bw_row(outdir, "write_bw-64-epoll-gso-gro", "write_bw 64 B, epoll + GSO + GRO, IPv6", "mpps", 0.8))
    rows.append(bw_row(outdir, "atomic_bw-nio", "atomic_bw FAA, nio", "mpps", 0.8))
    rows.append(bw_row(outdir, "write_bw-64-io_uring", "write_bw 64 B, io_uring", "mpps", 0.8))
    rows.append(bw_row(outdir, "atomic_bw-epoll", "atomic_bw FAA, epoll", "mpps", 0.8))
    rows.append(bw_row(outdir, "atomic_bw-io_uring", "atomic_bw FAA, io_uring", "mpps", 0.8))
    rows.append(lat_row(outdir, "atomic_lat-busy", "atomic_lat FAA p50 / p99, epoll, busy polling"))
    rows.append(lat_row(outdir, "atomic_lat-events", "atomic_lat FAA p50 / p99, epoll, `--events`"))
    rows.append(lat_row(outdir, "atomic_lat-backoff", "atomic_lat FAA p50 / p99, epoll, `--backoff`"))
    rows.append(lat_row(outdir, "atomic_lat-io_uring-busy", "atomic_lat FAA p50 / p99, io_uring, busy polling"))
    rows.append(lat_row(outdir, "atomic_lat-io_uring-events", "atomic_lat FAA p50 / p99, io_uring, `--events`"))
    for r in rows:
        if r:
            print(r)


if __name__ == "__main__":
    main()
