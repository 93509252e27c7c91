"""A partition open for appends, as a Kafka leader's UnifiedLog appends to it: the broker's writable
partitions (``kfx serve --writable``) and every partition the project writes (:mod:`.writer`).

:class:`LiveLog` is a :class:`~.partition.Partition` loaded by one walk of its segments whose log
end, log start and leader epoch then move with its appends (and DeleteRecords).  Two ways to append:

- :meth:`append` (a Produce): a leader assigns the offsets, rewriting each batch's baseOffset and
  partitionLeaderEpoch (neither is covered by the CRC); idempotent producers are checked as
  ProducerStateManager checks them (a retried batch that matches one of a producer's last five is
  acknowledged with its original offset, a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an older
  epoch INVALID_PRODUCER_EPOCH); transaction markers are appended as control batches
  (:meth:`append_marker`);
- :meth:`append_as_is` (a follower's or a restore's append): the batch keeps its offsets and
  epoch; legacy (v0/v1) entries are taken too.

Either way the segment rolls as LogSegment.shouldRoll says (the next batch would push it past
``segment_bytes``, or its last offset would not fit a relative int32), with a producer snapshot at
the new base (ProducerStateManager.takeSnapshot); the indexes follow the one rule of
:mod:`.indexing` (trimmed to their entries on roll; the ``.txnindex`` only once a transaction
aborts), the leader-epoch cache takes each v2 batch's epoch (UnifiedLog.append's
maybeAssignEpochStartOffset), and :meth:`close` is UnifiedLog.close.  Every index and snapshot is
written through temp file + fsync + rename; the ``.log`` is fsynced on roll and close.  Nothing
is written until the first append.
"""
from __future__ import annotations

import io
import os
import struct
from collections import deque

from specs import record_batch as R
from specs.kafka_errors import (CORRUPT_MESSAGE, INVALID_PRODUCER_EPOCH, NONE, OUT_OF_ORDER_SEQUENCE,
                                UNSUPPORTED_FOR_MESSAGE_FORMAT)
from specs.layout import INT32_MAX

from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.fsutil import _step, atomic_write
from kafkaforensics.log.indexing import SegmentIndexes
from kafkaforensics.log import load_walk
from kafkaforensics.log.log_loader import empty_partition_log_end
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import INDEX_BY_SUFFIX, LOG, SNAPSHOT, BatchScanner, Segment, file_name, index_bytes
from kafkaforensics.records import int64
from kafkaforensics.records.batch import Record, parse_header, resolve_legacy_wrapper
from kafkaforensics.records.builder import BatchProducer, build_v2, control_record_key, end_txn_marker_value


class LiveLog(Partition):
    """A partition dir loaded for appends (see the module's docstring).  ``index_after_append``:
    rewrite the active segment's indexes after every append (a broker's, whose readers look at them
    at once) rather than on roll and close only (a writer's).  ``snapshots``: take producer
    snapshots on roll and close."""

    #: a live log is one object (its offsets move): compared and hashed by identity
    __eq__ = object.__eq__
    __hash__ = object.__hash__
    #: the producer state its load built and its appends keep (a live log's walk always keeps one)
    state: ProducerState

    def __init__(self, path: str, topic: str | None = None, partition: int | None = None, *,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES, index_interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 index_after_append: bool = True, snapshots: bool = True, pd: Partition | None = None):
        pd = pd or Partition.scan(path)
        super().__init__(path, pd.topic if topic is None else topic, pd.partition if partition is None else partition,
                         segments=list(pd.segments), snapshots=list(pd.snapshots), leftovers=list(pd.leftovers),
                         orphan_indexes=list(pd.orphan_indexes), unknown=list(pd.unknown))
        self.segment_bytes = segment_bytes
        self.interval = index_interval
        self.index_after_append = index_after_append
        self.take_snapshots = snapshots
        self.topic_id = ""
        self._written = False
        self._log_file: io.FileIO | None = None
        self.recent: dict[int, deque] = {}       # pid -> last 5 (epoch, first seq, last seq, base offset)
        self.active = self.segments[-1].base_offset if self.segments else empty_partition_log_end(self)
        self.idx = SegmentIndexes(self.active, index_interval)
        #: what fails validation: each segment's first batch whose CRC fails, and where a segment's
        #: walk ends before its end (a torn tail, a bad size...), as located problems
        self.damage: list[Problem] = []
        self._load()

    def _load(self) -> None:
        """One walk (load_walk): a batch failing its CRC is left out of the producer state and the
        indexes, but stays in the log (served as stored, as a Kafka broker serves it)."""
        last_seg = None
        #: base offset -> byte ranges [start, end) of the segment holding the batches the load skipped
        #: for their CRC (the gaps between the batches it kept): a reader checks CRCs only there
        self.crc_skipped: dict[int, list[tuple[int, int]]] = {}
        for seg, batches in self.walk(damage="skip"):
            last = seg.base_offset == self.active
            kept_end = 0
            for b, done in batches:
                if last:
                    self.idx.add(b, done)
                self._remember(b, b.base_offset)
                if b.position > kept_end:
                    self.crc_skipped.setdefault(seg.base_offset, []).append((kept_end, b.position))
                kept_end = b.position + b.size
            if seg.damaged is not None and seg.size > kept_end:
                self.crc_skipped.setdefault(seg.base_offset, []).append((kept_end, seg.size))
            last_seg = seg
            if seg.damaged is not None:
                d = seg.damaged
                self.damage.append(Problem(seg.path, d.position, d.base_offset, "crc-mismatch",
                                           f"stored CRC {d.crc} does not match the batch's bytes"))
            if seg.stop is not None:
                self.damage.append(seg.stop)
        #: the log end: the newest segment's next offset (its base when it has no batch, as Kafka's),
        #: after its last whole batch whatever its CRC (LogSegment.readNextOffset checks none)
        self.next_offset = super().log_end_offset if self.segments else self.active
        if last_seg is not None and last_seg.damaged is not None:  # the walk skipped a batch: Kafka's own rule
            self.next_offset = max(self.next_offset, last_seg.files.read_next_offset())
        #: the first segment's base, or log-start-offset-checkpoint's entry within the log (DeleteRecords)
        self._log_start = super().log_start_offset
        self._leader_epoch = super().leader_epoch  # the newest the batches carry: appends get it
        #: the leader-epoch cache: leader-epoch-checkpoint, else the batches' epochs; as Kafka's
        #: LogLoader truncates it, nothing from the log end on nor before a checkpointed log start
        self.epochs: LeaderEpochCache = self.leader_epochs()
        moved = bool(self.segments) and self._log_start > self.segments[0].base_offset   # a checkpointed log start
        load_walk.truncate_leader_epochs(self.epochs, self.next_offset, self._log_start if moved else 0)

    def crc_unchecked(self, base_offset: int, position: int) -> bool:
        """Whether the batch at byte ``position`` of the segment at ``base_offset`` lies where the load
        skipped batches for their CRC (:attr:`crc_skipped`): every other batch had its CRC checked,
        at load or at its append, so a reader need not check it again."""
        ranges = self.crc_skipped.get(base_offset)
        return ranges is not None and any(lo <= position < hi for lo, hi in ranges)

    # -- the offsets, live ------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.next_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        self._log_start = offset

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @leader_epoch.setter
    def leader_epoch(self, epoch: int) -> None:
        self._leader_epoch = epoch

    def seg_path(self, base: int, suffix: str) -> str:
        return os.path.join(self.path, file_name(base, suffix))

    def _remember(self, b, base_offset: int) -> None:
        if b.magic >= 2 and b.producer_id >= 0 and not b.is_control and b.base_sequence >= 0:
            q = self.recent.setdefault(b.producer_id, deque(maxlen=5))
            q.append((b.producer_epoch, b.base_sequence, b.last_sequence, base_offset))

    def epoch_at(self, offset: int) -> int:
        """The leader epoch an offset was written in (the last cache entry starting at or before it), -1: none."""
        e = self.epochs.epoch_for_offset(offset)
        return -1 if e is None else e

    # -- checks -----------------------------------------------------------------------------------
    def check(self, b) -> tuple[int, int | None]:
        """(error, duplicate's base offset or None) for a batch about to be appended."""
        if b.magic != 2:
            return UNSUPPORTED_FOR_MESSAGE_FORMAT, None
        if not b.crc_valid():
            return CORRUPT_MESSAGE, None
        pid = b.producer_id
        if pid < 0 or b.is_control:
            return NONE, None
        e = self.state.producers.get(pid)
        for epoch, first, last, base in self.recent.get(pid, ()):
            if epoch == b.producer_epoch and first == b.base_sequence and last == b.last_sequence:
                return NONE, base
        if e is not None and b.producer_epoch < e.epoch:
            return INVALID_PRODUCER_EPOCH, None
        if e is not None and b.producer_epoch == e.epoch and e.last_sequence >= 0:
            if b.base_sequence != int64.increment_sequence(e.last_sequence, 1):
                return OUT_OF_ORDER_SEQUENCE, None
        elif b.base_sequence not in (0, -1) and (e is None or b.producer_epoch > e.epoch):
            return OUT_OF_ORDER_SEQUENCE, None
        return NONE, None

    # -- appending --------------------------------------------------------------------------------
    def create_active(self) -> None:
        """The active segment's (empty) .log file, as a leader has it from the partition's creation."""
        if not self.segments or self.segments[-1].base_offset != self.active:
            self.segments.append(Segment(self.active, self.path))
        open(self.seg_path(self.active, LOG), "ab").close()
        self._written = True

    def append(self, data: bytes) -> tuple[int, int]:
        """A leader's append of a produce request's records: (error, base offset of the first batch)."""
        batches = list(BatchScanner(bytes(data)))
        if not batches or sum(b.size for b in batches) != len(data):
            return CORRUPT_MESSAGE, -1
        first = None
        for b in batches:
            err, dup = self.check(b)
            if err:
                return err, -1
            if dup is not None:
                first = dup if first is None else first
                continue
            off = self._write(bytearray(b.data), assign=True)
            first = off if first is None else first
        self._appended()
        assert first is not None  # batches is not empty, and each one set it
        return NONE, first

    def append_as_is(self, data: bytes) -> int:
        """Append one batch (v2) or one legacy log entry, given as its bytes, at its own offsets and
        epoch; returns its base offset.  A size that does not match the bytes is a ValueError."""
        off = self._write(bytearray(data), assign=False)
        self._appended()
        return off

    def append_records(self, records: list, timestamp: int, **batch) -> tuple[int, int]:
        """One v2 batch of ``(key, value)`` pairs at the log end (``batch``: build_v2's producer fields)."""
        recs = [Record(self.next_offset + i, timestamp, k, v, []) for i, (k, v) in enumerate(records)]
        return self.append(build_v2(recs, base_offset=self.next_offset, **batch))

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int = 0,
                      timestamp: int = 0) -> int:
        rec = Record(self.next_offset, timestamp, control_record_key(1 if commit else 0),
                     end_txn_marker_value(coordinator_epoch), [])
        raw = build_v2([rec], base_offset=self.next_offset, transactional=True, control=True,
                       producer=BatchProducer(producer_id=producer_id, producer_epoch=producer_epoch))
        off = self._write(bytearray(raw), assign=True)
        self._appended()
        return off

    def _write(self, raw: bytearray, assign: bool) -> int:
        """One batch at the log end: in the partition's current leader epoch at the next offset
        (``assign``), else as given."""
        if assign:
            struct.pack_into(">q", raw, 0, self.next_offset)  # baseOffset and the epoch lie outside the CRC
            struct.pack_into(">i", raw, R.PARTITION_LEADER_EPOCH_OFFSET, self.leader_epoch)
        data = bytes(raw)
        b = parse_header(data)
        if b.magic < 2:
            resolve_legacy_wrapper(b)
        if b.size != len(data):
            raise ValueError(f"batch declares {b.size} bytes but {len(data)} were given")
        base = b.base_offset
        if not self.segments:
            self.active, self.idx = base, SegmentIndexes(base, self.interval)
        elif self.idx.valid_bytes and (self.idx.valid_bytes > self.segment_bytes - b.size
                                       or b.last_offset - self.active > INT32_MAX):
            self._roll(base)
        if not self.segments or self.segments[-1].base_offset != self.active:
            self.segments.append(Segment(self.active, self.path))
        b.position = self.idx.valid_bytes
        _step("append")  # the fault-injection point of an append (KFX_CRASH_AT)
        if self._log_file is None:
            self._log_file = open(self.seg_path(self.active, LOG), "ab", buffering=0)
        self._log_file.write(data)
        self.idx.add(b, self.state.append(b))
        if b.magic >= 2:
            self.epochs.assign_newer(b.partition_leader_epoch, base)
        self._written = True
        self._remember(b, base)
        self.next_offset = b.next_offset
        return base

    def _appended(self) -> None:
        if self.index_after_append:  # a broker's: readers see the append's files whole at once
            self._flush_indexes()
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    @property
    def written(self) -> bool:
        """Whether this partition was appended to (or created) since it was loaded."""
        return self._written

    def _flush_indexes(self) -> None:
        base, idx = self.active, self.idx
        for suf, data in index_bytes(idx, base):
            if data or not INDEX_BY_SUFFIX[suf].created_lazily:
                atomic_write(self.seg_path(base, suf), data)

    def _close_active(self) -> None:
        """The active segment closed: its data fsynced, its final time-index entry, its indexes written."""
        if self._log_file is not None:
            os.fsync(self._log_file.fileno())
            self._log_file.close()
            self._log_file = None
        self.idx.close()
        self._flush_indexes()

    def _snapshot(self, offset: int) -> None:
        if self.take_snapshots:
            atomic_write(self.seg_path(offset, SNAPSHOT), self.state.to_snapshot())

    def close(self, *, epochs: bool = True) -> None:
        """Kafka's clean close of a log it appended to (UnifiedLog.close): the active segment's final
        time-index entry (its largest timestamp), a producer snapshot at the log end and (``epochs``)
        the leader-epoch checkpoint."""
        if not self.segments:
            self.create_active()
        self._close_active()
        self._snapshot(self.next_offset)
        if epochs:
            self.epochs.write(self.path)

    def discard(self) -> None:
        """Close the active segment's file without finishing anything (a writer's abort)."""
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _roll(self, new_base: int) -> None:
        self._close_active()
        self._snapshot(new_base)
        self.active, self.idx = new_base, SegmentIndexes(new_base, self.interval)
        self.create_active()
