"""Write a new partition directory the way a broker lays it out: the appends are
:class:`~.live_log.LiveLog`'s (segments rolled, indexes, producer snapshots and leader epochs as a
leader's log has them), into a directory built beside the target and renamed into place, so a
crash leaves no half output; ``partition.metadata`` holds the topic id given, else one derived from
the topic name.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from kafkaforensics import fsutil

from specs import checkpoints as C
from specs import kafka_messages as K
from specs.record_batch import SNAPSHOT_FOOTER, SNAPSHOT_HEADER

from kafkaforensics.defaults import DEFAULT_SEGMENT_BYTES
from kafkaforensics.fsutil import atomic_write, fsync_dir
from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.partition import derived_topic_id, parse_partition_dir_name
from kafkaforensics.records import internal_topics
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2, control_record_key


class PartitionWriter:
    """A new partition dir as one transaction: :meth:`append` batch bytes at their own offsets
    (:meth:`.LiveLog.append_as_is`), ``close()`` finishes the files and renames the directory into
    place, ``abort()`` leaves nothing.  Use as a context manager."""

    def __init__(self, out_dir: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, snapshots: bool = True,
                 topic_id: str | None = None):
        self.out_dir = os.path.abspath(out_dir)
        self.topic_id = topic_id
        if os.path.exists(self.out_dir) and os.listdir(self.out_dir):
            raise FileExistsError(f"{out_dir} exists and is not empty")
        parent = os.path.dirname(self.out_dir)
        os.makedirs(parent, exist_ok=True)
        self.tmp_dir = tempfile.mkdtemp(prefix="." + os.path.basename(self.out_dir) + ".", suffix=fsutil.TEMP_SUFFIX,
                                        dir=parent)
        fsutil.fit_new(self.tmp_dir)  # renamed into place: a partition dir's mode (mkdtemp makes 0700)
        self.log = LiveLog(self.tmp_dir, segment_bytes=segment_bytes, index_interval=index_interval_bytes,
                           index_after_append=False, snapshots=snapshots)
        self.batches = 0

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()

    @property
    def next_offset(self) -> int:
        return self.log.next_offset

    @property
    def segments(self) -> list[int]:
        return [seg.base_offset for seg in self.log.segments]

    def append(self, data: bytes) -> None:
        """Append one batch (v2) or one legacy log entry, given as its bytes."""
        self.log.append_as_is(data)
        self.batches += 1

    def close(self) -> str:
        self.log.close(epochs=bool(self.log.epochs))
        named = parse_partition_dir_name(self.out_dir)
        topic_id = self.topic_id or (derived_topic_id(named[0]) if named else None)
        if topic_id:
            atomic_write(os.path.join(self.tmp_dir, C.PARTITION_METADATA_FILE),
                         C.build_partition_metadata(topic_id).encode())
        fsync_dir(self.tmp_dir)
        if os.path.isdir(self.out_dir):
            os.rmdir(self.out_dir)  # empty (checked at start)
        os.rename(self.tmp_dir, self.out_dir)
        fsync_dir(os.path.dirname(self.out_dir))
        return self.out_dir

    def abort(self) -> None:
        self.log.discard()
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def write_partition(out_dir: str, batches, **kw) -> str:
    """Write an iterable of batch byte strings as a partition directory."""
    with PartitionWriter(out_dir, **kw) as w:
        for data in batches:
            w.append(data)
    return w.out_dir


def build_snapshot(records, *, last_contained_timestamp: int, epoch: int = 0, control_records=()) -> bytes:
    """Snapshot bytes as Kafka's snapshot writer lays them out: header batch, one batch of metadata
    records (``records``: (schema, version, dict)), footer batch; ``control_records``: (control type,
    bytes) written after the header (KRaftVersion, Voters)."""
    ts = last_contained_timestamp
    header = K.SnapshotHeaderRecord.build({"Version": 0, "LastContainedLogTimestamp": ts}, 0)
    ctl = [(SNAPSHOT_HEADER, header), *control_records]
    off = 0
    out = [build_v2([Record(off + i, ts, control_record_key(t), v, []) for i, (t, v) in enumerate(ctl)],
                    base_offset=off, control=True, partition_leader_epoch=epoch)]
    off += len(ctl)
    recs = [Record(off + i, ts, None, internal_topics.encode_metadata(s, v, d), []) for i, (s, v, d) in enumerate(records)]
    if recs:
        out.append(build_v2(recs, base_offset=off, partition_leader_epoch=epoch))
        off += len(recs)
    footer = K.SnapshotFooterRecord.build({"Version": 0}, 0)
    out.append(build_v2([Record(off, ts, control_record_key(SNAPSHOT_FOOTER), footer, [])], base_offset=off,
                        control=True, partition_leader_epoch=epoch))
    return b"".join(out)
