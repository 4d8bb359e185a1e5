#!/usr/bin/env python3
"""Turn rxe-perf --json output into SVG charts (no third-party packages).

  scripts/perf-chart.py bw OUT.svg SWEEP.json [SWEEP2.json ...]
      bandwidth (MB/s) and message rate (Mpps) against message size (log2 axis), one line per
      mode (rxe4j, raw UDP) and file; SWEEP.json from `rxe-perf write_bw -a --compare --json ...`
  scripts/perf-chart.py lat OUT.svg LAT.json [LAT2.json ...]
      latency percentiles (p50, p99, p99.9, microseconds) per test, rxe4j beside raw UDP; LAT.json
      from `rxe-perf atomic_lat --compare --json ...` (one size per file)

Each input file is one rxe-perf JSON document (the last line that starts with '{' is used, so a
log with other lines before it works too).
"""
import json
import math
import sys

W, H = 900, 380
PAD_L, PAD_R, PAD_T, PAD_B = 70, 170, 40, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def load(path):
    with open(path) as f:
        docs = [line for line in f if line.lstrip().startswith("{")]
    if not docs:
        sys.exit(f"{path}: no JSON document (run rxe-perf with --json)")
    return json.loads(docs[-1])


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_max(v):
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def size_label(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n}{unit}"
    return f"{b}B"


def panel(out, x0, y0, w, h, title, ylabel, series, xs_all):
    """series: [(label, color, [(size, value), ...])] on a log2 x axis."""
    lx = [math.log2(x) for x in xs_all]
    xmin, xmax = min(lx), max(lx)
    if xmax == xmin:
        xmax = xmin + 1
    ymax = nice_max(max((v for _, _, pts in series for _, v in pts if v is not None), default=1))
    X = lambda s: x0 + (math.log2(s) - xmin) / (xmax - xmin) * w
    Y = lambda v: y0 + h - v / ymax * h
    out.append(f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{esc(title)}</text>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    for i in range(6):
        v = ymax * i / 5
        y = Y(v)
        out.append(f'<line x1="{x0}" y1="{y}" x2="{x0 + w}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4}" text-anchor="end" font-size="11">{v:g}</text>')
    step = max(1, len(xs_all) // 12)
    for s in xs_all[::step]:
        out.append(f'<text x="{X(s)}" y="{y0 + h + 16}" text-anchor="middle" font-size="10">{size_label(s)}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 36}" text-anchor="middle" font-size="12">message size (bytes, log scale)</text>')
    out.append(f'<text x="{x0 - 52}" y="{y0 + h / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 52} {y0 + h / 2})">{esc(ylabel)}</text>')
    for k, (label, color, pts) in enumerate(series):
        pts = [(s, v) for s, v in pts if v is not None]
        if pts:
            d = " ".join(f"{'M' if i == 0 else 'L'}{X(s):.1f},{Y(v):.1f}" for i, (s, v) in enumerate(pts))
            out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
            for s, v in pts:
                out.append(f'<circle cx="{X(s):.1f}" cy="{Y(v):.1f}" r="2.5" fill="{color}"/>')
        ly = y0 + 14 + 18 * k
        out.append(f'<line x1="{x0 + w + 14}" y1="{ly - 4}" x2="{x0 + w + 34}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{x0 + w + 40}" y="{ly}" font-size="11">{esc(label)}</text>')


def bw(out_path, files):
    docs = [load(p) for p in files]
    series_bw, series_rate, xs = [], [], set()
    c = 0
    for doc in docs:
        tag = f"{doc['test']} {doc['transport']}"
        for mode in ("rxe4j", "raw"):
            pts_bw, pts_rate = [], []
            for row in doc["results"]:
                r = row.get(mode)
                if r:
                    xs.add(r["bytes"])
                    pts_bw.append((r["bytes"], r["bw_mb_s"]))
                    pts_rate.append((r["bytes"], r["mpps"]))
            if pts_bw:
                label = f"{tag} {'raw UDP' if mode == 'raw' else 'rxe4j'}"
                series_bw.append((label, COLORS[c % len(COLORS)], pts_bw))
                series_rate.append((label, COLORS[c % len(COLORS)], pts_rate))
                c += 1
    xs = sorted(xs)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{2 * H}" font-family="sans-serif">',
           f'<rect width="{W}" height="{2 * H}" fill="white"/>']
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B
    panel(out, PAD_L, PAD_T, pw, ph, "Bandwidth", "MB/s (MiB/s)", series_bw, xs)
    panel(out, PAD_L, H + PAD_T, pw, ph, "Message rate", "million messages/s", series_rate, xs)
    out.append("</svg>")
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")


def lat(out_path, files):
    docs = [load(p) for p in files]
    groups = []  # (label, [(name, value)])
    for doc in docs:
        row = doc["results"][0]
        for mode in ("rxe4j", "raw"):
            r = row.get(mode)
            if r:
                groups.append((f"{doc['test']} {size_label(r['bytes'])} {'raw UDP' if mode == 'raw' else 'rxe4j'}",
                               [("p50", r["t_p50_us"]), ("p99", r["t_p99_us"]), ("p99.9", r["t_p99_9_us"])]))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 60}" font-family="sans-serif">',
           f'<rect width="{W}" height="{H + 60}" fill="white"/>']
    x0, y0, w, h = PAD_L, PAD_T, W - PAD_L - PAD_R, H - PAD_T - PAD_B
    ymax = nice_max(max((v for _, vals in groups for _, v in vals if v is not None), default=1))
    Y = lambda v: y0 + h - v / ymax * h
    out.append(f'<text x="{x0 + w / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">'
               'Latency percentiles (microseconds)</text>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    for i in range(6):
        v = ymax * i / 5
        out.append(f'<line x1="{x0}" y1="{Y(v)}" x2="{x0 + w}" y2="{Y(v)}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{Y(v) + 4}" text-anchor="end" font-size="11">{v:g}</text>')
    gw = w / max(1, len(groups))
    bw_ = gw / 4
    pcolors = {"p50": COLORS[0], "p99": COLORS[3], "p99.9": COLORS[1]}
    for g, (label, vals) in enumerate(groups):
        gx = x0 + g * gw + bw_ / 2
        for k, (name, v) in enumerate(vals):
            if v is None:
                continue
            out.append(f'<rect x="{gx + k * bw_:.1f}" y="{Y(v):.1f}" width="{bw_ * 0.9:.1f}" height="{y0 + h - Y(v):.1f}" '
                       f'fill="{pcolors[name]}"/>')
            out.append(f'<text x="{gx + k * bw_ + bw_ * 0.45:.1f}" y="{Y(v) - 3:.1f}" text-anchor="middle" font-size="9">{v:.0f}</text>')
        out.append(f'<text x="{gx + 1.5 * bw_:.1f}" y="{y0 + h + 14}" text-anchor="middle" font-size="10">{esc(label)}</text>')
    for k, (name, color) in enumerate(pcolors.items()):
        ly = y0 + 14 + 18 * k
        out.append(f'<rect x="{x0 + w + 14}" y="{ly - 10}" width="14" height="10" fill="{color}"/>')
        out.append(f'<text x="{x0 + w + 34}" y="{ly}" font-size="11">{name}</text>')
    out.append("</svg>")
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    if len(argv) < 4 or argv[1] not in ("bw", "lat"):
        sys.exit(__doc__)
    (bw if argv[1] == "bw" else lat)(argv[2], argv[3:])


if __name__ == "__main__":
    main(sys.argv)
