"""``kfx serve --remote``: the replay broker serving each partition from its remote log start, as a
tiered broker's UnifiedLog does (KIP-405; what KIP-1255 proposes a broker for): a Fetch below the
local log start reads the remote segment that holds the offset (RemoteLogManager.read: whole batches
of that one segment, from the batch holding the offset, up to the fetch's bytes -- at least one
batch for the first partition of a response, KIP-74), its bytes read through the segment's byte
source (chunk by chunk, decompressed and decrypted: an object is no file, so these bytes are
returned, not sendfile'd); ListOffsets EARLIEST and every Fetch's LogStartOffset give the remote log
start (the first remote segment's base offset), EARLIEST_LOCAL (-4) the local one.
"""
from __future__ import annotations

import bisect
import logging

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log import offset_index
from kafkaforensics.log.remote import RemoteTier

_log = logging.getLogger("kfx.serve")

#: the bytes read from a remote segment at least, for a fetch (its batches are cut to whole ones)
MIN_READ_BYTES = 64 << 10


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

    def _start_position(self, seg, offset: int) -> int:
        """The byte to walk from for ``offset``: the remote offset index's entry at or below it (0
        when it has none or cannot be read)."""
        try:
            entries = seg.offset_index()
        except KafkaFormatError as e:
            _log.warning("%s-%d: remote segment %d: %s: read from its start", self.topic, self.partition,
                         seg.base_offset, e)
            return 0
        return offset_index.lookup(entries, offset, seg.base_offset)[1]

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
        """:meth:`read` within one remote segment (None: it holds no batch at or after ``offset``)."""
        start = self._start_position(seg, offset)
        window = max(max_bytes, MIN_READ_BYTES)
        while True:
            out, nxt, cut = bytearray(), offset, None
            with seg.bytes_range(start, start + window) as sb:
                walk = sb.walk()
                for b in walk:
                    if b.last_offset < offset:
                        continue
                    if b.base_offset >= limit or (out or not first) and len(out) + b.size > max_bytes:
                        return bytes(out), nxt
                    out += sb.buf[b.position:b.position + b.size]
                    nxt = b.next_offset
                    if len(out) >= max_bytes and not first:
                        return bytes(out), nxt
                cut = walk.stop
                whole = sb.end - sb.start < window  # the window reached the segment's end
            if out:
                return bytes(out), nxt
            if whole or cut is None or window >= 1 << 31:
                return None if whole or cut is None else (b"", offset)
            window *= 4  # the batch holding the offset is larger than the window read

    def aborted(self, first: int, upper: int) -> list[dict]:
        """The aborted transactions of the remote segments' transaction indexes that overlap
        [first, upper) (as :meth:`~.read_path.ReadPath.aborted` collects the local ones)."""
        out = []
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
                    out.append({"ProducerId": t.producer_id, "FirstOffset": t.first_offset})
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
