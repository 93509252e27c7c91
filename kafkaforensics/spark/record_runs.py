"""Runs of batches the records level decodes at once, and what each record row repeats of its batch.

Two ways in, one way out (:class:`BatchColumns` beside the decoded :class:`~..log.record_columns.RecordColumns`):

- the reference path: :class:`~..log.segment.BatchScanner` walks a segment batch by batch and the run
  is a list of :class:`~..records.batch.Batch` (:meth:`BatchColumns.of_batches`);
- the fast path: :class:`FileRun` walks segments with the header-run loop
  (:func:`~..records.header_list.walk_run`, CRCs checked on the way) -- small ones read into memory
  whole (:meth:`FileRun.add`), mapped ones copied a run's bytes at a time (:meth:`FileRun.take`) --,
  gathers the headers of every batch of the run into one numpy array and decodes the records
  sections of all of them at once: no Python object per batch.

The fast path takes only what the reference path would read the same way: v2 batches, whole, each
accepted as :meth:`~..records.header_run.HeaderRun.accepted` accepts it (a small segment must be
such batches to its last byte), whose records pass the vectorised decoder's checks; where
:meth:`FileRun.add`, :meth:`FileRun.take` or :meth:`FileRun.decode` declines, the caller walks
those bytes batch by batch.
``tests/test_record_runs.py`` proves both paths give the same rows, whatever the damage.
"""
from __future__ import annotations

import dataclasses
import numpy as np

from specs import record_batch as R
from specs.layout import INT32_MAX

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.record_columns import RecordColumns, _Fallback, decode_sections
from kafkaforensics.log.segment import LogSlice
from kafkaforensics.records.compression import decompress
from kafkaforensics.records.header_list import SAFE_OFFSET, walk_run
from kafkaforensics.records.header_run import header_dtype
from kafkaforensics.spark.scan_plan import PlanStep

_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")
_NO_LIMIT = 2**63 - 1


def _declined(h: np.ndarray, base: np.int64 | np.ndarray, has_base: np.bool_ | np.ndarray) -> np.ndarray:
    """Which of the v2 headers ``h`` the batch-by-batch walk stops at (as
    :meth:`~..records.header_run.HeaderRun.accepted`): a negative lastOffsetDelta, a base offset
    near the int64 limit, a last offset outside its segment's int32 range (``base``, where
    ``has_base``)."""
    first = h["baseOffset"].astype(np.int64)
    delta = h["lastOffsetDelta"].astype(np.int64)
    rel = first + delta - base
    return (delta < 0) | (first >= SAFE_OFFSET) | (has_base & ((rel < 0) | (rel > INT32_MAX)))


@dataclasses.dataclass
class BatchColumns:
    """Per batch of a decoded run: where it came from (``file``, an index into ``files``, each a
    (source, uri) pair) and the header fields records rows repeat, as arrays."""

    files: list
    file: np.ndarray
    base_offset: np.ndarray
    position: np.ndarray          # in its file
    producer_id: np.ndarray
    transactional: np.ndarray
    control: np.ndarray
    timestamp_type: np.ndarray    # an index into TIMESTAMP_TYPES
    crc_valid: np.ndarray

    TIMESTAMP_TYPES = _TIMESTAMP_TYPES

    @classmethod
    def of_batches(cls, run: list, crc: list) -> "BatchColumns":
        """The table of a reference-path run: (batch, source, uri, shift) per batch."""
        bl = [x[0] for x in run]
        return cls([(x[1], x[2]) for x in run], np.arange(len(run), dtype=np.int64),
                   np.array([b.base_offset for b in bl], np.int64),
                   np.array([b.position + x[3] for b, x in zip(bl, run)], np.int64),
                   np.array([b.producer_id for b in bl], np.int64),
                   np.array([b.is_transactional for b in bl], bool), np.array([b.is_control for b in bl], bool),
                   np.array([_TIMESTAMP_TYPES.index(b.timestamp_type) for b in bl], np.int64),
                   np.array(crc, bool))


class FileRun:
    """Segments' batches held in memory -- small segments whole, a mapped one's a run's bytes at a
    time -- walked into one run of v2 batch headers (the fast path)."""

    def __init__(self):
        self.files: list[LogSlice] = []  # shift: from a position in the concatenation
        self.steps: list[PlanStep] = []  # the scan plan's step each came from (its ``src`` and ``uri``)
        self.per_file: list = []     # how many batches each holds
        self.positions: list = []    # each batch's position in the segments' concatenation
        self.bad_crc: list = []
        self.headers = bytearray()
        self.origin = 0              # where the next segment starts in the concatenation
        self.bytes = 0

    def __bool__(self) -> bool:
        return bool(self.files)

    def add(self, data: bytes, start: int, end: int, shift: int, piece: PlanStep) -> bool:
        """Take ``data[start:end]`` (file position = buffer position + ``shift``) when it is whole v2
        batches to its end; else leave the run as it was and return False."""
        n0, c0 = len(self.positions), len(self.bad_crc)
        pos, _ = walk_run(data, start, end, _NO_LIMIT, end - start,
                          (self.positions, self.bad_crc, self.headers), self.origin)
        if pos != end:
            del self.positions[n0:], self.bad_crc[c0:], self.headers[n0 * R.HEADER_SIZE:]
            return False
        self._hold(LogSlice(data, shift - self.origin, start, end, piece.uri, piece.base), piece)
        self.per_file.append(len(self.positions) - n0)
        self.origin += len(data)
        self.bytes += end - start
        return True

    def take(self, buf, start: int, end: int, shift: int, piece: PlanStep, max_bytes: int) -> int:
        """Walk a mapped segment's ``buf`` from ``start`` for about ``max_bytes`` (at least one
        batch) and hold a copy of the whole v2 batches the batch-by-batch walk would accept there;
        return where that stops (``start`` when the batch there is for the batch-by-batch walk)."""
        n0, c0 = len(self.positions), len(self.bad_crc)
        pos, _ = walk_run(buf, start, end, _NO_LIMIT, max(1, max_bytes),
                          (self.positions, self.bad_crc, self.headers), self.origin - start)
        n = len(self.positions) - n0
        if n:
            h = np.frombuffer(bytes(self.headers[n0 * R.HEADER_SIZE:]), header_dtype())
            base = 0 if piece.base is None else piece.base
            hit = np.flatnonzero(_declined(h, np.int64(base), np.bool_(piece.base is not None)))
            if len(hit):
                n = int(hit[0])
                pos = self.positions[n0 + n] - self.origin + start
        del self.positions[n0 + n:], self.headers[(n0 + n) * R.HEADER_SIZE:]
        while len(self.bad_crc) > c0 and self.bad_crc[-1] >= n0 + n:
            self.bad_crc.pop()
        if not n:
            return start
        data = bytes(buf[start:pos])
        self._hold(LogSlice(data, shift + start - self.origin, 0, len(data), piece.uri, piece.base), piece)
        self.per_file.append(n)
        self.origin += len(data)
        self.bytes += len(data)
        return pos

    def _hold(self, held: LogSlice, step: PlanStep) -> None:
        """Keep ``held`` (bytes of the scan plan's ``step``) in the run."""
        self.files.append(held)
        self.steps.append(step)

    def segments(self) -> list[tuple[LogSlice, PlanStep]]:
        """The byte ranges taken (``shift`` from a position in their own bytes) with their plan steps,
        for the reference path to walk again."""
        out, at = [], 0
        for f, step in zip(self.files, self.steps):
            out.append((f.shifted(f.shift + at), step))
            at += len(f.buf)
        return out

    def decode(self, include_corrupt: bool) -> tuple[RecordColumns, BatchColumns] | None:
        """The run's records (batches whose CRC fails left out unless ``include_corrupt``) and
        their batches' table; None when anything in it is for the reference path."""
        h = np.frombuffer(bytes(self.headers), header_dtype())
        file = np.repeat(np.arange(len(self.files), dtype=np.int64), self.per_file)
        seg_base = np.array([0 if f.base_offset is None else f.base_offset for f in self.files], np.int64)[file]
        has_base = np.array([f.base_offset is not None for f in self.files], bool)[file]
        if _declined(h, seg_base, has_base).any():
            return None  # the batch-by-batch walk stops there: it says where
        base = h["baseOffset"].astype(np.int64)
        crc = np.ones(len(h), bool)
        crc[self.bad_crc] = False
        keep = np.arange(len(h)) if include_corrupt else np.flatnonzero(crc)
        h, file, base, crc = h[keep], file[keep], base[keep], crc[keep]
        pos = np.asarray(self.positions, np.int64)[keep]
        buf = self.files[0].buf if len(self.files) == 1 else b"".join(f.buf for f in self.files)
        attrs = h["attributes"].astype(np.int64)
        first = pos + R.HEADER_SIZE
        size = h["batchLength"].astype(np.int64) + (R.LOG_OVERHEAD - R.HEADER_SIZE)
        codec = attrs & R.COMPRESSION_MASK
        if codec.any():  # sections laid out again in log order, the compressed ones decompressed
            view, parts, at = memoryview(buf), [], 0
            try:
                for i, (c, f, n) in enumerate(zip(codec.tolist(), first.tolist(), size.tolist())):
                    body = decompress(c, bytes(view[f:f + n]), magic=2) if c else view[f:f + n]
                    parts.append(body)
                    first[i], size[i] = at, len(body)
                    at += len(body)
            except KafkaFormatError:
                return None
            buf = b"".join(parts)
            del parts
            view.release()
        lat = (attrs & R.TIMESTAMP_TYPE_MASK) != 0
        try:
            cols = decode_sections(buf, first, size, h["recordCount"].astype(np.int64), base,
                                   h["baseTimestamp"].astype(np.int64), lat, h["maxTimestamp"].astype(np.int64))
        except _Fallback:
            return None
        shift = np.array([f.shift for f in self.files], np.int64)[file]
        return cols, BatchColumns([(p.src, p.uri) for p in self.steps], file, base, pos + shift,
                                h["producerId"].astype(np.int64), (attrs & R.TRANSACTIONAL_MASK) != 0,
                                (attrs & R.CONTROL_MASK) != 0, lat.astype(np.int64), crc)
