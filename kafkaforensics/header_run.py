"""Runs of v2 batch headers as numpy columns: the header-only walk behind ``kfx verify``.

Walking a segment is sequential (each batch's length says where the next one starts), so the walk
loop does per batch only that and the CRC check; every header field of a whole run of batches is
then gathered at once into a structured array whose layout is derived from
``specs.record_batch.BatchHeader``.  :meth:`.segment.BatchScanner.iter_runs` hands these runs
out; what the run walk declines (legacy entries, anything the scanner would stop at or look at
twice) is left to the scanner's batch-by-batch step.
"""
from __future__ import annotations

import struct

import numpy as np
from .checksums import crc32c

from specs import record_batch as R
from specs.layout import numpy_dtype

from .batch import Batch, parse_v2_header

#: the 61-byte v2 header as a numpy record, field for field from the spec's struct
HEADER_DTYPE = numpy_dtype(R.HEADER_STRUCT, R.HEADER_FIELDS)
assert HEADER_DTYPE.itemsize == R.HEADER_SIZE
#: baseOffset .. crc: what the walk loop reads of each batch
_UP_TO_CRC = struct.Struct(">" + R.HEADER_STRUCT.format[1:R.HEADER_FIELDS.index("crc") + 2])
_INT32_MAX = 2**31 - 1
_SAFE_OFFSET = 2**62  # base + lastOffsetDelta cannot overflow int64 below this


def walk_run(buf, pos: int, end: int, size_limit: int, max_bytes: int,
             positions: list, bad_crc: list, headers: bytearray, origin: int = 0) -> tuple[int, bool]:
    """Step over v2 batches of ``buf`` from ``pos`` while each is whole, at least a header long and
    at most ``size_limit`` (batchLength); stop after ``max_bytes``.  Appends each batch's position
    plus ``origin`` to ``positions``, its index there to ``bad_crc`` when its CRC-32C does not
    match, and its 61 header bytes to ``headers``.  Returns where the walk stopped and whether it
    stopped at a batch it declined (rather than at the end of ``buf`` or of ``max_bytes``)."""
    append, add_header, unpack, crc_of = positions.append, headers.extend, _UP_TO_CRC.unpack_from, crc32c
    overhead, header_size, crc_from = R.LOG_OVERHEAD, R.HEADER_SIZE, R.ATTRIBUTES_OFFSET
    min_size = header_size - overhead
    bound = min(pos + max_bytes, end - header_size + 1)  # a batch starting before this gets a look
    while pos < bound:
        _offset, size, _epoch, magic, crc = unpack(buf, pos)
        if magic != 2 or not min_size <= size <= size_limit:
            return pos, True
        nxt = pos + overhead + size
        if nxt > end:
            return pos, False
        if crc_of(buf[pos + crc_from:nxt]) != crc:
            bad_crc.append(len(positions))
        append(pos + origin)
        add_header(buf[pos:pos + header_size])
        pos = nxt
    return pos, False


class HeaderRun:
    """Consecutive v2 batches of one file: ``position`` (in the file) and ``crc_ok`` per batch,
    ``header`` the structured array of their header fields (spec names: ``header["baseOffset"]``
    ...), and ``buf`` the file's buffer, which :meth:`batch` reads."""

    __slots__ = ("buf", "file", "position", "crc_ok", "header", "base_offset", "last_offset", "size")

    def __init__(self, buf, positions, bad_crc, headers: bytes, file=None):
        self.buf, self.file = buf, file
        self.position = np.array(positions, dtype=np.int64)
        self.crc_ok = np.ones(len(positions), dtype=bool)
        self.crc_ok[bad_crc] = False
        self.header = np.frombuffer(headers, dtype=HEADER_DTYPE)
        self._derive()

    def _derive(self) -> None:
        h = self.header
        self.base_offset = h["baseOffset"].astype(np.int64)
        self.last_offset = self.base_offset + h["lastOffsetDelta"]
        self.size = h["batchLength"].astype(np.int64) + R.LOG_OVERHEAD

    def __len__(self) -> int:
        return len(self.position)

    def accepted(self, segment_base: int | None) -> int:
        """How many leading batches need nothing the batch-by-batch step would judge: the step
        stops at a negative lastOffsetDelta and at offsets out of the segment's int32 range."""
        base = self.base_offset
        declined = (self.header["lastOffsetDelta"] < 0) | (base >= _SAFE_OFFSET)
        if segment_base is not None:
            rel = self.last_offset - segment_base
            declined |= (rel < 0) | (rel > _INT32_MAX)
        hit = np.flatnonzero(declined)
        return int(hit[0]) if len(hit) else len(self)

    def head(self, k: int) -> "HeaderRun":
        """The first ``k`` batches."""
        out = HeaderRun.__new__(HeaderRun)
        out.buf, out.file = self.buf, self.file
        out.position, out.crc_ok, out.header = self.position[:k], self.crc_ok[:k], self.header[:k]
        out._derive()
        return out

    def batch(self, i: int) -> Batch:
        """The ``i``-th batch as a :class:`Batch` (for the few that need their records)."""
        return parse_v2_header(self.buf, int(self.position[i]), self.file)
