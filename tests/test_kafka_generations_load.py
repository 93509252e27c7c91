"""Issue 51 (every Kafka generation, round two): what each Kafka version's log loading changes, rule
by rule, each test built from the rule of the versions it names (Kafka's source in the docstrings)."""
import json
import os

import pytest

from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.repair.recovery import recover

T0 = 1_700_000_000_000


def name(off, suf):
    return f"{off:020d}{suf}"


def log_dir(tmp_path, *, clean=True, meta=True):
    """An empty log dir (meta.properties v0 with a cluster id when ``meta``), clean-shutdown marker."""
    ld = tmp_path / "logs"
    ld.mkdir()
    if meta:
        (ld / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=abc\n")
    if clean:
        (ld / ".kafka_cleanshutdown").write_bytes(b"")
    return ld


def empty_partition(ld, epochs: bytes | None, base=0):
    d = ld / "t-0"
    d.mkdir()
    for suf in (".log", ".index", ".timeindex"):
        (d / name(base, suf)).write_bytes(b"")
    if epochs is not None:
        (d / "leader-epoch-checkpoint").write_bytes(epochs)
    return d


def v2(base, n=3, epoch=0):
    return build_v2([Record(base + i, T0 + i, b"k", b"v") for i in range(n)], base_offset=base,
                    partition_leader_epoch=epoch)


# -- 1. leader-epoch entries at or past the log end ---------------------------------------------------
@pytest.mark.parametrize("version", ["0.11", "1.0", "2.2", "2.8", "3.6", "4.0"])
def test_epoch_entry_at_the_log_end_is_removed_at_load(tmp_path, kfx, version):
    """LogLoader (3.x) / Log.loadSegments (1.0-2.8) call ``leaderEpochCache.truncateFromEnd(logEndOffset)``,
    0.11 ``clearAndFlushLatest(nextOffset)``: every entry whose start offset is >= the log end goes
    (``removeFromEnd(x -> x.startOffset >= endOffset)``; 0.11 keeps ``startOffset < offset``)."""
    ld = log_dir(tmp_path)
    d = empty_partition(ld, b"0\n1\n78 0\n")
    r = kfx("recover", str(d), "--dry-run", "--json", "--kafka-version", version)
    out = json.loads(r.stdout)
    assert r.exit_code == 1, r.output
    (a,) = [a for a in out["actions"] if a["file"].endswith("leader-epoch-checkpoint")]
    assert "epoch 78 at 0" in a["detail"] and "log end 0" in a["detail"]
    assert (d / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n78 0\n"   # a dry run changes nothing
    rep = recover(str(d), kafka_version=version, backup=False)
    assert (d / "leader-epoch-checkpoint").read_bytes() == b"0\n0\n" and rep.actions


def test_epoch_entries_below_the_log_end_stay(tmp_path):
    """Only entries at or past the log end go: ``3 0`` of a log ending at 3 stays, ``5 3`` goes."""
    ld = log_dir(tmp_path)
    d = empty_partition(ld, b"0\n2\n3 0\n5 3\n")
    (d / name(0, ".log")).write_bytes(v2(0, epoch=3))
    (d / name(0, ".timeindex")).write_bytes(b"")
    recover(str(d), kafka_version="3.6", backup=False)
    assert (d / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n3 0\n"


# -- 2. an empty leader-epoch-checkpoint is no entries ------------------------------------------------
@pytest.mark.parametrize("version", ["0.11", "2.2", "3.6"])
def test_empty_epoch_checkpoint_is_not_rewritten(tmp_path, kfx, version):
    """CheckpointFile's reader: an empty file (no version line) is no entries; the cache is flushed only
    when truncation removes entries (truncateFromEnd / truncateFromStart flush inside their ``if``)."""
    ld = log_dir(tmp_path)
    d = empty_partition(ld, b"")
    r = kfx("recover", str(d), "--dry-run", "--json", "--kafka-version", version)
    assert r.exit_code == 0 and json.loads(r.stdout)["actions"] == [], r.output
    assert recover(str(d), kafka_version=version, backup=False).actions == []
    assert (d / "leader-epoch-checkpoint").read_bytes() == b""


# -- 5. the recovery point after an unclean start ------------------------------------------------------
def crashed_log_dir(tmp_path, recovery_point, records=70):
    """A log dir after an unclean shutdown: t-0 holds offsets [0, records), its checkpointed recovery
    point is ``recovery_point``."""
    from kafkaforensics.log.checkpoint_file import build_offsets
    ld = log_dir(tmp_path, clean=False)
    d = empty_partition(ld, None)
    (d / name(0, ".log")).write_bytes(b"".join(v2(b, 10) for b in range(0, records, 10)))
    (ld / "recovery-point-offset-checkpoint").write_bytes(build_offsets({("t", 0): recovery_point}))
    return ld


@pytest.mark.parametrize("version,checkpointed,expected", [
    ("0.10", 30, 30), ("0.11", 30, 30), ("0.11", 90, 90),      # Log.recoverLog 0.11: set only when clean
    ("1.0", 30, 70), ("2.2", 30, 70), ("2.7", 90, 70),         # 1.0-2.7: recoveryPoint = activeSegment.nextOffset
    ("2.8", 30, 30), ("3.6", 90, 70), ("4.0", 30, 30)])        # 2.8 (KAFKA-10101): min(recoveryPoint, logEndOffset)
def test_recovery_point_after_an_unclean_start_per_version(tmp_path, version, checkpointed, expected):
    from kafkaforensics.log.checkpoint_file import read_offsets
    from kafkaforensics.repair.load_logs import recover_log_dirs
    ld = crashed_log_dir(tmp_path, checkpointed)
    recover_log_dirs([str(ld)], jobs=1, backup=False, kafka_version=version)
    assert read_offsets(str(ld / "recovery-point-offset-checkpoint")) == {("t", 0): expected}
