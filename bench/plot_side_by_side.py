#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Draws the ratios of a side-by-side run (staticlm tokens/s over llama.cpp's, interleaved, on one
host) as an SVG bar chart: one group per shape and precision, a prefill bar and a decode bar,
a line at 1 (parity). Reads the JSON that bench/llama_cpp_side_by_side.py --json-out writes (schema
staticlm-side-by-side/1); writes plain SVG with the standard library alone.

  bench/plot_side_by_side.py bench/results/2026-12-06-intel-xeon-amx-side-by-side.json \\
      -o docs/images/side-by-side-intel-xeon-amx.svg
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

SCHEMA = "staticlm-side-by-side/1"
PRECISION_ORDER = ["f32", "f16", "bf16", "q8_0", "q4_0"]
BAR_WIDTH = 22
GROUP_GAP = 22
SHAPE_GAP = 30
PLOT_HEIGHT = 260
LEFT = 56
TOP = 104
BOTTOM = 48
COLOURS = {"pp": "#3b6ea8", "tg": "#e08a2c"}


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"plot_side_by_side: {path}: {error}")
    if doc.get("schema") != SCHEMA:
        sys.exit(f"plot_side_by_side: {path}: expected schema {SCHEMA!r}, found {doc.get('schema')!r}")
    for key in ("date", "host", "peer", "shapes"):
        if key not in doc:
            sys.exit(f"plot_side_by_side: {path}: missing key {key!r}")
    return doc


def ratio(entry, key):
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or value <= 0:
        sys.exit(f"plot_side_by_side: {key} must be a positive number, found {value!r}")
    return float(value)


def groups(doc):
    """(label, pp ratio or None, tg ratio or None) per shape and precision, precisions in order."""
    out = []
    for shape, by_precision in doc["shapes"].items():
        order = sorted(by_precision, key=lambda p: PRECISION_ORDER.index(p) if p in PRECISION_ORDER else 99)
        for precision in order:
            entry = by_precision[precision]
            out.append((shape, precision, ratio(entry, "pp_ratio"), ratio(entry, "tg_ratio")))
    if not out:
        sys.exit("plot_side_by_side: the file has no shapes")
    return out


def nice_top(value):
    for step in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20):
        if value <= step:
            return step
    return float(int(value) + 1)


def svg(doc):
    bars = groups(doc)
    values = [r for _, _, pp, tg in bars for r in (pp, tg) if r is not None]
    if not values:
        sys.exit("plot_side_by_side: no ratio in the file is recorded")
    top = nice_top(max(values) * 1.1)
    group_width = 2 * BAR_WIDTH + GROUP_GAP
    shapes = list(dict.fromkeys(shape for shape, _, _, _ in bars))
    width = max(LEFT + len(bars) * group_width + (len(shapes) - 1) * SHAPE_GAP + 40, 640)
    height = TOP + PLOT_HEIGHT + BOTTOM

    def y(value):
        return TOP + PLOT_HEIGHT * (1.0 - value / top)

    host = doc["host"]
    lines = [f"staticlm tokens/s ÷ llama.cpp's, {host.get('threads', '?')} threads, {doc['date']} "
             f"(above 1: staticlm is faster)",
             f"CPU: {host.get('cpu', '?')}", f"ISA: {host.get('isa', '?')}", f"peer: {doc['peer']}"]
    width = max(width, int(max(len(line) for line in lines) * 6.2) + LEFT)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(lines[0])}</text>',
    ]
    for index, line in enumerate(lines[1:]):
        parts.append(f'<text x="{LEFT}" y="{34 + 14 * index}" fill="#333">{escape(line)}</text>')
    legend_x = LEFT
    for key, label in (("pp", f"prefill (pp{doc.get('prompt_tokens', '')})"), ("tg", "decode (tg)")):
        parts.append(f'<rect x="{legend_x}" y="{TOP - 20}" width="10" height="10" fill="{COLOURS[key]}"/>')
        parts.append(f'<text x="{legend_x + 14}" y="{TOP - 11}">{escape(label)}</text>')
        legend_x += 120
    ticks = [t / 2 for t in range(0, int(top * 2) + 1)] if top <= 4 else list(range(0, int(top) + 1))
    for tick in ticks:
        parts.append(f'<line x1="{LEFT}" x2="{width - 30}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e6e6e6"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    parts.append(f'<line x1="{LEFT}" x2="{width - 30}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="black" '
                 f'stroke-dasharray="4 3"/>')
    x = LEFT + GROUP_GAP / 2
    for shape in shapes:
        first = x
        for _, precision, pp, tg in (bar for bar in bars if bar[0] == shape):
            for offset, key, value in ((0, "pp", pp), (BAR_WIDTH, "tg", tg)):
                centre = x + offset + BAR_WIDTH / 2
                if value is None:
                    parts.append(f'<text x="{centre:.1f}" y="{y(0) - 4:.1f}" text-anchor="middle" '
                                 f'font-size="9" fill="#888">n/a</text>')
                    continue
                parts.append(f'<rect x="{x + offset:.1f}" y="{y(value):.1f}" width="{BAR_WIDTH}" '
                             f'height="{y(0) - y(value):.1f}" fill="{COLOURS[key]}"/>')
                parts.append(f'<text x="{centre:.1f}" y="{y(value) - 3:.1f}" text-anchor="middle" '
                             f'font-size="9">{value:.2f}</text>')
            parts.append(f'<text x="{x + BAR_WIDTH:.1f}" y="{y(0) + 14:.1f}" text-anchor="middle">'
                         f'{escape(precision)}</text>')
            x += group_width
        parts.append(f'<text x="{(first + x - GROUP_GAP) / 2:.1f}" y="{y(0) + 32:.1f}" text-anchor="middle" '
                     f'font-weight="bold">{escape(shape)}</text>')
        x += SHAPE_GAP
    parts.append(f'<line x1="{LEFT}" x2="{width - 30}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="black"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json_file", help="a side-by-side JSON (schema staticlm-side-by-side/1)")
    parser.add_argument("-o", "--output", required=True, help="the SVG to write")
    args = parser.parse_args()
    chart = svg(load(args.json_file))
    with open(args.output, "w", encoding="utf-8") as out:
        out.write(chart)


if __name__ == "__main__":
    main()
