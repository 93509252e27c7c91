"""Where a scan's segments live: local paths (read through mmap) or any file system pyarrow
reaches -- ``s3://`` and ``s3a://`` buckets (AWS or any S3-compatible server), ``hdfs://``, ``gs://``
-- read in byte ranges.

S3 settings come from the data source's options, else from the usual AWS environment variables:
``s3.endpoint`` (``http://host:port`` for a server of your own; ``AWS_ENDPOINT_URL``),
``s3.accessKey`` / ``s3.secretKey`` (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``),
``s3.region`` (``AWS_REGION``).  A :class:`Storage` holds only its options, so it pickles to Spark's
Python workers; each process makes its file system once.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from specs.lazy import lazy

from kafkaforensics.log import offset_index
from kafkaforensics.log.segment import BatchScanner, offset_from_name, open_buffer

#: pyarrow's file systems: a fleet of local files never needs them
pafs = lazy("pyarrow.fs", globals())

#: the data source options this module reads
S3_OPTIONS = ("s3.endpoint", "s3.accessKey", "s3.secretKey", "s3.region")


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


class Storage:
    """Segment files under the URIs of one scan, with the scan's storage options."""

    def __init__(self, options=None):
        options = options or {}
        self.options = {k: options[k] for k in S3_OPTIONS if options.get(k)}
        self._fs: dict = {}

    def __getstate__(self):
        return {"options": self.options}

    def __setstate__(self, state):
        self.options, self._fs = state["options"], {}

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

    def list_segments(self, uri: str) -> list[tuple[str, int]]:
        """Every ``<offset>.log`` under ``uri`` (a file, a partition dir, a log dir): [(uri, size)]."""
        fs, path = self.resolve(uri)
        out = []
        if fs is None:
            if os.path.isfile(path):
                return [(path, os.path.getsize(path))]
            for root, _d, files in os.walk(path):
                out += [(os.path.join(root, f), os.path.getsize(os.path.join(root, f)))
                        for f in sorted(files) if f.endswith(".log") and offset_from_name(f) is not None]
            return sorted(out)
        path = path.rstrip("/")
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File:
            return [(uri, info.size)]
        scheme = uri.split("://", 1)[0]
        for fi in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True)):
            if fi.type == pafs.FileType.File and fi.base_name.endswith(".log") and offset_from_name(fi.base_name) is not None:
                out.append((f"{scheme}://{fi.path}", fi.size))
        return sorted(out)

    def read_file(self, uri: str) -> bytes | None:
        """A whole small file (an index), or None when there is none."""
        fs, path = self.resolve(uri)
        try:
            if fs is None:
                with open(path, "rb") as f:
                    return f.read()
            with fs.open_input_file(path) as f:
                return f.read()
        except (FileNotFoundError, OSError):
            return None

    @contextmanager
    def open_range(self, uri: str, start: int, end: int | None):
        """Bytes ``[start, end)`` of a segment (``end`` None: to its end) as (buffer, shift, first,
        stop): the batches lie at ``buffer[first:stop]`` and ``shift`` turns buffer positions into
        file positions.  Local files are mapped; remote ones read in one ranged request."""
        fs, path = self.resolve(uri)
        if fs is None:
            with open_buffer(path) as buf:
                yield buf, 0, start, len(buf) if end is None else min(end, len(buf))
            return
        with fs.open_input_file(path) as f:
            size = f.size()
            stop = size if end is None else min(end, size)
            data = f.read_at(max(0, stop - start), start)
        yield bytes(data), start, 0, len(data)

    def split_points(self, uri: str, size: int, split_bytes: int) -> list[int]:
        """Batch boundaries near every ``split_bytes`` of a segment: from its offset index, or,
        for a local segment without one, from a header-only walk."""
        if size <= split_bytes:
            return []
        data = self.read_file(uri[:-4] + ".index")
        if data:
            entries, _ = offset_index.read_entries(data, offset_from_name(uri) or 0)
            positions = (pos for _off, pos in entries)
        else:
            fs, path = self.resolve(uri)
            if fs is not None:
                return []

            def walk():
                with open_buffer(path) as buf:
                    for b in BatchScanner(buf, file=path):
                        yield b.position
            positions = walk()
        points, target = [], split_bytes
        for pos in positions:
            if target <= pos < size:
                points.append(pos)
                target = pos + split_bytes
        return points
