"""Runs of v2 batch headers: the one walk loop (:func:`walk_run`) and the run as lists of tuples,
what :mod:`.header_run` gives as numpy columns, without numpy (both are :class:`.walks.HeaderRunLike`)."""
# `kfx verify` of a large segment whose indexes are read as lists walks it in these runs, so the
# whole process never imports numpy (its import costs more than the checks it would vectorise);
# tests/test_verify.py proves verify over list runs equal to verify over numpy runs.
from __future__ import annotations

import mmap
import struct
from abc import ABC, abstractmethod
from itertools import repeat
from operator import add, itemgetter
from collections.abc import Callable
from typing import Protocol, SupportsIndex, SupportsInt

from specs import record_batch as R
from specs.layout import INT32_MAX

from kafkaforensics.records.batch import Batch, parse_v2_header
from kafkaforensics.records.checksums import crc32c

#: baseOffset .. crc: what the walk loop reads of each batch
_UP_TO_CRC = struct.Struct(">" + R.HEADER_STRUCT.format[1:R.HEADER_FIELDS.index("crc") + 2])
SAFE_OFFSET = 2**62  # base + lastOffsetDelta cannot overflow int64 below this
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
    add_row: Callable[[tuple], None] = headers.append if isinstance(headers, list) else _not_rows
    add_header: Callable[[bytes | memoryview], None] = _not_bytes if isinstance(headers, list) else headers.extend
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


def _not_rows(row: tuple) -> None:
    raise AssertionError("a numpy run's walk collects header bytes, not rows")


def _not_bytes(header: bytes | memoryview) -> None:
    raise AssertionError("a list run's walk collects header rows, not bytes")


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
        self.rows = rows
        self.made: dict[int, list] = {}

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

