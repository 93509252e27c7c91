"""Build a segment's .index, .timeindex and .txnindex from its batches, by LogSegment.recover's rule.

Walking batches with ``valid_bytes`` = the batch's start: when ``valid_bytes - last_entry_pos >
index_interval_bytes``, append (batch.last_offset, valid_bytes) to the offset index and the running
(max timestamp, its batch's last offset) to the time index.  The time index only takes a timestamp
larger than its last entry's, and gets the final maximum appended when the segment is closed.
Writing batch by batch (the append path with one batch per append) gives the same entries.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .producer_state import ProducerState
from .txn_index import AbortedTxn

DEFAULT_INDEX_INTERVAL_BYTES = 4096


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

    def add(self, batch, completed=None) -> None:
        """Account one batch that starts at ``self.valid_bytes``."""
        if batch.max_timestamp > self._max_ts:
            self._max_ts, self._max_ts_offset = batch.max_timestamp, batch.last_offset
        if self.valid_bytes - self._last_entry > self.interval:
            if not self.offsets or batch.last_offset > self.offsets[-1][0]:
                self.offsets.append((batch.last_offset, self.valid_bytes))
            self._time_append()
            self._last_entry = self.valid_bytes
        self.valid_bytes += batch.size
        if completed is not None and completed.aborted:
            self.aborted.append(completed.aborted_entry())

    def _time_append(self) -> None:
        last = self.times[-1][0] if self.times else -1
        if self._max_ts > last:
            self.times.append((self._max_ts, self._max_ts_offset))

    def close(self) -> "SegmentIndexes":
        """What a roll / clean close does: append the final max-timestamp entry."""
        self._time_append()
        return self


def index_segment(batches, base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  state: ProducerState | None = None) -> SegmentIndexes:
    """Indexes for one segment's batches; ``state`` carries producer state across segments."""
    state = ProducerState() if state is None else state
    idx = SegmentIndexes(base_offset, interval)
    for b in batches:
        idx.add(b, state.append(b))
    return idx.close()
