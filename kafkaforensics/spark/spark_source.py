"""The ``kafka_segments`` PySpark data source (Spark's Python Data Source API, Spark 4).

    spark.dataSource.register(KafkaSegments)      # or spark_jobs.common.register(spark)
    spark.read.format("kafka_segments").option("level", "records").load("/backups/kafka-logs")

``path`` is a segment file, a partition dir or a log dir, on any file system pyarrow reaches
(local paths and file://, hdfs://, s3:// and s3a://); several paths may be given comma-separated.
Topic and partition come from the directory names.

Levels (``level``; schemas from :mod:`kafkaforensics.records.schema`): ``batches`` (one row a batch, the
columns of ``kfx dump --format json``), ``records`` (one row a record), ``anomalies`` (one row per
damaged region or bad batch) and ``scan`` (all three in one read, ``rowKind`` saying which; records
only with ``scanRecords``).

Integrity: every records row carries ``crcValid``.  The records of a batch whose CRC fails are left
out (the anomalies level reports the batch); ``includeCorrupt=true`` exports them with ``crcValid``
false.  A batch whose records cannot be decoded is left out and reported.  The walk of a segment
goes on after a bad batch whose framing is sound; where the framing breaks (a length out of
bounds, zeroes, garbage, a torn tail) it stops: the rest of that segment is one anomaly (kind and
byte position) and is not read -- ``kfx salvage`` finds the batches past it.

Planning: each segment is a scan partition, a large one split at batch boundaries taken from its
offset index (``splitBytes``, default 128 MiB; smaller so that a scan has at least
``minPartitions`` pieces, default the machine's cores -- ``spark_jobs.common.read`` passes the
session's parallelism -- but not under 8 MiB).  Filters on ``topic``, ``partition``, ``offset``,
``timestamp`` and ``key`` (``baseOffset``/``lastOffset``/``maxTimestamp`` at the batches level) are
pushed into the reader (Spark 4.1+, ``spark.sql.python.filterPushdown.enabled``, which
``spark_jobs.common.register`` sets; ``pushdown=false`` reads without it) and prune segments and
byte ranges through the ``.index``/``.timeindex`` files as :mod:`kafkaforensics.spark.scan_plan` says
(``timestampDisorderMs``: the bound on timestamp disorder used for a window's end).
"""
from __future__ import annotations

import os
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from kafkaforensics.log import offset_index, record_arrow, time_index
from kafkaforensics.log.record_columns import decode_columns
from kafkaforensics.records.batch import resolve_legacy_wrapper
from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import parse_partition_dir_name
from kafkaforensics.spark.scan_plan import DEFAULT_DISORDER_MS, Bounds, Range, SegmentIndexes, bounds_from_filters, segment_range
from kafkaforensics.records.schema import ANOMALY_COLUMNS, BATCH_COLUMNS, RECORD_COLUMNS, SCAN_COLUMNS, spark_ddl
from kafkaforensics.log.segment import BatchScanner, offset_from_name
from kafkaforensics.spark.storage import Storage

LEVELS = {"batches": BATCH_COLUMNS, "records": RECORD_COLUMNS, "anomalies": ANOMALY_COLUMNS, "scan": SCAN_COLUMNS}


class SegmentSplit(InputPartition):
    """One scan partition: bytes ``[start, end)`` of a segment (``last``: to the file's end), and
    the offsets the scan keeps from it (None: no bound)."""

    def __init__(self, uri: str, start: int, end: int, last: bool,
                 first_offset: int | None = None, last_offset: int | None = None):
        super().__init__((uri, start, end))
        self.uri, self.start, self.end, self.last = uri, start, end, last
        self.first_offset, self.last_offset = first_offset, last_offset


ARROW_BATCH_ROWS = 8192
#: bytes of batches decoded together into one Arrow batch at the records level
RECORDS_RUN_BYTES = 4 << 20
#: a segment is not split into pieces smaller than this to spread a small scan over the cores
MIN_SPLIT_BYTES = 8 << 20
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")


def _true(v) -> bool:
    return str(v).lower() in ("1", "true", "yes")


def _segment_indexes(storage: Storage, uri: str, base: int) -> SegmentIndexes:
    stem = uri[:-4]
    ix = SegmentIndexes(base)
    data = storage.read_file(stem + ".index")
    if data:
        ix.offsets = offset_index.read_entries(data, base)[0]
    data = storage.read_file(stem + ".timeindex")
    if data:
        ix.times = time_index.read_entries(data, base)[0]
    return ix


def _source(uri: str) -> tuple:
    """(topic, partition, file) of a segment, topic and partition from its directory's name."""
    tp = parse_partition_dir_name(posixpath.dirname(uri.split("://", 1)[-1]))
    return (tp[0], tp[1], uri) if tp else (None, None, uri)


class KafkaSegmentsReader(DataSourceReader):
    """Reads the segments of ``path`` at one level; see the module's docstring for the options."""

    def __init__(self, options, level: str, schema=None):
        self.level = level
        self.spark_schema = schema
        self._schema = None
        raw = options.get("path") or options.get("paths") or ""
        self.paths = [p for p in raw.split(",") if p]
        self.split_bytes = int(options.get("splitBytes", DEFAULT_SPLIT_BYTES))
        self.min_partitions = int(options.get("minPartitions", os.cpu_count() or 1))
        self.include_corrupt = _true(options.get("includeCorrupt", "false"))
        self.scan_records = _true(options.get("scanRecords", "false"))
        self.disorder_ms = int(options.get("timestampDisorderMs", DEFAULT_DISORDER_MS))
        self.bounds = Bounds(disorder_ms=self.disorder_ms)
        self.storage = Storage(options)

    def pushFilters(self, filters):
        """Prune with what the filters allow (see :mod:`~kafkaforensics.spark.scan_plan`); every filter
        is still returned for Spark to apply to the rows (pruning is by batch, not by row)."""
        filters = list(filters)
        self.bounds = bounds_from_filters(filters, self.disorder_ms)
        if self.level in ("anomalies", "scan"):  # damage is reported whole: only topic and partition prune it
            self.bounds = Bounds(topics=self.bounds.topics, partitions=self.bounds.partitions)
        return filters

    def plan(self) -> list[tuple[str, Range, int]]:
        """Every segment's range to read: (uri, range, file size), segments the bounds exclude
        left out."""
        by_dir: dict = {}
        for p in self.paths:
            for uri, size in self.storage.list_segments(p):
                by_dir.setdefault(posixpath.dirname(uri), []).append((offset_from_name(uri) or 0, uri, size))
        out = []
        b = self.bounds
        for d in sorted(by_dir):
            segs = sorted(by_dir[d])
            topic, part, _ = _source(segs[0][1])
            if not b.wants(topic, part):
                continue
            prior = None
            for i, (base, uri, size) in enumerate(segs):
                nxt = segs[i + 1][0] if i + 1 < len(segs) else None
                r, seg_max = segment_range(b, base, nxt, lambda: _segment_indexes(self.storage, uri, base), prior)
                if seg_max is not None:
                    prior = seg_max if prior is None else max(prior, seg_max)
                if r is not None:
                    out.append((uri, r, size))
        return out

    def partitions(self):
        plan = self.plan()
        total = sum((r.end if r.end is not None else size) - r.start for _u, r, size in plan)
        split = min(self.split_bytes, max(MIN_SPLIT_BYTES, -(-total // max(1, self.min_partitions))))
        out = []
        for uri, r, size in plan:
            end = size if r.end is None else min(r.end, size)
            points = [p for p in self.storage.split_points(uri, size, split) if r.start < p < end]
            bounds = [r.start] + points + [end]
            for i in range(len(bounds) - 1):
                out.append(SegmentSplit(uri, bounds[i], bounds[i + 1], i == len(bounds) - 2 and r.end is None,
                                        r.first_offset, r.last_offset))
            if size == 0 or r.start >= end:
                out.append(SegmentSplit(uri, r.start, r.start, True, r.first_offset, r.last_offset))
        return out or [SegmentSplit("", 0, 0, True)]

    def _batches(self, sc: BatchScanner, split: SegmentSplit):
        """The scanner's batches the bounds can want, stopping where nothing later can be."""
        b = self.bounds
        first, last, stop = split.first_offset, split.last_offset, b.ts_stop
        everything = self.level in ("anomalies", "scan")
        running = None
        for batch in sc:
            if batch.magic < 2 and batch.count is None:
                try:
                    resolve_legacy_wrapper(batch)
                except KafkaFormatError:
                    if everything:
                        yield batch
                    continue
            if everything:
                yield batch
                continue
            if last is not None and batch.base_offset > last:
                return
            if (first is None or batch.last_offset >= first) and b.batch_wanted(batch):
                yield batch
            if stop is not None and batch.magic > 0:
                running = batch.max_timestamp if running is None else max(running, batch.max_timestamp)
                if running > stop:
                    return

    def read(self, split: SegmentSplit):
        if not split.uri:
            return
        src = _source(split.uri)
        base = offset_from_name(posixpath.basename(split.uri))
        level = self.level
        records = level == "records" or (level == "scan" and self.scan_records)
        rows, run, run_bytes = [], [], 0
        with self.storage.open_range(split.uri, split.start, None if split.last else split.end) as (
                buf, shift, start, end):
            sc = BatchScanner(buf, start=start, end=end, file=split.uri, base_offset=base)
            for b in self._batches(sc, split):
                if level != "records":
                    rows.extend(self._rows(b, shift))
                    if len(rows) >= ARROW_BATCH_ROWS:
                        yield self._arrow(rows, src)
                        rows = []
                if records:  # decoded a run of batches at a time, straight to columns
                    run.append(b)
                    run_bytes += b.size
                    if run_bytes >= RECORDS_RUN_BYTES:
                        yield from self._records_arrow(run, src, shift)
                        run, run_bytes = [], 0
            if run:
                yield from self._records_arrow(run, src, shift)
            if sc.stop is not None and level in ("anomalies", "scan"):
                p = sc.stop
                rows.append({"rowKind": "anomaly", "offset": p.offset, "kind": p.kind, "detail": p.detail,
                             "position": p.position + shift if p.position is not None else None})
        if rows:
            yield self._arrow(rows, src)

    def _arrow_schema(self):
        if self._schema is None:
            self._schema = to_arrow_schema(self.spark_schema, timezone="UTC")
        return self._schema

    def _records_arrow(self, run, src, shift):
        """The records of a run of batches as Arrow record batches, built from the columnar
        decoder's spans with no Python object per record.  A batch whose CRC fails is left out
        (``includeCorrupt``: kept, with ``crcValid`` false); a batch that does not decode is left
        out, as the anomalies level reports it."""
        crc = [b.crc_valid() for b in run]
        if not self.include_corrupt and not all(crc):
            run = [b for b, ok in zip(run, crc) if ok]
            crc = [True] * len(run)
        if not run:
            return
        try:
            cols = decode_columns(run)
        except KafkaFormatError:
            if len(run) > 1:  # find the batch at fault: the others' records still go out
                for b in run:
                    yield from self._records_arrow([b], src, shift)
            return
        if len(cols):
            yield self._columns_arrow(cols, crc, src, shift)

    def _columns_arrow(self, cols, crc, src, shift):
        schema = self._arrow_schema()
        n, which, bl = len(cols), cols.batch, cols.batches
        types = {f.name: f.type for f in schema}
        key = record_arrow.spans(cols.buf, cols.key_start, cols.key_length)
        ts_type = np.array([_TIMESTAMP_TYPES.index(b.timestamp_type) for b in bl], np.int64)
        column = {
            "topic": record_arrow.constant(src[0], n, types["topic"]),
            "partition": record_arrow.constant(src[1], n, types["partition"]),
            "file": record_arrow.constant(src[2], n, types["file"]),
            "rowKind": record_arrow.constant("record", n, pa.string()),
            "offset": pa.array(cols.offset, types["offset"]),
            "timestamp": pa.array(cols.timestamp, types["timestamp"]),
            "timestampType": pa.array(_TIMESTAMP_TYPES, types["timestampType"]).take(pa.array(ts_type[which])),
            "key": key,
            "value": record_arrow.spans(cols.buf, cols.value_start, cols.value_length),
            "headers": record_arrow.headers(cols, types["headers"]),
            "batchBaseOffset": record_arrow.per_batch([b.base_offset for b in bl], which, types["batchBaseOffset"]),
            "batchPosition": record_arrow.per_batch([b.position + shift for b in bl], which, types["batchPosition"]),
            "producerId": record_arrow.per_batch([b.producer_id for b in bl], which, types["producerId"]),
            "isTransactional": record_arrow.per_batch([b.is_transactional for b in bl], which,
                                                      types["isTransactional"]),
            "isControl": record_arrow.per_batch([b.is_control for b in bl], which, types["isControl"]),
            "crcValid": record_arrow.per_batch(crc, which, types["crcValid"]),
        }
        batch = pa.RecordBatch.from_arrays([column[f.name] if f.name in column else pa.nulls(n, f.type)
                                            for f in schema], schema=schema)
        if self.bounds.keys is None:
            return batch
        wanted = pa.array(sorted(self.bounds.keys), pa.binary())
        return batch.filter(pc.fill_null(pc.is_in(key, value_set=wanted), False))

    def _arrow(self, rows, src):
        """Batch and anomaly rows (dicts by column name) as one Arrow record batch; a column a
        row does not have is null."""
        schema = self._arrow_schema()
        topic, partition, file = src
        for r in rows:
            r["topic"], r["partition"], r["file"] = topic, partition, file
        return pa.RecordBatch.from_pylist(rows, schema=schema)

    def _rows(self, b, shift):
        """The batches-level row of ``b`` and the anomalies its header or records show, as the
        level wants them."""
        problem, wrapped = None, True
        if not b.crc_valid():
            problem = ("crc-mismatch", f"stored CRC {b.crc} does not match the batch")
        elif b.magic < 2 and b.count is None:
            try:
                resolve_legacy_wrapper(b)
            except KafkaFormatError as e:
                problem, wrapped = (e.kind, e.problem.detail), False
        if self.level != "anomalies" and wrapped:
            row = b.to_json()  # the batches level (records go through _records_arrow)
            row["position"] = b.position + shift
            row["rowKind"] = "batch"
            yield row
        if problem and self.level != "batches":
            yield {"rowKind": "anomaly", "position": b.position + shift, "offset": b.base_offset,
                   "kind": problem[0], "detail": problem[1]}


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
        if not _true(self.options.get("pushdown", "true")):
            return _UnprunedReader(self.options, self._level(), schema)
        return KafkaSegmentsReader(self.options, self._level(), schema)


class _UnprunedReader(KafkaSegmentsReader):
    """The reader without filter pushdown (``pushdown=false``), for sessions that leave
    ``spark.sql.python.filterPushdown.enabled`` off."""

    pushFilters = DataSourceReader.pushFilters
