"""Runs of v2 batch headers: the one walk loop (:func:`walk_run`) and the run as lists of tuples,
what :mod:`.header_run` gives as numpy columns, without numpy (both are :class:`.walks.HeaderRunLike`)."""
# `kfx verify` of a large segment whose indexes are read as lists walks it in these runs, so the
# whole process never imports numpy (its import costs more than the checks it would vectorise);
# tests/test_verify.py proves verify over list runs equal to verify over numpy runs.
from __future__ import annotations

import _thread
import mmap
import os
import struct
from abc import ABC, abstractmethod
from itertools import repeat
from operator import add, itemgetter, ne
from typing import Protocol, SupportsIndex, SupportsInt

from specs import record_batch as R
from specs.layout import INT32_MAX

from kafkaforensics.records import walks
from kafkaforensics.records.batch import Batch, parse_v2_header
from kafkaforensics.records.checksums import crc32c

#: baseOffset .. crc: what the walk loop reads of each batch
_UP_TO_CRC = struct.Struct(">" + R.HEADER_STRUCT.format[1:R.HEADER_FIELDS.index("crc") + 2])
SAFE_OFFSET = 2**62  # base + lastOffsetDelta cannot overflow int64 below this
#: batchLength alone: what :func:`_chain` reads of each batch
_LENGTH = struct.Struct(">i")
#: where each header field is in a row
FIELD = {name: i for i, name in enumerate(R.HEADER_FIELDS)}
_HEADER_ROWS = R.HEADER_STRUCT.iter_unpack


def walk_run(buf, pos: int, end: int, size_limit: int, max_bytes: int,
             into: tuple[list, list, bytearray | list], origin: int = 0) -> tuple[int, bool]:
    """Step over v2 batches of ``buf`` from ``pos`` while each is whole, at least a header long and
    at most ``size_limit`` (batchLength); stop after ``max_bytes``.  ``into`` is the run's columns
    (positions, bad_crc, headers): appends each batch's position plus ``origin`` to ``positions``,
    its index there to ``bad_crc`` when its CRC-32C does not match, and to ``headers`` its 61
    header bytes (a bytearray: the numpy run's) or its header as a tuple of :data:`FIELD` values
    (a list: the list run's, unpacked once here rather than again from bytes).  Returns where the
    walk stopped and whether it stopped at a batch it declined (rather than at the end of ``buf``
    or of ``max_bytes``)."""
    positions, bad_crc, headers = into
    rows = isinstance(headers, list)
    append, crc_of = positions.append, crc32c
    add_row, add_header = (headers.append, None) if rows else (None, headers.extend)
    unpack = R.HEADER_STRUCT.unpack_from if rows else _UP_TO_CRC.unpack_from
    overhead, header_size, crc_from = R.LOG_OVERHEAD, R.HEADER_SIZE, R.ATTRIBUTES_OFFSET
    min_size = header_size - overhead
    bound = min(pos + max_bytes, end - header_size + 1)  # a batch starting before this gets a look
    while pos < bound:
        row = unpack(buf, pos)
        size, magic = row[1], row[3]
        if magic != 2 or not min_size <= size <= size_limit:
            return pos, True
        nxt = pos + overhead + size
        if nxt > end:
            return pos, False
        if crc_of(buf[pos + crc_from:nxt]) != row[4]:
            bad_crc.append(len(positions))
        append(pos + origin)
        if rows:
            add_row(row)
        else:
            add_header(buf[pos:pos + header_size])
        pos = nxt
    return pos, False


def _chain(buf, pos: int, bound: int, end: int, min_size: int) -> tuple[list[int], int, bool]:
    """The positions of consecutive batches from ``pos`` by their length fields alone, while each
    starts before ``bound``, is at least ``min_size`` long and ends by ``end``: (positions, where the
    chain stopped, whether at a length below ``min_size``).  :func:`_walk_mapped`'s one Python step
    per batch; everything else it judges is judged over the run's columns."""
    found: list[int] = []
    append, length, overhead = found.append, _LENGTH.unpack_from, R.LOG_OVERHEAD
    while pos < bound:
        size = length(buf, pos + R.BATCH_LENGTH_OFFSET)[0]
        if size < min_size:
            return found, pos, True
        nxt = pos + overhead + size
        if nxt > end:
            break
        append(pos)
        pos = nxt
    return found, pos, False


def _first_declined(rows: list[tuple], size_limit: int) -> int:
    """The index of the first header :func:`_walk_run_loop` declines (magic not 2, batchLength over
    ``size_limit``), else ``len(rows)``."""
    magic, length = itemgetter(FIELD["magic"]), itemgetter(FIELD["batchLength"])
    if list(map(magic, rows)).count(2) == len(rows) and max(map(length, rows), default=0) <= size_limit:
        return len(rows)
    return next(i for i, row in enumerate(rows) if magic(row) != 2 or length(row) > size_limit)


def _declined_at(buf, pos: int, size_limit: int) -> bool:
    """Whether :func:`_walk_run_loop` declines the batch at ``pos`` (magic not 2, batchLength out of
    its bounds) rather than stopping there for want of bytes."""
    _offset, size, _epoch, magic, _crc = _UP_TO_CRC.unpack_from(buf, pos)
    return magic != 2 or not R.HEADER_SIZE - R.LOG_OVERHEAD <= size <= size_limit


class _CrcPair:
    """CRC-32Cs of many slices on two cores: :attr:`SHARE` of them on a helper thread, the rest on
    the caller's, each with the GIL released inside every call (the crc32c extension's
    ``gil_release_mode`` 1).  One helper per process (a forked child makes its own); below
    :attr:`ALONE` slices, no helper.  The caller's thread has walked the headers (and taken the
    mapping's page faults), so the helper takes the larger share."""

    ALONE = 64
    SHARE = 0.6

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.job: list = []
        self.result: list | BaseException = []
        self.go, self.done = _thread.allocate_lock(), _thread.allocate_lock()
        self.go.acquire()
        self.done.acquire()
        _thread.start_new_thread(self._serve, ())

    def _serve(self) -> None:
        while True:
            self.go.acquire()
            try:
                self.result = _sums(self.job)
            except BaseException as e:  # handed to the caller, which raises it
                self.result = e
            self.job = []
            self.done.release()

    def sums(self, slices: list) -> list[int]:
        """The CRC-32C of each slice, in order."""
        half = int(len(slices) * (1 - self.SHARE))
        self.job = slices[half:]
        self.go.release()
        try:
            mine = _sums(slices[:half])
        finally:
            self.done.acquire()
        theirs = self.result
        if isinstance(theirs, BaseException):
            raise theirs
        return mine + theirs


def _sums(slices: list) -> list[int]:
    """The CRC-32C of each slice, the GIL released during each (the other thread's half runs then)."""
    return list(map(crc32c, slices, repeat(0, len(slices)), repeat(1, len(slices))))


_PAIR: _CrcPair | None = None


def crc_sums(slices: list) -> list[int]:
    """The CRC-32C of each slice: on two threads when there are many (:class:`_CrcPair`)."""
    global _PAIR
    if len(slices) < _CrcPair.ALONE:
        return _sums(slices)
    if _PAIR is None or _PAIR.pid != os.getpid():
        _PAIR = _CrcPair()
    return _PAIR.sums(slices)


def _walk_mapped(buf, pos: int, end: int, size_limit: int, max_bytes: int,
                into: tuple[list, list, bytearray | list], origin: int = 0) -> tuple[int, bool]:
    """:func:`walk_run` over a mapping, by columns: one Python step per batch (:func:`_chain`, its
    length field), then every header unpacked, magic and size judged, and the CRC-32Cs of
    memoryview slices of ``buf`` (no copy) computed on two threads (:func:`crc_sums`), each with
    one C-level ``map`` over the run.  The same columns, the same stop, the same answer."""
    positions, bad_crc, headers = into
    header_size = R.HEADER_SIZE
    bound = min(pos + max_bytes, end - header_size + 1)  # as walk_run's: a batch starting before it gets a look
    found, stop, short = _chain(buf, pos, bound, end, header_size - R.LOG_OVERHEAD)
    rows = list(map(R.HEADER_STRUCT.unpack_from, repeat(buf, len(found)), found))
    k = _first_declined(rows, size_limit)
    if k < len(found):
        stop, declined, found, rows = found[k], True, found[:k], rows[:k]
    else:  # the chain's own stop: a batch walk_run declines, or the end of ``buf`` or of max_bytes
        declined = short or (stop < bound and _declined_at(buf, stop, size_limit))
    if not found:
        return stop, declined
    ends = found[1:] + [stop]
    sums = crc_sums(list(map(buf.__getitem__, map(slice, map(add, found, repeat(R.ATTRIBUTES_OFFSET)), ends))))
    stored = list(map(itemgetter(FIELD["crc"]), rows))
    if sums != stored:
        first = len(positions)
        bad_crc.extend(first + i for i, differs in enumerate(map(ne, sums, stored)) if differs)
    positions.extend(map(add, found, repeat(origin)) if origin else found)
    if isinstance(headers, list):
        headers.extend(rows)
    else:
        headers += b"".join(map(buf.__getitem__, map(slice, found, map(add, found, repeat(header_size)))))
    return stop, declined


class Positions(Protocol):
    """Each batch's position in the file: a list (:class:`ListRun`) or a numpy array
    (:class:`~.header_run.HeaderRun`)."""

    def __getitem__(self, i: SupportsIndex, /) -> SupportsInt: ...

    def __len__(self) -> int: ...


class RunOfHeaders(ABC):
    """What a run of v2 batch headers offers whatever holds its columns (lists here, numpy arrays in
    :class:`~.header_run.HeaderRun`): its first ``k`` batches, and one batch as a :class:`Batch`."""

    # the buffer walked, its file, each batch's position in it (a subclass's slots hold the rest)
    __slots__ = ("buf", "file", "position")
    _SLICED: tuple[str, ...] = ()   # the per-batch fields a head keeps the first k of
    buf: bytes | memoryview | mmap.mmap
    file: str | None
    position: Positions

    @abstractmethod
    def _derive(self) -> None:
        """Compute the columns derived from the sliced ones (each subclass its own way)."""

    def head(self, k: int):
        """The first ``k`` batches."""
        out = type(self).__new__(type(self))
        out.buf, out.file = self.buf, self.file
        for name in self._SLICED:
            setattr(out, name, getattr(self, name)[:k])
        out._derive()
        return out

    def batch(self, i: int) -> Batch:
        """The ``i``-th batch as a :class:`Batch` (for the few that need their records)."""
        return parse_v2_header(self.buf, int(self.position[i]), self.file)


class Columns:
    """A run's header rows by field (``columns[FIELD[name]]``, a list per field), each column made
    from the rows the first time it is asked for (a consumer reads about half of the 13)."""

    __slots__ = ("rows", "made")

    def __init__(self, rows: list[tuple]):
        self.rows, self.made = rows, {}

    def __getitem__(self, i: int) -> list:
        column = self.made.get(i)
        if column is None:
            column = self.made[i] = list(map(itemgetter(i), self.rows))
        return column

    def __len__(self) -> int:
        return len(FIELD)


class ListRun(RunOfHeaders):
    """:class:`~.header_run.HeaderRun` as lists: ``position`` and ``crc_ok`` per batch, ``rows`` the
    header tuples and ``columns`` the same by field (both in :data:`FIELD` order),
    ``base_offset``/``last_offset``/``size``."""

    __slots__ = ("crc_ok", "rows", "columns", "base_offset", "last_offset", "size")
    _SLICED = ("position", "crc_ok", "rows")

    def __init__(self, buf, positions, bad_crc, headers: bytes | list[tuple], file=None):
        self.buf, self.file = buf, file
        self.position = positions
        self.crc_ok = [True] * len(positions)
        for i in bad_crc:
            self.crc_ok[i] = False
        # the header tuples :func:`walk_run` gathered (or the header bytes it gathered, a tuple each)
        self.rows = headers if isinstance(headers, list) else list(_HEADER_ROWS(headers))
        self._derive()

    def _derive(self) -> None:
        self.columns = cols = Columns(self.rows)
        base = self.base_offset = cols[FIELD["baseOffset"]]
        self.last_offset = list(map(add, base, cols[FIELD["lastOffsetDelta"]]))
        self.size = list(map(add, cols[FIELD["batchLength"]], repeat(R.LOG_OVERHEAD, len(base))))

    def __len__(self) -> int:
        return len(self.position)

    def accepted(self, segment_base: int | None) -> int:
        """As :meth:`.header_run.HeaderRun.accepted`."""
        if not self.rows:
            return 0
        deltas, last = self.columns[FIELD["lastOffsetDelta"]], self.last_offset
        if min(deltas) >= 0 and max(self.base_offset) < SAFE_OFFSET and (
                segment_base is None or (min(last) >= segment_base and max(last) - segment_base <= INT32_MAX)):
            return len(self)
        for i, (delta, base, lst) in enumerate(zip(deltas, self.base_offset, last)):
            if delta < 0 or base >= SAFE_OFFSET:
                return i
            if segment_base is not None and not 0 <= lst - segment_base <= INT32_MAX:
                return i
        return len(self)



#: the run walk over a mapping: by columns, CRCs on two threads (:func:`_walk_mapped`), or the walk
#: loop (:func:`walk_run`, the reference it is proven equal to) with ``records.walks.SPEEDUPS`` off
walk_mapping = walks.bind("walk_mapping", _walk_mapped, walk_run)
