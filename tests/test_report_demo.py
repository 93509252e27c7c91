"""The forensic story end to end: remedies on findings, the HTML report in a real browser, the damaged sample."""
import json
import os
import re

import pytest

from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.harness.damaged_sample import TXN_PID, make_damaged_logdir

NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("damaged")
    planted = make_damaged_logdir(str(d / "logs"))
    return str(d / "logs"), planted


def _copy(damaged, tmp_path):
    import shutil
    dst = tmp_path / "logs"
    shutil.copytree(damaged[0], dst)
    return str(dst)


def test_remedies_in_json_and_text(damaged, kfx):
    logdir, planted = damaged
    r = kfx("analyze", logdir, "--json", "--now", NOW)
    assert r.exit_code == 1
    fs = json.loads(r.stdout)["findings"]
    by_kind = {}
    for f in fs:
        assert f["remedy"], f
        by_kind.setdefault(f["kind"], []).append(f)
    hang = by_kind["hanging-transaction"][0]
    first = planted["hanging-transaction"]["firstOffset"]
    assert hang["offsetRange"][0] == first and hang["position"] is not None
    assert (f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments --partition 0 "
            f"--start-offset {first}") in hang["remedy"]
    assert f"--producer-id {TXN_PID} --producer-epoch 0 --coordinator-epoch 0" in hang["remedy"]  # brokers < 3.0
    idx = by_kind["index-mismatch"][0]
    assert idx["remedy"].startswith("kfx reindex " + planted["corrupt-index"]["file"][:-len(".index")] + ".log")
    torn = by_kind["truncated-batch"][0]
    assert torn["position"] == planted["torn-tail"]["position"] and torn["offsetRange"] == [404, 404]
    assert f"kfx recover --dry-run {os.path.join(logdir, 'orders-0')}" in torn["remedy"]
    swap = [f for f in by_kind["leftover-file"] if f["file"] == planted["leftover-swap"]["file"]][0]
    assert ".swap" in swap["remedy"] and "kfx recover" in swap["remedy"]
    gap = by_kind["sequence-gap"][0]
    assert "kfx diff" in gap["remedy"] and "17 to 23" in gap["explanation"]
    text = kfx("analyze", logdir, "--now", NOW).stdout
    assert "None" not in text
    assert text.count("remedy: ") == len(fs)
    assert f"--start-offset {first}" in text.replace("\n", " ")


def test_findings_without_offsets_print_none_of_them(damaged):
    rep = analyze([damaged[0]], AnalyzeOptions(now=NOW))
    swap = [f for f in rep.findings if f.kind == "leftover-file"][0]
    assert swap.first_offset is None and swap.offsets_text() == ""
    hang = [f for f in rep.findings if f.kind == "hanging-transaction"][0]
    assert hang.offsets_text() == f"offsets {hang.first_offset}..{hang.last_offset}"
    p = [p for p in rep.partitions if p.partition == "payments-0"][0]
    assert [t["producerId"] for t in p.txns if t["state"] == "open"] == [TXN_PID]


class _Page:
    """What a page holds, from Python's HTML parser: tags with their attributes, ids, and text."""

    def __init__(self, text):
        from html.parser import HTMLParser
        self.tags, self.ids, self.text = [], set(), []
        page = self

        class P(HTMLParser):
            def handle_starttag(self, tag, attrs):
                a = dict(attrs)
                page.tags.append((tag, a))
                if "id" in a:
                    page.ids.add(a["id"])

            def handle_data(self, data):
                page.text.append(data)

        P().feed(text)
        self.text = " ".join(self.text)


def _fetching(page: _Page) -> list:
    """Everything on the page that would make the browser fetch something."""
    bad = [(t, a) for t, a in page.tags if t in ("script", "link", "img", "iframe", "object", "embed", "audio",
                                                  "video", "source", "base", "form", "meta") and
           not (t == "meta" and set(a) == {"charset"})]
    for t, a in page.tags:
        for k in ("src", "srcset", "data", "action", "poster", "xlink:href", "background"):
            if k in a:
                bad.append((t, a))
        if "href" in a and not a["href"].startswith("#"):
            bad.append((t, a))
    return bad


def _report(logdir, tmp_path, kfx, **kw):
    out = tmp_path / "report.html"
    r = kfx("analyze", logdir, "--html", out, "--now", NOW)
    assert r.exit_code == 1 and f"report: {out}" in r.stdout
    return out


def test_report_findings_link_into_batch_tables(damaged, tmp_path, kfx):
    logdir, planted = damaged
    out = _report(logdir, tmp_path, kfx)
    text = out.read_text()
    page = _Page(text)
    assert not _fetching(page) and "url(" not in text and "@import" not in text
    assert "None" not in page.text
    rep = analyze([logdir], AnalyzeOptions(now=NOW))
    for f in rep.findings:
        assert f.explanation in page.text.replace("\n", " ") or f.explanation in text.replace("&#x27;", "'")
    # every link resolves to an anchor on the page; the torn tail, the hanging transaction's first batch
    # and the index entry's segment are among the targets
    hrefs = [a["href"][1:] for t, a in page.tags if t == "a"]
    assert hrefs and set(hrefs) <= page.ids
    assert "p-orders-0-s-225-tail" in hrefs
    hang = [f for f in rep.findings if f.kind == "hanging-transaction"][0]
    assert f"p-payments-0-s-0-b{hang.position}" in hrefs
    # times in UTC ISO beside the milliseconds; the summary for the ticket names each problem and remedy
    assert "2023-11-14T22:13:20.019Z" in page.text and "(1700000000019 ms)" in page.text
    summary = [t for t in page.text.split("Errors (damage)")][0]
    for kind in ("truncated-batch", "leftover-file", "index-mismatch", "sequence-gap", "hanging-transaction"):
        assert kind in summary
    assert "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments" in summary
    # the timelines: segments with the damaged tail, the open transaction pinned with the LSO it holds
    assert 'class="timeline segments"' in text and 'class="damage"' in text
    assert 'class="txn-open"' in text and f"open: pins LSO {hang.first_offset}" in text


def _many_batches(path, n, tail=b""):
    """A partition of ``n`` small v2 batches (one built, copied with its base offset changed: the
    base offset lies outside the CRC) in several segments."""
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.writer import write_partition
    one = build_v2([Record(0, 1_700_000_000_000, b"k", b"v" * 20, [])], base_offset=0)
    write_partition(str(path), (i.to_bytes(8, "big") + one[8:] for i in range(n)), segment_bytes=len(one) * (n // 3 + 1),
                    index_interval_bytes=4096)
    return str(path)


def test_large_logs_are_aggregated_per_segment(tmp_path):
    from kafkaforensics.inspect.report_html import render
    p = _many_batches(tmp_path / "big-0", 9000)
    rep = analyze([p], AnalyzeOptions(now=NOW))
    assert rep.partitions[0].batches == 9000 and len(rep.partitions[0].segment_info) == 3
    page = render(rep)
    assert all(g["buckets"] is not None and not g["rows"] for g in rep.partitions[0].segment_info)
    assert page.count("batches: shown as 40 byte ranges") == 3
    assert len(page.encode()) < 150_000
    # without aggregation the same page carries a row per batch
    full = render(analyze([p], AnalyzeOptions(now=NOW, batch_rows=10**9, max_rows=10**9)))
    assert len(full.encode()) > 10 * len(page.encode())


def test_report_row_budget_spans_segments(tmp_path):
    """Segments under the per-segment threshold still stop keeping rows once the report's budget is spent."""
    p = _many_batches(tmp_path / "mid-0", 3000)
    rep = analyze([p], AnalyzeOptions(now=NOW, batch_rows=1500, max_rows=1200))
    segs = rep.partitions[0].segment_info
    assert sum(len(g["rows"]) for g in segs) <= 1200 and rep.rows_kept <= 1200
    assert any(g["buckets"] is not None for g in segs)


def _png_rows(png: bytes):
    """(width, height, filtered scanlines) of a PNG, with zlib only: enough to tell a blank page."""
    import struct
    import zlib
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, [], None, None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = len(raw) // h
    return w, h, [raw[i * stride:(i + 1) * stride] for i in range(h)]


def _chromium():
    import shutil
    c = shutil.which("chromium") or shutil.which("chromium-browser")
    assert c, "Debian's chromium is installed by `make install` (and the CI image)"
    return c


def _run_chromium(tmp_path, *args):
    import subprocess
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", *args], capture_output=True, text=True, timeout=120)


def test_report_in_headless_chromium(damaged, tmp_path, kfx):
    logdir, _ = damaged
    out = _report(logdir, tmp_path, kfx)
    png = tmp_path / "shot.png"
    proc = _run_chromium(tmp_path, "--window-size=1200,2400", f"--screenshot={png}", f"file://{out}")
    assert png.exists(), proc.stderr[-2000:]
    w, h, rows = _png_rows(png.read_bytes())
    assert (w, h) == (1200, 2400)
    drawn = [r for r in rows if len(set(r[1:])) > 2]   # a row with more than background in it
    assert len(drawn) > h // 5 and len(set(b"".join(rows))) > 64
    dom = _run_chromium(tmp_path, "--dump-dom", f"file://{out}")
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    page = _Page(dom.stdout)
    rep = analyze([logdir], AnalyzeOptions(now=NOW))
    findings = [t for t, a in page.tags if t == "tr" and "finding" in a.get("class", "")]
    assert len(findings) == len(rep.findings)
    for f in rep.findings:
        assert f.kind in page.text and f.remedy in page.text
    svgs = [a.get("class", "") for t, a in page.tags if t == "svg"]
    assert svgs.count("timeline segments") == 4 and "timeline txns" in svgs
    assert not _fetching(page)


def test_each_planted_problem_is_found_then_recovered(damaged, tmp_path, kfx):
    """The demo's sequence through the CLI: verify finds the storage damage (exit 1), analyze the data
    problems too, recover repairs what Kafka's log loading would, verify exits 0; the hanging
    transaction stays (only the cluster can abort it)."""
    logdir = _copy(damaged, tmp_path)
    planted = damaged[1]
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    probs = json.loads(r.stdout)["problems"]
    assert all(p["remedy"] for p in probs)  # verify's problems carry the same remedies as analyze's findings
    assert any(p["remedy"].startswith("kfx reindex ") for p in probs if p["kind"] == "index-mismatch")
    rel = lambda p: os.path.relpath(p, damaged[0])  # noqa: E731
    mine = lambda p: os.path.relpath(p, logdir)  # noqa: E731
    found = {(p["kind"], mine(p["file"]).replace(".index", ".log") if p["kind"] != "leftover-file" else mine(p["file"]),
              p["position"]) for p in probs}
    torn = planted["torn-tail"]
    assert ("truncated-batch", rel(torn["file"]), torn["position"]) in found
    ci = planted["corrupt-index"]
    assert ("index-mismatch", rel(ci["file"])[:-len(".index")] + ".log", ci["position"]) in found
    assert ("leftover-file", rel(planted["leftover-swap"]["file"]), None) in found
    kinds = {f["kind"] for f in json.loads(kfx("analyze", logdir, "--json", "--now", NOW).stdout)["findings"]}
    assert {"sequence-gap", "hanging-transaction", "truncated-batch", "index-mismatch", "leftover-file"} <= kinds
    assert kfx("recover", "--dry-run", os.path.join(logdir, "orders-0")).exit_code == 1
    assert kfx("verify", logdir).exit_code == 1  # the dry run changed nothing
    for part in sorted(os.listdir(logdir)):
        if os.path.isdir(os.path.join(logdir, part)):
            r = kfx("recover", "--backup-dir", tmp_path / "backup" / part, os.path.join(logdir, part))
            assert r.exit_code in (0, 1)
    assert os.path.exists(tmp_path / "backup" / "orders-0")
    r = kfx("verify", logdir)
    assert r.exit_code == 0, r.stdout
    left = {f["kind"] for f in json.loads(kfx("analyze", logdir, "--json", "--now", NOW).stdout)["findings"]}
    assert "hanging-transaction" in left and not left & {"truncated-batch", "index-mismatch", "leftover-file"}
    assert all(kfx("recover", os.path.join(logdir, p)).exit_code == 0 for p in ("orders-0", "clients-0"))  # idempotent


def test_make_demo_script_end_to_end(tmp_path):
    """`make demo` runs demo/run.sh: the whole story, kfx serve included, each step's exit code checked."""
    import signal
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "demo"
    proc = subprocess.Popen(["sh", os.path.join(repo, "demo", "run.sh"), os.path.dirname(sys.executable), str(out)],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        text, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # the script and the kfx serve it started, by their process group
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
    assert proc.returncode == 0, text[-3000:]
    assert (out / "report.html").exists() and f"The report: {out}/report.html" in text
    assert "25 files, 112 batches, 47089 bytes: OK" in text
    assert re.search(r"orders-0 offset 0: .*\n.*orders-0 offset 1:", text)
    assert "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic payments --partition 0" in text
    # the backups hold what changed: the torn segment's cut bytes, from where they were cut
    kept = os.path.getsize(out / "logs" / "orders-0" / "00000000000000000225.log")
    assert os.path.getsize(out / "backup" / "orders-0" / f"00000000000000000225.log.from-byte-{kept}") > 0
    assert (out / "backup" / "orders-0" / "manifest.json").exists()


def test_many_segments_merge_byte_ranges_and_links_still_resolve(tmp_path):
    """Past MAX_BUCKET_ROWS byte-range rows on the page, adjacent ranges merge; a finding inside an
    aggregated segment still links to the row holding its byte."""
    from kafkaforensics.inspect import report_html
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.writer import write_partition
    one = build_v2([Record(0, 1_700_000_000_000, b"k", b"v" * 20, [])], base_offset=0)
    early = build_v2([Record(0, 1_600_000_000_000, b"k", b"v" * 20, [])], base_offset=0)
    assert len(one) == len(early)
    n = 9000
    p = write_partition(str(tmp_path / "many-0"), ((i.to_bytes(8, "big") + (early if i == 4510 else one)[8:])
                                                    for i in range(n)), segment_bytes=len(one) * 60,
                        index_interval_bytes=4096)
    rep = analyze([p], AnalyzeOptions(now=NOW, batch_rows=10))
    assert len(rep.partitions[0].segment_info) == 150
    assert report_html._bucket_factor(rep) == 2  # 150 segments x 40 ranges = 6000 > 4000
    page = report_html.render(rep)
    doc = _Page(page)
    assert sum(1 for t, a in doc.tags if t == "tr" and "-k" in a.get("id", "")) <= report_html.MAX_BUCKET_ROWS
    hrefs = [a["href"][1:] for t, a in doc.tags if t == "a"]
    reg = [f for f in rep.findings if f.kind == "timestamp-regression"][0]
    assert (reg.first_offset, reg.position) == (4510, 10 * len(one))
    target = report_html._target(rep.partitions[0], reg, 2)
    assert target.startswith("p-many-0-s-4500-k") and target in hrefs and target in doc.ids
    k = int(target.rsplit("-k", 1)[1])
    bk = report_html._merged(rep.partitions[0].segment_info[75], 2)[k]
    assert bk[0] <= reg.position < bk[1] and bk[2] <= 4510 <= bk[3]
    assert set(hrefs) <= doc.ids
