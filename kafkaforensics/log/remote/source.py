"""A segment of a remote tier as a :class:`~kafkaforensics.log.segment.Segment` byte source: the
``.log`` object's chunks mapped back onto the original segment's bytes (a read of a byte range fetches
only the chunks holding it, in one ranged request, and detransforms them), and each segment index cut
out of the ``.indexes`` object."""
from __future__ import annotations

import mmap
from contextlib import contextmanager

from specs import record_batch as R

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote.aiven import Manifest, decrypt, detransform
from kafkaforensics.log.remote.store import Store
from kafkaforensics.log.segment import LOG_PREFIX, BatchScanner, mapped_view

#: how far ahead of the batch it needs a walk fetches chunks (one ranged request for several chunks)
READ_AHEAD = 8 << 20


class FillingScanner(BatchScanner):
    """A :class:`BatchScanner` over an anonymous mapping of the whole segment that is filled with the
    original bytes only as the walk reaches them: before each batch is read, the chunks holding it
    (and :data:`READ_AHEAD` more) are fetched and detransformed into the mapping.  Pages behind the
    walk are dropped as a local walk drops them (``RESIDENT_WINDOW``), so the memory a walk holds is
    bounded by the chunks it reads, not by the segment: a batch must be used before the walk moves
    ``RESIDENT_WINDOW`` past it, as every walk does."""

    def __init__(self, buf, fill, **kw):
        super().__init__(buf, **kw)
        self._fill = fill

    def _step(self, pos: int):
        if 0 <= pos < self.end:
            head = min(self.end, pos + R.HEADER_SIZE)   # a v2 header, the most a walk reads of a batch it refuses
            self._fill(pos, max(head, min(self.end, pos + READ_AHEAD)))
            if head - pos > LOG_PREFIX.size:
                _offset, size = LOG_PREFIX.unpack_from(self.buf, pos)
                if 0 < size <= self.end - pos - LOG_PREFIX.size:   # a batch running past the end: its header is read
                    self._fill(pos, pos + LOG_PREFIX.size + size)
        return super()._step(pos)

    def iter_runs(self, fd=None, window=None, lists=False):  # type: ignore[override]
        """Batch by batch: the runs' walk reads ahead of what :meth:`_step` fills."""
        return iter(self)


class ChunkedObjectFiles:
    """The byte source of one plugin segment.  Names: ``log`` the ``.log`` object's URI (its bytes
    the original segment's), ``indexes[kind]`` a name per index (``<.indexes URI>#<kind>``)."""

    def __init__(self, store: Store, log_key: str, indexes_key: str, manifest: Manifest, data_key: bytes | None):
        self.store, self.log_key, self.indexes_key = store, log_key, indexes_key
        self.manifest, self.data_key = manifest, data_key
        self.log = store.uri(log_key)
        self.index_names = {kind: f"{store.uri(indexes_key)}#{kind}" for kind in manifest.indexes}

    # -- the .log: original bytes through the chunk index --------------------------------------------
    def size(self, name: str) -> int:
        """The original segment's size (the chunk index's), or an index's size in ``.indexes`` (a
        :class:`KafkaFormatError` when the manifest names no such index)."""
        if name == self.log:
            return self.manifest.chunk_index.original_file_size
        kind = next((k for k, n in self.index_names.items() if n == name), None)
        at = self.manifest.indexes.get(kind or "")
        if at is None:
            raise KafkaFormatError("remote-index", f"{name}: the manifest names no {kind or 'such'} index")
        return at[1]

    def read_log(self, start: int, end: int | None) -> bytes:
        """Original bytes ``[start, end)`` of the segment: the chunks holding them fetched in one ranged
        read and detransformed; a chunk that fails is a ``remote-chunk`` error naming the object, the
        chunk and its byte in the object."""
        index = self.manifest.chunk_index
        stop = index.original_file_size if end is None else min(end, index.original_file_size)
        chunks = index.chunks_for_range(start, stop)
        if not chunks:
            return b""
        first = chunks[0].transformed_position
        raw = self.store.read(self.log_key, first, chunks[-1].transformed_position + chunks[-1].transformed_size)
        parts = []
        for c in chunks:
            piece = raw[c.transformed_position - first:c.transformed_position - first + c.transformed_size]
            try:
                if len(piece) != c.transformed_size:
                    raise KafkaFormatError("remote-chunk", f"object ends inside the chunk ({len(piece)} of "
                                                           f"{c.transformed_size} bytes)")
                out = detransform(piece, self.manifest, self.data_key, c.original_size)
                if len(out) != c.original_size:
                    raise KafkaFormatError("remote-chunk", f"{len(out)} bytes, the chunk index says {c.original_size}")
            except KafkaFormatError as e:
                e.problem.detail = f"chunk {c.id}: {e.problem.detail}"
                raise e.located(file=self.log, position=c.transformed_position) from None
            parts.append(out)
        data = b"".join(parts)
        base = chunks[0].original_position
        return data[start - base:stop - base]

    def read_index(self, kind: str) -> bytes | None:
        """One segment index (``offset``, ``time``, ``transaction``, ``producer-snapshot``,
        ``leader-epoch``) cut out of the ``.indexes`` object and decrypted; b"" when it is empty (an
        empty file was uploaded), None when the manifest names none."""
        at = self.manifest.indexes.get(kind)
        if at is None or at[1] == 0:
            return None if at is None else b""
        pos, size = at
        data = self.store.read(self.indexes_key, pos, pos + size)
        try:
            if len(data) != size:
                raise KafkaFormatError("remote-index", f"{kind} index: object ends at {pos + len(data)}, "
                                                       f"the manifest says {pos + size}")
            if self.manifest.aad is not None:
                data = decrypt(data, self.data_key or b"", self.manifest.aad)
        except KafkaFormatError as e:
            detail = e.problem.detail if e.problem.detail.startswith(kind) else f"{kind} index: {e.problem.detail}"
            raise KafkaFormatError("remote-index", detail, file=self.store.uri(self.indexes_key), position=pos) from None
        return data

    @contextmanager
    def walk(self, start: int, end: int | None, **kw):
        """A :class:`FillingScanner` over the original segment from byte ``start`` to ``end``: chunks
        fetched as the walk reaches them (``kw``: the scanner's ``base_offset``, ``max_batch_bytes`` ...)."""
        size = self.manifest.chunk_index.original_file_size
        if size == 0:
            yield BatchScanner(b"", start=start, end=0, file=self.log, **kw)
            return
        filled: set[int] = set()
        with mapped_view(mmap.mmap(-1, size)) as view:
            def fill(first: int, stop: int) -> None:
                want = [c for c in self.manifest.chunk_index.chunks_for_range(first, stop) if c.id not in filled]
                if want:
                    lo, hi = want[0].original_position, want[-1].original_position + want[-1].original_size
                    view[lo:hi] = self.read_log(lo, hi)
                    filled.update(c.id for c in want)
            yield FillingScanner(view, fill, start=start, end=None if end is None else min(end, size), file=self.log,
                                 **kw)

    # -- the byte source interface (LocalFiles / ObjectFiles) ------------------------------------------
    def read_all(self, name: str) -> bytes | None:
        """A whole file: the original segment, or one index (None when there is none)."""
        if name == self.log:
            return self.read_log(0, None)
        for kind, n in self.index_names.items():
            if n == name:
                return self.read_index(kind)
        return None

    @contextmanager
    def reader(self, name: str):
        """``read(position, n)`` over the original segment (fewer bytes at its end)."""
        yield lambda position, n: self.read_log(position, position + n)

    @contextmanager
    def range(self, name: str, start: int, end: int | None, small: int = 0):
        """(buffer, shift, first, stop) of original bytes ``[start, end)``: only the chunks holding them."""
        data = self.read_log(start, end)
        yield data, start, 0, len(data)

    @contextmanager
    def mapped(self, name: str):
        """The whole original segment as one buffer."""
        yield self.read_log(0, None)


class StoreFiles:
    """The byte source of a raw-layout segment in a bucket: its files are objects, named by URI,
    read whole (an index) or in byte ranges (the ``.log``)."""

    def __init__(self, store: Store):
        self.store = store

    def _key(self, name: str) -> str:
        return name[len(self.store.uri_root) + 1:]

    def size(self, name: str) -> int:
        """The object's size."""
        return self.store.size(self._key(name))

    def read_all(self, name: str) -> bytes | None:
        """A whole object, or None when there is none."""
        try:
            return self.store.read(self._key(name))
        except KafkaFormatError:
            return None

    @contextmanager
    def reader(self, name: str):
        """``read(position, n)`` of the object (fewer bytes at its end)."""
        key = self._key(name)
        yield lambda position, n: self.store.read(key, position, position + n)

    @contextmanager
    def range(self, name: str, start: int, end: int | None, small: int = 0):
        """(buffer, shift, first, stop) of bytes ``[start, end)``, in one ranged request."""
        data = self.store.read(self._key(name), start, end)
        yield data, start, 0, len(data)

    @contextmanager
    def mapped(self, name: str):
        """The whole object as one buffer."""
        yield self.store.read(self._key(name))
