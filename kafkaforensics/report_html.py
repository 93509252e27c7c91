"""``kfx analyze --html``: one self-contained page (no scripts, no external files).

Per partition a summary and a timeline picture in inline SVG: offset and timestamp over byte
position, segment boundaries, and damaged (red) and suspicious (orange) places marked.
"""
from __future__ import annotations

import html

from .analyzer import AnalysisReport, PartitionSummary

W, H, PAD = 900, 220, 40


def _scale(v, lo, hi, a, b):
    if hi <= lo:
        return (a + b) / 2
    return a + (v - lo) * (b - a) / (hi - lo)


def _svg(p: PartitionSummary, findings) -> str:
    pts = p.timeline
    if not pts:
        return "<p>(no batches)</p>"
    xmax = max(p.bytes, pts[-1][0] + 1)
    omin, omax = min(x[1] for x in pts), max(x[1] for x in pts)
    tss = [x[2] for x in pts if x[2] >= 0]
    tmin, tmax = (min(tss), max(tss)) if tss else (0, 1)
    off_line = " ".join(f"{_scale(x, 0, xmax, PAD, W - PAD):.1f},{_scale(o, omin, omax, H - PAD, PAD):.1f}"
                        for x, o, _t in pts)
    ts_line = " ".join(f"{_scale(x, 0, xmax, PAD, W - PAD):.1f},{_scale(t, tmin, tmax, H - PAD, PAD):.1f}"
                       for x, _o, t in pts if t >= 0)
    marks = []
    seg_pos = {}
    for pos, base in p.segment_starts:
        seg_pos[base] = pos
        x = _scale(pos, 0, xmax, PAD, W - PAD)
        marks.append(f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{H - PAD}" class="seg"><title>segment {base}</title></line>')
    for f in findings:
        if f.position is None or f.file is None:
            continue
        base = int(f.file.rsplit("/", 1)[-1][:20]) if f.file.rsplit("/", 1)[-1][:20].isdigit() else None
        if base not in seg_pos:
            continue
        x = _scale(seg_pos[base] + f.position, 0, xmax, PAD, W - PAD)
        cls = "damage" if f.severity == "error" else "suspect" if f.severity == "warning" else "info"
        marks.append(f'<rect x="{x - 2:.1f}" y="{PAD}" width="4" height="{H - 2 * PAD}" class="{cls}">'
                     f"<title>{html.escape(f.kind)}: {html.escape(f.explanation)}</title></rect>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">'
            f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" class="frame"/>'
            + "".join(marks)
            + f'<polyline points="{off_line}" class="offsets"/>'
            + (f'<polyline points="{ts_line}" class="times"/>' if ts_line else "")
            + f'<text x="{PAD}" y="{PAD - 8}" class="axis">offset {omin}..{omax} (blue), timestamp (green)</text>'
            f'<text x="{W - PAD}" y="{H - 12}" class="axis" text-anchor="end">byte position 0..{xmax}</text>'
            "</svg>")


def render(rep: AnalysisReport, title: str = "kfx analyze") -> str:
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>",
           "body{font:14px system-ui,sans-serif;margin:24px;color:#222} table{border-collapse:collapse;margin:8px 0}",
           "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left} .error{color:#b00} .warning{color:#b60}",
           ".frame{fill:#fafafa;stroke:#999} .seg{stroke:#ccc;stroke-dasharray:3 3} .offsets{fill:none;stroke:#1f5fbf;stroke-width:1.5}",
           ".times{fill:none;stroke:#2a9d3a;stroke-width:1} .damage{fill:#d00;opacity:.6} .suspect{fill:#f90;opacity:.6}",
           ".info{fill:#999;opacity:.3} .axis{font-size:11px;fill:#555}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>"]
    c = rep.to_json()["counts"]
    out.append(f"<p>{len(rep.partitions)} partition(s): <b class='error'>{c['error']} error(s)</b>, "
               f"<b class='warning'>{c['warning']} warning(s)</b>, {c['info']} note(s).</p>")
    for p in rep.partitions:
        fs = [f for f in rep.findings if f.partition == p.partition]
        j = p.to_json()
        out.append(f"<h2>{html.escape(p.partition)}</h2><table>")
        for k in ("segments", "batches", "records", "bytes", "logStartOffset", "logEndOffset", "lastStableOffset",
                  "firstTimestamp", "lastTimestamp", "codecs", "producers", "transactions"):
            out.append(f"<tr><th>{k}</th><td>{html.escape(str(j[k]))}</td></tr>")
        out.append("</table>")
        out.append(_svg(p, fs))
        if fs:
            out.append("<table><tr><th>severity</th><th>kind</th><th>offsets</th><th>byte</th><th>explanation</th></tr>")
            for f in fs:
                out.append(f"<tr class='{f.severity}'><td>{f.severity}</td><td>{html.escape(f.kind)}</td>"
                           f"<td>{f.first_offset}..{f.last_offset}</td><td>{'' if f.position is None else f.position}</td>"
                           f"<td>{html.escape(f.explanation)}</td></tr>")
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)
