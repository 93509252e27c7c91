"""`kfx explain` and `kfx groups --explain`: planted fates (transactions, retention, DeleteRecords,
compaction, a torn tail, a gap), each answered with its reason and evidence; the real log dirs: no offset
of a partition reported gone, their groups' lag split."""
import json
import os
import subprocess
import sys

import pytest

from kafkaforensics.inspect.explain import explain_offset, lag_split, lag_text, parse_time, scan
from kafkaforensics.inspect.groups import explain_lag
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.log.partition import find_partitions
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_offset_commit
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.retention import retention
from kafkaforensics.log.writer import write_partition
from tests import realdirs
from tests.test_analyzer import T0, marker, v2
from tests.test_read_paths import HOLD

MINUTE = 60_000


def _explain(kfx, *args):
    r = kfx("explain", *args, "--json")
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip() else None


def _txn(base, n, pid, epoch=0):
    return v2(base, n, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)


def _txn_partition(tmp_path, name="t-0"):
    """0..1 aborted (ABORT at 2), 3..4 committed (COMMIT at 5), 6..7 open (producer 3), 8..10 plain."""
    return write_partition(str(tmp_path / name), [_txn(0, 2, 1), marker(2, 1, abort=True), _txn(3, 2, 7), marker(5, 7),
                                                  _txn(6, 2, 3), v2(8, 3)], index_interval_bytes=200)


def test_present_records_and_their_transactions(tmp_path, kfx):
    p = _txn_partition(tmp_path)
    code, out = _explain(kfx, p, "--offset", 1)
    r = out["results"][0]
    assert code == 0 and r["fate"] == "present" and r["transaction"] == "aborted"
    assert "read_committed consumers skip it" in r["reason"]
    assert any(e.get("markerOffset") == 2 and e.get("transactionFirstOffset") == 0 for e in r["evidence"])
    assert r["evidence"][0]["baseOffset"] == 0 and r["evidence"][0]["lastOffset"] == 1 and r["evidence"][0]["position"] == 0
    r = _explain(kfx, p, "--offset", 4)[1]["results"][0]
    assert r["transaction"] == "committed" and r["reason"].startswith("visible to read_committed")
    assert any(e.get("markerOffset") == 5 for e in r["evidence"])
    r = _explain(kfx, p, "--offset", 5)[1]["results"][0]
    assert r["control"] == "COMMIT" and "a COMMIT marker of producer 7" in r["reason"]
    for off in (7, 9):  # the open transaction's own record, and a plain record after it
        code, out = _explain(kfx, p, "--offset", off)
        r = out["results"][0]
        assert code == 0 and out["lastStableOffset"] == 6
        assert "held behind the last stable offset 6: producer 3's open transaction from offset 6" in r["reason"]
    assert _explain(kfx, p, "--offset", 7)[1]["results"][0]["transaction"] == "open"
    code, out = _explain(kfx, p, "--offset", 11)
    assert code == 1 and out["results"][0]["fate"] == "past-log-end"
    text = kfx("explain", p, "--offset", 1)
    assert text.exit_code == 0 and "ABORT marker at offset 2" in text.stdout


def test_transactions_v2_epoch_bump_per_marker(tmp_path):
    """KIP-890: each end marker carries the producer epoch bumped by one; the next transaction starts under it."""
    p = write_partition(str(tmp_path / "v2txn-0"), [_txn(0, 2, 9, 0), marker(2, 9, epoch=1), _txn(3, 1, 9, 1),
                                                    marker(4, 9, abort=True, epoch=2), _txn(5, 3, 9, 2),
                                                    marker(8, 9, epoch=3)])
    view = scan(p)
    assert explain_offset(view, 3)["transaction"] == "aborted"
    assert explain_offset(view, 6)["transaction"] == "committed"
    assert lag_split(view, 3) == {"offsets": 6, "data": 3, "controlMarkers": {"ABORT": 1, "COMMIT": 1},
                                       "aborted": 1, "heldBehindLso": 0, "removed": 0, "belowLogStart": 0}


def _minutes_partition(tmp_path, name="ret-0"):
    # 10 batches of ~1 KB, one minute apart; 3 KB segments
    batches = [build_v2([Record(i, T0 + i * MINUTE, b"k%d" % i, b"x" * 900)], base_offset=i) for i in range(10)]
    return write_partition(str(tmp_path / name), batches, segment_bytes=3000, index_interval_bytes=500)


def test_expired_segment_by_time(tmp_path, kfx):
    p = _minutes_partition(tmp_path)
    rep = retention(p, retention_ms=5 * MINUTE, now=T0 + 9 * MINUTE, backup=False)
    start = rep.log_start_offset
    assert start > 0
    code, out = _explain(kfx, p, "--offset", 0, "--config", "retention.ms=300000", "--now", T0 + 60 * MINUTE)
    r = out["results"][0]
    assert code == 1 and r["fate"] == "below-log-start" and r["rule"] == "retention.ms" and r["certainty"] == "likely"
    assert any(f"starts at offset {start}" in e["text"] for e in r["evidence"])
    assert any("retention.ms=300000 (--config)" in e["text"] for e in r["evidence"])
    # on a compact-only topic nothing deletes by time: no rule the log dir holds explains it
    code, out = _explain(kfx, p, "--offset", 0, "--config", "cleanup.policy=compact", "--now", T0 + 60 * MINUTE)
    assert code == 1 and out["results"][0]["rule"] is None and out["results"][0]["certainty"] == "unknown"
    assert _explain(kfx, p, "--offset", start)[0] == 0


def test_expired_segment_by_size(tmp_path, kfx):
    p = _minutes_partition(tmp_path)
    sizes = [os.path.getsize(os.path.join(p, f)) for f in sorted(os.listdir(p)) if f.endswith(".log")]
    limit = sum(sizes) - sizes[0]
    rep = retention(p, retention_bytes=limit, backup=False)
    assert len(rep.deleted) == 1
    code, out = _explain(kfx, p, "--offset", 0, "--config", f"retention.bytes={limit}", "--config", "retention.ms=-1")
    r = out["results"][0]
    assert code == 1 and r["rule"] == "retention.bytes" and r["certainty"] == "likely"
    # a limit above what the log holds could not have deleted it
    code, out = _explain(kfx, p, "--offset", 0, "--config", f"retention.bytes={10 * limit}", "--config", "retention.ms=-1")
    assert out["results"][0]["rule"] is None
    assert any(x["rule"] == "retention.bytes" and x["certainty"] == "ruled out" for x in out["results"][0]["rules"])


def test_delete_records(tmp_path, kfx):
    p = _minutes_partition(tmp_path)
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nret 0 2\n")
    code, out = _explain(kfx, str(tmp_path), "--topic", "ret", "--partition", 0, "--offset", 1)
    r = out["results"][0]
    assert code == 1 and out["logStartOffset"] == 2
    assert r["fate"] == "below-log-start" and r["rule"] == "delete-records"
    assert "log-start-offset-checkpoint: 'ret 0 2'" in r["evidence"][0]["text"]
    assert any(e.get("baseOffset") == 1 and "still on disk" in e["text"] for e in r["evidence"])
    assert _explain(kfx, str(tmp_path), "--topic", "ret", "--partition", 0, "--offset", 2)[0] == 0


def test_compacted_key_and_tombstone(tmp_path, kfx):
    recs = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"b", None), (b"c", b"1"), (b"a", b"3"), (b"c", b"2")]
    batches = [build_v2([Record(i, T0 + i, k, v)], base_offset=i) for i, (k, v) in enumerate(recs)]
    p = write_partition(str(tmp_path / "cmp-0"), batches, segment_bytes=150)
    before = scan(p, offsets=[2])
    assert not any(e.get("laterOffset") for e in explain_offset(before, 2)["evidence"])  # not compacted: no matter
    fate = explain_offset(before, 2, LogConfig.of(p, {"cleanup.policy": "compact"}))
    assert fate["fate"] == "present" and any(e.get("laterOffset") == 5 for e in fate["evidence"])
    compact(p, CompactOptions(now=T0 + 10**6, delete_retention_ms=10**9), backup=False)
    cleaned = int((tmp_path / "cleaner-offset-checkpoint").read_text().split()[-1])
    assert cleaned > 2
    code, out = _explain(kfx, p, "--offset", 0, "--config", "cleanup.policy=compact")
    r = out["results"][0]
    assert code == 1 and r["fate"] == "compacted"
    assert any(f"cleaner-offset-checkpoint: 'cmp 0 {cleaned}'" in e["text"] for e in r["evidence"])
    code, out = _explain(kfx, p, "--key", "a", "--config", "cleanup.policy=compact")
    assert code == 0 and [x["offset"] for x in out["results"]] == [5]
    code, out = _explain(kfx, p, "--key", "b", "--config", "cleanup.policy=compact")
    assert [x["offset"] for x in out["results"]] == [3]
    assert any("a tombstone" in e["text"] for e in out["results"][0]["evidence"])
    assert kfx("explain", p, "--key", "zz").exit_code == 1


def test_truncated_tail_and_checkpoints(tmp_path, kfx):
    p = write_partition(str(tmp_path / "tr-0"), [v2(0, 3), v2(3, 3), v2(6, 4)])
    log = os.path.join(p, "00000000000000000000.log")
    third = scan(p).batches[2].position
    with open(log, "r+b") as f:
        f.truncate(os.path.getsize(log) - 20)  # the last batch written in part
    code, out = _explain(kfx, p, "--offset", 7)
    r = out["results"][0]
    assert code == 1 and out["logEndOffset"] == 6 and r["fate"] == "truncated" and r["rule"] == "torn-tail"
    assert r["evidence"][0]["baseOffset"] == 6 and r["evidence"][0]["lastOffset"] == 9
    assert r["evidence"][0]["position"] == third and f"cuts the segment at byte {third}" in r["reason"]
    # past the torn batch: the high watermark says the log once reached it
    code, out = _explain(kfx, p, "--offset", 12)
    assert out["results"][0]["fate"] == "past-log-end"
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\ntr 0 15\n")
    (tmp_path / "tr-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 13\n")
    code, out = _explain(kfx, p, "--offset", 12)
    r = out["results"][0]
    assert code == 1 and r["fate"] == "truncated" and r["certainty"] == "likely"
    texts = " ".join(e["text"] for e in r["evidence"])
    assert "replication-offset-checkpoint: 'tr 0 15'" in texts and "epoch 1 started at offset 13" in texts


def test_never_written_gap(tmp_path, kfx):
    p = write_partition(str(tmp_path / "gap-0"), [v2(0, 3), v2(6, 2)])
    code, out = _explain(kfx, p, "--offset", 4)
    r = out["results"][0]
    assert code == 1 and r["fate"] == "never-written"
    assert "offsets 3..5 are in no batch" in r["evidence"][0]["text"]
    # the same gap in a log the cleaner has cleaned past is compaction's
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n1\ngap 0 6\n")
    assert _explain(kfx, p, "--offset", 4)[1]["results"][0]["fate"] == "compacted"


def test_time_lookup(tmp_path, kfx):
    p = _minutes_partition(tmp_path)
    code, out = _explain(kfx, p, "--time", T0 + 3 * MINUTE - 1)
    assert code == 0 and out["results"][0]["offset"] == 3 and "ListOffsets" in out["results"][0]["evidence"][0]["text"]
    assert parse_time("2023-11-14T22:13:20Z") == T0
    code, out = _explain(kfx, p, "--time", "2023-11-14T22:15:00Z")
    assert out["results"][0]["offset"] == 2
    code, out = _explain(kfx, p, "--time", T0 + 100 * MINUTE)
    assert code == 1 and out["results"][0]["fate"] == "past-log-end"


@pytest.mark.parametrize("args", [("--offset", "1", "--key", "a"), (), ("--time", "yesterday"),
                                  ("--offset", "1", "--topic", "t")])
def test_bad_questions_exit_2(tmp_path, kfx, args):
    p = _txn_partition(tmp_path)
    r = kfx("explain", p, *args)
    assert r.exit_code == 2 and "Traceback" not in r.stdout + r.stderr


def test_bad_paths_exit_2(tmp_path, kfx):
    _txn_partition(tmp_path)
    assert kfx("explain", str(tmp_path / "nope"), "--offset", 1).exit_code == 2
    r = kfx("explain", str(tmp_path), "--offset", 1)  # a log dir without --topic/--partition
    assert r.exit_code == 2 and "or a log dir with --topic and --partition" in r.stderr
    r = kfx("explain", str(tmp_path), "--topic", "x", "--partition", 0, "--offset", 1)
    assert r.exit_code == 2 and "no partition dir x-0" in r.stderr


def _commit(off, group, topic, part, offset):
    k, v = encode_offset_commit(group, topic, part, offset, commit_ts=T0 + off)
    return build_v2([Record(off, T0 + off, k, v)], base_offset=off)


def test_groups_explain_commit_marker_lag(tmp_path, kfx):
    logdir = tmp_path / "logs"
    _txn_partition(logdir, "t-0")
    write_partition(str(logdir / "done-0"), [_txn(0, 2, 4), marker(2, 4)])
    write_partition(str(logdir / "__consumer_offsets-0"),
                    [_commit(0, "g", "done", 0, 2), _commit(1, "g", "t", 0, 0), _commit(2, "h", "t", 0, 6)])
    r = kfx("groups", logdir, "--explain", "--group", "g")
    assert r.exit_code == 0
    assert "g done-0 lag 1: 1 offset: a COMMIT marker, nothing to consume" in r.stdout
    rows = json.loads(kfx("groups", logdir, "--explain", "--json").stdout)["offsets"]
    by = {(x["group"], x["topic"]): x["explain"] for x in rows}
    assert by[("g", "t")]["offsets"] == 11
    assert (by[("g", "t")]["data"], by[("g", "t")]["aborted"], by[("g", "t")]["controlMarkers"],
            by[("g", "t")]["heldBehindLso"]) == (2, 2, {"ABORT": 1, "COMMIT": 1}, 5)
    assert by[("g", "t")]["lsoHolder"] == {"producerId": 3, "transactionFirstOffset": 6, "lastStableOffset": 6}
    assert by[("h", "t")]["heldBehindLso"] == 5 and "nothing to consume" in by[("h", "t")]["text"]
    assert [x["group"] for x in json.loads(kfx("groups", logdir, "--group", "h", "--json").stdout)["offsets"]] == ["h"]


def test_lag_split_counts_removed_offsets(tmp_path):
    """Offsets no batch holds between a commit and the log end are compaction's; below the log start, retention's."""
    p = write_partition(str(tmp_path / "gap-0"), [v2(0, 3), v2(6, 2)])
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\ngap 0 1\n")
    split = lag_split(scan(p), 0)
    assert (split["offsets"], split["belowLogStart"], split["data"], split["removed"]) == (8, 1, 4, 3)


def test_lag_text_wording():
    split = {"offsets": 3, "data": 0, "controlMarkers": {"COMMIT": 2}, "aborted": 0, "heldBehindLso": 0,
             "removed": 1, "belowLogStart": 0}
    assert lag_text(split) == "3 offsets: 2 COMMIT markers, 1 removed by compaction, nothing to consume"
    split |= {"offsets": 1, "controlMarkers": {"ABORT": 1}, "removed": 0}
    assert lag_text(split) == "1 offset: an ABORT marker, nothing to consume"


@pytest.mark.skipif(not realdirs.tarballs(), reason="the real log dirs (../shared/real-logdirs) are not on this machine")
@pytest.mark.parametrize("name", realdirs.tarballs())
def test_real_log_dirs_nothing_gone_and_lag_split(tmp_path, name):
    rd = realdirs.unpack(name, str(tmp_path))
    for pd in find_partitions(rd.log_dir):
        if pd.dir_state != "live" or pd.topic == "__cluster_metadata":
            continue
        view = scan(pd)
        held = {o for b in view.batches for o in (b.offsets or range(b.base, b.last + 1))}
        for off in range(view.log_start, view.log_end):  # every offset: on disk is found, a hole is compaction's
            fate = explain_offset(view, off)
            assert fate["found"] == (off in held), (pd.name, off, fate)
            assert fate["fate"] in ("present", "compacted"), (pd.name, off, fate)
    for row in explain_lag(rd.log_dir):
        e = row["explain"]
        if e is not None:
            parts = e["data"] + sum(e["controlMarkers"].values()) + e["aborted"] + e["heldBehindLso"] + e["removed"]
            assert parts + e["belowLogStart"] == e["offsets"] == row["lag"]


def test_partial_batch_of_a_live_log_dir_is_an_append_in_flight(tmp_path, kfx):
    p = write_partition(str(tmp_path / "live-0"), [v2(0, 3)])
    whole = v2(3, 3)
    with open(os.path.join(p, "00000000000000000000.log"), "ab") as f:
        f.write(whole[: len(whole) // 2])
    open(tmp_path / ".lock", "w").close()
    assert _explain(kfx, p, "--offset", 4)[1]["results"][0]["rule"] == "torn-tail"   # no broker: a torn tail
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / ".lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, out = _explain(kfx, p, "--offset", 4)
        r = out["results"][0]
        assert code == 1 and r["fate"] == "past-log-end" and r["rule"] == "in-flight"
        assert "is live" in " ".join(kfx("explain", p, "--offset", 4).stderr.split())
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_metadata_log_trimmed_below_its_snapshot(tmp_path, kfx):
    p = write_partition(str(tmp_path / "__cluster_metadata-0"), [v2(5, 3)])
    code, out = _explain(kfx, p, "--offset", 2)
    assert code == 1 and out["results"][0]["rule"] is None  # no snapshot: nothing on disk says why
    open(os.path.join(p, "00000000000000000005-0000000001.checkpoint"), "wb").close()
    code, out = _explain(kfx, p, "--offset", 2)
    r = out["results"][0]
    assert code == 1 and r["rule"] == "KRaft snapshot" and r["certainty"] == "likely"


def test_segment_renamed_for_deletion_is_judged_by_its_largest_timestamp(tmp_path, kfx):
    """Kafka renames an expired segment to .deleted and removes it file.delete.delay.ms later: while the file is
    there, its largest timestamp against retention.ms is the evidence, and the record is still in it."""
    p = _minutes_partition(tmp_path)
    first = sorted(n for n in os.listdir(p) if n.endswith(".log"))[0]
    for n in [n for n in os.listdir(p) if n.startswith(first[:20]) and not n.endswith(".snapshot")]:
        os.rename(os.path.join(p, n), os.path.join(p, n + ".deleted"))
    args = ("--offset", 1, "--config", "retention.ms=300000")
    code, out = _explain(kfx, p, *args, "--now", T0 + 60 * MINUTE)
    r = out["results"][0]
    assert code == 1 and r["rule"] == "retention.ms" and r["certainty"] == "likely"
    texts = [e["text"] for e in r["evidence"]]
    assert any(t.startswith(f"{first}.deleted still holds offsets 0..") for t in texts)
    assert any(e.get("baseOffset") == 1 and "still in it" in e["text"] for e in r["evidence"])
    assert any("the deleted segment's largest timestamp" in t and "past retention.ms" in t for t in texts)
    code, out = _explain(kfx, p, *args, "--now", T0 + 3 * MINUTE)  # not yet past retention.ms: not time's doing
    assert out["results"][0]["rule"] is None
    assert [x["certainty"] for x in out["results"][0]["rules"] if x["rule"] == "retention.ms"] == ["ruled out"]
