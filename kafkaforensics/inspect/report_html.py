"""``kfx analyze --html``: one self-contained page an investigator can hand over.

No script, no stylesheet, font or image fetched from anywhere: CSS and inline SVG only.  The page
holds, in order: a summary paragraph to paste into an incident ticket; the findings grouped by
severity, each with its remedy and with the file, byte position and offsets linking into the batch
tables; then per partition its figures (times in UTC ISO form beside the epoch milliseconds), a
timeline of its segments (byte and offset ranges, sizes, codecs, the damaged tail), a timeline of
its producers and transactions (first batch to marker; open ones pinned to the log end with the
last stable offset they hold), offset and timestamp over byte position, and a batch table per
segment -- one row a batch, or, for a segment above ``AnalyzeOptions.batch_rows`` batches, one row
per byte range (see :class:`~.analyzer._Walk`), so the page stays small for any log size.
"""
from __future__ import annotations

import datetime as _dt
import html
import os

from kafkaforensics.inspect.analyzer import AnalysisReport, Finding, PartitionSummary
from kafkaforensics.log.segment import offset_from_name

W, H, PAD = 900, 220, 40
SEVERITIES = (("error", "Errors (damage)"), ("warning", "Warnings (suspicious)"), ("info", "Notes"))
#: findings listed per kind and partition; the rest are counted (a log with a regression on every batch)
MAX_FINDINGS_PER_KIND = 100
#: byte-range rows on the whole page: with more segments, adjacent ranges of a segment are merged
MAX_BUCKET_ROWS = 4000

_e = html.escape


def iso(ms: int | None) -> str:
    """Epoch milliseconds as UTC ISO 8601 ("2023-11-14T22:13:20.000Z"); "" for absent or out of range."""
    if ms is None or ms < 0:
        return ""
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).isoformat(timespec="milliseconds") \
            .replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return ""


def _ts(ms: int | None) -> str:
    """A timestamp cell: ISO beside the milliseconds, or an em dash when absent."""
    if ms is None:
        return "<span class='absent'>&mdash;</span>"
    i = iso(ms)
    return f"{_e(i)} <span class='ms'>({ms} ms)</span>" if i else f"{ms} ms"


def _cell(x) -> str:
    return "<span class='absent'>&mdash;</span>" if x is None or x == "" else _e(str(x))


def _scale(v, lo, hi, a, b):
    if hi <= lo:
        return (a + b) / 2
    return a + (v - lo) * (b - a) / (hi - lo)


def _anchor(*parts) -> str:
    return "-".join(str(p).replace(" ", "_") for p in parts)


def _seg_of(p: PartitionSummary, file: str | None):
    if not file:
        return None
    name = os.path.basename(file)
    return next((g for g in p.segment_info if os.path.basename(g["file"]) == name
                 or (offset_from_name(name) is not None and g["baseOffset"] == offset_from_name(name))), None)


def _merged(g: dict, factor: int) -> list:
    """A segment's byte-range buckets, ``factor`` adjacent ones merged into one."""
    if factor == 1:
        return g["buckets"]
    out = []
    for i in range(0, len(g["buckets"]), factor):
        group = [b for b in g["buckets"][i:i + factor] if b is not None]
        out.append(None if not group else [group[0][0], group[-1][1], group[0][2], max(b[3] for b in group),
                                           sum(b[4] for b in group), sum(b[5] for b in group),
                                           set().union(*(b[6] for b in group))])
    return out


def _bucket_factor(rep: AnalysisReport) -> int:
    n = sum(sum(1 for b in g["buckets"] if b is not None)
            for p in rep.partitions for g in p.segment_info if g["buckets"] is not None)
    return max(1, -(-n // MAX_BUCKET_ROWS))


def _target(p: PartitionSummary, f: Finding, factor: int = 1) -> str | None:
    """The anchor a finding links to: its batch's row, the bucket holding its byte, the segment's
    damaged tail, or the segment; else the row holding its first offset."""
    g = _seg_of(p, f.file)
    if g is not None and f.position is not None:
        seg = _anchor("p", p.partition, "s", g["baseOffset"])
        if f.position >= g["validBytes"] and g["validBytes"] < g["size"]:
            return seg + "-tail"
        if g["buckets"] is None:
            if any(r[0] == f.position for r in g["rows"]):
                return seg + f"-b{f.position}"
        else:
            for k, bk in enumerate(_merged(g, factor)):
                if bk is not None and bk[0] <= f.position < bk[1]:
                    return seg + f"-k{k}"
        return seg
    if f.first_offset is not None:
        for g in p.segment_info:
            if g["firstOffset"] is not None and g["firstOffset"] <= f.first_offset <= g["lastOffset"]:
                seg = _anchor("p", p.partition, "s", g["baseOffset"])
                for r in g["rows"]:
                    if r[2] <= f.first_offset <= r[3]:
                        return seg + f"-b{r[0]}"
                return seg
    return _anchor("p", p.partition, "s", g["baseOffset"]) if g is not None else None


def _shown_partitions(rep: AnalysisReport) -> list:
    """The partitions the report details: those holding batches or with a warning or error (the 50
    empty __consumer_offsets partitions of a real broker are counted in one line instead)."""
    flagged = {f.partition for f in rep.findings if f.severity != "info"}
    return [p for p in rep.partitions if p.batches or p.partition in flagged]


def offset_span(p) -> str:
    """A partition's offsets in words, never a reversed range: ``offsets A..B``; where the batches
    read hold no offset (the log end at or below its start) what holds instead."""
    start, end = p.log_start_offset, p.log_end_offset
    if start is None or end is None:
        return "no readable batches"
    if end <= start:
        return f"no offsets: log start offset {start}, log end offset {end}"
    return f"offsets {start}..{end - 1}"


def stable_text(p) -> str:
    """A partition's last stable offset in words, never ``None``: the offset an open transaction pins
    it at, else that no open transaction holds it back."""
    if _pinned(p):
        return f"last stable offset {p.last_stable_offset} (an open transaction pins it)"
    return "no open transaction"


def _pinned(p) -> bool:
    lso = p.last_stable_offset
    return lso is not None and (p.log_end_offset is None or lso < p.log_end_offset)


def ticket_summary(rep: AnalysisReport, paths=()) -> str:
    """A plain-text paragraph for an incident ticket: what was examined, what is wrong, what to do."""
    c = rep.to_json()["counts"]
    lines = [f"kfx analyze of {' '.join(paths) or 'the log dir'}: {len(rep.partitions)} partition(s), "
             f"{sum(p.bytes for p in rep.partitions):,} bytes, {sum(p.batches for p in rep.partitions):,} batches; "
             f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s)."]
    shown = _shown_partitions(rep)
    for p in shown:
        fs = [f for f in rep.findings if f.partition == p.partition and f.severity != "info"]
        span = (f"{offset_span(p)}, {iso(p.first_timestamp) or 'no timestamps'} to {iso(p.last_timestamp) or '?'}"
                if p.log_start_offset is not None else "no readable batches")
        if not fs:
            lines.append(f"- {p.partition} ({span}): no problems found.")
            continue
        kinds: dict[str, list[Finding]] = {}
        for f in fs:
            kinds.setdefault(f.kind, []).append(f)
        what = "; ".join(f"{k}" + (f" x{len(v)}" if len(v) > 1 else "") + f" ({_where(v[0])})" for k, v in kinds.items())
        lines.append(f"- {p.partition} ({span}, {stable_text(p)}): {what}.")
        for k, v in kinds.items():
            lines.append(f"  remedy for {k}: {v[0].remedy}")
    if len(shown) < len(rep.partitions):
        lines.append(f"- {len(rep.partitions) - len(shown)} empty partition(s): no batches, no problems found.")
    return "\n".join(lines)


def _where(f: Finding) -> str:
    out = [x for x in (os.path.basename(f.file) if f.file else "",
                       f"byte {f.position}" if f.position is not None else "", f.offsets_text()) if x]
    return ", ".join(out) or "partition-wide"


def _segments_svg(p: PartitionSummary, findings) -> str:
    """The segments side by side, width by size: offsets, size, codecs; the damaged tail in red."""
    segs = p.segment_info
    if not segs:
        return "<p class='absent'>(no segments)</p>"
    total = max(1, sum(g["size"] for g in segs))
    h = 120
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline segments" width="{W}" height="{h}" '
           f'viewBox="0 0 {W} {h}" role="img"><title>segments of {_e(p.partition)}</title>']
    x0 = PAD
    for g in segs:
        w = max(3.0, (W - 2 * PAD) * g["size"] / total)
        a = _anchor("p", p.partition, "s", g["baseOffset"])
        valid_w = w * (g["validBytes"] / g["size"]) if g["size"] else w
        offs = (f"offsets {g['firstOffset']}..{g['lastOffset']}" if g["firstOffset"] is not None else "no batches")
        tip = (f"{os.path.basename(g['file'])}: bytes {g['start']}..{g['start'] + g['size']} ({g['size']} B), {offs}, "
               f"{g['batches']} batches, codecs {', '.join(sorted(g['codecs'])) or '-'}")
        out.append(f'<a href="#{a}"><rect x="{x0:.1f}" y="30" width="{valid_w:.1f}" height="40" class="segbar">'
                   f'<title>{_e(tip)}</title></rect>')
        if valid_w < w - 0.05:
            bad = f"bytes {g['validBytes']}..{g['size']} of {os.path.basename(g['file'])}: not valid batches"
            out.append(f'<rect x="{x0 + valid_w:.1f}" y="30" width="{max(1.5, w - valid_w):.1f}" height="40" class="damage">'
                       f'<title>{_e(bad)}</title></rect>')
        out.append("</a>")
        if w > 60:
            out.append(f'<text x="{x0 + 3:.1f}" y="24" class="axis">{g["baseOffset"]}</text>'
                       f'<text x="{x0 + 3:.1f}" y="84" class="axis">{_e(offs)}</text>'
                       f'<text x="{x0 + 3:.1f}" y="98" class="axis">{g["size"]:,} B {_e(",".join(sorted(g["codecs"])))}</text>')
        x0 += w
    for f in findings:
        g = _seg_of(p, f.file)
        if g is None or f.position is None:
            continue
        x = PAD + (W - 2 * PAD) * (g["start"] + min(f.position, g["size"])) / total
        cls = {"error": "mark-error", "warning": "mark-warning"}.get(f.severity, "mark-info")
        out.append(f'<rect x="{x - 1.5:.1f}" y="26" width="3" height="48" class="{cls}"><title>{_e(f.kind)}</title></rect>')
    out.append(f'<text x="{PAD}" y="{h - 4}" class="axis">byte 0</text>'
               f'<text x="{W - PAD}" y="{h - 4}" class="axis" text-anchor="end">byte {total:,}</text></svg>')
    return "".join(out)


def _txn_svg(p: PartitionSummary) -> str:
    """Producers (offset spans) and transactions (first batch to marker; open ones to the log end)."""
    if not p.producer_spans:
        return "<p class='absent'>(no producer ids: no idempotent or transactional writes)</p>"
    lo = p.log_start_offset or 0
    hi = max(lo + 1, p.log_end_offset or lo + 1)
    pids = sorted(p.producer_spans, key=lambda k: p.producer_spans[k][0])[:40]
    row = 18
    h = PAD + row * len(pids) + 30
    sx = lambda o: _scale(o, lo, hi, PAD + 90, W - PAD)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline txns" width="{W}" height="{h}" '
           f'viewBox="0 0 {W} {h}" role="img"><title>producers and transactions of {_e(p.partition)}</title>',
           f'<text x="{PAD + 90}" y="{PAD - 22}" class="axis">offset {lo}</text>'
           f'<text x="{W - PAD}" y="{PAD - 22}" class="axis" text-anchor="end">log end offset {hi}</text>']
    txns_by: dict[int, list[dict]] = {}
    for t in p.txns:
        txns_by.setdefault(t["producerId"], []).append(t)
    for i, pid in enumerate(pids):
        y = PAD + i * row
        first, last, nb, t0, t1 = p.producer_spans[pid]
        out.append(f'<text x="{PAD}" y="{y + 12}" class="axis">pid {pid}</text>'
                   f'<line x1="{sx(first):.1f}" y1="{y + 8}" x2="{max(sx(first) + 1, sx(last + 1)):.1f}" y2="{y + 8}" '
                   f'class="pspan"><title>{_e(f"producer {pid}: offsets {first}..{last}, {nb} batches, {iso(t0)} .. {iso(t1)}")}</title></line>')
        for t in txns_by.get(pid, []):
            end = hi if t["state"] == "open" else t["lastOffset"] + 1
            tip = (f"transaction of producer {pid}: offsets {t['firstOffset']}..{t['lastOffset']}, {t['state']}, "
                   f"{iso(t['firstTimestamp'])} .. {iso(t['endTimestamp'])}")
            if t["state"] == "open":
                tip += f"; no marker: pins the last stable offset at {p.last_stable_offset}"
            out.append(f'<rect x="{sx(t["firstOffset"]):.1f}" y="{y + 2}" width="{max(2, sx(end) - sx(t["firstOffset"])):.1f}" '
                       f'height="12" class="txn-{t["state"]}"><title>{_e(tip)}</title></rect>')
            if t["state"] == "open":
                out.append(f'<text x="{min(sx(t["firstOffset"]) + 4, W - PAD - 150):.1f}" y="{y + 12}" class="pin-in">'
                           f'open: pins LSO {p.last_stable_offset}</text>')
    if p.last_stable_offset is not None and p.last_stable_offset < hi:
        x = sx(p.last_stable_offset)
        out.append(f'<line x1="{x:.1f}" y1="{PAD - 16}" x2="{x:.1f}" y2="{h - 20}" class="lso"/>'
                   f'<text x="{x + 3:.1f}" y="{h - 8}" class="pin">LSO {p.last_stable_offset}</text>')
    if len(p.producer_spans) > len(pids):
        out.append(f'<text x="{PAD}" y="{h - 8}" class="axis">(first {len(pids)} of {len(p.producer_spans)} producers)</text>')
    out.append("</svg>")
    return "".join(out)


def _offsets_svg(p: PartitionSummary, findings) -> str:
    pts = p.timeline
    if not pts:
        return ""
    xmax = max(p.bytes, pts[-1][0] + 1)
    omin, omax = min(x[1] for x in pts), max(x[1] for x in pts)
    tss = [x[2] for x in pts if x[2] >= 0]
    tmin, tmax = (min(tss), max(tss)) if tss else (0, 1)
    off_line = " ".join(f"{_scale(x, 0, xmax, PAD, W - PAD):.1f},{_scale(o, omin, omax, H - PAD, PAD):.1f}"
                        for x, o, _t in pts)
    ts_line = " ".join(f"{_scale(x, 0, xmax, PAD, W - PAD):.1f},{_scale(t, tmin, tmax, H - PAD, PAD):.1f}"
                       for x, _o, t in pts if t >= 0)
    marks = []
    for pos, base in p.segment_starts:
        x = _scale(pos, 0, xmax, PAD, W - PAD)
        marks.append(f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{H - PAD}" class="seg"><title>segment {base}</title></line>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline offsets-chart" width="{W}" height="{H}" '
            f'viewBox="0 0 {W} {H}" role="img">'
            f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" class="frame"/>'
            + "".join(marks)
            + f'<polyline points="{off_line}" class="offsets"/>'
            + (f'<polyline points="{ts_line}" class="times"/>' if ts_line else "")
            + f'<text x="{PAD}" y="{PAD - 8}" class="axis">offset {omin}..{omax} (blue); max timestamp '
            f'{_e(iso(tmin) if tss else "-")} .. {_e(iso(tmax) if tss else "-")} (green)</text>'
            f'<text x="{W - PAD}" y="{H - 12}" class="axis" text-anchor="end">byte position 0..{xmax:,}</text>'
            "</svg>")


def _batch_table(p: PartitionSummary, g: dict, marked: set, factor: int = 1) -> str:
    a = _anchor("p", p.partition, "s", g["baseOffset"])
    offs = f"offsets {g['firstOffset']}..{g['lastOffset']}" if g["firstOffset"] is not None else "no batches"
    out = [f"<h4 id='{_e(a)}'>{_e(os.path.basename(g['file']))}: bytes {g['start']:,}..{g['start'] + g['size']:,} "
           f"({g['size']:,} B), {_e(offs)}, {g['batches']:,} batches, {g['records']:,} records, codecs "
           f"{_e(', '.join(f'{k} ({v})' for k, v in sorted(g['codecs'].items())) or '-')}</h4>"]
    if g["buckets"] is None:
        out.append("<table class='batches'><tr><th>byte</th><th>size</th><th>offsets</th><th>records</th><th>codec</th>"
                   "<th>max timestamp</th><th>producer</th><th>flags</th><th>magic</th></tr>")
        for pos, size, base, last, count, codec, ts, pid, flags, magic in g["rows"]:
            cls = " class='marked'" if pos in marked else ""
            out.append(f"<tr id='{_e(a)}-b{pos}'{cls}><td>{pos}</td><td>{size}</td><td>{base}..{last}</td>"
                       f"<td>{_cell(count)}</td><td>{codec}</td><td>{_ts(ts if ts >= 0 else None)}</td>"
                       f"<td>{'' if pid < 0 else pid}</td><td>{_e(flags)}</td><td>{magic}</td></tr>")
    else:
        buckets = _merged(g, factor)
        out.append(f"<p class='note'>{g['batches']:,} batches: shown as {sum(1 for b in buckets if b)} byte ranges.</p>"
                   "<table class='batches'><tr><th>bytes</th><th>offsets</th><th>batches</th><th>records</th>"
                   "<th>codecs</th></tr>")
        for k, bk in enumerate(buckets):
            if bk is None:
                continue
            out.append(f"<tr id='{_e(a)}-k{k}'><td>{bk[0]}..{bk[1]}</td><td>{bk[2]}..{bk[3]}</td><td>{bk[4]}</td>"
                       f"<td>{bk[5]}</td><td>{_e(','.join(sorted(bk[6])))}</td></tr>")
    if g["validBytes"] < g["size"]:
        out.append(f"<tr id='{_e(a)}-tail' class='error'><td colspan='9'>bytes {g['validBytes']}..{g['size']}: "
                   f"{g['size'] - g['validBytes']} bytes that are not valid batches (see the errors above)</td></tr>")
    out.append("</table>")
    return "".join(out)


def _schema_table(tl: dict) -> str:
    """The schema timeline of a partition's values: which schema id and version over which offsets
    and times (``unframed``: values without Confluent framing)."""
    rows = [f"<tr><td>{_cell(s['firstOffset'])}..{_cell(s['lastOffset'])}</td><td>{_ts(s['firstTimestamp'])} .. "
            f"{_ts(s['lastTimestamp'])}</td><td>{'unframed' if s['schemaId'] is None else _cell(s['schemaId'])}</td>"
            f"<td>{_e(s['subject'] or '')}</td><td>{_cell(s['version'])}</td><td>{s['records']:,}</td></tr>"
            for s in tl["spans"]]
    return (f"<h3>Schemas</h3><p>{tl['framed']:,} framed values, {tl['unframed']:,} without framing</p>"
            "<table><tr><th>offsets</th><th>time</th><th>schema id</th><th>subject</th><th>version</th>"
            "<th>values</th></tr>" + "".join(rows) + "</table>")


def render(rep: AnalysisReport, title: str = "kfx analyze", paths=()) -> str:
    parts = {p.partition: p for p in rep.partitions}
    c = rep.to_json()["counts"]
    out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title><style>",
           "body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}",
           "table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;"
           "vertical-align:top} .error{color:#b00} .warning{color:#a50} .info{color:#555}",
           ".absent{color:#999} .ms{color:#777;font-size:12px} .remedy{font-family:monospace;font-size:12px;color:#124}",
           "pre.summary{background:#f4f4f4;border:1px solid #ccc;padding:10px;white-space:pre-wrap}",
           "tr.marked{background:#ffe9c7} :target{background:#fff3a0}",
           ".frame{fill:#fafafa;stroke:#999} .seg{stroke:#bbb;stroke-dasharray:3 3}",
           ".offsets{fill:none;stroke:#1f5fbf;stroke-width:1.5} .times{fill:none;stroke:#2a9d3a;stroke-width:1}",
           ".segbar{fill:#9cc3e6;stroke:#357} .damage{fill:#d22} .mark-error{fill:#b00} .mark-warning{fill:#e80}",
           ".mark-info{fill:#999} .pspan{stroke:#888;stroke-width:2} .txn-committed{fill:#4a4} .txn-aborted{fill:#999}",
           ".txn-open{fill:#e33} .lso{stroke:#e33;stroke-dasharray:4 3} .pin{font-size:11px;fill:#b00} .pin-in{font-size:11px;fill:#fff;font-weight:bold}",
           ".axis{font-size:11px;fill:#555}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p>{len(rep.partitions)} partition(s): <b class='error'>{c['error']} error(s)</b>, "
           f"<b class='warning'>{c['warning']} warning(s)</b>, {c['info']} note(s). "
           f"Report written {_e(iso(int(_dt.datetime.now(_dt.timezone.utc).timestamp() * 1000)))}.</p>",
           "<h2>Summary for the incident ticket</h2>",
           f"<pre class='summary' id='summary'>{_e(ticket_summary(rep, paths))}</pre>"]
    factor = _bucket_factor(rep)
    marked: dict[tuple[str, int], set[int]] = {}
    for f in rep.findings:
        summary = parts.get(f.partition)
        g = _seg_of(summary, f.file) if summary else None
        if g is not None and f.position is not None:
            marked.setdefault((f.partition, g["baseOffset"]), set()).add(f.position)
    for sev, heading in SEVERITIES:
        out += _findings_table(rep, parts, sev, heading, factor)
    shown = _shown_partitions(rep)
    if len(shown) < len(rep.partitions):
        hidden = [p.partition for p in rep.partitions if p not in shown]
        out.append(f"<p class='note'>{len(hidden)} empty partition(s) (no batches, nothing found) not shown: "
                   f"{_e(', '.join(hidden))}</p>")
    for p in shown:
        fs = [f for f in rep.findings if f.partition == p.partition]
        out.append(f"<h2 id='{_e(_anchor('p', p.partition))}'>Partition {_e(p.partition)}</h2><table>")
        rows = [("path", _e(p.path)), ("segments", p.segments), ("batches", f"{p.batches:,}"),
                ("records", f"{p.records:,}"), ("bytes", f"{p.bytes:,}"), ("log start offset", _cell(p.log_start_offset)),
                ("log end offset", _cell(p.log_end_offset)), ("last stable offset", _cell(p.last_stable_offset) + (
                    "" if p.last_stable_offset is None else
                    " (an open transaction pins it)" if _pinned(p) else " (no open transaction)")),
                ("first timestamp", _ts(p.first_timestamp)), ("last timestamp", _ts(p.last_timestamp)),
                ("codecs", _e(", ".join(f"{k} ({v})" for k, v in sorted(p.codecs.items()))) or _cell(None)),
                ("magic", _e(", ".join(f"v{k} ({v})" for k, v in sorted(p.magics.items()))) or _cell(None)),
                ("producers", p.producers),
                ("transactions", _e(", ".join(f"{k} {v}" for k, v in p.transactions.items())))]
        out += [f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows]
        out.append("</table><h3>Segments</h3>" + _segments_svg(p, fs))
        out.append("<h3>Producers and transactions</h3>" + _txn_svg(p))
        out.append("<h3>Offsets and timestamps over the bytes</h3>" + _offsets_svg(p, fs))
        if p.schemas is not None:
            out.append(_schema_table(p.schemas))
        out.append("<h3>Batches</h3>")
        for g in p.segment_info:
            out.append(_batch_table(p, g, marked.get((p.partition, g["baseOffset"]), set()), factor))
    out.append("</body></html>")
    return "\n".join(out)


def _findings_table(rep: AnalysisReport, parts: dict, sev: str, heading: str, factor) -> list[str]:
    """The HTML of one severity's findings: a heading and a table (at most MAX_FINDINGS_PER_KIND a kind)."""
    out: list[str] = []
    fs = [f for f in rep.findings if f.severity == sev]
    out.append(f"<h2 class='{sev}'>{heading}: {len(fs)}</h2>")
    if not fs:
        out.append("<p class='absent'>none</p>")
        return out
    out.append("<table class='findings'><tr><th>partition</th><th>kind</th><th>file</th><th>byte</th>"
               "<th>offsets</th><th>what</th><th>remedy</th></tr>")
    shown: dict[tuple[str, str], int] = {}
    for f in fs:
        k = (f.partition, f.kind)
        shown[k] = shown.get(k, 0) + 1
        if shown[k] > MAX_FINDINGS_PER_KIND:
            continue
        p = parts.get(f.partition)
        t = _target(p, f, factor) if p else None
        link = (lambda text: f"<a href='#{_e(t)}'>{text}</a>" if t and text else (text or _cell(None)))
        out.append(f"<tr class='finding {sev}'><td>{_e(f.partition)}</td><td>{_e(f.kind)}</td>"
                   f"<td>{link(_e(os.path.basename(f.file)) if f.file else '')}</td>"
                   f"<td>{link('' if f.position is None else str(f.position))}</td>"
                   f"<td>{link(_e(f.offsets_text()))}</td><td>{_e(f.explanation)}</td>"
                   f"<td class='remedy'>{_e(f.remedy)}</td></tr>")
    out.append("</table>")
    for (part, kind), n in shown.items():
        if n > MAX_FINDINGS_PER_KIND:
            out.append(f"<p class='note'>{part} {_e(kind)}: {n - MAX_FINDINGS_PER_KIND} more not listed "
                       "(kfx analyze --json has them all)</p>")
    return out
