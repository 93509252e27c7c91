"""Issue 51 (every Kafka generation, round two): what each Kafka version's log loading changes, rule
by rule, each test built from the rule of the versions it names (Kafka's source in the docstrings)."""
import json
import os

import pytest

from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2
from kafkaforensics.repair.recovery import LoadOptions, recover

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
    recover_log_dirs([str(ld)], LoadOptions(kafka_version=version), jobs=1, backup=False)
    assert read_offsets(str(ld / "recovery-point-offset-checkpoint")) == {("t", 0): expected}


# -- 6. a 0.10 log dir gets no file 0.10 never wrote ----------------------------------------------------
def _real(tmp_path, name):
    from tests.realdirs import REAL, unpack
    if not os.path.exists(os.path.join(REAL, name + ".tar.gz")):
        pytest.skip(f"{name}: the real log dirs are not on this machine")
    return unpack(name, str(tmp_path))


@pytest.mark.parametrize("told", [None, "0.10", "0.10.1"])
def test_kafka_010_log_dir_gets_no_snapshot_nor_log_start_checkpoint(tmp_path, told):
    """Kafka 0.10 (Log.scala 0.10.2.0) has no ProducerStateManager and no logStartOffset: a 0.10.1 log dir
    loaded as 0.10 (told, or inferred: its range 0.10-2.3 takes the rule that changes less) gets neither
    producer snapshots nor a log-start-offset-checkpoint; its recovery point is kept (Log.recoverLog
    sets it only after a clean shutdown)."""
    from kafkaforensics.log.checkpoint_file import read_offsets
    from kafkaforensics.repair.load_logs import recover_log_dirs
    real = _real(tmp_path, "magic1-kafka0101-zk")
    ld = real.log_dir
    rp_before = read_offsets(os.path.join(ld, "recovery-point-offset-checkpoint"))
    assert not os.path.exists(os.path.join(ld, "log-start-offset-checkpoint"))
    (out,) = recover_log_dirs([ld], LoadOptions(kafka_version=told), jobs=1, backup=False)
    assert told or "files-since-0.11: none / write -> none" in " ".join(out.notes)
    made = [os.path.join(r, f) for r, _d, fs in os.walk(ld) for f in fs if f.endswith(".snapshot")]
    assert made == [] and not os.path.exists(os.path.join(ld, "log-start-offset-checkpoint"))
    assert read_offsets(os.path.join(ld, "recovery-point-offset-checkpoint")) == rp_before
    # the time index: 0.10.0 has none, 0.10.1 (KIP-33) creates a missing one empty
    tidx = os.path.join(ld, "foo-0", name(0, ".timeindex"))
    assert os.path.exists(tidx) is (told != "0.10")


def test_time_indexes_tell_0101_from_0100(tmp_path):
    """A .timeindex is written from 0.10.1 (KIP-33): the range starts there; told "0.10.2" is the 0.10.1 line."""
    from kafkaforensics.log.kafka_version import infer_kafka_version, parse_kafka_version
    ld = log_dir(tmp_path, clean=False)
    (ld / "meta.properties").write_text("version=0\nbroker.id=0\n")
    d = empty_partition(ld, None)
    from kafkaforensics.records.builder import build_legacy
    (d / name(0, ".log")).write_bytes(build_legacy([Record(0, T0, b"k", b"v")], magic=1))
    kv = infer_kafka_version(str(ld))
    assert kv.low == (0, 10, 1) and "0.10.1" in kv.line()
    os.remove(d / name(0, ".timeindex"))
    assert infer_kafka_version(str(ld)).low == (0, 10)
    assert parse_kafka_version("0.10.2.1").low == (0, 10, 1) and parse_kafka_version("0.10.0.1").low == (0, 10)


# -- 8. only what a version writes proves it -------------------------------------------------------------
def test_missing_epoch_checkpoints_and_topic_ids_prove_nothing(tmp_path):
    """Kafka 3.6.0's ZooKeeper log dir without its leader-epoch-checkpoints (deleted from 2.2 when the
    message format is old): still 2.8-3.9 (partition.metadata), not 2.8 with 2.8's swap rule; without
    partition.metadata too (an inter.broker.protocol below 2.8) no upper bound comes of it."""
    from kafkaforensics.log.kafka_version import infer_kafka_version
    ld = _real(tmp_path, "kafka36-zk-windows-local").log_dir

    def remove_every(file_name):
        for r, _d, fs in os.walk(ld):
            if file_name in fs:
                os.remove(os.path.join(r, file_name))
    remove_every("leader-epoch-checkpoint")
    kv = infer_kafka_version(ld)
    assert (kv.low, kv.high) == ((2, 8), (4, 0)), kv.line()
    assert kv.rules().write("leftover-swap") == "rename" and kv.rules().write("stray-snapshots") == "remove"
    remove_every("partition.metadata")
    kv = infer_kafka_version(ld)
    assert (kv.low, kv.high) == ((2, 4), (4, 0)), kv.line()


# -- 9. a wide range: say so, take the rule that changes less -------------------------------------------
def test_wide_range_takes_the_safe_rule_and_says_so(tmp_path, kfx):
    """The real 2.8.0 dir (inferred 2.8-3.9): a leftover swap, recovered by 2.8 (Log.loadSegmentFiles
    deletes its indexes) and renamed as is from 3.0 (LogLoader), is renamed (the rule that changes less)
    and the note says the versions differ and asks for --kafka-version; told 2.8 its indexes go."""
    ld = _real(tmp_path, "snappy-xerial-kafka28-zk").log_dir
    d = os.path.join(ld, "some-topic-0")
    seg = sorted(f for f in os.listdir(d) if f.endswith(".log"))[0]
    stem = seg[: -len(".log")]
    with open(os.path.join(d, seg), "rb") as f:
        data = f.read()
    for suf, content in ((".log", data), (".index", b""), (".timeindex", b"")):
        with open(os.path.join(d, stem + suf + ".swap"), "wb") as f:
            f.write(content)
    r = kfx("recover", d, "--dry-run", "--json")
    out = json.loads(r.stdout)
    assert any("leftover-swap: recover / rename -> rename" in n and "--kafka-version" in n for n in out["notes"])
    acts = {(a["action"], os.path.basename(a["file"])) for a in out["actions"]}
    assert ("rename", stem + ".index.swap") in acts
    out = json.loads(kfx("recover", d, "--dry-run", "--json", "--kafka-version", "2.8").stdout)
    acts = {(a["action"], os.path.basename(a["file"])) for a in out["actions"]}
    assert ("delete", stem + ".index.swap") in acts and not any("differ in" in n for n in out["notes"])


def test_wide_range_keeps_a_corrupt_index_22_would_rebuild(tmp_path):
    """A corrupt offset index below the recovery point: 2.2 rebuilds it (LogSegment.sanityCheck), 2.3+
    keeps it (KAFKA-7283). A log dir inferred 0.11-2.3 (v2 batches, meta.properties without cluster.id)
    keeps it, saying so; told 2.2 it is rebuilt."""
    from kafkaforensics.log.checkpoint_file import build_offsets
    from kafkaforensics.log import offset_index
    ld = log_dir(tmp_path, clean=False)
    (ld / "meta.properties").write_text("version=0\nbroker.id=0\n")
    d = empty_partition(ld, b"0\n1\n0 0\n")
    segs = [v2(b, 10) for b in range(0, 40, 10)]
    (d / name(0, ".log")).write_bytes(b"".join(segs[:2]))
    (d / name(20, ".log")).write_bytes(b"".join(segs[2:]))
    (d / name(20, ".index")).write_bytes(b"")
    (d / name(20, ".timeindex")).write_bytes(b"")
    (d / name(0, ".index")).write_bytes(offset_index.to_bytes([(5, 0)], 0)[:7])   # not a multiple of 8 bytes
    (ld / "recovery-point-offset-checkpoint").write_bytes(build_offsets({("t", 0): 20}))
    rep = recover(str(d), dry_run=True)
    assert (rep.kafka.low, rep.kafka.high) == ((0, 11), (2, 4))
    assert rep.recovered_segments == [name(20, ".log")]   # the unflushed one only
    assert any("corrupt-index-below-recovery-point: rebuild / keep -> keep" in n for n in rep.notes)
    rep = recover(str(d), dry_run=True, kafka_version="2.2")
    assert rep.recovered_segments == [name(0, ".log"), name(20, ".log")]


# -- 10. suffix dirs a version cannot parse -------------------------------------------------------------
@pytest.mark.parametrize("suffix,refused,accepted", [("future", "1.0", "1.1"), ("stray", "3.6", "3.7")])
def test_suffix_dir_a_version_cannot_parse_stops_its_broker(tmp_path, kfx, suffix, refused, accepted):
    """Log.parseTopicPartitionName knows -future from 1.1 (1.0 splits at the last '-' and throws on
    "future"), LocalLog knows -stray from 3.7 (KIP-858): a broker before those refuses to start."""
    ld = log_dir(tmp_path, clean=True)
    empty_partition(ld, b"0\n0\n")
    copy = ld / f"t-0.{'a' * 32}-{suffix}"
    copy.mkdir()
    for suf in (".log", ".index", ".timeindex"):
        (copy / name(0, suf)).write_bytes(b"")
    r = kfx("verify", str(ld), "--json", "--kafka-version", refused)
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and [p["kind"] for p in out["problems"]] == ["unknown-dir-suffix"], r.output
    assert f"before {accepted}" in out["problems"][0]["detail"]
    r = kfx("recover", str(ld), "--dry-run", "--kafka-version", refused)
    assert f"cannot parse a -{suffix} dir name" in r.output and "refuses to start" in r.output
    r = kfx("verify", str(ld), "--json", "--kafka-version", accepted)
    assert r.exit_code == 0 and json.loads(r.stdout)["problems"] == [], r.output


# -- 7. the KRaft metadata log ----------------------------------------------------------------------------
def test_metadata_log_partial_and_deleted_snapshots_go_and_missing_segments_start_at_the_latest(tmp_path, kfx):
    """KafkaMetadataLog.recoverSnapshots deletes ``.checkpoint.part`` and ``.checkpoint.deleted`` files
    (Files.deleteIfExists) and snapshots below the log start; truncateToLatestSnapshot then starts a log
    whose segments are gone at the latest snapshot's end offset (truncateFullyAndStartAt), not at 0."""
    import shutil
    from tests.conftest import FIXTURES
    ld = tmp_path / "kraft"
    shutil.copytree(os.path.join(FIXTURES, "kraft-logdir"), ld)
    md = ld / "__cluster_metadata-0"
    snaps = sorted(n for n in os.listdir(md) if n.endswith(".checkpoint"))
    assert snaps
    end = int(snaps[-1][:20])
    part = md / (snaps[-1] + ".part")
    deleted = md / (snaps[0] + ".deleted")
    part.write_bytes(b"half")
    deleted.write_bytes(b"gone")
    r = kfx("recover", str(md), "--dry-run", "--json")
    acts = {(a["action"], os.path.basename(a["file"])) for a in json.loads(r.stdout)["actions"]}
    assert ("delete", part.name) in acts and ("delete", deleted.name) in acts
    for n in os.listdir(md):
        if n.endswith((".log", ".index", ".timeindex", ".snapshot")):
            os.remove(md / n)
    rep = recover(str(md), backup=False)
    assert not part.exists() and not deleted.exists()
    assert sorted(n for n in os.listdir(md) if n.endswith(".log")) == [name(end, ".log")] and end > 0
    assert rep.log_end_offset == end and rep.log_start_offset == end
    assert recover(str(md), backup=False).actions == []   # the second run changes nothing


# -- 4. producers below the log start in new snapshots ----------------------------------------------------
@pytest.mark.parametrize("version,kept", [("2.3", [2000]), ("2.4", [1000, 2000]), ("3.6", [1000, 2000])])
def test_producers_below_the_log_start_kept_in_new_snapshots_from_24(tmp_path, version, kept):
    """ProducerStateManager.loadFromSnapshot loads every producer of the latest snapshot; up to 2.3
    truncateHead evicts those whose last batch lies below the log start, from 2.4 (KAFKA-7190) they stay
    until they expire: producer 1000's batches are gone to retention (log start 100), its entry lives in
    the snapshot at 105 only, and the snapshot Kafka takes at the log end 110 holds it from 2.4."""
    from kafkaforensics.log.checkpoint_file import build_offsets
    from kafkaforensics.log.producer_state import ProducerEntry, read_snapshot, snapshot_bytes
    ld = log_dir(tmp_path, clean=False)
    d = ld / "t-0"
    d.mkdir()
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 100\n")

    def batch(off):
        return build_v2([Record(off, T0 + off, b"k", b"v")], base_offset=off, partition_leader_epoch=0,
                        producer=BatchProducer(producer_id=2000, producer_epoch=0, base_sequence=off - 100))
    for base in (100, 105):
        (d / name(base, ".log")).write_bytes(b"".join(batch(o) for o in range(base, base + 5)))
    (d / name(100, ".index")).write_bytes(b"")
    (d / name(100, ".timeindex")).write_bytes(b"")
    old = [ProducerEntry(producer_id=1000, epoch=0, last_sequence=9, last_offset=50, offset_delta=0, timestamp=T0,
                         coordinator_epoch=-1, current_txn_first_offset=-1),
           ProducerEntry(producer_id=2000, epoch=0, last_sequence=4, last_offset=104, offset_delta=0,
                         timestamp=T0 + 104, coordinator_epoch=-1, current_txn_first_offset=-1)]
    (d / name(105, ".snapshot")).write_bytes(snapshot_bytes(old))
    (ld / "recovery-point-offset-checkpoint").write_bytes(build_offsets({("t", 0): 105}))
    (ld / "log-start-offset-checkpoint").write_bytes(build_offsets({("t", 0): 100}))
    recover(str(d), kafka_version=version, backup=False)
    snap = read_snapshot((d / name(110, ".snapshot")).read_bytes())
    assert sorted(e.producer_id for e in snap) == kept
    assert [e.last_offset for e in snap if e.producer_id == 2000] == [109]


# -- 3. a recovered segment's indexes are recovery's --------------------------------------------------------
@pytest.mark.parametrize("version,kw,rewritten", [
    ("3.6", {"time_offset": "record"}, [".timeindex"]),      # a 3.6 leader's time index: the record's offset
    ("4.0", {"per": "append"}, [".index", ".timeindex"]),     # a 4.0 follower's sparse indexes
    ("1.1", {"entry": "base", "per": "append"}, [".index", ".timeindex"]),  # a 1.1 follower's: base offsets
    ("4.1", {"per": "batch"}, [])])                           # 4.1's appends write what recovery writes
def test_recovered_segment_indexes_rebuilt_as_recovery_writes_them(tmp_path, kfx, version, kw, rewritten):
    """LogSegment.recover (every version) resets the offset and time index and appends an entry per
    batch past index.interval.bytes (offset: the batch's last offset, its base up to 1.1; time: the
    batch's max timestamp at its last offset): after an unclean shutdown an unflushed segment's indexes
    are rewritten so, byte for byte, whatever form the broker's appends gave them; after a clean one kept."""
    from tests.test_kafka_generations import INTERVAL, batches, broker_files, partition
    appends = [bs for bs in zip(*[iter(batches(12))] * 3)] if kw.get("per") == "append" else [[b] for b in batches(12)]
    if version == "3.6":
        appends = [[b] for b in batches(12)]
    part = partition(tmp_path, [list(a) for a in appends], **kw)
    before = {f: open(os.path.join(part, f), "rb").read() for f in os.listdir(part)}
    entry = "base" if version == "1.1" else "last"
    _log, want_idx, want_tidx = broker_files([[b] for a in appends for b in a], entry=entry, per="batch",
                                             time_offset="batch")
    r = kfx("recover", part, "--dry-run", "--json", "--kafka-version", version, "--index-interval-bytes", INTERVAL)
    acts = json.loads(r.stdout)["actions"]
    assert sorted(os.path.basename(a["file"])[20:] for a in acts if "index" in a["file"]) == rewritten, acts
    open(os.path.join(os.path.dirname(part), ".kafka_cleanshutdown"), "wb").close()
    r = kfx("recover", part, "--dry-run", "--json", "--kafka-version", version, "--index-interval-bytes", INTERVAL)
    assert json.loads(r.stdout)["actions"] == []
    os.remove(os.path.join(os.path.dirname(part), ".kafka_cleanshutdown"))
    recover(part, kafka_version=version, index_interval_bytes=INTERVAL, backup=False)
    assert open(os.path.join(part, name(0, ".index")), "rb").read() == want_idx
    assert open(os.path.join(part, name(0, ".timeindex")), "rb").read() == want_tidx
    assert rewritten or {f: open(os.path.join(part, f), "rb").read() for f in os.listdir(part)} == before


# -- done when: every real log dir, after a clean and after an unclean shutdown ------------------------------
def _tarballs():
    from tests.realdirs import tarballs
    return tarballs()


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "unclean"])
@pytest.mark.parametrize("tarball", _tarballs())
def test_real_log_dirs_load_as_their_kafka(tmp_path, tarball, clean):
    """Every real log dir, marked clean or not: after recover no leader-epoch entry starts at or past its
    partition's log end (truncateFromEnd), an empty epoch file is still empty, a 0.10-era dir holds no
    producer snapshot kfx made, no partial/deleted KRaft snapshot is left; a second run plans nothing
    (after a clean shutdown: nothing but the snapshots Kafka's own clean loads alternate)."""
    from kafkaforensics.repair.load_logs import recover_log_dirs
    real = _real(tmp_path, tarball)
    ld = real.log_dir
    marker = os.path.join(ld, ".kafka_cleanshutdown")
    if clean and not os.path.exists(marker):
        open(marker, "wb").close()
    elif not clean and os.path.exists(marker):
        os.remove(marker)
    empty = {r for r, _d, fs in os.walk(ld) if "leader-epoch-checkpoint" in fs
             and os.path.getsize(os.path.join(r, "leader-epoch-checkpoint")) == 0}
    snaps = {os.path.join(r, f) for r, _d, fs in os.walk(ld) for f in fs if f.endswith(".snapshot")}
    (out,) = recover_log_dirs([ld], jobs=1, backup=False)
    for rep in out.partitions:
        p = os.path.join(rep.path, "leader-epoch-checkpoint")
        if os.path.exists(p):
            lines = open(p).read().split("\n")[2:]
            assert all(int(x.split()[1]) < rep.log_end_offset for x in lines if x.strip()), (rep.partition, lines)
    assert all(os.path.getsize(os.path.join(r, "leader-epoch-checkpoint")) == 0 for r in empty)
    if out.kafka.rules().write("files-since-0.11") == "none":
        assert {os.path.join(r, f) for r, _d, fs in os.walk(ld) for f in fs if f.endswith(".snapshot")} <= snaps
    assert not [f for _r, _d, fs in os.walk(ld) for f in fs if f.endswith((".checkpoint.part", ".checkpoint.deleted"))]
    # a second run changes nothing but where Kafka's own loads alternate: after a clean shutdown a
    # partition with no snapshot gets empty ones (loadProducerState), which the next load deletes when
    # they lie at its log start (truncateAndReload)
    (again,) = recover_log_dirs([ld], jobs=1, backup=False)
    assert not again.checkpoint_actions
    assert {k for r in again.partitions for k in r.done} <= ({"snapshot written", "snapshot deleted"} if clean
                                                            else set())
