"""Runs of v2 batch headers as numpy columns: the header-only walk behind ``kfx verify``.

Walking a segment is sequential (each batch's length says where the next one starts), so the walk
loop does per batch only that and the CRC check; every header field of a whole run of batches is
then gathered at once into a structured array whose layout is derived from
``specs.schemas.record_batch.BatchHeader``.  :meth:`.segment.BatchScanner.iter_runs` hands these runs
out; what the run walk declines (legacy entries, anything the scanner would stop at or look at
twice) is left to the scanner's batch-by-batch step.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from specs import record_batch as R
from specs.layout import INT32_MAX, numpy_dtype
from specs.lazy import lazy

from kafkaforensics.records.header_list import SAFE_OFFSET, RunOfHeaders

#: numpy, loaded by the first run (segment.py imports this module plainly; a small segment's walk
#: goes batch by batch and never makes a run, so its process never loads numpy)
if TYPE_CHECKING:  # the annotations'
    import numpy as np
else:
    np = lazy("numpy", globals())


@functools.cache
def header_dtype() -> np.dtype:
    """The 61-byte v2 header as a numpy record, field for field from the spec's struct."""
    dtype = numpy_dtype(R.HEADER_STRUCT, R.HEADER_FIELDS)
    assert dtype.itemsize == R.HEADER_SIZE
    return dtype


class HeaderRun(RunOfHeaders):
    """Consecutive v2 batches of one file: ``position`` (in the file) and ``crc_ok`` per batch,
    ``header`` the structured array of their header fields (spec names: ``header["baseOffset"]``
    ...), and ``buf`` the file's buffer, which :meth:`batch` reads."""

    __slots__ = ("crc_ok", "header", "base_offset", "last_offset", "size")
    _SLICED = ("position", "crc_ok", "header")

    def __init__(self, buf, positions, bad_crc, headers: bytes, file=None):
        self.buf, self.file = buf, file
        self.position = np.array(positions, dtype=np.int64)
        self.crc_ok = np.ones(len(positions), dtype=bool)
        self.crc_ok[bad_crc] = False
        self.header = np.frombuffer(headers, dtype=header_dtype())
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
        declined = (self.header["lastOffsetDelta"] < 0) | (base >= SAFE_OFFSET)
        if segment_base is not None:
            rel = self.last_offset - segment_base
            declined |= (rel < 0) | (rel > INT32_MAX)
        hit = np.flatnonzero(declined)
        return int(hit[0]) if len(hit) else len(self)

