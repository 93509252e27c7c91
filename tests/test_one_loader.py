"""One LogLoader (issue 52 item 3): the load's passes live in the log stage (kafkaforensics/log/log_loader.py)
and every reader of a log asks them -- ``kfx recover --dry-run`` (the plan), ``kfx verify``, the broker's
start and the Spark inventory (the ``kafka_segments`` source's scan rows, read here without Spark, and
their inventory) -- so one damaged log dir gives the same truncation point and the same facts from each,
and a pass changed changes them all."""
import os
import shutil

import pyarrow as pa
import pytest

from spark_jobs.inventory import inventory_table

from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.inspect import both_tiers
from kafkaforensics.inspect import verify as inspect_verify
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log import load_plan, load_snapshots, load_walk, log_loader
from kafkaforensics.log.kafka_rules import AppliedRules
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.producer_state import snapshot_bytes
from kafkaforensics.log.segment import LOG, SNAPSHOT, SWAP, Segment, file_name
from kafkaforensics.repair.recovery import recover
from kafkaforensics.spark.spark_source import KafkaSegmentsReader, spark_schema
from tests.corruption import INTERVAL, layout, make_partition

STRAY_SNAPSHOT = 5000   # a producer snapshot far past the log end
STRAY_EPOCH = 4000      # a leader-epoch entry far past the log end
EMPTY_START = 40        # the checkpointed log start of a partition dir with no segment
EMPTY_RECOVERY = 45     # its checkpointed recovery point, past the log end Kafka's load gives it


@pytest.fixture
def damaged(tmp_path):
    """A log dir (no clean-shutdown marker, no recovery point: every segment is unflushed) whose one
    partition has a torn tail, a stray ``.log.swap`` (a copy of its first segment), a snapshot past the
    log end and a leader-epoch entry past the log end.  (log dir, partition dir, the torn batch's base)"""
    log_dir = tmp_path / "logs"
    part = make_partition(log_dir / "events-0")
    lay = layout(part)
    last, batches = lay[-1]
    pos, size, base, _ = batches[-1]
    os.truncate(last, pos + size - 7)           # the last batch written in part
    first = lay[0][0]
    shutil.copyfile(first, first + SWAP)        # an interrupted swap of the first segment
    with open(os.path.join(part, file_name(STRAY_SNAPSHOT, SNAPSHOT)), "wb") as f:
        f.write(snapshot_bytes([]))
    epochs = LeaderEpochCache.read(part) or LeaderEpochCache()
    top = max((e for e, _ in epochs.entries), default=0)
    LeaderEpochCache(epochs.entries + [(top + 5, STRAY_EPOCH)]).write(part)
    _empty_partition(log_dir)
    return str(log_dir), part, base


def _empty_partition(log_dir) -> str:
    """``events-1`` beside it, a partition dir with no segment, its log start checkpointed at
    EMPTY_START and its recovery point at EMPTY_RECOVERY (the checkpoints name no other partition)."""
    os.makedirs(log_dir / "events-1")
    for name, off in (("log-start-offset-checkpoint", EMPTY_START), ("recovery-point-offset-checkpoint", EMPTY_RECOVERY)):
        (log_dir / name).write_text(f"0\n1\nevents 1 {off}\n")
    return str(log_dir / "events-1")


def _spark_scan(path: str) -> pa.Table:
    """The ``kafka_segments`` source's scan-level rows of ``path``, read as Spark's executors read them
    (the planner's splits, each split's read), without Spark."""
    reader = KafkaSegmentsReader({"path": path}, "scan", spark_schema("scan"))
    return pa.Table.from_batches([b for split in reader.partitions() for b in reader.read(split)],
                                 schema=reader.arrow_schema())


def _spark_facts(log_dir: str) -> dict:
    """What the Spark inventory says of the torn ``events-0`` (its inventory row's log end, the torn
    tail's anomaly offset) and of the empty ``events-1`` (its checkpoints past the log end, as
    (offset, the log end the anomaly says))."""
    rows = _spark_scan(log_dir)
    inv = {r["partitionDir"]: r for r in inventory_table(rows).to_pylist()}
    anomalies = [r for r in rows.to_pylist() if r["rowKind"] == "anomaly"]
    return {"log end": inv["events-0"]["logEndOffset"], "last offset": inv["events-0"]["lastOffset"],
            "torn at": {a["offset"] for a in anomalies if a["partitionDir"] == "events-0"},
            "empty": {(a["offset"], int(a["detail"].partition(" but the log ends at ")[2].split(":")[0])) for a in anomalies
                      if a["partitionDir"] == "events-1" and a["kind"] == "checkpoint-beyond-log-end"},
            "empty row": (inv["events-1"]["segments"], inv["events-1"]["anomalies"], inv["events-1"]["logEndOffset"])}


def _empty_facts(log_dir: str, **told) -> dict:
    """Each reader's log end of the empty ``events-1`` (verify's also its log start and the checkpoints
    it finds past that end)."""
    part = os.path.join(log_dir, "events-1")
    v = verify([log_dir], **told)
    row = next(r for r in v.partitions if r["path"] == part)
    past = {p.offset for p in v.problems if p.kind == "checkpoint-beyond-log-end" and "events-1" in p.detail}
    return {"verify": (row["logEndOffset"], row["logStartOffset"], past),
            "recover": recover(part, dry_run=True, **told).log_end_offset,
            "serve": ReplayBroker(log_dir).partitions[("events", 1)].log_end_offset}


def _facts(log_dir: str, part: str) -> dict:
    """What each reader says Kafka's load finds: the log end, the snapshots and epochs past it, the leftovers."""
    v = verify([log_dir])
    row = next(r for r in v.partitions if r["path"] == part)
    found = {}
    for p in v.problems + v.warnings:
        found.setdefault(p.kind, set()).add(p.offset if p.kind != "leftover-file" else os.path.basename(p.file))
    plan = recover(part, dry_run=True, index_interval_bytes=INTERVAL)
    deleted = {os.path.basename(a.file) for a in plan.actions if a.action == "delete"}
    renamed = {os.path.basename(a.file) for a in plan.actions if a.action == "rename"}
    epochs_action = [a.detail for a in plan.actions if os.path.basename(a.file) == "leader-epoch-checkpoint"]
    served = ReplayBroker(log_dir).partitions[("events", 0)]
    return {
        "verify": (row["logEndOffset"], found.get("snapshot-beyond-log-end", set()),
                   found.get("epoch-beyond-log-end", set()), found.get("leftover-file", set())),
        "recover": (plan.log_end_offset, {int(n[:-len(SNAPSHOT)]) for n in deleted if n.endswith(SNAPSHOT)
                                          and int(n[:-len(SNAPSHOT)]) > plan.log_end_offset},
                    {STRAY_EPOCH} if any(f"at {STRAY_EPOCH}" in d for d in epochs_action) else set(), renamed),
        "swap detail": next(p.detail for p in v.problems if p.kind == "leftover-file"),
        "serve": served.log_end_offset, "served epochs": served.epochs.entries,
        "truncated at": plan.truncated_at["offset"] if plan.truncated_at else None,
    }


def test_verify_recover_and_the_broker_find_the_same_load(damaged):
    log_dir, part, torn = damaged
    f = _facts(log_dir, part)
    leo, snaps, epochs, leftovers = f["verify"]
    assert leo == torn == f["truncated at"] == f["serve"]             # the torn batch's base: the truncation point
    assert STRAY_SNAPSHOT in snaps and epochs == {STRAY_EPOCH}  # (and the writer's snapshot at the torn-off end)
    assert leftovers == {os.path.basename(layout(part)[0][0]) + SWAP}
    assert "would rename it (complete the interrupted swap)" in f["swap detail"]   # what the load's pass plans
    assert f["recover"] == (leo, snaps, epochs, leftovers)
    assert all(o < leo for _e, o in f["served epochs"])                 # the broker's start drops it too
    spark = _spark_facts(log_dir)
    assert spark["log end"] == leo and spark["torn at"] == {torn}       # the Spark inventory: the same point
    assert spark["last offset"] == leo - 1                              # (its batches end there too)
    # the partition dir with no segment: Kafka's load gives it an empty segment at its checkpointed log
    # start, so every reader's log end is that start (not 0), and only the recovery point is past it
    e = _empty_facts(log_dir)
    assert e == {"verify": (EMPTY_START, EMPTY_START, {EMPTY_RECOVERY}), "recover": EMPTY_START, "serve": EMPTY_START}
    assert spark["empty"] == {(EMPTY_RECOVERY, EMPTY_START)}
    assert spark["empty row"] == (0, 1, EMPTY_START)                    # its logEndOffset: the load's, not 0


def test_an_empty_log_ends_where_the_generation_that_wrote_it_puts_its_segment(tmp_path):
    """Kafka before 2.3 (Log.loadSegments) gives a log without segments an empty one at offset 0 whatever
    log start is checkpointed; from 2.3 (KAFKA-8306) at the checkpointed log start: the loader and
    verify, told the version, say so alike."""
    assert load_walk.empty_log_end(EMPTY_START, AppliedRules((2, 2), (2, 3))) == 0
    assert load_walk.empty_log_end(EMPTY_START, AppliedRules((2, 3), (2, 4))) == EMPTY_START
    assert load_walk.empty_log_end(EMPTY_START, AppliedRules()) == EMPTY_START   # no evidence: the newest rule
    log_dir = tmp_path / "logs"
    part = _empty_partition(log_dir)
    old = recover(part, dry_run=True, kafka_version="2.2")
    assert old.log_end_offset == 0 and any("Kafka before 2.3 loads it at 0" in n for n in old.notes)
    assert verify([str(log_dir)], kafka_version="2.2").partitions[0]["logEndOffset"] == 0
    new = recover(part, dry_run=True, kafka_version="2.3")
    assert new.log_end_offset == EMPTY_START
    assert {os.path.basename(a.file) for a in new.actions if a.action == "write"} >= {file_name(EMPTY_START, LOG)}


def test_the_inventory_ends_an_empty_log_where_the_generation_that_wrote_it_puts_its_segment(tmp_path):
    """The Spark inventory's ``logEndOffset`` of a partition dir with no segment, its log start checkpointed
    at 40: 40 in a log dir of today's Kafka, 0 in one whose files say it was written before 2.0 (an
    offset index of batch base offsets, KAFKA-6264; meta.properties without cluster.id: before 2.4), as
    Kafka before 2.3 loads it -- verify says the same of each."""
    from tests.test_kafka_generations import batches, broker_files
    for era, want in (("today", EMPTY_START), ("before 2.0", 0)):
        log_dir = tmp_path / era.replace(" ", "-")
        _empty_partition(log_dir)
        # a deleted copy awaiting removal: LogLoader.load gives it an empty segment at 0 (no recoverLog)
        os.makedirs(log_dir / "events-1.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete")
        if era != "today":
            (log_dir / "meta.properties").write_text("version=0\nbroker.id=0\n")
            log, idx, tidx = broker_files([[b] for b in batches(8)], entry="base", time_offset="record")
            os.makedirs(log_dir / "t-0")
            for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
                (log_dir / "t-0" / f"{0:020d}{suf}").write_bytes(data)
        inv = {r["partitionDir"]: r for r in inventory_table(_spark_scan(str(log_dir))).to_pylist()}
        v = {os.path.basename(r["path"]): r["logEndOffset"] for r in verify([str(log_dir)]).partitions}
        assert inv["events-1"]["logEndOffset"] == v["events-1"] == want, era
        assert inv["events-1.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete"]["logEndOffset"] == 0, era
        assert {k: r["logEndOffset"] for k, r in inv.items()} == v, era


def test_the_inventory_ends_a_segment_read_in_pieces_where_damage_stopped_its_walk(tmp_path):
    """One segment of 60 batches, a batch's length field broken half way, scanned in 2 KB pieces: the
    pieces after the break start at index entries and read on, but Kafka's recovery truncates the segment
    at the break, so the inventory's ``logEndOffset`` is the broken batch's base -- the LogLoader's and
    verify's -- though its batches go on past it."""
    from kafkaforensics.log.writer import write_partition
    from tests.corruption import batches
    part = str(tmp_path / "logs" / "events-0")
    write_partition(part, batches(1, 60), segment_bytes=1 << 20, index_interval_bytes=INTERVAL)
    ((seg, walked),) = layout(part)
    pos, _size, broken, _last = walked[len(walked) // 2]
    with open(seg, "r+b") as f:                  # its batchLength: far past the file's end
        f.seek(pos + 8)
        f.write((0x7FFFFF00).to_bytes(4, "big"))
    reader = KafkaSegmentsReader({"path": part, "splitBytes": "2000"}, "scan", spark_schema("scan"))
    rows = pa.Table.from_batches([b for split in reader.partitions() for b in reader.read(split)],
                                 schema=reader.arrow_schema())
    (inv,) = inventory_table(rows).to_pylist()
    v = verify([part]).partitions[0]["logEndOffset"]
    plan = recover(part, dry_run=True, index_interval_bytes=INTERVAL)
    assert inv["logEndOffset"] == v == plan.log_end_offset == broken
    assert inv["lastOffset"] + 1 > broken                # what later pieces read past the break is not the log's


def test_a_pass_changed_changes_every_reader(damaged, monkeypatch):
    """Each reader asks the loader's rule: the log-end rule and the epoch truncation changed, verify, the
    plan and the broker's start all change with them (a reader deciding on its own would not)."""
    log_dir, part, torn = damaged
    rule = load_walk.log_end_after
    monkeypatch.setattr(load_walk, "log_end_after", lambda leo, base, nxt: rule(leo, base, nxt) + 1)
    monkeypatch.setattr(load_walk, "truncate_leader_epochs", lambda epochs, leo, start: [])
    monkeypatch.setattr(load_snapshots, "snapshots_past_log_end", lambda offsets, leo: [])
    monkeypatch.setattr(load_plan, "plan_leftovers", lambda files, plan, rules: None)
    f = _facts(log_dir, part)
    leo, snaps, epochs, _ = f["verify"]
    assert leo == f["recover"][0] == f["serve"] == _spark_facts(log_dir)["log end"] != torn
    assert snaps == set() and epochs == set() and f["recover"][2] == set()
    assert f["recover"][3] == set() and "completes or removes it" in f["swap detail"]
    assert (max(e for e, _ in f["served epochs"]), STRAY_EPOCH) in [(e, o) for e, o in f["served epochs"]]


def test_the_empty_log_rule_changed_changes_every_reader(damaged, monkeypatch):
    """The empty log's end (the load's rule) changed: verify, the plan, the broker's start and the Spark
    inventory all find the empty partition's log end moved with it."""
    log_dir, _part, _torn = damaged
    monkeypatch.setattr(load_walk, "empty_log_end", lambda start, rules: start + 2)
    moved = EMPTY_START + 2
    assert _empty_facts(log_dir) == {"verify": (moved, EMPTY_START, {EMPTY_RECOVERY}), "recover": moved,
                                     "serve": moved}
    spark = _spark_facts(log_dir)
    assert spark["empty"] == {(EMPTY_RECOVERY, moved)} and spark["empty row"][2] == moved


def test_the_loader_is_in_the_log_stage_and_plans_through_plain_segments():
    """The planner is the log stage's (recover only applies its plan); its segments are plain Segments over
    the plan's files, no subclass of Segment or Partition of its own."""
    import kafkaforensics.repair.recovery as recovery
    assert recovery.LogLoader is log_loader.LogLoader and log_loader.LogLoader.__module__ == "kafkaforensics.log.log_loader"
    subclasses = {c.__name__ for c in Segment.__subclasses__()} | {c.__name__ for c in Partition.__subclasses__()}
    assert not subclasses - {"LiveLog", "UnifiedLog"}, subclasses


def test_plan_files_segment_reads_the_planned_files(tmp_path):
    """A ``.log.swap`` being completed reads as its segment's ``.log`` (PlanFiles.segment), and a file the
    plan has none of is one that does not exist."""
    from kafkaforensics.log.load_plan import PlanFiles
    part = make_partition(tmp_path / "events-0")
    first = layout(part)[0][0]
    os.rename(first, first + SWAP)
    files = PlanFiles(part)
    files.files[os.path.basename(first)] = files.files.pop(os.path.basename(first) + SWAP)
    seg = files.segment(0)
    assert seg.log == first + SWAP and seg.size == os.path.getsize(first + SWAP)
    del files.files[file_name(0, ".index")]
    assert not os.path.exists(files.segment(0).path(".index"))


def test_one_overlap_finding_for_local_and_remote_segments():
    """verify and both_tiers (verify --remote) build the segment-overlap row through one helper."""
    assert both_tiers.after_segment is inspect_verify.after_segment
    rep = inspect_verify.VerifyReport()
    prev = inspect_verify.SegmentSummary(0, 10, 10, next_offset=20)
    s = inspect_verify.SegmentSummary(15, 10, 10, next_offset=30)
    assert inspect_verify.after_segment(rep, prev, s, "x.log", 15, "remote segment") is s
    assert [(p.kind, p.offset, p.detail) for p in rep.problems] == [
        ("segment-overlap", 15, "remote segment starts at 15 but the previous one ends at 19")]
    empty = inspect_verify.SegmentSummary(40, 0, 0)
    assert inspect_verify.after_segment(rep, s, empty, "y.log", 40) is s
