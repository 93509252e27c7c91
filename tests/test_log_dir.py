"""``LogDir``, the one reader of a log dir's own files (issue 52 item 5): the same answers from a local
dir and from a byte store (the object storage the Spark planner lists), and the planner asking it."""
from __future__ import annotations

import os

import pytest

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import LogDir
from kafkaforensics.spark.scan_plan import layout

SEG = "00000000000000000000.log"
FILES = {"meta.properties": b"version=0\nbroker.id=3\ncluster.id=c1\n",
         "recovery-point-offset-checkpoint": b"0\n2\norders 0 64\nlegacy 0 64\n",
         "log-start-offset-checkpoint": b"0\n1\norders 0 5\n"}


def _store(root: str, files: dict) -> dict:
    return {f"{root}/{name}": data for name, data in files.items()}


def test_a_log_dir_over_a_byte_store_answers_as_the_local_one(tmp_path):
    """Identity, validated meta.properties and the offset checkpoints read through ``read_file(uri)`` are
    what the local dir's files give; a file the store lacks is none, a URI is ``/``-joined."""
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    store = _store("s3://b/broker-3/kafka-logs", FILES)
    local, remote = LogDir(str(tmp_path)), LogDir.over(store.get, "s3://b/broker-3/kafka-logs")
    assert remote.meta_properties_file == "s3://b/broker-3/kafka-logs/meta.properties"
    assert local.meta_properties_file == os.path.join(str(tmp_path), "meta.properties")
    for ld in (local, remote):
        assert ld.identity() == (3, "c1")
        assert ld.meta_properties() == {"version": 0, "clusterId": "c1", "nodeId": 3, "directoryId": None}
        tables, problems = ld.checkpoints()
        assert problems == [] and tables == {"recovery-point-offset-checkpoint": {("orders", 0): 64, ("legacy", 0): 64},
                                             "log-start-offset-checkpoint": {("orders", 0): 5}}
        assert ld.stored_checkpoint("cleaner-offset-checkpoint") is None
    assert LogDir.over({}.get, "s3://b/empty").identity() == (None, None)


def test_a_store_s_unreadable_files_are_what_the_local_ones_are():
    """Bytes that are no UTF-8 make meta.properties a ValueError (the planner's bad-meta) and a
    checkpoint a located KafkaFormatError, as a malformed local file is."""
    store = _store("s3://b/l", {"meta.properties": b"broker.id=\xff\n", "recovery-point-offset-checkpoint": b"\xff"})
    ld = LogDir.over(store.get, "s3://b/l")
    with pytest.raises(ValueError, match="utf-8"):
        ld.identity()
    with pytest.raises(KafkaFormatError) as e:
        ld.stored_checkpoint("recovery-point-offset-checkpoint")
    assert e.value.problem.file == "s3://b/l/recovery-point-offset-checkpoint"


def test_the_spark_planner_reads_log_dir_files_through_the_log_dir():
    """`layout` over a store: the broker and cluster ids and the checkpoints are read by LogDir through
    the reader given (only the files that decide something), a meta.properties that does not read is
    a bad-meta entry, and a partition whose log is gone below a checkpoint is lost."""
    root = "s3://b/logs"
    store = _store(root, FILES)
    reads = []

    def read_file(uri):
        reads.append(uri)
        return store.get(uri)
    entries = [(f"{root}/{n}", len(d), False) for n, d in FILES.items()] + [
        (f"{root}/orders-0/{SEG}", 100, False), (f"{root}/legacy-0", 0, True)]
    got = layout(entries, read_file)
    assert (got.partitions[f"{root}/orders-0"].broker_id, got.partitions[f"{root}/orders-0"].cluster_id) == (3, "c1")
    assert [(uri, off, kind) for uri, off, kind, _d in got.lost[f"{root}/legacy-0"]] == [
        (f"{root}/recovery-point-offset-checkpoint", 64, "checkpoint-beyond-log-end")]
    assert sorted(set(reads)) == sorted(f"{root}/{n}" for n in (
        "meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
        "log-start-offset-checkpoint", "cleaner-offset-checkpoint"))
    bad = layout(entries, {**store, f"{root}/meta.properties": b"node.id=x\n"}.get)
    assert bad.bad_meta[root].startswith(f"{root}/meta.properties: ") and bad.partitions[f"{root}/orders-0"].broker_id is None


def test_a_local_meta_properties_that_cannot_be_read_stays_an_os_error(tmp_path):
    """Reading through ``LogDir.text`` keeps what a local file that cannot be read was: its OSError (the
    CLI's one line, exit 2), while the broker's unvalidated read of it is empty, as before."""
    (tmp_path / "meta.properties").mkdir()
    with pytest.raises(IsADirectoryError):
        LogDir(str(tmp_path)).meta_properties()
    assert LogDir(str(tmp_path)).meta_properties_raw() == {}
    with pytest.raises(ValueError):
        LogDir(str(tmp_path)).identity()


def test_the_planner_ends_a_log_without_segments_at_its_log_start_over_a_store():
    """A partition dir with no segment in an object store: the planner asks the load's rule
    (``empty_log_end``; an object store's log dir gets the newest, KAFKA-8306's), so the log ends at the
    checkpointed log start (64), not at 0: that log-start entry is no anomaly, a recovery point past it is,
    against 64."""
    root = "s3://b/logs"
    files = {**FILES, "recovery-point-offset-checkpoint": b"0\n2\norders 0 64\nlegacy 0 70\n",
             "log-start-offset-checkpoint": b"0\n1\nlegacy 0 64\n"}
    entries = [(f"{root}/{n}", len(d), False) for n, d in files.items()] + [(f"{root}/legacy-0", 0, True)]
    got = layout(entries, _store(root, files).get)
    ((uri, off, kind, detail),) = got.lost[f"{root}/legacy-0"]
    assert (uri, off, kind) == (f"{root}/recovery-point-offset-checkpoint", 70, "checkpoint-beyond-log-end")
    assert "says 70 but the log ends at 64" in detail
