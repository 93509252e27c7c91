"""Where a remote tier's objects live: a local directory, ``file://...`` or ``s3://bucket/prefix``,
read through one pyarrow FileSystem (the one the Spark S3 source uses, and moto serves in tests):
listed once, read whole or in byte ranges."""
from __future__ import annotations

import os

from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError

#: the object store client: only a command given ``--remote`` loads it (~100 ms)
pafs = lazy("pyarrow.fs", globals())


class RemoteTierError(KafkaFormatError):
    """A remote tier that cannot be opened or read (missing bucket, prefix or dir; a wrong key file):
    one line, with the URI or object key it is about."""

    def __init__(self, detail: str, *, file: str | None = None):
        super().__init__("remote-tier", detail, file=file)


def _s3():
    """The S3 file system the environment names (``AWS_ENDPOINT_URL``, ``AWS_REGION``), as the Spark
    S3 source builds it."""
    kw: dict = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        kw.update(endpoint_override=host, scheme=scheme or "https")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        kw["region"] = region
    return pafs.S3FileSystem(**kw)


class Store:
    """One bucket/prefix (or directory) of objects: ``keys`` relative to the root, ``uri(key)`` the
    object's full name, :meth:`read` whole or a byte range."""

    def __init__(self, uri: str):
        self.given = self.uri_root = uri.rstrip("/") or uri
        if uri.startswith("s3://") or uri.startswith("s3a://"):
            self.fs, self.root, self.scheme = _s3(), uri.split("://", 1)[1].rstrip("/"), "s3"
        elif "://" in uri and not uri.startswith("file://"):
            raise RemoteTierError(f"{uri}: unsupported scheme (a dir, file://, or s3://bucket/prefix)")
        else:
            path = uri[7:] if uri.startswith("file://") else uri
            self.fs, self.root, self.scheme = pafs.LocalFileSystem(), os.path.abspath(path), ""
            self.uri_root = self.root   # a local object's name is its path (every local reader opens it)

    def __reduce__(self):
        return Store, (self.uri_root if self.scheme else self.root,)

    def uri(self, key: str) -> str:
        """The object's full name (a path for a dir, ``s3://bucket/prefix/key`` for a bucket)."""
        return f"{self.uri_root}/{key}"

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def list(self) -> list[tuple[str, int]]:
        """Every object under the root as (key relative to it, size), sorted; a missing dir, bucket
        or prefix, or one that cannot be listed, is a :class:`RemoteTierError`."""
        try:
            info = self.fs.get_file_info(self.root)
            if info.type != pafs.FileType.Directory:
                raise RemoteTierError(f"{self.given}: {self._missing(info)}", file=self.given)
            found = self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True, allow_not_found=True))
        except OSError as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise RemoteTierError(f"{self.given}: cannot be listed: {first}", file=self.given) from None
        n = len(self.root) + 1
        out = sorted((fi.path[n:], fi.size or 0) for fi in found if fi.type == pafs.FileType.File)
        if not out:
            raise RemoteTierError(f"{self.given}: no objects (no such bucket, prefix or directory?)",
                                  file=self.given)
        return out

    def _missing(self, info) -> str:
        """Why the root is no dir: no such dir (bucket, prefix), or a file."""
        if info.type != pafs.FileType.NotFound:
            return "not a directory"
        if not self.scheme:
            return "no such directory"
        bucket, _, prefix = self.root.partition("/")
        if self.fs.get_file_info(bucket).type == pafs.FileType.NotFound:
            return f"no such bucket: {bucket}"
        return f"bucket {bucket} has no prefix {prefix}"

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of an object (``end`` None: to its end), in one ranged request;
        a missing or unreadable object is a :class:`RemoteTierError` naming it."""
        try:
            with self.fs.open_input_file(self._path(key)) as f:
                size = f.size()
                stop = size if end is None else min(end, size)
                return bytes(f.read_at(max(0, stop - start), start)) if stop > start else b""
        except (FileNotFoundError, OSError) as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise RemoteTierError(f"{self.uri(key)}: cannot be read: {first}", file=self.uri(key)) from None

    def size(self, key: str) -> int:
        """The object's size in bytes."""
        info = self.fs.get_file_info(self._path(key))
        if info.type != pafs.FileType.File:
            raise RemoteTierError(f"{self.uri(key)}: no such object", file=self.uri(key))
        return info.size or 0
