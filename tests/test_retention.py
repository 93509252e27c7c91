"""`kfx retention`: Kafka's time, size and log-start-offset rules; one active segment always remains."""
import json
import os

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.repair.retention import retention
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.writer import write_partition
from tests.corruption import snapshot_files

T0 = 1_700_000_000_000


def _part(tmp_path, name="ret-0"):
    # 10 batches of ~1 KB, one minute apart; 3 KB segments -> 4 segments
    batches = [build_v2([Record(i, T0 + i * 60_000, b"k", b"x" * 900)], base_offset=i) for i in range(10)]
    return write_partition(str(tmp_path / name), batches, segment_bytes=3000, index_interval_bytes=500)


def _segments(p):
    return sorted(int(f[:20]) for f in os.listdir(p) if f.endswith(".log"))


def test_time_retention_by_largest_timestamp(tmp_path, kfx):
    p = _part(tmp_path)
    bases = _segments(p)
    assert len(bases) >= 3
    now = T0 + 9 * 60_000
    # segments whose newest record is older than 5 minutes: the first segments
    files = snapshot_files(p)
    r = kfx("retention", p, "--retention-ms", 5 * 60_000, "--now", now, "--dry-run", "--json")
    assert r.exit_code == 0
    plan = json.loads(r.stdout)
    assert snapshot_files(p) == files
    for d in plan["deletedSegments"]:
        assert now - d["largestTimestamp"] > 5 * 60_000
    kept_first = [b for b in bases if b not in {d["baseOffset"] for d in plan["deletedSegments"]}][0]
    rep = retention(p, retention_ms=5 * 60_000, now=now)
    assert [d["baseOffset"] for d in rep.deleted] == [d["baseOffset"] for d in plan["deletedSegments"]]
    assert _segments(p)[0] == kept_first == rep.log_start_offset
    assert not any(n.endswith(".deleted") for n in os.listdir(p))
    assert verify([p]).ok


def test_everything_expired_rolls_a_new_active_segment(tmp_path):
    p = _part(tmp_path)
    rep = retention(p, retention_ms=1, now=T0 + 10**9)
    assert rep.rolled == f"{10:020d}.log"
    assert _segments(p) == [10]
    assert os.path.getsize(os.path.join(p, f"{10:020d}.log")) == 0
    assert verify([p]).ok


def test_size_retention(tmp_path):
    p = _part(tmp_path)
    sizes = {b: os.path.getsize(os.path.join(p, f"{b:020d}.log")) for b in _segments(p)}
    total = sum(sizes.values())
    bases = sorted(sizes)
    # Kafka deletes a segment only while what remains still holds retention.bytes
    assert retention(p, retention_bytes=total - sizes[bases[0]] + 1).deleted == []
    rep = retention(p, retention_bytes=total - sizes[bases[0]])
    assert [d["baseOffset"] for d in rep.deleted] == [bases[0]]
    assert _segments(p) == bases[1:]
    # retention.bytes larger than the log deletes nothing
    assert retention(p, retention_bytes=10**9).deleted == []


def test_log_start_offset_rule_and_checkpoint(tmp_path):
    p = _part(tmp_path)
    bases = _segments(p)
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nret 0 0\n")
    rep = retention(p, log_start_offset=bases[2])
    assert [d["baseOffset"] for d in rep.deleted] == bases[:2]
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == f"0\n1\nret 0 {bases[2]}\n"
    # the checkpoint alone drives the rule on the next run
    (tmp_path / "log-start-offset-checkpoint").write_text(f"0\n1\nret 0 {bases[3]}\n")
    rep = retention(p)
    assert [d["baseOffset"] for d in rep.deleted] == [bases[2]]
