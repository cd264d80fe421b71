#!/usr/bin/env python3
"""Log-log SVG of the simulator's wall time against cluster size.

usage: plot_scaling.py ROWS.tsv OUT.svg
ROWS.tsv: one run per line, tab-separated: gpus jobs days wall_s rss_mb events_per_s
[cpu_s] (bench/run.sh writes it). 30-day runs are joined by a line; other
horizons are drawn as separate labelled points; CPU seconds, when given, as
hollow green points (on a shared machine they are the steadier figure). A dashed line of slope 1 through the first
point shows linear growth (constant cost per GPU). No dependencies beyond the
standard library."""
import math
import sys


def ticks(lo, hi):
    """Log-axis grid values in [lo, hi]: (value, is a power of ten)."""
    d = lo
    while d <= hi * 1.001:
        for m in range(1, 10):
            if lo <= d * m <= hi * 1.001:
                yield d * m, m == 1
        d *= 10


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = []
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) >= 6:
            cpu = float(f[6]) if len(f) >= 7 else None
            rows.append((int(f[0]), int(f[1]), int(f[2]), float(f[3]), float(f[4]), float(f[5]), cpu))
    if not rows:
        sys.exit("plot_scaling: no rows")
    W, H, L, R, T, B = 640, 420, 70, 30, 40, 60
    xs = [r[0] for r in rows]
    ys = [max(r[3], 0.01) for r in rows] + [max(r[6], 0.01) for r in rows if r[6] is not None]
    x0, x1 = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs)))
    y0, y1 = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys) * 1.01))
    if x1 == x0:
        x1 *= 10
    if y1 == y0:
        y1 *= 10

    def px(x):
        return L + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)

    def py(y):
        return H - B - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - T - B)

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">'
         'tide sim: wall time vs cluster size (log-log)</text>']
    for X in (px(v) for v, major in ticks(x0, x1)):
        o.append(f'<line x1="{X:.1f}" y1="{T}" x2="{X:.1f}" y2="{H - B}" stroke="#eee"/>')
    for v in (v for v, major in ticks(x0, x1) if major):
        o.append(f'<text x="{px(v):.1f}" y="{H - B + 16}" text-anchor="middle">{v:,.0f}</text>')
    for Y in (py(v) for v, major in ticks(y0, y1)):
        o.append(f'<line x1="{L}" y1="{Y:.1f}" x2="{W - R}" y2="{Y:.1f}" stroke="#eee"/>')
    for v in (v for v, major in ticks(y0, y1) if major):
        o.append(f'<text x="{L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g} s</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#888"/>')
    o.append(f'<text x="{(W + L - R) / 2}" y="{H - 18}" text-anchor="middle">GPUs (8 per node)</text>')
    o.append(f'<text x="16" y="{(H + T - B) / 2}" text-anchor="middle" '
             f'transform="rotate(-90 16 {(H + T - B) / 2})">wall time</text>')
    month = [r for r in rows if r[2] == 30]
    if month:
        g, w = month[0][0], max(month[0][3], 0.01)
        a, b = (x0, w * x0 / g), (x1, w * x1 / g)
        o.append(f'<line x1="{px(a[0]):.1f}" y1="{py(max(a[1], y0)):.1f}" x2="{px(b[0]):.1f}" '
                 f'y2="{py(min(b[1], y1)):.1f}" stroke="#bbb" stroke-dasharray="5,4"/>')
        pts = " ".join(f"{px(r[0]):.1f},{py(max(r[3], 0.01)):.1f}" for r in month)
        o.append(f'<polyline points="{pts}" fill="none" stroke="#1f6feb" stroke-width="2"/>')
    cpu = [r for r in rows if r[6] is not None and r[2] == 30]
    if cpu:
        pts = " ".join(f"{px(r[0]):.1f},{py(max(r[6], 0.01)):.1f}" for r in cpu)
        o.append(f'<polyline points="{pts}" fill="none" stroke="#2da44e" stroke-dasharray="2,3"/>')
    for r in rows:
        if r[6] is not None:
            o.append(f'<circle cx="{px(r[0]):.1f}" cy="{py(max(r[6], 0.01)):.1f}" r="4" fill="white" '
                     f'stroke="#2da44e" stroke-width="1.5"/>')
    for r in rows:
        X, Y = px(r[0]), py(max(r[3], 0.01))
        col = "#1f6feb" if r[2] == 30 else "#d1242f"
        o.append(f'<circle cx="{X:.1f}" cy="{Y:.1f}" r="4" fill="{col}"/>')
        right = X > (L + W - R) / 2
        o.append(f'<text x="{X + (-6 if right else 6):.1f}" y="{Y + (14 if right else -6):.1f}" '
                 f'text-anchor="{"end" if right else "start"}" fill="{col}">{r[3]:g} s, '
                 f'{r[1] / 1000:g}k jobs, {r[2]} d, {r[5] / 1e6:.2f} M ev/s</text>')
    o.append(f'<text x="{L + 8}" y="{T + 16}" fill="#555">blue: 30 days, 100k jobs per 1,024 GPUs; '
             'red: other horizons; grey dashed: linear; green: CPU s</text>')
    o.append('</svg>')
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(o) + "\n")


main()
