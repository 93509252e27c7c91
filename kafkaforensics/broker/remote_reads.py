"""``kfx serve --remote``: the replay broker serving each partition from its remote log start, as a
tiered broker's UnifiedLog does (KIP-405; what KIP-1255 proposes a broker for): a Fetch below the
local log start reads the remote segment that holds the offset (RemoteLogManager.read: whole batches
of that one segment, from the batch holding the offset, up to the fetch's bytes -- at least one
batch for the first partition of a response, KIP-74) through ``Segment.read``, its bytes read
through the segment's byte source (only the chunks holding them, decompressed and decrypted: an
object is no file, so these bytes are returned, not sendfile'd); ListOffsets EARLIEST and every Fetch's LogStartOffset give the remote log
start (the first remote segment's base offset), EARLIEST_LOCAL (-4) the local one.
"""
from __future__ import annotations

import bisect
import logging

from specs.messages import FetchResponse

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import RemoteTier

_log = logging.getLogger("kfx.serve")

class RemotePartition:
    """One partition's remote segments (sorted by base offset) as the broker reads them."""

    def __init__(self, topic: str, partition: int, segments: list):
        self.topic, self.partition = topic, partition
        self.remote = sorted(segments, key=lambda rs: rs.base_offset)
        self._bases = [rs.base_offset for rs in self.remote]
        self._opened: dict = {}

    @property
    def log_start_offset(self) -> int:
        """The remote log start: the first remote segment's base offset."""
        return self._bases[0]

    def _segment(self, i: int):
        """The :class:`~kafkaforensics.log.segment.Segment` of the ``i``-th remote segment (opened once)."""
        if i not in self._opened:
            self._opened[i] = self.remote[i].segment()
        return self._opened[i]

    def read(self, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[bytes, int]:
        """Whole batches of the remote segment holding ``offset`` from the one that holds it, at most
        ``max_bytes`` (one at least when ``first``), none at or past ``limit``: (their bytes, the
        offset after them); (b"", ``offset``) when the tier holds nothing at or after it."""
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for j in range(i, len(self.remote)):
            if self._bases[j] >= limit:
                break
            got = self._read_segment(self._segment(j), offset, max_bytes, limit, first)
            if got is not None:
                return got
        return b"", offset

    def _read_segment(self, seg, offset: int, max_bytes: int, limit: int, first: bool):
        """:meth:`read` within one remote segment (None: it holds no batch at or after ``offset``):
        LogSegment.read over the tier (:meth:`Segment.read <kafkaforensics.log.segment.Segment.read>`:
        the offset index's entry, then a walk through the chunks to the batch holding ``offset``), the
        region cut to its whole batches below ``limit`` (a header walk of it) and its bytes read."""
        info = seg.read(offset, max_bytes, min_one_message=first)
        if info is None:
            return None
        region, found = info.records, None
        with seg.walk(region.position, region.end) as walk:  # headers only, through the region's chunks
            for b in walk:
                if b.base_offset >= limit:
                    break
                found = (b.position + b.size, b.next_offset)
        if found is None:
            return b"", offset
        return seg.read_at(region.position, found[0] - region.position), found[1]

    def aborted(self, first: int, upper: int) -> list[FetchResponse.AbortedTransaction]:
        """The aborted transactions of the remote segments' transaction indexes that overlap
        [first, upper) (as :meth:`~.read_path.ReadPath.aborted` collects the local ones)."""
        out: list[FetchResponse.AbortedTransaction] = []
        i = max(0, bisect.bisect_right(self._bases, first) - 1)
        for j in range(i, len(self.remote)):
            if self._bases[j] >= upper:
                break
            seg = self._segment(j)
            try:
                aborted = seg.aborted_txns()
            except KafkaFormatError as e:
                _log.warning("%s-%d: remote segment %d: %s: its aborted transactions are not known",
                             self.topic, self.partition, seg.base_offset, e)
                aborted = []
            for t in aborted:
                if t.last_offset >= first and t.first_offset < upper:
                    out.append(FetchResponse.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset))
                if t.last_stable_offset >= upper:
                    return out
        return out


def attach(broker, tier: RemoteTier) -> list[str]:
    """Each partition the ``broker`` serves that the remote ``tier`` holds attached
    (``broker.remote``); one line a partition, for the start-up log."""
    lines = []
    for topic, partition in sorted(tier.partitions()):
        s = broker.partitions.get((topic, partition))
        segs = list(tier.segments(topic, partition))
        if s is None or not segs:
            continue
        rp = RemotePartition(topic, partition, segs)
        broker.remote[(topic, partition)] = rp
        lines.append(f"{topic}-{partition}: {len(segs)} remote segments from offset {rp.log_start_offset} "
                     f"(local log start {s.log_start_offset})")
    return lines
