"""Runs of v2 batch headers as numpy columns: the header-only walk behind ``kfx verify``.

Walking a segment is sequential (each batch's length says where the next one starts), so the walk
loop does per batch only that; every header field of a whole run of batches is
then gathered at once into a structured array whose layout is derived from
``specs.record_batch.BatchHeader``.  :meth:`.segment.BatchScanner.iter_runs` hands these runs
out; what the run walk declines (legacy entries, anything the scanner would stop at or look at
twice) is left to the scanner's batch-by-batch step.

In a writable copy of the file (:func:`walk_window`) the CRCs of a whole window of batches are
checked by one CRC-32C call instead of one a batch.  CRC-32C is affine over GF(2): with the
all-ones initial value absorbed into each batch's first four covered bytes (complemented) and the
complement of each batch's stored CRC written little-endian right after the batch, a batch
contributes zero to the CRC of the window (initial register 0) exactly when its stored CRC
matches; the 21 header bytes the CRC does not cover are zeroed, which contributes nothing.  A
window whose CRC is not zero is checked again batch by batch, so a bad CRC is always located
exactly.  A window with one bad batch (any number of bad bytes in it) never passes: its
contribution is that batch's CRC error times a power of x, never zero modulo the CRC polynomial.
Two or more bad batches pass only if their errors cancel, a 1 in 2**32 coincidence for damage
that is not built for it -- the odds with which one damaged batch passes its own CRC-32C.
``tests/test_verify.py`` proves the aggregate equal to the per-batch check.
"""
from __future__ import annotations

import struct

import numpy as np
from crc32c import crc32c

from specs import record_batch as R
from specs.primitives import numpy_dtype

from .batch import Batch, parse_v2_header

#: the 61-byte v2 header as a numpy record, field for field from the spec's struct
HEADER_DTYPE = numpy_dtype(R.HEADER_STRUCT, R.HEADER_FIELDS)
assert HEADER_DTYPE.itemsize == R.HEADER_SIZE
#: batchLength and magic (the bytes between skipped): what the window walk reads of each batch
_CODE = dict(zip(R.HEADER_FIELDS, R.HEADER_STRUCT.format[1:]))
_LENGTH_TO_MAGIC = struct.Struct(">%s%dx%s" % (
    _CODE["batchLength"], R.MAGIC_OFFSET - R.BATCH_LENGTH_OFFSET - struct.calcsize(">" + _CODE["batchLength"]),
    _CODE["magic"]))
#: the columns of one header in the window's byte array
_HEADER_COLUMNS = np.arange(R.HEADER_SIZE)
#: crc32c's ``value`` that starts the register at 0 (it complements the value it is given), and
#: what it then returns for a window whose every batch contributes zero
_REGISTER_ZERO = 0xFFFFFFFF
_INT32_MAX = 2**31 - 1
_SAFE_OFFSET = 2**62  # base + lastOffsetDelta cannot overflow int64 below this


def walk_window(copy, n: int, size_limit: int, max_bytes: int):
    """Step over the v2 batches at the start of ``copy`` (the first ``n`` bytes: a writable
    window, bytearray-backed memoryview at least ``n + 4`` long, that this call may change) while
    each is whole, at least a header long and at most ``size_limit`` (batchLength); stop after
    ``max_bytes``.  Every CRC of the window is checked at once (see the module docstring).

    Returns ``(stop, declined, positions, headers, crcs_ok)``: where the walk stopped and whether
    at a batch it declined, the batches' positions in the window (int64 array, None when there are
    none), their 61 header bytes (uint8 rows, read before the window was changed), and whether
    every batch's CRC matches.  When it is False the window's bytes are changed: read it again to
    check batch by batch (:func:`crcs_ok`)."""
    positions = []
    append, unpack = positions.append, _LENGTH_TO_MAGIC.unpack_from
    overhead, length_at, min_size = R.LOG_OVERHEAD, R.BATCH_LENGTH_OFFSET, R.HEADER_SIZE - R.LOG_OVERHEAD
    pos, declined = 0, False
    bound = min(max_bytes, n - R.HEADER_SIZE + 1)
    while pos < bound:
        size, magic = unpack(copy, pos + length_at)
        if magic != 2 or not min_size <= size <= size_limit:
            declined = True
            break
        nxt = pos + overhead + size
        if nxt > n:
            break
        append(pos)
        pos = nxt
    if not positions:
        return pos, declined, None, None, True
    at = np.array(positions, dtype=np.int64)
    window = np.frombuffer(copy.obj if isinstance(copy, memoryview) else copy, dtype=np.uint8)
    where = at[:, None] + _HEADER_COLUMNS
    headers = window[where]
    # after batch k: ~crc_k little-endian (the stored CRC is big-endian: its bytes reversed)
    trailer = 255 - headers[:, R.CRC_OFFSET:R.CRC_OFFSET + 4][:, ::-1]
    covered = R.ATTRIBUTES_OFFSET
    lead = np.zeros((len(at), covered + 4), dtype=np.uint8)
    lead[1:, :4] = trailer[:-1]                     # batch k-1's trailer overwrites batch k's first bytes
    lead[:, covered:] = headers[:, covered:covered + 4] ^ 0xFF  # the initial all-ones register
    window[where[:, :covered + 4]] = lead
    window[pos:pos + 4] = trailer[-1]
    return pos, declined, at, headers, crc32c(copy[:pos + 4], _REGISTER_ZERO) == _REGISTER_ZERO


def crcs_ok(buf, positions, headers) -> np.ndarray:
    """Each batch's CRC checked on its own: ``positions`` in ``buf`` and their header rows."""
    h = headers.view(HEADER_DTYPE).ravel()
    ends = positions + R.LOG_OVERHEAD + h["batchLength"]
    return np.array([crc32c(buf[a + R.ATTRIBUTES_OFFSET:e]) == c
                     for a, e, c in zip(positions.tolist(), ends.tolist(), h["crc"].tolist())], dtype=bool)


class HeaderRun:
    """Consecutive v2 batches of one file: ``position`` (in the file) and ``crc_ok`` per batch,
    ``header`` the structured array of their header fields (spec names: ``header["baseOffset"]``
    ...), and ``buf`` the file's buffer, which :meth:`batch` reads."""

    __slots__ = ("buf", "file", "position", "crc_ok", "header", "base_offset", "last_offset", "size")

    def __init__(self, buf, position: np.ndarray, crc_ok: np.ndarray, headers: np.ndarray, file=None):
        """``headers``: the batches' 61 header bytes, one uint8 row each."""
        self.buf, self.file = buf, file
        self.position, self.crc_ok = position, crc_ok
        self.header = np.ascontiguousarray(headers).view(HEADER_DTYPE).ravel()
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
