"""A segment's ``.log`` file: memory-mapped, walked batch by batch in constant memory.

The walk follows Kafka's FileLogInputStream and ``ensureValid``: a batch is read when 17 header
bytes remain; a size below 14 is corrupt; a batch running past the end ends the walk; a v2 batch
must be at least 61 bytes; legacy entries at least their magic's overhead.  On top of Kafka, the
scanner reports *why* the walk stopped, with file, byte position and offset.
:meth:`BatchScanner.iter_runs` is the same walk handing out stretches of v2 batches as header
columns (:mod:`.header_run`), for passes that need only headers and CRCs.
"""
from __future__ import annotations

import mmap
import os
import re
from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Literal, NamedTuple, Protocol

from specs import legacy as L
from specs import record_batch as R
from specs.indexes import OFFSET_ENTRY, TIME_ENTRY
from specs.layout import INT32_MAX, INT64_MAX

from kafkaforensics.records.batch import Batch, parse_legacy_header, parse_v2_header, resolve_legacy_wrapper
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.records import header_list, header_run, int64, walks
from kafkaforensics.log import offset_index, time_index, txn_index
from kafkaforensics.log.file_region import FileRegion, SourceRegion
from kafkaforensics.log.read_ahead import WindowReader, window_reader

#: baseOffset, batchLength: the LOG_OVERHEAD every magic shares
LOG_PREFIX = R.LOG_PREFIX_STRUCT
#: How much of a mapped file a walk keeps resident: pages behind the walk are dropped from this
#: process (they stay in the page cache), so walking a 1 GiB segment needs constant memory.
RESIDENT_WINDOW = 64 << 20
_PAGE = mmap.PAGESIZE
#: how much of a segment :meth:`BatchScanner.iter_runs` copies at a time (fits a core's L2 cache)
RUN_WINDOW = 1 << 20
#: how many bytes of batches one :class:`~.header_run.HeaderRun` covers at most
RUN_BYTES = 16 << 20


def release_pages(buf, start: int, end: int) -> None:
    """Drop the pages of [start, end) of a mapped buffer from this process's resident set."""
    mm = getattr(buf, "obj", None)
    if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = start - start % _PAGE
    end = end - end % _PAGE
    if end > start:
        try:
            mm.madvise(mmap.MADV_DONTNEED, start, end - start)
        except (OSError, ValueError):
            pass


# -- file naming (Kafka's LogFileUtils): every segment-family name is made and read here --------
LOG, INDEX, TIMEINDEX, TXNINDEX, SNAPSHOT = ".log", ".index", ".timeindex", ".txnindex", ".snapshot"
#: what an interrupted swap (``.swap``), cleaning (``.cleaned``) or deletion (``.deleted``) leaves
SWAP, CLEANED, DELETED = ".swap", ".cleaned", ".deleted"
LEFTOVER_SUFFIXES = (SWAP, CLEANED, DELETED)


class IndexKind(NamedTuple):
    """One index file Kafka keeps next to a segment's ``.log`` (LogSegment's offsetIndex, timeIndex,
    txnIndex), as every module that lists, checks, rebuilds or names index files knows it."""
    suffix: str          # ``.index`` (the file kind paths.file_kind names is the suffix without its dot)
    module: Any          # the entry codec: ``ENTRY_SIZE``, ``to_bytes``
    entries: str         # the attribute of a rebuild's SegmentIndexes holding its entries
    preallocated: bool   # AbstractIndex: mmap'd, preallocated to segment.index.bytes, trimmed at roll
    indexed_by_base: bool  # entries relative to the segment's base offset (to_bytes(entries, base))
    created_lazily: bool   # the file exists only once it has an entry (TransactionIndex opens its file lazily)

    @property
    def entry_size(self) -> int:
        return self.module.ENTRY_SIZE

    def to_bytes(self, indexes, base_offset: int) -> bytes:
        """The file's bytes for the entries of ``indexes`` (a SegmentIndexes), as Kafka writes them."""
        entries = getattr(indexes, self.entries)
        return self.module.to_bytes(entries, base_offset) if self.indexed_by_base else self.module.to_bytes(entries)


#: the segment's index files, in the order LogSegment opens them; LogSegment.recover resets and rebuilds
#: all three; the transaction index is created only with its first entry (TransactionIndex, lazily)
INDEX_KINDS = (IndexKind(INDEX, offset_index, "offsets", True, True, False),
               IndexKind(TIMEINDEX, time_index, "times", True, True, False),
               IndexKind(TXNINDEX, txn_index, "aborted", False, False, True))
INDEX_BY_SUFFIX = {k.suffix: k for k in INDEX_KINDS}


def index_bytes(indexes, base_offset: int) -> list[tuple[str, bytes]]:
    """(suffix, bytes) of each index file of a segment rebuilt into ``indexes``, as Kafka writes them."""
    return [(k.suffix, k.to_bytes(indexes, base_offset)) for k in INDEX_KINDS]
INDEX_SUFFIXES = tuple(INDEX_BY_SUFFIX)
#: the files of one segment (LogSegment's), and of the segment family (with the producer snapshot at an offset)
SEGMENT_SUFFIXES = (LOG,) + INDEX_SUFFIXES
#: the files a new segment starts with (LogSegment.open: the log and the eagerly created indexes)
NEW_SEGMENT_SUFFIXES = (LOG,) + tuple(k.suffix for k in INDEX_KINDS if not k.created_lazily)
FAMILY_SUFFIXES = SEGMENT_SUFFIXES + (SNAPSHOT,)
#: a segment-family file name: the 20-digit offset, a family suffix, maybe a further extension
#: (group 3: a leftover ``.swap``/``.cleaned``/``.deleted``, or anything else a copy was given)
SEGMENT_FILE_RE = re.compile(r"^(\d{20})(%s)((?:\.\w+)?)$" % "|".join(re.escape(s) for s in FAMILY_SUFFIXES))


def offset_from_name(name: str) -> int | None:
    """The base offset in a segment-family file name (``00000000000000000042.log`` -> 42), a
    leftover suffix included (``...42.log.swap`` -> 42); None for any other name."""
    return offset_of_file_name(os.path.basename(name))


def offset_of_file_name(name: str) -> int | None:
    """:func:`offset_from_name` of a bare file name (no directory): a fleet's listing has tens of
    thousands, already split."""
    m = SEGMENT_FILE_RE.match(name)
    return int(m.group(1)) if m else None


def is_family_file(name: str) -> bool:
    """Whether a bare file name is one Kafka gives a segment-family file: ``<offset>.log`` and kin,
    maybe with a leftover suffix (``.swap``, ``.cleaned``, ``.deleted``) and nothing else."""
    m = SEGMENT_FILE_RE.match(name)
    return m is not None and (not m.group(3) or m.group(3) in LEFTOVER_SUFFIXES)


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's file naming: the offset as 20 zero-padded digits plus the suffix (``.log`` ...)."""
    return f"{base_offset:020d}{suffix}"


#: a KRaft metadata snapshot: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` (Kafka's Snapshots)
KRAFT_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
#: the same, and the partial (``.checkpoint.part``) and deleted (``.checkpoint.deleted``) ones Kafka removes at start
KRAFT_SNAPSHOT_FILE_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$")


def kraft_snapshot_file_name(end_offset: int, epoch: int) -> str:
    """A KRaft snapshot's file name: end offset and epoch, zero-padded as Kafka's Snapshots does."""
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def sibling(path: str, suffix: str) -> str:
    """The file of the same segment with another suffix (``.../42.log`` -> ``.../42.index``)."""
    d, name = os.path.split(path)
    base = offset_from_name(name)
    if base is None:
        raise ValueError(f"{path!r} is not a segment file name")
    return os.path.join(d, file_name(base, suffix))


def without_leftover_suffix(name: str) -> str:
    """The final name of a leftover (``...42.log.swap`` -> ``...42.log``); other names unchanged."""
    for suf in LEFTOVER_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


@contextmanager
def open_buffer(path: str, sequential: bool = True):
    """Map a file read-only; empty files give an empty buffer (mmap refuses length 0).  ``sequential``:
    advise the kernel of a read from start to end (readahead); a few batches' headers read (a Fetch's
    look-ups) skip that call."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if sequential:
                mm.madvise(mmap.MADV_SEQUENTIAL)
        except (AttributeError, OSError):
            pass
        with mapped_view(mm) as view:
            yield view


@contextmanager
def mapped_view(mm: mmap.mmap):
    """A memoryview of ``mm`` for the block, the mapping closed after it (a file's, or an anonymous
    one a remote segment's walk fills)."""
    view = memoryview(mm)
    try:
        yield view
    finally:
        try:
            view.release()
            mm.close()
        except BufferError:
            pass  # a caller still holds a batch slice: the mapping closes when it is freed


class BatchScanner:
    """Iterate the batches of a buffer the way Kafka walks a segment.

    Yields every batch whose framing is sound (its CRC is *not* checked here: call
    ``batch.crc_valid()``).  When the walk ends, ``stop`` is None for a clean end or the
    :class:`Problem` that ended it, and ``valid_bytes`` is where the last sound batch ends.
    ``base_offset`` (the segment's) enables the relative-offset range check.
    ``max_batch_bytes`` adds the broker's max-message-size check.
    """

    def __init__(self, buf, *, start: int = 0, end: int | None = None, file: str | None = None,
                 base_offset: int | None = None, max_batch_bytes: int | None = None):
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else min(end, len(buf))
        self.file = file
        self.base_offset = base_offset
        self.max_batch_bytes = max_batch_bytes
        self.stop: Problem | None = None
        self.valid_bytes = start
        # the last batch (or (run, count)) walked: where the next offset comes from
        self._after: Batch | tuple[header_list.ListRun | header_run.HeaderRun, int] | None = None

    def _problem(self, pos, offset, kind, detail):
        self.stop = Problem(self.file, pos, offset, kind, detail)

    def _next_offset(self) -> int | None:
        """The offset the walk expects next: after the last batch walked, else the segment's base."""
        after = self._after
        if after is None:
            return self.base_offset
        if isinstance(after, tuple):
            run, k = after
            return int(run.last_offset[k - 1]) + 1
        return after.next_offset

    def _release(self, pos: int, released: int) -> int:
        """Keep at most RESIDENT_WINDOW of the mapping resident behind ``pos``."""
        if pos - released > RESIDENT_WINDOW:
            release_pages(self.buf, released, pos - (1 << 20))
            released = pos - (1 << 20)
        return released

    def __iter__(self):
        pos = released = self.start
        while True:
            released = self._release(pos, released)
            batch = self._step(pos)
            if batch is None:
                return
            self._after = batch
            yield batch
            pos += batch.size

    def _iter_runs_reference(self, fd: int | None = None, window: int | None = None, lists: bool = False):
        """``iter_runs`` with ``records.walks.SPEEDUPS`` off: the reference walk, every batch one
        at a time (``fd``, ``window`` and ``lists`` are the fast path's and change nothing)."""
        return iter(self)

    def _iter_runs_fast(self, fd: int | None = None, window: int | None = None, lists: bool = False):
        """The same walk, but stretches of v2 batches come as :class:`~.header_run.HeaderRun`
        columns (CRCs checked on the way) and only what the run walk declines comes as a Batch.

        With ``fd`` (the same file, open for reading) runs are walked in ``window``-sized copies
        (:func:`~.read_ahead.window_reader`: read ahead on a second thread over a large file): the
        CRCs then run over bytes the copy left in the CPU cache, not over mapped pages touched for the
        first time; a batch larger than two windows is left to the batch-by-batch step.
        ``tests/test_verify.py`` proves verify over runs equal to verify batch by batch.  With
        ``lists`` the runs are :class:`~.header_list.ListRun` (no numpy).
        """
        if self.start < 0:
            self._step(self.start)
            return
        reader = None if fd is None else window_reader(fd, self.start, self.end, window or RUN_WINDOW)
        try:
            yield from self._runs(reader, lists)
        finally:
            if reader is not None:
                reader.close()

    def _runs(self, reader: WindowReader | None, lists: bool):
        """:meth:`_iter_runs_fast`'s walk, over ``reader``'s copies (or the mapping without one)."""
        walk_run = header_list.walk_run
        buf, end = self.buf, self.end
        limit = INT64_MAX if self.max_batch_bytes is None else self.max_batch_bytes - L.LOG_OVERHEAD
        pos = released = self.start
        while True:
            released = self._release(pos, released)
            # a list run takes each header as walk_run unpacked it; a numpy run, the header bytes
            positions: list[int] = []
            bad_crc: list[int] = []
            headers: list[tuple] | bytearray = [] if lists else bytearray()
            run_end = min(end, pos + RUN_BYTES)
            declined = more = False
            while pos < run_end and not declined:
                if reader is None:
                    nxt, declined = walk_run(buf, pos, end, limit, run_end - pos, (positions, bad_crc, headers))
                    if nxt == pos:
                        break  # the batch at pos is not for the run walk
                    pos = nxt
                    continue
                view = reader.view(pos, more)
                walked, declined = walk_run(view, 0, len(view), limit, run_end - pos, (positions, bad_crc, headers), pos)
                if walked == 0 and (declined or more):
                    break  # the batch at pos is not for the run walk (or does not fit two windows)
                pos, more = pos + walked, True  # the walk stopped short of the run's end: the view did
            full = pos >= run_end and run_end < end
            if positions:
                run: header_list.ListRun | header_run.HeaderRun = (
                    header_list.ListRun(buf, positions, bad_crc, headers, self.file) if isinstance(headers, list)
                    else header_run.HeaderRun(buf, positions, bad_crc, bytes(headers), self.file))
                k = run.accepted(self.base_offset)
                if k:
                    self.valid_bytes = int(run.position[k - 1] + run.size[k - 1])
                    self._after = (run, k)
                    yield run if k == len(run) else run.head(k)
                if k < len(run):
                    pos, full = int(run.position[k]), False  # the step below judges what the run declined
            if full:
                continue  # the run ended only because it was long enough
            # a batch the run walk declines or two windows cannot hold, or the end: one step
            batch = self._step(pos)
            if batch is None:
                return
            self._after = batch
            yield batch
            pos += batch.size

    #: the walk in runs (:meth:`_iter_runs_fast`), or batch by batch with ``records.walks.SPEEDUPS``
    #: off: the choice made once, at import
    iter_runs = walks.bind("iter_runs", _iter_runs_fast, _iter_runs_reference)

    def _step(self, pos: int):
        """The batch at ``pos``, or None when the walk ends there (``stop`` says why)."""
        buf, end = self.buf, self.end
        self.valid_bytes = pos
        if pos < 0:  # a start taken from a damaged index entry
            self._problem(pos, None, "bad-position", f"position {pos} is before the start of the file")
            return None
        if pos >= end - R.HEADER_SIZE_UP_TO_MAGIC:
            if pos < end:
                self._problem(pos, None, "trailing-bytes",
                              f"{end - pos} bytes after the last batch, too few for a batch header")
            return None
        first: int
        first, size = LOG_PREFIX.unpack_from(buf, pos)  # the header's offset field, when it is one
        magic = buf[pos + R.MAGIC_OFFSET]
        header = magic in (0, 1, 2)
        # bytes that are no batch header (their magic byte is none) hold no offset and no batch length:
        # the problem is at the byte position, its offset the one the walk stands at, if any
        offset, not_header = (first, "") if header else (self._next_offset(), f"{_no_header(magic)}: ")
        if size < L.RECORD_OVERHEAD_V0:
            kind = "zeroed-tail" if _all_zero(buf, pos, min(end, pos + 4096)) else "bad-size"
            # zeroes hold no offset: the offset is where the walk stands
            self._problem(pos, self._next_offset() if kind == "zeroed-tail" else offset, kind,
                          not_header + f"batch size {size} is below the minimum record overhead {L.RECORD_OVERHEAD_V0}")
            return None
        if pos + L.LOG_OVERHEAD + size > end:
            self._problem(pos, offset, "truncated-batch",
                          (f"batch of {size + L.LOG_OVERHEAD} bytes runs {pos + L.LOG_OVERHEAD + size - end} bytes past the end"
                           if header else f"{not_header}their length field ({size}) runs past the end of the file"))
            return None
        if self.max_batch_bytes is not None and size + L.LOG_OVERHEAD > self.max_batch_bytes:
            self._problem(pos, offset, "oversized-batch",
                          not_header + f"batch of {size + L.LOG_OVERHEAD} bytes exceeds the max message size {self.max_batch_bytes}")
            return None
        if magic == 2:
            if size + L.LOG_OVERHEAD < R.HEADER_SIZE:
                self._problem(pos, offset, "bad-size",
                              f"v2 batch size {size + R.LOG_OVERHEAD} is below the {R.HEADER_SIZE}-byte header")
                return None
            batch = parse_v2_header(buf, pos, self.file)
            if batch.last_offset < batch.base_offset:
                self._problem(pos, offset, "bad-header", f"lastOffsetDelta {batch.last_offset - first} is negative")
                return None
        elif magic in (0, 1):
            overhead = L.RECORD_OVERHEAD_V0 if magic == 0 else L.RECORD_OVERHEAD_V1
            if size < overhead:
                self._problem(pos, offset, "bad-size",
                              f"magic {magic} message size {size} is below its overhead {overhead}")
                return None
            batch = parse_legacy_header(buf, pos, self.file)
            if batch.count is None:  # a compressed wrapper: its first offset is inside
                try:
                    resolve_legacy_wrapper(batch)
                except KafkaFormatError:
                    batch._records = None  # left for records() to report where it is read
        else:
            self._problem(pos, offset, "bad-magic", f"unknown magic byte {magic}: the bytes here are no batch header")
            return None
        if batch.last_offset > INT64_MAX:  # the int64 rule (records.int64): damage, whatever the segment
            self._problem(pos, offset, "offset-overflow", f"the batch's {int64.offset_problem(first, batch.last_offset)}")
            return None
        if self.base_offset is not None and not (
                0 <= batch.last_offset - self.base_offset <= INT32_MAX):
            self._problem(pos, offset, "offset-overflow",
                          f"offset {batch.last_offset} is out of the int32 range of segment base {self.base_offset}")
            return None
        return batch


def _no_header(magic: int) -> str:
    """What bytes whose magic byte is none of Kafka's (0, 1, 2) are: no batch header, so no offset."""
    return f"the bytes here are no batch header (magic byte {magic}, not 0, 1 or 2)"


def _all_zero(buf, start: int, end: int) -> bool:
    chunk = bytes(buf[start:end])
    return chunk.count(0) == len(chunk)


@contextmanager
def open_walk(path: str, *, start: int = 0, end: int | None = None, base_offset: int | None | Literal["name"] = "name",
              sequential: bool = True, **kw):
    """A :class:`BatchScanner` (a :class:`~.walks.BatchWalk`) over a ``.log`` file mapped for the
    block, from byte ``start`` to ``end`` (clipped to the file); ``base_offset`` is by default the
    one the file's name says (None: no segment range check).  Its ``buf`` is the mapped file;
    ``stop`` and ``valid_bytes`` say where and why the walk ended."""
    base = offset_from_name(path) if base_offset == "name" else base_offset
    with open_buffer(path, sequential) as buf:
        yield BatchScanner(buf, start=start, end=None if end is None else min(end, len(buf)), file=path,
                           base_offset=base, **kw)


def iter_batches(path: str, **kw):
    """Yield the batches of a ``.log`` file (convenience over :class:`BatchScanner`)."""
    base = offset_from_name(path)
    with open_buffer(path) as buf:
        scanner = BatchScanner(buf, file=path, base_offset=base, **kw)
        yield from scanner


# -- a segment's byte source: where Segment reads its files from (issue 52) ---------------------
class LocalFiles:
    """The default byte source: a segment's files on the local disk, mapped or read in ranges."""

    def __reduce__(self) -> str:
        return "LOCAL_FILES"  # one local source: a copy (a Spark task's) unpickles to the same object

    def size(self, path: str) -> int:
        """The file's size in bytes."""
        return os.path.getsize(path)

    def read_all(self, path: str) -> bytes | None:
        """A whole file (an index), or None when there is none."""
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    @contextmanager
    def reader(self, path: str):
        """``read(position, n)`` of the file, open for the block (fewer bytes at its end)."""
        fd = os.open(path, os.O_RDONLY)
        try:
            yield lambda position, n: os.pread(fd, n, position)
        finally:
            os.close(fd)

    @contextmanager
    def mapped(self, path: str):
        """The whole file as a buffer for the block (:func:`open_buffer`)."""
        with open_buffer(path) as buf:
            yield buf

    @contextmanager
    def range(self, path: str, start: int, end: int | None, small: int = 0):
        """(buffer, shift, first, stop) of bytes ``[start, end)``: mapped, or, when at most ``small``
        bytes, one open, fstat, pread and close (a fleet opens tens of thousands of small segments;
        the buffer then outlives the block)."""
        if small:
            fd = os.open(path, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                stop = size if end is None else min(end, size)
                data = os.pread(fd, max(0, stop - start), start) if stop - start <= small else None
            finally:
                os.close(fd)
            if data is not None:
                yield data, start, 0, len(data)
                return
        with open_buffer(path) as buf:
            yield buf, 0, start, len(buf) if end is None else min(end, len(buf))


class ObjectFiles:
    """A byte source in an object store (a pyarrow FileSystem, ``s3://``, ``hdfs://`` ...): files read
    in byte ranges.  ``resolve(uri)`` gives (file system, path within it)."""

    def __init__(self, resolve):
        self.resolve = resolve

    def size(self, uri: str) -> int:
        """The object's size in bytes."""
        fs, path = self.resolve(uri)
        return fs.get_file_info(path).size or 0

    def read_all(self, uri: str) -> bytes | None:
        """A whole object (an index), or None when there is none or it cannot be read."""
        fs, path = self.resolve(uri)
        try:
            with fs.open_input_file(path) as f:
                return f.read()
        except (FileNotFoundError, OSError):
            return None

    @contextmanager
    def reader(self, uri: str):
        """``read(position, n)`` of the object, open for the block (fewer bytes at its end)."""
        fs, path = self.resolve(uri)
        with fs.open_input_file(path) as f:
            size = f.size()
            yield lambda position, n: bytes(f.read_at(max(0, min(n, size - position)), position))

    @contextmanager
    def range(self, uri: str, start: int, end: int | None, small: int = 0):
        """(buffer, shift, first, stop) of bytes ``[start, end)``, read in one ranged request."""
        fs, path = self.resolve(uri)
        with fs.open_input_file(path) as f:
            size = f.size()
            stop = size if end is None else min(end, size)
            data = f.read_at(max(0, stop - start), start)
        yield bytes(data), start, 0, len(data)

    @contextmanager
    def mapped(self, uri: str):
        """The whole object as one buffer (read in one request)."""
        with self.range(uri, 0, None) as (data, _shift, _first, _stop):
            yield data


#: the byte source of every segment not told otherwise
LOCAL_FILES = LocalFiles()


class ByteSource(Protocol):
    """Where a :class:`Segment`'s files come from: :class:`LocalFiles`, :class:`ObjectFiles`, or a
    remote tier's objects (:mod:`.remote.source`, whose ``.log`` is chunked, compressed or encrypted)."""

    def size(self, name: str) -> int: ...
    def read_all(self, name: str) -> bytes | None: ...
    def reader(self, name: str) -> ContextManager: ...
    def range(self, name: str, start: int, end: int | None, small: int = 0) -> ContextManager: ...
    def mapped(self, name: str) -> ContextManager: ...


class LogSlice:
    """A byte range of a segment's ``.log`` held in memory (Kafka's ``FileRecords.slice``): the
    batches lie at ``buf[start:end]``, a buffer position plus ``shift`` is a file position; ``file``
    and ``base_offset`` name the segment it came from.  :meth:`Segment.bytes_range` gives one for a
    block, the Spark source's header runs hold copies as ones.  It unpacks as (buf, shift, start,
    end); :meth:`walk` is the segment's walk over them (``FileRecords.batches()`` of the slice)."""

    __slots__ = ("buf", "shift", "start", "end", "file", "base_offset")

    def __init__(self, buf, shift: int, start: int, end: int, file: str | None, base_offset: int | None):
        self.buf, self.shift, self.start, self.end = buf, shift, start, end
        self.file, self.base_offset = file, base_offset

    def __iter__(self):
        return iter((self.buf, self.shift, self.start, self.end))

    def shifted(self, shift: int) -> "LogSlice":
        """The same bytes with another ``shift``."""
        return LogSlice(self.buf, shift, self.start, self.end, self.file, self.base_offset)

    def walk(self, start: int | None = None, end: int | None = None, base_offset: int | None | Literal["segment"] = "segment",
             **kw) -> BatchScanner:
        """A :class:`BatchScanner` from buffer position ``start`` (default: the first batch) to ``end``;
        ``base_offset`` None: no segment offset-range check."""
        base = self.base_offset if base_offset == "segment" else base_offset
        return BatchScanner(self.buf, start=self.start if start is None else start,
                            end=self.end if end is None else end, file=self.file, base_offset=base, **kw)


# -- a segment as Kafka's LogSegment: its files and the reads over them -------------------------
from dataclasses import dataclass, field  # noqa: E402


class LogOffsetPosition(NamedTuple):
    """FileRecords.LogOffsetPosition: the batch holding an offset (its last offset, byte, size)."""
    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    """FileRecords.TimestampAndOffset: the first record at or after a time (leader epoch None below v2)."""
    timestamp: int
    offset: int
    leader_epoch: int | None


class FetchDataInfo(NamedTuple):
    """LogSegment.read's answer (Kafka's FetchDataInfo): the offset asked, the byte where the batch
    holding it starts, the records as a region of the ``.log`` file (not copied: ``records.read()``
    gives the bytes), and whether the region holds only part of its first batch (``maxSize`` below it)."""
    offset: int
    position: int
    records: FileRegion
    first_entry_incomplete: bool = False


#: the index files a segment owns, each read once and cached until the file changes
_INDEX_READERS: dict[str, Callable[..., list]] = {
    INDEX: lambda data, seg: offset_index.read_entries(data, seg.base_offset)[0],
    TIMEINDEX: lambda data, seg: time_index.read_entries(data, seg.base_offset)[0],
    TXNINDEX: lambda data, seg: txn_index.read_entries(data, file=seg.path(TXNINDEX)),
}


@dataclass
class Segment:
    """One segment of a partition dir (Kafka's LogSegment): the base offset, the files named after it
    (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) and the reads Kafka makes through them:
    :meth:`read` (LogSegment.read, a file region), :meth:`translate_offset`,
    :meth:`find_offset_by_timestamp`, :meth:`collect_aborted_txns` and :meth:`read_next_offset`.
    The segment owns its indexes as LogSegment does: each is read on first use and kept on the object
    until its file changes (size, modification time or inode: an append's rewrite), so a long-lived
    Segment (a :class:`~.partition.Partition`'s, a :class:`~.live_log.LiveLog`'s) parses each index
    once, and still sees every append."""
    base_offset: int
    dir: str
    #: a ``.log`` file a user names whatever its name (:meth:`of_file`); None: the one named after the base
    file: str | None = None
    #: where the files' bytes come from (:class:`LocalFiles`, or :class:`ObjectFiles` for the Spark source)
    source: ByteSource = LOCAL_FILES
    #: files a user names whatever their names, by suffix (:meth:`of_index`)
    named: dict = field(default_factory=dict)
    #: a load's plan's view (:class:`~.load_plan.PlanFiles`): suffix -> the file holding its bytes once the
    #: plan is applied (a ``.swap`` being completed; a path that does not exist for a file it deletes)
    planned: dict = field(default_factory=dict)
    #: whether its walk checks each batch's offsets against ``base_offset`` (Kafka's int32 range of a
    #: segment): False for a ``.log`` whose base is not known (:meth:`with_base`), its ``base_offset`` then 0
    checks_range: bool = True
    #: suffix -> ((size, mtime_ns, inode), entries): the indexes read so far (never compared or pickled)
    _indexes: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_indexes"] = {}  # a copy (a Spark task's) reads the files where it runs
        return state

    @classmethod
    def with_base(cls, base_offset: int | None, dir: str, **kw: Any) -> "Segment":
        """A segment whose base offset may not be known (None: a ``.log`` named otherwise, or one
        walked whatever its name says): its ``base_offset`` then 0 and its walk checks no offset range."""
        return cls(0 if base_offset is None else base_offset, dir, checks_range=base_offset is not None, **kw)

    @classmethod
    def of_file(cls, path: str, base_offset: int | None | Literal["name"] = "name") -> "Segment":
        """The segment of a ``.log`` file a user names: its base offset the one given, by default
        the one its name says (None when it says none: its walk then checks no offset range)."""
        base = offset_from_name(path) if base_offset == "name" else base_offset
        return cls.with_base(base, os.path.dirname(os.path.abspath(path)), file=path)

    @property
    def walk_base(self) -> int | None:
        """The base offset its walk checks each batch's offsets against (None: no range checked)."""
        return self.base_offset if self.checks_range else None

    def path(self, suffix: str) -> str:
        """Its file of ``suffix``: the ``.log`` a user named, a plan's file, else the one named after the
        base (none when the base is not known: not another segment's file)."""
        if suffix == LOG and self.file is not None:
            return self.file
        if suffix in self.planned:
            return self.planned[suffix]
        if not self.checks_range:
            raise ValueError(f"{self.file}: its base offset is not known, so no {suffix} file is named after it")
        return os.path.join(self.dir, file_name(self.base_offset, suffix))

    @property
    def log(self) -> str:
        return self.path(LOG)

    def existing(self, suffix: str) -> str | None:
        """The file of ``suffix`` when there is one (a segment not on the local disk asks its byte source)."""
        if not self.is_local:
            name = self.file_of(suffix)
            try:
                return name if self.source.size(name) is not None else None
            except (KafkaFormatError, OSError):
                return None
        p = self.path(suffix)
        return p if os.path.exists(p) else None

    @property
    def size(self) -> int:
        return self.source.size(self.log)

    @property
    def is_local(self) -> bool:
        """Whether the files are on the local disk (else in an object store or a remote tier's objects)."""
        return isinstance(self.source, LocalFiles)

    # -- the files ---------------------------------------------------------------------------------
    def index_bytes(self, suffix: str) -> int:
        """The size of the index file ``suffix`` in bytes, 0 when there is none (Kafka's
        ``sizeInBytes`` of an index: what the cleaner's grouping adds up)."""
        return self._index_size(suffix) or 0

    def last_modified(self) -> float:
        """LogSegment.lastModified: the ``.log``'s modification time, in seconds (a local file's)."""
        return os.stat(self.log).st_mtime

    def _index_size(self, suffix: str) -> int | None:
        """The size of the index file ``suffix`` (None: there is none)."""
        if not self.is_local:
            data = self.file_bytes(suffix) if self.existing(suffix) else None
            return None if data is None else len(data)
        p = self.path(suffix)
        return os.path.getsize(p) if os.path.exists(p) else None

    def _edges(self, suffix: str, entry) -> tuple[tuple, tuple] | None:
        """The first and last raw entries of a fixed-width index (None: missing or empty)."""
        if not self.is_local:
            data = self.file_bytes(suffix) or b""
            if len(data) < entry.size:
                return None
            last = len(data) - len(data) % entry.size - entry.size
            return entry.unpack(data[:entry.size]), entry.unpack(data[last:last + entry.size])
        try:
            with open(self.path(suffix), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < entry.size:
                    return None
                first = entry.unpack(f.read(entry.size))
                f.seek(size - size % entry.size - entry.size)
                return first, entry.unpack(f.read(entry.size))
        except FileNotFoundError:
            return None

    def _index(self, suffix: str) -> list:
        """The entries of the index ``suffix`` ([] when missing or empty): parsed once, parsed again
        only when the file's size, modification time or inode has changed since (an append rewrites
        it through a rename). The list is shared: callers never change it.  A segment whose files are
        not local reads the index once through its byte source (objects are never appended to)."""
        if not self.is_local:
            hit = self._indexes.get(suffix)
            if hit is None:
                data = self.file_bytes(suffix)
                hit = self._indexes[suffix] = (None, _INDEX_READERS[suffix](data, self) if data else [])
            return hit[1]
        path = self.path(suffix)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._indexes.pop(suffix, None)
            return []
        hit = self._indexes.get(suffix)
        if hit is not None and hit[0] == (st.st_size, st.st_mtime_ns, st.st_ino):
            return hit[1]
        with open(path, "rb") as f:  # the stamp of the file read, whatever was renamed over it since
            st = os.fstat(f.fileno())
            data = f.read()
        entries = _INDEX_READERS[suffix](data, self) if data else []
        self._indexes[suffix] = ((st.st_size, st.st_mtime_ns, st.st_ino), entries)
        return entries

    def offset_index(self) -> list[tuple[int, int]]:
        """The ``.index`` entries as (absolute offset, position) up to its zero tail ([] when missing)."""
        return self._index(INDEX)

    def time_index(self) -> list[tuple[int, int]]:
        """The ``.timeindex`` entries as (timestamp, absolute offset) ([] when missing)."""
        return self._index(TIMEINDEX)

    def aborted_txns(self) -> list:
        """The ``.txnindex`` entries (:class:`~.txn_index.AbortedTxn`; [] when missing)."""
        return self._index(TXNINDEX)

    def index_problem(self, check_offset_and_time: bool = True) -> str | None:
        """Why Kafka would recover this segment at load though it lies below the recovery point, or
        None: the offset index is missing (LogSegment.sanityCheck's NoSuchFileException), or an index
        fails the sanity check (CorruptIndexException: a size that is no multiple of the entry size,
        a last entry before the base offset, a time index whose last timestamp is below its first,
        an aborted transaction ending before the base offset). ``check_offset_and_time=False``: Kafka
        2.3 and later (KAFKA-7283), whose load checks only the transaction index."""
        if self._index_size(INDEX) is None:
            return f"offset index {file_name(self.base_offset, INDEX)} is missing"
        for kind in INDEX_KINDS if check_offset_and_time else INDEX_KINDS[2:]:
            n, size = self._index_size(kind.suffix), kind.entry_size
            if n is not None and n % size:
                return f"{os.path.basename(self.path(kind.suffix))}: size {n} is not a multiple of {size}"
        # the old sanity checks read only the first and last entries (a preallocated zero tail reads as
        # relative offset 0, which passes, as it does in Kafka)
        last = self._edges(INDEX, OFFSET_ENTRY) if check_offset_and_time else None
        if last and last[1][0] < 0:
            return f"{file_name(self.base_offset, INDEX)}: last offset {self.base_offset + last[1][0]} is below the base offset"
        times = self._edges(TIMEINDEX, TIME_ENTRY) if check_offset_and_time else None
        if times and (times[1][0] < times[0][0] or times[1][1] < 0):
            return f"{file_name(self.base_offset, TIMEINDEX)}: last entry {times[1]} is before its first or the base"
        try:
            aborted = self.aborted_txns()
        except KafkaFormatError as e:
            return e.problem.detail
        for t in aborted:
            if t.last_offset < self.base_offset:
                return (f"{file_name(self.base_offset, TXNINDEX)}: aborted transaction ending at {t.last_offset} "
                        f"is below the base offset")
        return None

    # -- the reads ---------------------------------------------------------------------------------
    def batches(self, position: int = 0, max_position: int | None = None, **kw):
        """The batches from byte ``position`` (up to ``max_position``), as the segment's walk reads them."""
        with self.walk(position, max_position, **kw) as walk:
            yield from walk

    def walk(self, position: int = 0, max_position: int | None = None, **kw):
        """The segment's walk from byte ``position`` (up to ``max_position``) as a block:
        ``with seg.walk() as w: for b in w: ...`` then ``w.stop``, ``w.valid_bytes``."""
        if not self.is_local:
            return _source_walk(self, position, max_position, **kw)
        return open_walk(self.log, start=position, end=max_position, base_offset=self.walk_base, **kw)

    def translate_offset(self, offset: int, start_position: int = 0) -> LogOffsetPosition | None:
        """LogSegment.translateOffset: the first batch whose last offset is at least ``offset``,
        searched from the offset index's entry for it (or ``start_position`` when later); None when
        the segment ends before it."""
        _off, pos = offset_index.lookup(self.offset_index(), offset, self.base_offset)
        with self.walk(max(pos, start_position), sequential=False) as walk:  # an index interval, at most
            for b in walk:
                if b.last_offset >= offset:
                    return LogOffsetPosition(b.last_offset, b.position, b.size)
        return None

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = False, at: LogOffsetPosition | None = None) -> FetchDataInfo | None:
        """LogSegment.read: the region of the ``.log`` file from the batch holding ``start_offset`` (the
        first whose last offset is at least it), ``max_size`` bytes long (at least that batch's size with
        ``min_one_message``), never past byte ``max_position`` (default: the file's end); the region's
        last batch may be cut, as Kafka's is.  None when the segment ends before ``start_offset``.
        ``at``: that batch when the caller already knows it (what :meth:`translate_offset` would find:
        a Fetch that goes on where the last one ended), so no batch header is read for it."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for a read of {self.log}")
        if at is None:
            at = self.translate_offset(start_offset)
        if at is None:
            return None
        size = max(max_size, at.size) if min_one_message else max_size
        end = self.size if max_position is None else max_position
        n = max(0, min(end - at.position, size))
        region = FileRegion(self.log, at.position, n) if self.is_local else \
            SourceRegion(self.log, at.position, n, self.source)
        return FetchDataInfo(start_offset, at.position, region, size < at.size)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None) -> TimestampAndOffset | None:
        """LogSegment.findOffsetByTimestamp: the time index's entry at or below ``timestamp`` gives an
        offset, the offset index its byte; from there the first record with a timestamp at least
        ``timestamp`` and an offset at least ``starting_offset`` (the log start), or None."""
        start = self.base_offset if starting_offset is None else starting_offset
        _ts, off = time_index.lookup(self.time_index(), timestamp, self.base_offset)
        _o, pos = offset_index.lookup(self.offset_index(), max(off, start), self.base_offset)
        for b in self.batches(pos):
            if b.max_timestamp >= timestamp:
                for r in b.records():
                    if r.timestamp >= timestamp and r.offset >= start:
                        epoch = b.partition_leader_epoch if b.magic >= 2 and b.partition_leader_epoch >= 0 else None
                        return TimestampAndOffset(r.timestamp, r.offset, epoch)
        return None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list, bool]:
        """LogSegment.collectAbortedTxns: the aborted transactions of the ``.txnindex`` that overlap
        [fetch_offset, upper_bound_offset), and whether the search is complete (an entry's last stable
        offset reached the upper bound: no later segment can hold more)."""
        out = []
        for t in self.aborted_txns():
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound_offset:
                out.append(t)
            if t.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    def read_next_offset(self) -> int:
        """LogSegment.readNextOffset: after the last batch (from the last index entry on), else the base."""
        entries = self.offset_index()
        nxt = self.base_offset
        for b in self.batches(entries[-1][1] if entries else 0):
            nxt = b.next_offset
        return nxt


    # -- the one door to the bytes (issue 52): every reader outside log/ comes through here -------
    @classmethod
    def of_index(cls, path: str, base_offset: int, suffix: str) -> "Segment":
        """The segment of an index file (``suffix``: ``.index`` ...) a user names whatever its name
        (``kfx dump`` of a tiered-storage cache index): that file is ``path``, the others named after the base."""
        return cls(base_offset, os.path.dirname(os.path.abspath(path)), named={suffix: path})

    def file_of(self, suffix: str) -> str:
        """The file of ``suffix``: one a user named, else the one named after the base."""
        return self.named.get(suffix) or self.path(suffix)

    def file_bytes(self, suffix: str) -> bytes | None:
        """The whole file of ``suffix`` (an index's bytes), or None when there is none."""
        return self.source.read_all(self.file_of(suffix))

    def buffer(self):
        """The ``.log`` as one buffer for the block (mapped locally, read whole from an object store)."""
        return self.source.mapped(self.log)

    def bytes_range(self, start: int = 0, end: int | None = None, small: int = 0):
        """The ``.log``'s bytes ``[start, end)`` for the block as a :class:`LogSlice` (read into memory
        when at most ``small`` bytes, else mapped; one ranged request from an object store)."""
        return _segment_bytes(self, start, end, small)

    def reader(self):
        """``read(position, n)`` over the ``.log`` for the block: up to ``n`` bytes from ``position``."""
        return self.source.reader(self.log)

    def read_at(self, position: int, n: int) -> bytes:
        """Up to ``n`` bytes of the ``.log`` from byte ``position`` (fewer at its end)."""
        with self.reader() as read:
            return read(position, n)

    @contextmanager
    def runs(self, max_batch_bytes: int | None = None, lists: bool = False, small: int = 0):
        """The segment's walk for the block as (walk, items): ``items`` the batches one by one when the
        file is at most ``small`` bytes, else :meth:`BatchScanner.iter_runs` over ``preadv`` copies."""
        with self.walk(max_batch_bytes=max_batch_bytes) as scanner:
            if len(scanner.buf) <= small or not self.is_local:
                yield scanner, iter(scanner)
                return
            fd = os.open(self.log, os.O_RDONLY)
            items = scanner.iter_runs(fd, lists=lists)
            try:
                yield scanner, items
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    close()  # a walk left unfinished stops its read-ahead before its file closes
                os.close(fd)


@dataclass(frozen=True)
class SegmentSummary:
    """One segment as a walk leaves it (LogSegment's size, the offset after its last batch, its largest
    timestamp): the one immutable summary row reports (verify, the cleaner's survey) are made of;
    ``segment`` is the file-backed :class:`Segment` summed up, when the row's user reads it again."""
    base_offset: int
    size: int
    valid_bytes: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    next_offset: int | None = None
    max_timestamp: int = -1
    segment: Segment | None = field(default=None, compare=False, repr=False)


def offset_for_timestamp(segments, timestamp: int, log_start_offset: int) -> TimestampAndOffset | None:
    """ListOffsets by time (UnifiedLog.fetchOffsetByTimestamp): the first record at or after the log
    start whose timestamp is at least ``timestamp``, each segment in order looked up through its time
    index (:meth:`Segment.find_offset_by_timestamp`); None when no record is that late."""
    for seg in segments:
        found = seg.find_offset_by_timestamp(timestamp, log_start_offset)
        if found is not None:
            return found
    return None



@contextmanager
def _source_walk(seg: Segment, start: int, end: int | None, sequential: bool = True, **kw):
    """:func:`open_walk` of a segment whose ``.log`` is not a local file: over its bytes as its byte
    source gives them (a remote tier's decoded chunks, an object read whole)."""
    walk = getattr(seg.source, "walk", None)   # a source that fills its bytes as the walk reaches them
    if walk is not None:
        with walk(start, end, base_offset=seg.walk_base, **kw) as scanner:
            yield scanner
        return
    with seg.source.mapped(seg.log) as buf:
        yield BatchScanner(buf, start=start, end=None if end is None else min(end, len(buf)), file=seg.log,
                           base_offset=seg.walk_base, **kw)


@contextmanager
def _segment_bytes(seg: Segment, start: int, end: int | None, small: int):
    with seg.source.range(seg.log, start, end, small) as (buf, shift, first, stop):
        yield LogSlice(buf, shift, first, stop, seg.log, seg.walk_base)
