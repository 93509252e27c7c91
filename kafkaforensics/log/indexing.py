"""Build a segment's .index, .timeindex and .txnindex from its batches, by LogSegment.recover's rule.

Walking batches with ``valid_bytes`` = the batch's start: when ``valid_bytes - last_entry_pos >
index_interval_bytes``, append (batch.last_offset, valid_bytes) to the offset index and the running
(max timestamp, its batch's last offset) to the time index.  The time index only takes a timestamp
larger than its last entry's, and gets the final maximum appended when the segment is closed.
Writing batch by batch (the append path with one batch per append) gives the same entries.

:meth:`SegmentIndexes.add_run` applies the same rule to a run of batch headers at once, and
:class:`RecoveryWalk` is the walk ``kfx recover`` and ``kfx reindex`` share: batches (as header
runs where it can) into producer state and indexes, up to the first batch that must not be kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specs import record_batch as R

from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.records.header_run import HeaderRun
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import BatchScanner, open_buffer
from kafkaforensics.records.batch import resolve_legacy_wrapper


@dataclass
class SegmentIndexes:
    base_offset: int
    interval: int = DEFAULT_INDEX_INTERVAL_BYTES
    offsets: list = field(default_factory=list)      # (offset, position)
    times: list = field(default_factory=list)        # (timestamp, offset)
    aborted: list = field(default_factory=list)      # AbortedTxn
    valid_bytes: int = 0
    _last_entry: int = 0
    _max_ts: int = -1
    _max_ts_offset: int = -1
    #: what an offset-index entry holds: the batch's "last" offset (Kafka 2.0+) or its "base" offset
    #: (up to 1.1, KAFKA-6264; :mod:`.kafka_rules`)
    entry: str = "last"

    def add(self, batch, completed=None) -> None:
        """Account one batch that starts at ``self.valid_bytes``."""
        if batch.max_timestamp > self._max_ts:
            self._max_ts, self._max_ts_offset = batch.max_timestamp, batch.last_offset
        if self.valid_bytes - self._last_entry > self.interval:
            off = batch.last_offset if self.entry == "last" else _base_offset(batch)
            if not self.offsets or off > self.offsets[-1][0]:
                self.offsets.append((off, self.valid_bytes))
            self._time_append()
            self._last_entry = self.valid_bytes
        self.valid_bytes += batch.size
        if completed is not None and completed.aborted:
            self.aborted.append(completed.aborted_entry())

    def add_run(self, run: HeaderRun, lo: int, hi: int) -> None:
        """:meth:`add` for batches ``lo:hi`` of ``run`` (none completing a transaction), in turn,
        computed on the run's header columns."""
        n = hi - lo
        if n <= 0:
            return
        size, last = run.size[lo:hi], run.last_offset[lo:hi]
        ts = run.header["maxTimestamp"][lo:hi].astype(np.int64)
        starts = self.valid_bytes + np.concatenate(([0], np.cumsum(size[:-1])))
        # the running max timestamp after each batch, and the last offset of the batch that raised it
        # (only a strictly larger timestamp moves it)
        running = np.maximum.accumulate(np.concatenate(([self._max_ts], ts)))
        max_ts = running[1:]
        raiser = np.maximum.accumulate(np.where(ts > running[:-1], np.arange(n), -1))
        max_ts_offset = np.where(raiser >= 0, last[np.maximum(raiser, 0)], self._max_ts_offset)
        entries = self._entries(starts, size)
        if len(entries):
            # offset entries: only past the last one; its offset is the largest so far
            e_last = (last if self.entry == "last" else run.base_offset[lo:hi])[entries]
            before = np.empty_like(e_last)  # the largest offset entry before each
            before[1:] = np.maximum.accumulate(e_last)[:-1]
            if self.offsets:
                before[0] = self.offsets[-1][0]
                before[1:] = np.maximum(before[1:], before[0])
            keep = e_last > before
            keep[0] |= not self.offsets
            self.offsets += zip(e_last[keep].tolist(), starts[entries][keep].tolist())
            # time entries: each entry appends the running max when it is past the last appended,
            # which is the running max at the entry before (it never decreases)
            e_ts = max_ts[entries]
            prev_ts = np.empty_like(e_ts)
            prev_ts[1:] = e_ts[:-1]
            prev_ts[0] = self.times[-1][0] if self.times else -1
            grew = e_ts > prev_ts
            self.times += zip(e_ts[grew].tolist(), max_ts_offset[entries][grew].tolist())
            self._last_entry = int(starts[entries[-1]])
        self._max_ts, self._max_ts_offset = int(max_ts[-1]), int(max_ts_offset[-1])
        self.valid_bytes = int(starts[-1] + size[-1])

    def _entries(self, starts: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Which of the batches starting at ``starts`` get an index entry: the first that starts
        more than ``interval`` bytes past the last entry, and so on; after a batch larger than
        the interval the next batch always does, so runs of those are taken at once."""
        interval, n = self.interval, len(starts)
        small = np.flatnonzero(size <= interval)
        out = []
        j = int(np.searchsorted(starts, self._last_entry + interval, side="right"))
        while j < n:
            k = int(np.searchsorted(small, j))
            if k == len(small):
                out.append(np.arange(j, n))
                break
            m = int(small[k])
            out.append(np.arange(j, m + 1))
            j = int(np.searchsorted(starts, starts[m] + interval, side="right"))
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def _time_append(self) -> None:
        last = self.times[-1][0] if self.times else -1
        if self._max_ts > last:
            self.times.append((self._max_ts, self._max_ts_offset))

    def close(self) -> "SegmentIndexes":
        """What a roll / clean close does: append the final max-timestamp entry."""
        self._time_append()
        return self


def _base_offset(batch) -> int:
    """A batch's base offset; a compressed magic 0/1 wrapper's is its first inner record's."""
    if batch.magic < 2 and batch.count is None:
        resolve_legacy_wrapper(batch)
    return batch.base_offset


def index_segment(batches, base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  state: ProducerState | None = None) -> SegmentIndexes:
    """Indexes for one segment's batches; ``state`` carries producer state across segments."""
    state = ProducerState() if state is None else state
    idx = SegmentIndexes(base_offset, interval)
    for b in batches:
        idx.add(b, state.append(b))
    return idx.close()


class RecoveryWalk:
    """One segment's batches, in log order, into ``state`` and fresh :class:`SegmentIndexes`,
    stopping at the first batch that cannot be kept: a CRC mismatch, the walk's own stops
    (framing, ``max_batch_bytes``), and with ``strict`` (recovery) offsets that do not advance and
    an unreadable control batch.  ``epochs`` (a :class:`~.leader_epochs.LeaderEpochCache`) is
    extended by each batch's partition leader epoch (LogSegment.recover's rule).

    After :meth:`walk`: ``indexes`` (closed), ``next_offset`` (after the last kept batch, or None),
    ``size`` of the file, ``valid_bytes`` (where the kept prefix ends), and ``stop`` -- None, or the
    located :class:`Problem` of the batch or bytes where the kept prefix ends, ``detail`` the reason
    in words (:attr:`reason`).
    """

    def __init__(self, path: str, base: int, state: ProducerState, *, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 strict: bool = True, epochs=None, max_batch_bytes: int | None = None, entry: str = "last"):
        self.path, self.base, self.state, self.strict, self.epochs = path, base, state, strict, epochs
        self.max_batch_bytes = max_batch_bytes
        self.indexes = SegmentIndexes(base, interval, entry=entry)
        self.prev_last: int | None = None  # the last offset of the last kept batch
        self.size = 0
        self.stop: Problem | None = None
        #: the offset after the last kept v2 batch (None: none): where Kafka's producer state map ends
        self.v2_next_offset: int | None = None

    @property
    def next_offset(self) -> int | None:
        return None if self.prev_last is None else self.prev_last + 1

    def walk(self) -> "RecoveryWalk":
        with open_buffer(self.path) as buf, open(self.path, "rb", buffering=0) as f:
            self.size = len(buf)
            sc = BatchScanner(buf, file=self.path, base_offset=self.base, max_batch_bytes=self.max_batch_bytes)
            for item in sc.iter_runs(f.fileno()):
                if (self.run(item) if isinstance(item, HeaderRun) else self.batch(item)) is not None:
                    break
            else:
                if sc.stop is not None:
                    p = sc.stop
                    self._stop(p.position, p.offset, p.kind, f"{p.kind}: {p.detail}")
        self.indexes.close()
        return self

    def batch(self, b) -> Problem | None:
        """Keep one batch, or set and return ``stop``."""
        if not b.crc_valid():
            return self._stop(b.position, b.base_offset, "crc-mismatch",
                              f"CRC mismatch in the batch at byte {b.position} (offset {b.base_offset})")
        if self.strict and self.prev_last is not None and b.base_offset <= self.prev_last:
            return self._stop(b.position, b.base_offset, "offset-order",
                              f"offset {b.base_offset} at byte {b.position} does not advance past {self.prev_last}")
        try:
            completed = self.state.append(b)
        except KafkaFormatError as e:  # an unreadable control record
            if not self.strict:
                raise
            return self._stop(b.position, b.base_offset, "bad-record",
                              f"unreadable batch at byte {b.position}: {e.problem.detail}")
        self.indexes.add(b, completed)
        if b.magic >= 2 and self.epochs is not None:
            self.epochs.assign_newer(b.partition_leader_epoch, b.base_offset)
        self.prev_last = b.last_offset
        if b.magic >= 2:
            self.v2_next_offset = b.next_offset
        return None

    def run(self, r: HeaderRun) -> Problem | None:
        """Keep the batches of a run up to the first that cannot be kept (which sets ``stop``);
        control batches go through :meth:`batch`, the rest are applied on the header columns."""
        n, base = len(r), r.base_offset
        bad = ~r.crc_ok
        if self.strict:
            bad[1:] |= base[1:] <= r.last_offset[:-1]
            if self.prev_last is not None:
                bad[0] |= base[0] <= self.prev_last
        hit = np.flatnonzero(bad)
        k = int(hit[0]) if len(hit) else n
        lo = 0
        for c in np.flatnonzero(r.header["attributes"][:k] & R.CONTROL_MASK).tolist():
            self._plain(r, lo, c)
            if self.batch(r.batch(c)) is not None:
                return self.stop
            lo = c + 1
        self._plain(r, lo, k)
        for i in range(k, n):  # batch k fails one of batch()'s checks, which words why
            if self.batch(r.batch(i)) is not None:
                return self.stop
        return None

    def _plain(self, r: HeaderRun, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        self.state.append_run(r, lo, hi)
        self.indexes.add_run(r, lo, hi)
        if self.epochs is not None:  # only where the epoch changes can the cache change
            ep = r.header["partitionLeaderEpoch"][lo:hi]
            for i in np.concatenate(([0], np.flatnonzero(ep[1:] != ep[:-1]) + 1)).tolist():
                self.epochs.assign_newer(int(ep[i]), int(r.base_offset[lo + i]))
        self.prev_last = int(r.last_offset[hi - 1])
        self.v2_next_offset = self.prev_last + 1

    def _stop(self, position: int | None, offset: int | None, kind: str, reason: str) -> Problem:
        self.stop = Problem(self.path, position, offset, kind, reason)
        return self.stop

    @property
    def valid_bytes(self) -> int:
        """Where the kept prefix ends (the byte after the last kept batch)."""
        return self.indexes.valid_bytes

    @property
    def reason(self) -> str:
        """Why the kept prefix ends before the file does, in words."""
        return self.stop.detail if self.stop is not None else "invalid bytes"
