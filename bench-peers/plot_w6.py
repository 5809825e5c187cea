"""Draws W6's per-step curves, rein's and LangGraph's, as one SVG: `make bench-curves`.

Reads, on standard input or from the files named, the lines `rein_w6 step=<k> us=<x>` (from
`cargo bench -p rein-cli --bench curves -- w6`) and `langgraph_w6 step=<k> us=<x>` (from
langgraph_w6.py), ignores every other line, and writes an SVG with both curves on log-log
axes (time per step against the step) to the path given by `--out`. No plotting library: the
SVG is a few dozen elements written by hand, so the script runs on any Python 3.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

LINE = re.compile(r"^(rein_w6|langgraph_w6) step=(\d+) us=([0-9.]+)")
COLOURS = {"rein_w6": "#1b6ac9", "langgraph_w6": "#d1495b"}
LABELS = {"rein_w6": "rein (policies, resilience, hashed ledger)",
          "langgraph_w6": "LangGraph StateGraph + InMemorySaver"}
WIDTH, HEIGHT, MARGIN = 640, 400, 70


def read(texts: list[str]) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for text in texts:
        for line in text.splitlines():
            found = LINE.match(line.strip())
            if found:
                name, step, us = found.group(1), int(found.group(2)), float(found.group(3))
                series.setdefault(name, []).append((step, us))
    for points in series.values():
        points.sort()
    return series


def svg(series: dict[str, list[tuple[int, float]]]) -> str:
    steps = [s for points in series.values() for s, _ in points]
    values = [v for points in series.values() for _, v in points]
    x_lo, x_hi = math.floor(math.log10(min(steps))), math.ceil(math.log10(max(steps)))
    y_lo, y_hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    x_hi, y_hi = max(x_hi, x_lo + 1), max(y_hi, y_lo + 1)

    def x(step: float) -> float:
        return MARGIN + (math.log10(step) - x_lo) / (x_hi - x_lo) * (WIDTH - 2 * MARGIN)

    def y(us: float) -> float:
        return HEIGHT - MARGIN - (math.log10(us) - y_lo) / (y_hi - y_lo) * (HEIGHT - 2 * MARGIN)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="14">'
           'W6: time per decision as a run grows (log-log; lower and flatter is better)</text>']
    for e in range(x_lo, x_hi + 1):
        out.append(f'<line x1="{x(10**e):.1f}" y1="{MARGIN}" x2="{x(10**e):.1f}" '
                   f'y2="{HEIGHT - MARGIN}" stroke="#ddd"/>')
        out.append(f'<text x="{x(10**e):.1f}" y="{HEIGHT - MARGIN + 18}" '
                   f'text-anchor="middle">{10**e:,}</text>')
    for e in range(y_lo, y_hi + 1):
        out.append(f'<line x1="{MARGIN}" y1="{y(10**e):.1f}" x2="{WIDTH - MARGIN}" '
                   f'y2="{y(10**e):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{MARGIN - 8}" y="{y(10**e) + 4:.1f}" text-anchor="end">'
                   f'{10.0**e:g} µs</text>')
    out.append(f'<text x="{WIDTH / 2}" y="{HEIGHT - 24}" text-anchor="middle">step of the run</text>')
    for row, (name, points) in enumerate(sorted(series.items(), key=lambda kv: kv[0] != "rein_w6")):
        colour = COLOURS.get(name, "black")
        path = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for s, v in points:
            out.append(f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}">'
                       f'<title>{name} step {s}: {v:.3f} µs</title></circle>')
        ly = MARGIN + 16 * row
        out.append(f'<line x1="{MARGIN + 10}" y1="{ly}" x2="{MARGIN + 30}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{MARGIN + 36}" y="{ly + 4}">{LABELS.get(name, name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("inputs", nargs="*", help="files of bench output (default: stdin)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    texts = [Path(p).read_text() for p in args.inputs] or [sys.stdin.read()]
    series = read(texts)
    if not series:
        sys.exit("no `rein_w6 step=… us=…` or `langgraph_w6 step=… us=…` lines in the input")
    Path(args.out).write_text(svg(series))
    for name, points in series.items():
        print(f"{name}: " + ", ".join(f"step {s}: {v:.3f} µs" for s, v in points))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
