"""Reads of ``kafka_segments``: by Spark's own data source API, or planned here, in the driver, and read
in the driver or by Spark's tasks; the inputs' one listing."""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkaforensics.records import schema as records_schema
from kafkaforensics.spark import scan_plan as spark_scan_plan  # annotations only
from kafkaforensics.spark import spark_source
from kafkaforensics.spark import storage as spark_storage
from kafkaforensics.spark.engine import held_in_driver
from specs.lazy import lazy
from spark_jobs.job_args import fail

if TYPE_CHECKING:  # annotations only: pyspark and pyarrow are imported on first use (below)
    import pyarrow as pa
    from pyspark import Broadcast
    from pyspark.sql import DataFrame

#: imported on first use (specs/lazy.py)
pyarrow = lazy("pyarrow", globals())
pyspark_sql_datasource = lazy("pyspark.sql.datasource", globals())
pyspark_sql_pandas_types = lazy("pyspark.sql.pandas.types", globals())

#: a read in the driver (:func:`read_planned`, :func:`read_here`) is held there only while its table stays within this many bytes (a compressed segment's records can take
#: many times its bytes): past them the driver drops what it read and Spark's tasks read it
DRIVER_TABLE_BYTES = 128 << 20


def reader_options(paths, level: str, split_bytes: int | None, options: dict | None, min_partitions: int) -> dict:
    """The source options of a read: the level, ``minPartitions``, the split size, the caller's
    options (which win), then the paths."""
    out = {"level": level, "minPartitions": str(min_partitions)}
    if split_bytes:
        out["splitBytes"] = str(split_bytes)
    out.update({k: str(v) for k, v in (options or {}).items()})
    out["path"] = ",".join(paths) if isinstance(paths, (list, tuple)) else paths
    return out


def source_for(paths, level: str, split_bytes: int | None, options: dict | None, min_partitions: int):
    """The ``kafka_segments`` source Spark would create for such a read, its options case-insensitive
    as Spark gives them: for planning in the driver (:func:`read_planned`, ``kfx scan``'s plan)."""
    return spark_source.KafkaSegments(pyspark_sql_datasource.CaseInsensitiveDict(
        reader_options(paths, level, split_bytes, options, min_partitions)))


def listing_of(paths, options: dict | None = None) -> spark_scan_plan.Layout:
    """The inputs ``paths`` listed once, one listing per input, and sorted out
    (:class:`~kafkaforensics.spark.scan_plan.Layout`): for the reads of one scan to share
    (:func:`read_planned`).  Raises :class:`~kafkaforensics.spark.storage.MissingInput` for an input
    with nothing at it."""
    return source_for(paths, "scan", None, options, 1).reader(None).listing()


def read(spark, paths, level: str, split_bytes: int | None = None, options: dict | None = None):
    """``paths`` read by ``kafka_segments`` at ``level``, with the source's ``options``; the scan is
    spread over at least the session's default parallelism.  The level's schema is given, so that
    Spark need not start a Python worker to ask the source for it."""
    opts = reader_options(paths, level, split_bytes, options, spark.sparkContext.defaultParallelism)
    path = opts.pop("path")
    r = spark.read.format("kafka_segments").options(**opts)
    if level in records_schema.SOURCE_LEVELS:  # else the source says which levels there are
        decode = spark_source.read_options(opts)["decode"]
        r = r.schema(records_schema.spark_ddl(records_schema.level_columns(level, decode)))
    return r.load(path)


@dataclass
class PlannedRead:
    """A read planned in the driver (:func:`read_planned`): the DataFrame, the splits, and either
    the broadcast that ships them to the tasks that read them (one task each, with ``reader``) or,
    for a read done in the driver, the Arrow table it read and each split's rows of it."""
    frame: DataFrame
    splits: list
    reader: spark_source.KafkaSegmentsReader
    shipped: Broadcast | None = None
    table: pa.Table | None = None
    #: for a read done in the driver, the rows of each split in ``table`` (in order)
    split_rows: list | None = None

    def held_splits(self):
        """For a read done in the driver, each split's number and its rows of ``table`` (Arrow batches)."""
        table, start = self.table, 0
        if table is None:
            return
        for i, n in enumerate(self.split_rows or ()):
            yield i, table.slice(start, n).to_batches()
            start += n

    def release(self) -> None:
        """Drop the shipped splits once nothing will compute ``frame`` again."""
        if self.shipped is not None:
            self.shipped.destroy()


def frame_of(spark, table, schema=None):
    """An Arrow table held in the driver as a DataFrame (``schema``: its Spark schema, else the one its
    Arrow schema says); pyspark refuses an empty table as Arrow, so that one is made from no rows."""
    if table.num_rows == 0:
        return spark.createDataFrame([], schema or pyspark_sql_pandas_types.from_arrow_schema(table.schema))
    return spark.createDataFrame(table, schema)


def segment_bytes(splits) -> int:
    """The bytes of segments ``splits`` read."""
    return sum(p.bytes for s in splits for p in s.pieces if p.kind == "segment")


def _read_in_driver(reader, splits, limit: int, split_rows: list | None = None):
    """Every split read here into one Arrow table, or None once its batches pass ``limit`` bytes;
    ``split_rows``: given, each split's rows are appended to it."""
    batches, size = [], 0
    for split in splits:
        rows = 0
        for batch in reader.read(split):
            size += batch.nbytes
            if size > limit:
                return None
            batches.append(batch)
            rows += batch.num_rows
        if split_rows is not None:
            split_rows.append(rows)
    return pyarrow.Table.from_batches(batches, schema=reader.arrow_schema())


def planned_reader(paths, level: str, split_bytes: int | None, options: dict | None, min_partitions: int,
                   listing: spark_scan_plan.Layout | None = None):
    """(the source's reader, the level's Spark schema, its splits) for a read planned here, in this
    process, as Spark would plan it: :func:`read_planned`'s and :func:`read_here`'s plan."""
    source = source_for(paths, level, split_bytes, options, min_partitions)
    schema = spark_source.spark_schema(source._level(), spark_source.read_options(source.options)["decode"])
    reader = source.reader(schema)
    return reader, schema, reader.partitions(listing)


def read_here(paths, level: str, split_bytes: int | None = None, options: dict | None = None,
              min_partitions: int | None = None, listing: spark_scan_plan.Layout | None = None):
    """(``paths`` read at ``level`` in this process into one Arrow table, its splits), with no Spark
    at all: the same reader, splits and rows as :func:`read_planned`.  The table is None when it
    would pass :data:`DRIVER_TABLE_BYTES` (Spark's tasks must read it)."""
    reader, _, splits = planned_reader(paths, level, split_bytes, options, min_partitions or os.cpu_count() or 1,
                                       listing)
    return _read_in_driver(reader, splits, DRIVER_TABLE_BYTES), splits


def read_planned(spark, paths, level: str, split_bytes: int | None = None, options: dict | None = None,
                 driver_bytes: int = 0, listing: spark_scan_plan.Layout | None = None) -> PlannedRead:
    """``paths`` read at ``level`` as :func:`read` reads them -- the same source, options, splits and
    rows (``tests/test_spark.py`` proves them equal) -- but planned here, in the driver's Python, and
    read by ``mapInArrow`` over the split numbers: Spark starts none of the Python processes a
    Python data source is created and planned in (two, and seconds of a short run's cold JVM:
    benchmarks/README.md, session 16).  On a local master, splits of at most ``driver_bytes`` of
    segments are read here, by the same reader, into one Arrow table the frame is made from (no
    Python worker at all) while that table stays within :data:`DRIVER_TABLE_BYTES`.  ``kfx scan``
    reads so; nothing is pushed into such a read (a ``where`` on it filters the rows read).
    ``listing``: the inputs' listing (:func:`listing_of`), when the caller has one, else they are
    listed here."""
    reader, schema, splits = planned_reader(paths, level, split_bytes, options, spark.sparkContext.defaultParallelism,
                                            listing)
    if held_in_driver(spark.sparkContext.master, segment_bytes(splits), driver_bytes):
        split_rows: list = []
        table = _read_in_driver(reader, splits, DRIVER_TABLE_BYTES, split_rows)
        if table is not None:
            # in as many partitions as Spark's tasks would read it in, at most: an export writes as
            # many files (pyspark slices a table into many: 16 for 24 MB)
            return PlannedRead(frame_of(spark, table, schema).coalesce(len(splits)), splits, reader, table=table,
                               split_rows=split_rows)
    shipped = spark.sparkContext.broadcast([pickle.dumps(s) for s in splits])
    frame = spark.range(0, len(splits), 1, len(splits)).mapInArrow(spark_source.SplitReads(reader, shipped), schema)
    return PlannedRead(frame, splits, reader, shipped)


def check_inputs(paths, options=None) -> spark_scan_plan.Layout:
    """Exit 2 with one line when an input has nothing at it (no such path, bucket or prefix):
    the source's own listing, done before any Spark work.  Returns that listing
    (:func:`listing_of`), which a scan reads from."""
    try:
        return listing_of(paths, options)
    except spark_storage.MissingInput as e:
        fail(str(e))
