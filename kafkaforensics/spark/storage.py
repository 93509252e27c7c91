"""Where a scan's segments live: local paths (read through mmap) or any file system pyarrow
reaches -- ``s3://`` and ``s3a://`` buckets (AWS or any S3-compatible server), ``hdfs://``, ``gs://``
-- read in byte ranges.  Every byte of a segment or index is read through
:class:`~kafkaforensics.log.segment.Segment` (:meth:`Storage.segment`), whose byte source is the
local file or the object.

S3 settings come from the data source's options, else from the usual AWS environment variables:
``s3.endpoint`` (``http://host:port`` for a server of your own; ``AWS_ENDPOINT_URL``),
``s3.accessKey`` / ``s3.secretKey`` (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``),
``s3.region`` (``AWS_REGION``).  A :class:`Storage` holds only its options, so it pickles to Spark's
Python workers; each process makes its file system once.
"""
from __future__ import annotations

import os
import posixpath
import re

from specs import legacy as L
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log import offset_index
from kafkaforensics.log.batch_search import MAX_CANDIDATE_BYTES, valid_batch_at
from kafkaforensics.spark.remote_inputs import RemoteInputs
from kafkaforensics.log.segment import INDEX, INDEX, LOCAL_FILES, TIMEINDEX, ObjectFiles, Segment, offset_from_name

#: pyarrow's file systems: a fleet of local files never needs them
pafs = lazy("pyarrow.fs", globals())

#: the data source options this module reads
S3_OPTIONS = ("s3.endpoint", "s3.accessKey", "s3.secretKey", "s3.region")


#: index entries tried for each split point before that split is given up
SPLIT_TRIES = 4


class MissingInput(FileNotFoundError):
    """An input with nothing at it: no such path, bucket or prefix (one line, for exit 2)."""


class NotKafkaInput(MissingInput):
    """An input file that is no segment: nothing a scan could read at it (one line, for exit 2)."""


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def _list_local(root: str, out: list) -> None:
    """Append (path, size, is_dir) for everything under the local dir ``root`` (symbolic links to
    dirs listed, not followed, as ``os.walk`` does): one ``scandir`` a dir, one ``stat`` a file."""
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:  # gone, or not readable: as os.walk, nothing under it
            continue
        with it:
            while True:
                try:
                    e = next(it, None)
                except OSError:  # a dir that cannot be read to its end (/proc's): what it gave so far
                    break
                if e is None:
                    break
                try:
                    if e.is_dir():
                        out.append((e.path, 0, True))
                        if not e.is_symlink():
                            stack.append(e.path)
                    elif e.is_file():  # FIFOs, sockets and devices hold no segment
                        out.append((e.path, e.stat().st_size, False))
                except OSError:  # gone between the listing and the stat
                    pass


class Storage:
    """Segment files under the URIs of one scan, with the scan's storage options."""

    def __init__(self, options=None):
        options = options or {}
        self.options = {k: options[k] for k in S3_OPTIONS if options.get(k)}
        self._fs: dict = {}
        #: the remote tiers of the read (``remote``, ``remoteKeyFiles``): their segments' bytes
        self.remote = RemoteInputs(options)

    def __getstate__(self):
        return {"options": self.options, "remote": self.remote}

    def __setstate__(self, state):
        self.options, self._fs = state["options"], {}
        self.remote = state.get("remote") or RemoteInputs()

    def _s3(self):
        o = self.options
        endpoint = o.get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL")
        kw = {}
        if endpoint:
            scheme, _, host = endpoint.rpartition("://")
            kw["endpoint_override"] = host
            kw["scheme"] = scheme or "https"
        if o.get("s3.accessKey"):
            kw["access_key"] = o["s3.accessKey"]
            kw["secret_key"] = o.get("s3.secretKey", "")
        region = o.get("s3.region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            kw["region"] = region
        return pafs.S3FileSystem(**kw)

    def resolve(self, uri: str):
        """(pyarrow FileSystem, or None for a local file; the path within it)."""
        if _is_local(uri):
            return None, uri[7:] if uri.startswith("file://") else uri
        scheme, rest = uri.split("://", 1)
        if scheme in ("s3", "s3a", "s3n"):
            if "s3" not in self._fs:
                self._fs["s3"] = self._s3()
            return self._fs["s3"], rest
        return pafs.FileSystem.from_uri(uri)

    def list_entries(self, uri: str) -> list[tuple[str, int, bool]]:
        """Everything under ``uri`` (a file, a partition dir, a log dir, a fleet of them), listed
        once: [(uri, size, is_dir)], ``uri`` itself included.  Raises :class:`MissingInput` when
        there is nothing at ``uri`` (no such path, bucket or prefix) or it cannot be listed."""
        fs, path = self.resolve(uri)
        if fs is None:
            # absolute: every row's logDir and file say the same wherever the scan ran from (runs join)
            path = os.path.abspath(path) if path else path
            if os.path.isfile(path):
                return [(path, os.path.getsize(path), False)]
            if not os.path.isdir(path):
                if os.path.exists(path):
                    raise NotKafkaInput(f"{uri}: not a regular file or directory")
                raise MissingInput(f"{uri}: no such file or directory")
            root = path.rstrip("/") or "/"
            out = [(root, 0, True)]
            _list_local(root, out)
            return sorted(out)
        path = path.rstrip("/")
        scheme = uri.split("://", 1)[0]
        try:
            info = fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                return [(uri, info.size, False)]
            if info.type == pafs.FileType.NotFound:
                raise MissingInput(f"{uri}: {_what_is_missing(fs, path)}")
            listed = fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except OSError as e:
            raise MissingInput(f"{uri}: cannot be listed: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        out = [(f"{scheme}://{path}", 0, True)]
        out += [(f"{scheme}://{fi.path}", fi.size or 0, fi.type == pafs.FileType.Directory) for fi in listed]
        return sorted(out)

    def _source(self, uri: str):
        """(byte source, name within it) of ``uri``: the local file, or the object store's object."""
        fs, path = self.resolve(uri)
        return (LOCAL_FILES, path) if fs is None else (ObjectFiles(self.resolve), uri)

    def segment(self, uri: str) -> Segment:
        """The segment of the ``.log`` at ``uri``, reading its bytes where they live; its indexes are
        the files of the same stem (``...42.index``, ``...42.timeindex``).  A remote tier's segment
        (:mod:`~kafkaforensics.spark.remote_inputs`) reads through its chunks, its indexes the
        manifest's ranges of its ``.indexes`` object."""
        if self.remote and self.remote.owns(uri):
            return self.remote.segment(uri)
        source, name = self._source(uri)
        stem = name[:-4]
        base = offset_from_name(name)   # None: a .log named otherwise, walked with no offset range (Segment.of_file)
        return Segment.with_base(base, posixpath.dirname(name), file=name, source=source,
                                 named={INDEX: stem + INDEX, TIMEINDEX: stem + TIMEINDEX})

    def read_file(self, uri: str) -> bytes | None:
        """A whole small file (a checkpoint, ``meta.properties``), or None when there is none."""
        source, name = self._source(uri)
        try:
            return source.read_all(name)
        except OSError:
            return None

    def index_bytes(self, uri: str, suffix: str) -> bytes | None:
        """The bytes of the index ``suffix`` of the segment at ``uri``, or None when there is none or
        it cannot be read."""
        try:
            return self.segment(uri).file_bytes(suffix)
        except (OSError, KafkaFormatError):  # a remote tier's damaged .indexes: read as if none
            return None

    def open_range(self, uri: str, start: int, end: int | None, small: int = 0):
        """Bytes ``[start, end)`` of a segment (``end`` None: to its end) as (buffer, shift, first,
        stop): the batches lie at ``buffer[first:stop]`` and ``shift`` turns buffer positions into
        file positions.  Local files are mapped, or, when at most ``small`` bytes, read into memory
        (the buffer then outlives the ``with``); remote ones read in one ranged request
        (:meth:`Segment.bytes_range <kafkaforensics.log.segment.Segment.bytes_range>`)."""
        return self.segment(uri).bytes_range(start, end, small)

    def _pread(self, uri: str):
        """A ``read(position, n)`` of one file open for the block: up to ``n`` bytes from
        ``position`` (fewer at its end)."""
        return self.segment(uri).reader()

    def split_points(self, uri: str, size: int, split_bytes: int) -> list[int]:
        """Batch boundaries near every ``split_bytes`` of a segment: from its offset index, or,
        for a local segment without one, from a header-only walk.  An index position is taken only
        where a whole batch with a valid CRC starts there and bears out the entry's offset (its first
        offset at or below it -- Kafka indexes an append's largest offset, older brokers its first --
        and past the previous point's batch): a damaged or forged index would otherwise start a split inside
        a batch and report good records as broken framing.  At most :data:`SPLIT_TRIES` entries are
        tried for each split, so a damaged index costs a bounded number of reads."""
        if size <= split_bytes:
            return []
        if self.remote and self.remote.owns(uri):
            try:
                return self._split_points(uri, size, split_bytes)
            except KafkaFormatError:  # a damaged chunk: the reading of the whole segment says where
                return []
        return self._split_points(uri, size, split_bytes)

    def _split_points(self, uri: str, size: int, split_bytes: int) -> list[int]:
        """:meth:`split_points` of a segment larger than ``split_bytes``."""
        data = self.index_bytes(uri, INDEX)
        if data:
            base = offset_from_name(uri) or 0
            entries, _ = offset_index.read_entries(data, base)
            points, target, prior, tries = [], split_bytes, base - 1, 0
            with self._pread(uri) as read:
                for off, pos in entries:
                    if not target <= pos < size:
                        continue
                    b = _batch_in(read, pos, size)
                    if b is not None and prior < b.base_offset <= off:
                        points.append(pos)
                        target, prior, tries = pos + split_bytes, b.last_offset, 0
                    else:
                        tries += 1
                        if tries >= SPLIT_TRIES:  # a damaged stretch of the index: no split here
                            target, tries = pos + split_bytes, 0
            return points
        seg = self.segment(uri)
        if seg.source is not LOCAL_FILES:
            return []
        points, target = [], split_bytes
        with seg.bytes_range() as region:
            for b in region.walk(base_offset=None):
                if target <= b.position < size:
                    points.append(b.position)
                    target = b.position + split_bytes
        return points

    def base_offset_at(self, uri: str, position: int, size: int) -> int | None:
        """The base offset of the batch at ``position`` of a segment of ``size`` bytes, when a whole
        batch with sound framing and a valid CRC starts there (else None): where an index says a
        batch starts, before it is trusted (a remote tier's chunk that cannot be read: None)."""
        try:
            with self._pread(uri) as read:
                b = _batch_in(read, position, size)
        except KafkaFormatError:
            return None
        return None if b is None else b.base_offset


def _what_is_missing(fs, path: str) -> str:
    """Which of an object store's ``path`` (``bucket/prefix``) is missing, said once: the bucket, or
    the prefix in a bucket that is there (or both, when the bucket cannot be asked about)."""
    bucket, _, prefix = path.partition("/")
    try:
        there = fs.get_file_info(bucket).type != pafs.FileType.NotFound
    except OSError:
        return "no such bucket, prefix or object"
    if not there:
        return f"no such bucket: {bucket}"
    return f"bucket {bucket} has no prefix or object {prefix}" if prefix else f"no such bucket: {bucket}"


def _batch_in(read, position: int, size: int):
    """The batch starting at ``position`` of a segment of ``size`` bytes (read through
    ``read(position, n)``) when a whole one with sound framing and a valid CRC does, else None."""
    head = read(position, L.LOG_OVERHEAD)
    if len(head) < L.LOG_OVERHEAD:
        return None
    total = L.LOG_OVERHEAD + int.from_bytes(head[8:], "big", signed=True)
    if total < L.LOG_OVERHEAD + L.RECORD_OVERHEAD_V0 or position + total > size or total > MAX_CANDIDATE_BYTES:
        return None
    return valid_batch_at(read(position, total), 0, deep=False)


def local_path(uri: str) -> str | None:
    """The local path of a plain path or a ``file:`` URI (``file:///p``, ``file://localhost/p`` or,
    as Hadoop writes them, ``file:/p``); None for any other scheme (``s3a://``, ``hdfs:/p``, ...)
    or a file URI of another host, whose paths are not this machine's (Hadoop reads them as URIs)."""
    m = _URI.match(uri)
    if m is None:
        return uri
    if m["scheme"].lower() != "file":
        return None
    rest = m["rest"]
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        return "/" + path if host in ("", "localhost") else None
    return rest


#: a URI's scheme (as Hadoop's ``Path`` reads one: a letter, then letters, digits, ``+-.``) and the rest
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?P<rest>.*)$", re.S)
