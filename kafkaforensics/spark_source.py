"""The ``kafka_segments`` PySpark data source (Spark's Python Data Source API, Spark 4).

    spark.dataSource.register(KafkaSegments)
    spark.read.format("kafka_segments").option("level", "records").load("/backups/kafka-logs")

``path`` is a segment file, a partition dir or a log dir, on any file system pyarrow reaches
(local paths and file://, hdfs://, s3:// and s3a://); several paths may be given comma-separated.
Topic and partition come from the directory names.  Each segment is a partition of the scan;
a large one is split at batch boundaries taken from its offset index (``splitBytes``, default
128 MiB).  ``level`` is ``batches`` (one row a batch, the columns of ``kfx dump --format json``),
``records`` (one row a record) or ``anomalies`` (one row per damaged region or bad batch): damage
never fails the job, the valid prefix is still read.  Schemas come from :mod:`kafkaforensics.schema`.
"""
from __future__ import annotations

import os
import posixpath

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .batch import resolve_legacy_wrapper
from .errors import KafkaFormatError
from .partition import parse_partition_dir_name
from .record_columns import decode_columns
from .schema import ANOMALY_COLUMNS, BATCH_COLUMNS, RECORD_COLUMNS, spark_ddl
from .segment import BatchScanner, offset_from_name, open_buffer

LEVELS = {"batches": BATCH_COLUMNS, "records": RECORD_COLUMNS, "anomalies": ANOMALY_COLUMNS}
DEFAULT_SPLIT_BYTES = 128 << 20


def _fs_and_path(uri: str):
    """(pyarrow FileSystem or None for local, path within it)."""
    if "://" not in uri or uri.startswith("file://"):
        return None, uri[7:] if uri.startswith("file://") else uri
    from pyarrow import fs
    if uri.startswith("s3a://") or uri.startswith("s3n://"):
        uri = "s3://" + uri.split("://", 1)[1]
    return fs.FileSystem.from_uri(uri)


def _list(uri: str):
    """Every ``<offset>.log`` under ``uri``: [(file uri, size)]."""
    fs, path = _fs_and_path(uri)
    out = []
    if fs is None:
        if os.path.isfile(path):
            return [(path, os.path.getsize(path))]
        for root, _d, files in os.walk(path):
            out += [(os.path.join(root, f), os.path.getsize(os.path.join(root, f)))
                    for f in sorted(files) if f.endswith(".log") and offset_from_name(f) is not None]
        return sorted(out)
    from pyarrow import fs as pafs
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File:
        return [(uri, info.size)]
    scheme = uri.split("://", 1)[0]
    for fi in fs.get_file_info(pafs.FileSelector(path, recursive=True)):
        if fi.type == pafs.FileType.File and fi.base_name.endswith(".log") and offset_from_name(fi.base_name) is not None:
            out.append((f"{scheme}://{fi.path}", fi.size))
    return sorted(out)


class SegmentSplit(InputPartition):
    def __init__(self, uri: str, start: int, end: int, last: bool):
        super().__init__((uri, start, end))
        self.uri, self.start, self.end, self.last = uri, start, end, last


def _split_points(uri: str, size: int, split_bytes: int) -> list[int]:
    """Batch boundaries near every ``split_bytes`` of a local segment: from its offset index, or,
    without one, from a header-only walk (17 bytes read a batch)."""
    fs, path = _fs_and_path(uri)
    if size <= split_bytes or fs is not None:
        return []
    idx = path[:-4] + ".index"
    if os.path.exists(idx):
        from .offset_index import read_entries
        with open(idx, "rb") as f:
            entries, _ = read_entries(f.read(), offset_from_name(path) or 0)
        positions = (pos for _off, pos in entries)
    else:
        def walk():
            with open_buffer(path) as buf:
                for b in BatchScanner(buf, file=path):
                    yield b.position
        positions = walk()
    points, target = [], split_bytes
    for pos in positions:
        if pos >= target and pos < size:
            points.append(pos)
            target = pos + split_bytes
    return points


class _Range:
    """A byte range of a segment as a buffer; ``shift`` turns buffer positions into file positions."""

    def __init__(self, uri: str, start: int, end: int):
        self.uri, self.start, self.end = uri, start, end

    def __enter__(self):
        fs, path = _fs_and_path(self.uri)
        if fs is None:
            self._cm = open_buffer(path)
            buf = self._cm.__enter__()
            return buf, 0, self.start, min(self.end, len(buf))
        self._cm = None
        with fs.open_input_file(path) as f:
            data = f.read_at(self.end - self.start, self.start)
        return bytes(data), self.start, 0, len(data)

    def __exit__(self, *exc):
        if self._cm is not None:
            return self._cm.__exit__(*exc)
        return False


ARROW_BATCH_ROWS = 8192
#: bytes of batches decoded together into one Arrow batch at the records level
RECORDS_RUN_BYTES = 4 << 20


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, options, level: str, schema=None):
        self.level = level
        self.spark_schema = schema
        self._schema = None
        raw = options.get("path") or options.get("paths") or ""
        self.paths = [p for p in raw.split(",") if p]
        self.split_bytes = int(options.get("splitBytes", DEFAULT_SPLIT_BYTES))

    def partitions(self):
        out = []
        for p in self.paths:
            for uri, size in _list(p):
                bounds = [0] + _split_points(uri, size, self.split_bytes) + [size]
                for i in range(len(bounds) - 1):
                    out.append(SegmentSplit(uri, bounds[i], bounds[i + 1], i == len(bounds) - 2))
                if size == 0:
                    out.append(SegmentSplit(uri, 0, 0, True))
        return out or [SegmentSplit("", 0, 0, True)]

    def read(self, split: SegmentSplit):
        if not split.uri:
            return
        name = posixpath.basename(split.uri)
        tp = parse_partition_dir_name(posixpath.dirname(split.uri.split("://", 1)[-1]))
        topic, part = tp if tp else (None, None)
        src = (topic, part, split.uri)
        base = offset_from_name(name)
        rows, run, run_bytes = [], [], 0
        with _Range(split.uri, split.start, split.end) as (buf, shift, start, end):
            sc = BatchScanner(buf, start=start, end=end if not split.last else len(buf), file=split.uri,
                              base_offset=base)
            for b in sc:
                if self.level == "records":  # decoded a run of batches at a time, straight to columns
                    if b.magic < 2 and b.count is None:
                        try:
                            resolve_legacy_wrapper(b)
                        except KafkaFormatError:
                            continue
                    run.append(b)
                    run_bytes += b.size
                    if run_bytes >= RECORDS_RUN_BYTES:
                        yield from self._records_arrow(run, src)
                        run, run_bytes = [], 0
                    continue
                rows.extend(self._rows(b, shift, src))
                if len(rows) >= ARROW_BATCH_ROWS:
                    yield self._arrow(rows)
                    rows = []
            if run:
                yield from self._records_arrow(run, src)
            if sc.stop is not None and self.level == "anomalies":
                p = sc.stop
                rows.append(src + (p.position + shift if p.position is not None else None, p.offset, p.kind, p.detail))
        if rows:
            yield self._arrow(rows)

    def _arrow_schema(self):
        if self._schema is None:
            from pyspark.sql.pandas.types import to_arrow_schema
            self._schema = to_arrow_schema(self.spark_schema)
        return self._schema

    def _records_arrow(self, run, src):
        """The records of a run of batches as one Arrow record batch, built column by column from
        :func:`~kafkaforensics.record_columns.decode_columns` (a batch that does not decode is left
        out, as the anomalies level reports it)."""
        import numpy as np
        import pyarrow as pa
        try:
            cols = decode_columns(run)
        except KafkaFormatError:
            if len(run) > 1:  # find the batch at fault: the others' records still go out
                for b in run:
                    yield from self._records_arrow([b], src)
            return
        if not len(cols):
            return
        schema = self._arrow_schema()
        n, which, bl = len(cols), cols.batch, cols.batches

        def per_batch(values):
            return np.array(values, dtype=object)[which] if values and isinstance(values[0], str) \
                else np.array(values)[which]
        data = [[src[0]] * n, [src[1]] * n, [src[2]] * n, cols.offset, cols.timestamp,
                per_batch([b.timestamp_type for b in bl]), cols.keys(), cols.values(), cols.header_lists(),
                per_batch([b.base_offset for b in bl]), per_batch([b.producer_id for b in bl]),
                per_batch([b.is_transactional for b in bl]), per_batch([b.is_control for b in bl])]
        yield pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(data, schema)], schema=schema)

    def _arrow(self, rows):
        """Rows as one Arrow record batch: Spark takes it without a per-row conversion."""
        import pyarrow as pa
        schema = self._arrow_schema()
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(cols, schema)],
                                          schema=schema)

    def _rows(self, b, shift, src):
        level = self.level
        if level == "anomalies":
            if not b.crc_valid():
                yield src + (b.position + shift, b.base_offset, "crc-mismatch",
                             f"stored CRC {b.crc} does not match the batch")
            elif b.magic < 2 and b.count is None:
                try:
                    resolve_legacy_wrapper(b)
                except KafkaFormatError as e:
                    yield src + (b.position + shift, b.base_offset, e.kind, e.problem.detail)
            return
        if b.magic < 2 and b.count is None:
            try:
                resolve_legacy_wrapper(b)
            except KafkaFormatError:
                return
        row = b.to_json()  # the batches level (records go through _records_arrow)
        row["position"] = b.position + shift
        yield src + tuple(row.values())


class KafkaSegments(DataSource):
    """``spark.read.format("kafka_segments")``."""

    @classmethod
    def name(cls):
        return "kafka_segments"

    def _level(self) -> str:
        level = self.options.get("level", "batches")
        if level not in LEVELS:
            raise ValueError(f"level must be one of {sorted(LEVELS)}, not {level!r}")
        return level

    def schema(self):
        return spark_ddl(LEVELS[self._level()])

    def reader(self, schema):
        return KafkaSegmentsReader(self.options, self._level(), schema)
