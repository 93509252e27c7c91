"""A partition being written to (``kfx serve --writable``): appends as a broker's leader does them.

Offsets are assigned by rewriting each batch's baseOffset and partitionLeaderEpoch (neither is
covered by the CRC); idempotent producers are checked as ProducerStateManager checks them (a
retried batch that matches one of a producer's last five is acknowledged with its original offset,
a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH); transaction
markers are appended as control batches and aborted transactions go to the segment's .txnindex.
The active segment's indexes follow the same rule as everywhere else (:mod:`indexing`) and are
rewritten after each append; segments roll at ``segment_bytes``, with a producer snapshot.
"""
from __future__ import annotations

import os
import struct
from collections import deque

from specs import record_batch as R

from . import offset_index, time_index, txn_index
from .batch import Record
from .builder import build_v2, control_record_key, end_txn_marker_value
from .fsutil import _step, atomic_write
from .defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from .indexing import SegmentIndexes
from .partition import PartitionDir
from .producer_state import ProducerState
from .segment import BatchScanner, file_name, open_buffer

from specs.kafka_errors import (CORRUPT_MESSAGE, INVALID_PRODUCER_EPOCH, NONE, OUT_OF_ORDER_SEQUENCE,
                                UNSUPPORTED_FOR_MESSAGE_FORMAT)
_INT32_MAX = 2**31 - 1


class LiveLog:
    def __init__(self, path: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES, index_interval: int = DEFAULT_INDEX_INTERVAL_BYTES):
        self.path = path
        self.segment_bytes = segment_bytes
        self.interval = index_interval
        self.state = ProducerState()
        self.recent: dict[int, deque] = {}       # pid -> last 5 (epoch, first seq, last seq, base offset)
        pd = PartitionDir.scan(path)
        self.next_offset = 0
        self.active = None
        self.idx = None
        for seg in pd.segments:
            idx = SegmentIndexes(seg.base_offset, index_interval)
            with open_buffer(seg.log) as buf:
                for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                    if not b.crc_valid():
                        break
                    idx.add(b, self.state.append(b))
                    self._remember(b, b.base_offset)
                    self.next_offset = b.last_offset + 1
            self.active, self.idx = seg.base_offset, idx
            self.next_offset = max(self.next_offset, seg.base_offset)
        if self.active is None:
            self.active, self.idx = 0, SegmentIndexes(0, index_interval)
            open(self._file(0, ".log"), "ab").close()

    def _file(self, base: int, suffix: str) -> str:
        return os.path.join(self.path, file_name(base, suffix))

    def _remember(self, b, base_offset: int) -> None:
        if b.producer_id >= 0 and not b.is_control and b.base_sequence >= 0:
            q = self.recent.setdefault(b.producer_id, deque(maxlen=5))
            q.append((b.producer_epoch, b.base_sequence, b.last_sequence, base_offset))

    @property
    def last_stable_offset(self) -> int:
        f = self.state.first_unstable_offset()
        return self.next_offset if f is None else f

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
            if b.base_sequence != (e.last_sequence + 1) & _INT32_MAX:
                return OUT_OF_ORDER_SEQUENCE, None
        elif b.base_sequence not in (0, -1) and (e is None or b.producer_epoch > e.epoch):
            return OUT_OF_ORDER_SEQUENCE, None
        return NONE, None

    # -- appending --------------------------------------------------------------------------------
    def append(self, data: bytes, leader_epoch: int) -> tuple[int, int]:
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
            off = self._write(bytearray(b.data), leader_epoch)
            first = off if first is None else first
        self._flush_indexes()
        return NONE, first

    def _write(self, raw: bytearray, leader_epoch: int) -> int:
        base = self.next_offset
        struct.pack_into(">q", raw, 0, base)  # baseOffset and partitionLeaderEpoch lie outside the CRC
        struct.pack_into(">i", raw, R.PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        b = next(iter(BatchScanner(bytes(raw))))
        if self.idx.valid_bytes and (self.idx.valid_bytes > self.segment_bytes - b.size
                                     or b.last_offset - self.active > _INT32_MAX):
            self._roll(base)
        b.position = self.idx.valid_bytes
        _step("append")  # the fault-injection point of an append (KFX_CRASH_AT)
        with open(self._file(self.active, ".log"), "ab") as f:
            f.write(raw)
        self.idx.add(b, self.state.append(b))
        self._remember(b, base)
        self.next_offset = b.last_offset + 1
        return base

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, leader_epoch: int,
                      coordinator_epoch: int = 0, timestamp: int = 0) -> int:
        rec = Record(self.next_offset, timestamp, control_record_key(1 if commit else 0),
                     end_txn_marker_value(coordinator_epoch), [])
        raw = build_v2([rec], base_offset=self.next_offset, transactional=True, control=True,
                       producer_id=producer_id, producer_epoch=producer_epoch)
        off = self._write(bytearray(raw), leader_epoch)
        self._flush_indexes()
        return off

    def _flush_indexes(self) -> None:
        base, idx = self.active, self.idx
        atomic_write(self._file(base, ".index"), offset_index.to_bytes(idx.offsets, base))
        atomic_write(self._file(base, ".timeindex"), time_index.to_bytes(idx.times, base))
        if idx.aborted:
            atomic_write(self._file(base, ".txnindex"), txn_index.to_bytes(idx.aborted))

    def _roll(self, new_base: int) -> None:
        self.idx.close()
        self._flush_indexes()
        atomic_write(self._file(new_base, ".snapshot"), self.state.to_snapshot())
        self.active, self.idx = new_base, SegmentIndexes(new_base, self.interval)
        open(self._file(new_base, ".log"), "ab").close()
