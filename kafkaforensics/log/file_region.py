"""A byte range of a file left where it is: what :meth:`~.segment.Segment.read` returns, as Kafka's
``LogSegment.read`` returns a ``FileRecords`` slice.  The broker puts it in a Fetch response as a hole
its transport fills with sendfile (zero copy); whoever needs the bytes asks :meth:`FileRegion.read`."""
from __future__ import annotations

import os


class FileRegion:
    """``size`` bytes of the file ``path`` from byte ``position`` (FileRecords.slice)."""

    __slots__ = ("path", "position", "size")

    def __init__(self, path: str, position: int, size: int):
        if position < 0 or size < 0:
            raise ValueError(f"invalid region of {path}: position {position}, size {size}")
        self.path, self.position, self.size = path, position, size

    def __len__(self) -> int:
        return self.size

    @property
    def end(self) -> int:
        """The byte after the region."""
        return self.position + self.size

    def read(self) -> bytes:
        """The region's bytes as the file holds them now (fewer when the file has shrunk since)."""
        if not self.size:
            return b""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            out = bytearray()
            while len(out) < self.size:  # pread returns at most ~2 GiB a call
                got = os.pread(fd, self.size - len(out), self.position + len(out))
                if not got:
                    break
                out += got
            return bytes(out)
        finally:
            os.close(fd)

    def open(self):
        """The file opened for reading, to hand to sendfile with :attr:`position` and :attr:`size`
        (the transport's zero-copy send: the region's bytes never enter Python)."""
        return open(self.path, "rb")

    def __eq__(self, other) -> bool:
        if not isinstance(other, FileRegion):
            return NotImplemented
        return (self.path, self.position, self.size) == (other.path, other.position, other.size)

    def __hash__(self) -> int:
        return hash((self.path, self.position, self.size))

    def __repr__(self) -> str:
        return f"FileRegion({self.path!r}, position={self.position}, size={self.size})"


class SourceRegion(FileRegion):
    """A region of a segment whose ``.log`` is no local file (a remote tier's object): its bytes come
    through the segment's byte source (only the chunks holding them are fetched).  There is no file to
    ``sendfile`` from: :meth:`open` says so, and a transport sends :meth:`read`'s bytes."""

    __slots__ = ("source",)

    def __init__(self, path: str, position: int, size: int, source):
        super().__init__(path, position, size)
        self.source = source

    def read(self) -> bytes:
        """The region's bytes, read through the byte source."""
        if not self.size:
            return b""
        with self.source.reader(self.path) as read:
            return read(self.position, self.size)

    def open(self):
        """No file to send from: an OSError a transport answers by sending :meth:`read`'s bytes."""
        raise OSError(f"{self.path}: not a local file (its bytes come through read())")
