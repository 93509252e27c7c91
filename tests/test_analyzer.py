"""`kfx analyze` and `kfx diff`: every finding kind appears exactly where planted; clean data gives none."""
import json
import os
import shutil
import subprocess

import pytest

from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import (BatchProducer, HeaderOverrides, build_v2, control_record_key, end_txn_marker_value)
from kafkaforensics.inspect.diff import diff
from kafkaforensics.log.writer import write_partition
from tests.conftest import SAMPLE
from tests.batch_args import v2_kwargs

T0 = 1_700_000_000_000
NOW = T0 + 10**7


def recs(base, n, ts=None, key=b"k"):
    return [Record(base + i, (ts if ts is not None else T0 + (base + i) * 1000), key, b"v%d" % (base + i), [])
            for i in range(n)]


def v2(base, n, **kw):
    ts = kw.pop("ts", None)
    return build_v2(recs(base, n, ts), base_offset=base, **v2_kwargs(**kw))


def marker(off, pid, abort=False, epoch=0, ple=0):
    return build_v2([Record(off, T0 + off * 1000, control_record_key(0 if abort else 1), end_txn_marker_value(2))],
                    base_offset=off, transactional=True, control=True,
                    producer=BatchProducer(producer_id=pid, producer_epoch=epoch), partition_leader_epoch=ple)


def part(tmp_path, batches, name="p-0", **kw):
    return write_partition(str(tmp_path / name), batches, segment_bytes=kw.pop("segment_bytes", 1 << 20),
                           index_interval_bytes=200)


def findings(p, **kw):
    return [(f.kind, f.first_offset, f.last_offset) for f in analyze([p], AnalyzeOptions(now=NOW, **kw)).findings]


def clean_batches():
    out = [v2(0, 3, partition_leader_epoch=0), v2(3, 2, producer_id=5, producer_epoch=0, base_sequence=0,
                                                    partition_leader_epoch=0),
           v2(5, 2, producer_id=5, producer_epoch=0, base_sequence=2, partition_leader_epoch=0),
           v2(7, 2, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True, partition_leader_epoch=0),
           marker(9, 9), v2(10, 4, codec=3, partition_leader_epoch=0)]
    return out


def test_clean_partition_has_no_findings(tmp_path, kfx):
    p = part(tmp_path, clean_batches())
    assert findings(p) == []
    r = kfx("analyze", p, "--json", "--now", NOW)
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["findings"] == [] and out["partitions"][0]["transactions"] == {"committed": 1, "aborted": 0, "open": 0}


def test_offset_gap_and_its_compaction_explanation(tmp_path):
    p = part(tmp_path, [v2(0, 3), v2(10, 2)])
    assert findings(p) == [("offset-gap", 3, 9)]
    # a compacted log (a batch holding fewer records than its offset range) explains gaps
    compacted = build_v2(recs(0, 1), base_offset=0, header=HeaderOverrides(last_offset_delta=2))
    p2 = part(tmp_path, [compacted, v2(10, 2)], name="q-0")
    assert findings(p2) == []


def test_timestamp_findings(tmp_path):
    p = part(tmp_path, [v2(0, 2), v2(2, 2, ts=T0 - 5000), v2(4, 1, ts=-7), v2(5, 1, ts=NOW + 7_200_000),
                        v2(6, 1, log_append_time=True, max_timestamp=NOW)])
    got = findings(p)
    assert ("timestamp-regression", 2, 3) in got
    assert ("pre-epoch-timestamp", 4, 4) in got
    assert ("far-future-timestamp", 5, 5) in got
    assert ("timestamp-type-mixed", 0, 6) in got
    assert len([g for g in got if g[0] == "timestamp-regression"]) == 2  # 2..3 and 6 (after the future one)


def test_producer_findings_with_an_independent_builder(tmp_path):
    from kafka.record.default_records import DefaultRecordBatchBuilder

    def kp(base, n, seq, epoch=0):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0, producer_id=77,
                                      producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
        for i in range(n):
            b.append(i, timestamp=T0 + (base + i) * 1000, key=b"k", value=b"v", headers=[])
        data = bytearray(b.build())
        data[0:8] = base.to_bytes(8, "big")
        return bytes(data)
    p = part(tmp_path, [kp(0, 2, 0), kp(2, 2, 5), kp(4, 2, 6), kp(6, 1, 0, epoch=1), kp(7, 1, 1, epoch=0)])
    got = findings(p)
    assert ("sequence-gap", 2, 3) in got
    assert ("duplicate-sequence", 4, 5) in got
    assert ("fenced-producer-write", 7, 7) in got
    assert len(got) == 3


def test_transaction_findings(tmp_path):
    p = part(tmp_path, [v2(0, 2, producer_id=1, producer_epoch=0, base_sequence=0, transactional=True),
                        marker(2, 1, abort=True),
                        marker(3, 2),                         # a COMMIT for a producer with nothing open
                        v2(4, 2, producer_id=3, producer_epoch=0, base_sequence=0, transactional=True),
                        v2(6, 3)])
    rep = analyze([p], AnalyzeOptions(now=NOW))
    got = [(f.kind, f.first_offset, f.last_offset) for f in rep.findings]
    assert ("aborted-transaction", 0, 2) in got
    assert ("marker-without-data", 3, 3) in got
    assert ("hanging-transaction", 4, 8) in got
    hang = next(f for f in rep.findings if f.kind == "hanging-transaction")
    assert "last stable offset at 4" in hang.explanation
    assert rep.partitions[0].last_stable_offset == 4
    assert {f.severity for f in rep.findings if f.kind == "aborted-transaction"} == {"info"}


def test_leader_epoch_findings(tmp_path):
    p = part(tmp_path, [v2(0, 2, partition_leader_epoch=1), v2(2, 2, partition_leader_epoch=3),
                        v2(4, 2, partition_leader_epoch=2)])
    with open(os.path.join(p, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n2\n1 0\n3 3\n")  # says epoch 3 starts at 3, but a batch of epoch 3 sits at 2
    got = findings(p)
    assert ("leader-epoch-mismatch", 2, 3) in got
    assert ("leader-epoch-regression", 4, 5) in got
    assert ("leader-epoch-mismatch", 4, 5) in got  # epoch 2 is not in the checkpoint


def test_snapshot_disagreeing_with_the_log(tmp_path):
    from kafkaforensics.log.producer_state import read_snapshot, snapshot_bytes
    p = part(tmp_path, [v2(0, 2, producer_id=5, producer_epoch=0, base_sequence=0), v2(2, 2)])
    snap = os.path.join(p, "00000000000000000004.snapshot")
    entries = read_snapshot(open(snap, "rb").read())
    entries[0].last_sequence = 99
    open(snap, "wb").write(snapshot_bytes(entries))
    assert findings(p) == [("snapshot-mismatch", 4, 4)]


def test_damage_leftovers_and_checkpoints_are_errors(tmp_path, kfx):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    p = part(logdir, clean_batches(), name="t-0")
    seg = os.path.join(p, "00000000000000000000.log")
    data = bytearray(open(seg, "rb").read())
    from kafkaforensics.log.segment import iter_batches
    data[[b.position for b in iter_batches(seg)][1] + 70] ^= 0xFF  # inside the CRC-covered bytes
    open(seg, "wb").write(bytes(data))
    shutil.copy(seg, seg + ".cleaned")
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 999\n")
    rep = analyze([str(logdir)], AnalyzeOptions(now=NOW))
    kinds = {(f.kind, f.severity) for f in rep.findings}
    assert {("crc-mismatch", "error"), ("leftover-file", "error"), ("checkpoint-beyond-log-end", "error")} <= kinds
    assert kfx("analyze", str(logdir), "--now", NOW).exit_code == 1


def test_html_report_opens_in_headless_chromium(tmp_path, kfx):
    src = tmp_path / "logs"
    shutil.copytree(SAMPLE, src)
    seg = src / "orders-0" / "00000000000000000225.log"
    with open(seg, "ab") as f:
        f.write(b"\x00" * 100)
    html = tmp_path / "report.html"
    r = kfx("analyze", str(src), "--html", str(html), "--now", NOW)
    assert r.exit_code == 1 and html.exists()
    text = html.read_text()
    assert "<svg" in text and "zeroed-tail" in text and "<script" not in text
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is installed by .ci/run and `make install`"
    png = tmp_path / "shot.png"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1400",
                           f"--screenshot={png}", f"file://{html}"], capture_output=True, text=True, timeout=120)
    assert png.exists() and png.stat().st_size > 10_000, proc.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_diff_replicas(tmp_path, kfx):
    a = [v2(0, 3, partition_leader_epoch=0), v2(3, 2, partition_leader_epoch=0), v2(5, 2, partition_leader_epoch=1)]
    b = [v2(0, 3, partition_leader_epoch=0), v2(3, 2, partition_leader_epoch=0),
         build_v2(recs(5, 3), base_offset=5, partition_leader_epoch=0)]  # B kept writing in epoch 0
    pa, pb = part(tmp_path, a, name="a/p-0"), part(tmp_path, b, name="b/p-0")
    rep = diff(pa, pb)
    assert rep.first_diverging_offset == 5
    assert len(rep.different) == 1 and rep.same_batches == 2
    assert rep.epoch_truncation == {"epoch": 0, "endOffsetInA": 5, "truncateBTo": 5}
    r = kfx("diff", pa, pb, "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["firstDivergingOffset"] == 5
    same = part(tmp_path, a, name="c/p-0")
    assert kfx("diff", pa, same).exit_code == 0
    short = part(tmp_path, a[:2], name="d/p-0")
    rep = diff(pa, short)
    assert rep.first_diverging_offset == 5 and len(rep.only_in_a) == 1


def test_transactions_v2_epoch_bump_per_transaction_is_normal(tmp_path):
    """KIP-890 (transactions v2): every end marker carries the producer epoch bumped by one and the
    next transaction starts at sequence 0 under it -- no producer finding; a write at an old epoch
    after the bump is still a fenced producer."""
    txn = lambda base, n, epoch: v2(base, n, producer_id=9, producer_epoch=epoch, base_sequence=0,  # noqa: E731
                                    transactional=True, partition_leader_epoch=0)
    batches = [txn(0, 2, 0), marker(2, 9, epoch=1), txn(3, 1, 1), marker(4, 9, abort=True, epoch=2),
               txn(5, 3, 2), marker(8, 9, epoch=3)]
    p = part(tmp_path, batches)
    rep = analyze([p], AnalyzeOptions(now=NOW))
    assert [(f.kind, f.first_offset) for f in rep.findings] == [("aborted-transaction", 3)]
    assert rep.partitions[0].transactions == {"committed": 2, "aborted": 1, "open": 0}
    p2 = part(tmp_path, batches + [txn(9, 1, 2)], name="p-1")
    assert ("fenced-producer-write", 9, 9) in findings(p2)
