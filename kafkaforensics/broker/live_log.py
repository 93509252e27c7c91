"""One served partition's state, loaded by one walk of its segments, and its appends (``kfx serve
--writable``) as a broker's leader does them.

:class:`LiveLog` is the only state the replay broker keeps per partition: its segments, log start
and end offsets, last stable offset, leader epoch and epoch cache, topic id and producer state.
Offsets are assigned by rewriting each batch's baseOffset and partitionLeaderEpoch (neither is
covered by the CRC); idempotent producers are checked as ProducerStateManager checks them (a
retried batch that matches one of a producer's last five is acknowledged with its original offset,
a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH); transaction
markers are appended as control batches and aborted transactions go to the segment's .txnindex.
The active segment's indexes follow the same rule as everywhere else (:mod:`indexing`) and are
rewritten after each append; segments roll at ``segment_bytes``, with a producer snapshot.  Nothing
is written until the first append.
"""
from __future__ import annotations

import os
import struct
from collections import deque

from specs import record_batch as R

from kafkaforensics.log import offset_index, time_index, txn_index
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.fsutil import _step, atomic_write
from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from kafkaforensics.log.indexing import SegmentIndexes
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.errors import Problem
from kafkaforensics.log.segment import INDEX, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX, BatchScanner, file_name

from specs.kafka_errors import (CORRUPT_MESSAGE, INVALID_PRODUCER_EPOCH, NONE, OUT_OF_ORDER_SEQUENCE,
                                UNSUPPORTED_FOR_MESSAGE_FORMAT)
from specs.layout import INT32_MAX


class LiveLog:
    def __init__(self, path: str, topic: str | None = None, partition: int | None = None, *,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES, index_interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 pd: Partition | None = None):
        pd = pd or Partition.scan(path)
        self.path = path
        self.topic = pd.topic if topic is None else topic
        self.partition = pd.partition if partition is None else partition
        self.segment_bytes = segment_bytes
        self.interval = index_interval
        self.topic_id = ""
        self._written = False
        self.segments: list[int] = [seg.base_offset for seg in pd.segments]  # base offsets
        self.recent: dict[int, deque] = {}       # pid -> last 5 (epoch, first seq, last seq, base offset)
        self.active = self.segments[-1] if self.segments else 0
        self.idx = SegmentIndexes(self.active, index_interval)
        # one walk (log_loader): a batch failing its CRC is left out of the producer state and the
        # indexes, but stays in the log (served as stored, as a Kafka broker serves it)
        log = pd
        #: what fails validation: each segment's first batch whose CRC fails, and where a segment's
        #: walk ends before its end (a torn tail, a bad size...), as located problems
        self.damage: list[Problem] = []
        last_seg = None
        for seg, batches in log.walk(damage="skip"):
            last = seg.base_offset == self.active
            for b, done in batches:
                if last:
                    self.idx.add(b, done)
                self._remember(b, b.base_offset)
            last_seg = seg
            if seg.damaged is not None:
                d = seg.damaged
                self.damage.append(Problem(seg.path, d.position, d.base_offset, "crc-mismatch",
                                           f"stored CRC {d.crc} does not match the batch's bytes"))
            if seg.stop is not None:
                self.damage.append(seg.stop)
        self.state: ProducerState = log.state
        #: the log end: the newest segment's next offset (its base when it has no batch, as Kafka's),
        #: after its last whole batch whatever its CRC (LogSegment.readNextOffset checks none)
        self.next_offset = log.log_end_offset
        if last_seg is not None and last_seg.damaged is not None:
            with last_seg.files.walk(last_seg.damaged.position) as walk:
                for b in walk:
                    self.next_offset = max(self.next_offset, b.next_offset)
        #: the first segment's base, or log-start-offset-checkpoint's entry within the log (DeleteRecords)
        self.log_start = log.log_start_offset
        self.leader_epoch = log.leader_epoch    # the newest epoch the batches carry: the one appends get
        #: the leader-epoch cache: leader-epoch-checkpoint, else the batches' epochs; as Kafka's
        #: LogLoader truncates it, nothing from the log end on nor before a checkpointed log start
        self.epochs: LeaderEpochCache = log.leader_epochs()
        self.epochs.truncate_from_end(self.next_offset)
        if self.segments and self.log_start > self.segments[0]:
            self.epochs.truncate_from_start(self.log_start)

    def seg_path(self, base: int, suffix: str) -> str:
        return os.path.join(self.path, file_name(base, suffix))

    def _remember(self, b, base_offset: int) -> None:
        if b.producer_id >= 0 and not b.is_control and b.base_sequence >= 0:
            q = self.recent.setdefault(b.producer_id, deque(maxlen=5))
            q.append((b.producer_epoch, b.base_sequence, b.last_sequence, base_offset))

    @property
    def log_end(self) -> int:
        return self.next_offset

    @property
    def last_stable(self) -> int:
        f = self.state.first_unstable_offset()
        return self.next_offset if f is None else f

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
            if b.base_sequence != (e.last_sequence + 1) & INT32_MAX:
                return OUT_OF_ORDER_SEQUENCE, None
        elif b.base_sequence not in (0, -1) and (e is None or b.producer_epoch > e.epoch):
            return OUT_OF_ORDER_SEQUENCE, None
        return NONE, None

    # -- appending --------------------------------------------------------------------------------
    def create_active(self) -> None:
        """The active segment's (empty) .log file, as a leader has it from the partition's creation."""
        if self.active not in self.segments:
            self.segments.append(self.active)
        open(self.seg_path(self.active, LOG), "ab").close()
        self._written = True

    def append(self, data: bytes) -> tuple[int, int]:
        """Append every batch of a produce request's records: (error, base offset of the first)."""
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
            off = self._write(bytearray(b.data))
            first = off if first is None else first
        self._flush_indexes()
        return NONE, first

    def append_records(self, records: list, timestamp: int, **batch) -> tuple[int, int]:
        """One v2 batch of ``(key, value)`` pairs at the log end (``batch``: build_v2's producer fields)."""
        recs = [Record(self.next_offset + i, timestamp, k, v, []) for i, (k, v) in enumerate(records)]
        return self.append(build_v2(recs, base_offset=self.next_offset, **batch))

    def _write(self, raw: bytearray) -> int:
        """One batch at the log end, in the partition's current leader epoch."""
        base = self.next_offset
        struct.pack_into(">q", raw, 0, base)  # baseOffset and partitionLeaderEpoch lie outside the CRC
        struct.pack_into(">i", raw, R.PARTITION_LEADER_EPOCH_OFFSET, self.leader_epoch)
        b = next(iter(BatchScanner(bytes(raw))))
        if self.idx.valid_bytes and (self.idx.valid_bytes > self.segment_bytes - b.size
                                     or b.last_offset - self.active > INT32_MAX):
            self._roll(base)
        if self.active not in self.segments:
            self.segments.append(self.active)
        b.position = self.idx.valid_bytes
        _step("append")  # the fault-injection point of an append (KFX_CRASH_AT)
        with open(self.seg_path(self.active, LOG), "ab") as f:
            f.write(raw)
        self.idx.add(b, self.state.append(b))
        self._written = True
        self._remember(b, base)
        self.next_offset = b.next_offset
        return base

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int = 0,
                      timestamp: int = 0) -> int:
        rec = Record(self.next_offset, timestamp, control_record_key(1 if commit else 0),
                     end_txn_marker_value(coordinator_epoch), [])
        raw = build_v2([rec], base_offset=self.next_offset, transactional=True, control=True,
                       producer_id=producer_id, producer_epoch=producer_epoch)
        off = self._write(bytearray(raw))
        self._flush_indexes()
        return off

    @property
    def written(self) -> bool:
        """Whether this broker appended to the partition (or created it) since it was loaded."""
        return self._written

    def _flush_indexes(self) -> None:
        base, idx = self.active, self.idx
        atomic_write(self.seg_path(base, INDEX), offset_index.to_bytes(idx.offsets, base))
        atomic_write(self.seg_path(base, TIMEINDEX), time_index.to_bytes(idx.times, base))
        if idx.aborted:
            atomic_write(self.seg_path(base, TXNINDEX), txn_index.to_bytes(idx.aborted))

    def close(self) -> None:
        """Kafka's clean close of a log this broker wrote (UnifiedLog.close): the active segment's
        final time-index entry (its largest timestamp), a producer snapshot at the log end and the
        leader-epoch checkpoint."""
        self.idx.close()
        self._flush_indexes()
        atomic_write(self.seg_path(self.next_offset, SNAPSHOT), self.state.to_snapshot())
        self.epochs.write(self.path)

    def _roll(self, new_base: int) -> None:
        self.idx.close()
        self._flush_indexes()
        atomic_write(self.seg_path(new_base, SNAPSHOT), self.state.to_snapshot())
        self.active, self.idx = new_base, SegmentIndexes(new_base, self.interval)
        self.create_active()
