"""Write a partition directory the way a broker lays it out: segments, indexes, checkpoints.

Segments roll as LogSegment.shouldRoll says (the next batch would push the segment past
``segment_bytes``, or its last offset would not fit a relative int32); each closed segment gets its
.index/.timeindex (trimmed to their entries, as on roll) and .txnindex; producer snapshots are
taken at every roll and at the end (as ProducerStateManager.takeSnapshot does, empty or not); the leader-epoch-checkpoint lists each epoch's first offset.
The directory is built beside the target and renamed into place, so a crash leaves no half output.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from kafkaforensics import fsutil

from specs import checkpoints as C
from specs.layout import INT32_MAX

from kafkaforensics.log import offset_index, time_index, txn_index
from kafkaforensics.records.batch import parse_header, resolve_legacy_wrapper
from kafkaforensics.defaults import DEFAULT_SEGMENT_BYTES
from kafkaforensics.fsutil import fsync_dir
from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES, SegmentIndexes
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import INDEX, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX, derived_topic_id, parse_partition_dir_name
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import file_name



class PartitionWriter:
    """Append batch bytes; ``close()`` finishes the files. Use as a context manager."""

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
        self.segment_bytes = segment_bytes
        self.interval = index_interval_bytes
        self.snapshots = snapshots
        self.state = ProducerState()
        self.epochs = LeaderEpochCache()
        self._log = None
        self._idx: SegmentIndexes | None = None
        self.next_offset = 0
        self.batches = 0
        self.segments: list[int] = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _path(self, base: int, suffix: str) -> str:
        return os.path.join(self.tmp_dir, file_name(base, suffix))

    def _roll(self, base: int) -> None:
        if self._log is not None:
            self._finish_segment()
            if self.snapshots:
                self._snapshot(base)
        self._log = open(self._path(base, LOG), "wb")
        self._idx = SegmentIndexes(base, self.interval)
        self.segments.append(base)

    def append(self, data: bytes) -> None:
        """Append one batch (v2) or one legacy log entry, given as its bytes."""
        b = parse_header(data)
        if b.magic < 2:
            resolve_legacy_wrapper(b)
        if b.size != len(data):
            raise ValueError(f"batch declares {b.size} bytes but {len(data)} were given")
        if self._log is None:
            self._roll(b.base_offset)
        elif (self._idx.valid_bytes > self.segment_bytes - b.size
              or b.last_offset - self._idx.base_offset > INT32_MAX):
            self._roll(b.base_offset)
        self._log.write(data)
        self._idx.add(b, self.state.append(b))
        if b.magic >= 2 and b.partition_leader_epoch >= 0:
            self.epochs.assign_newer(b.partition_leader_epoch, b.base_offset)
        self.next_offset = b.next_offset
        self.batches += 1

    def _finish_segment(self) -> None:
        self._log.flush()
        os.fsync(self._log.fileno())
        self._log.close()
        idx = self._idx.close()
        base = idx.base_offset
        for suffix, data in ((INDEX, offset_index.to_bytes(idx.offsets, base)),
                             (TIMEINDEX, time_index.to_bytes(idx.times, base)),
                             (TXNINDEX, txn_index.to_bytes(idx.aborted))):
            if suffix == TXNINDEX and not data:
                continue  # Kafka creates the transaction index lazily
            _write(self._path(base, suffix), data)

    def _snapshot(self, offset: int) -> None:
        _write(self._path(offset, SNAPSHOT), self.state.to_snapshot())

    def close(self) -> str:
        if self._log is None:
            self._roll(0)
        self._finish_segment()
        if self.snapshots:
            self._snapshot(self.next_offset)
        if self.epochs:
            _write(os.path.join(self.tmp_dir, C.LEADER_EPOCH_FILE), self.epochs.to_bytes())
        named = parse_partition_dir_name(self.out_dir)
        if self.topic_id or named:  # partition.metadata: the id given, else one derived from the topic name
            _write(os.path.join(self.tmp_dir, C.PARTITION_METADATA_FILE),
                   C.build_partition_metadata(self.topic_id or derived_topic_id(named[0])).encode())
        fsync_dir(self.tmp_dir)
        if os.path.isdir(self.out_dir):
            os.rmdir(self.out_dir)  # empty (checked at start)
        os.rename(self.tmp_dir, self.out_dir)
        fsync_dir(os.path.dirname(self.out_dir))
        return self.out_dir

    def abort(self) -> None:
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_partition(out_dir: str, batches, **kw) -> str:
    """Write an iterable of batch byte strings as a partition directory."""
    with PartitionWriter(out_dir, **kw) as w:
        for data in batches:
            w.append(data)
    return w.out_dir
