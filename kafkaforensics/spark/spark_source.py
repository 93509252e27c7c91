"""The ``kafka_segments`` PySpark data source (Spark's Python Data Source API, Spark 4).

    spark.dataSource.register(KafkaSegments)      # or spark_jobs.session.register(spark)
    spark.read.format("kafka_segments").option("level", "records").load("/backups/kafka-logs")

``path`` is a segment file, a partition dir, a log dir or a tree of log dirs (a fleet), on any file
system pyarrow reaches (local paths and file://, hdfs://, s3:// and s3a://); several paths may be
given comma-separated.  A path with nothing at it (no such file, bucket or prefix) is an error.

Every row says where it came from: ``logDir`` (the partition dir's parent), ``brokerId`` and
``clusterId`` (the log dir's ``meta.properties``: ``node.id`` or ``broker.id``, ``cluster.id``; null
where there is none), ``topic`` and ``partition`` (the partition dir's name), ``partitionDir`` (that
name itself: a ``topic-N.<id>-delete``, ``-future`` or ``-stray`` copy Kafka set aside is told from
the live ``topic-N`` by it) and ``file``.

Levels (``level``; schemas from :mod:`kafkaforensics.records.schema`): ``batches`` (one row a batch, the
columns of ``kfx dump --format json``), ``records`` (one row a record), ``anomalies`` (one row per
damaged region, bad batch, stray file) and ``scan`` (all of them in one read, ``rowKind`` saying
which, plus one ``partition`` row per partition dir and one ``segment`` row per segment file read,
empty ones included; records only with ``scanRecords``).  Timestamps are epoch-ms longs with a Spark TIMESTAMP beside them
(``timestampUtc``, ``firstTimestampUtc``, ``maxTimestampUtc``; null for -1, and past the year 9999,
which no TIMESTAMP holds).

Integrity: every records row carries ``crcValid``.  The records of a batch whose CRC fails are left
out (the anomalies level reports the batch and its records as not read); ``includeCorrupt=true``
exports them with ``crcValid`` false -- all but a compressed one whose payload does not decompress,
which its anomaly row says.  The walk of a segment goes on after a bad batch whose framing is sound;
where the framing breaks (a length out of bounds, zeroes, garbage, a torn tail) it stops: the rest
of that segment is one anomaly (kind, byte position, the first offset not read, the bytes -- and
the records, when the next segment's base offset tells -- not read); ``kfx salvage`` finds the
batches past it.  A file Kafka does not write in a log dir or partition dir is a ``stray-file``
anomaly.

Planning (as Spark's own file sources): one listing of the inputs; pieces -- whole segments, or a
large one's byte ranges cut at batch boundaries from its offset index, where the batch there bears
the index out -- packed into scan partitions
of at most ``maxPartitionBytes`` (default 128 MiB; ``splitBytes`` is the old name) counting
``openCostInBytes`` (default 64 KiB, measured) a piece, less when the scan would otherwise leave some of
``minPartitions`` cores idle (``spark_jobs.planned_read.read`` passes the session's parallelism).  One
task reads many small segments; a task's Arrow batches span its segments.

Windows: ``topics``, ``partitions`` (comma-separated), ``fromOffset``/``toOffset`` (inclusive),
``fromTimestamp`` (inclusive)/``toTimestamp`` (exclusive, epoch ms) restrict every level, the scan
level included (its anomalies are then those in the bytes read).  Filters on ``topic``,
``partition``, ``offset``, ``timestamp`` and ``key`` (``baseOffset``/``lastOffset``/``maxTimestamp`` at
the batches level) are pushed into the reader too (Spark 4.1+,
``spark.sql.python.filterPushdown.enabled``, which ``spark_jobs.session.register`` sets;
``pushdown=false`` reads without it).  Both prune segments and byte ranges through the
``.index``/``.timeindex`` files exactly, as :mod:`kafkaforensics.spark.scan_plan` says
(``timestampDisorderMs``, opt-in, also prunes a window's end under a stated bound on timestamp
disorder, which can lose later records).
"""
from __future__ import annotations

from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                    InputPartition, LessThan, LessThanOrEqual)
import contextlib
import dataclasses
import difflib
import functools
import json
import os
import pickle
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from kafkaforensics.log import offset_index, record_arrow, time_index
from kafkaforensics.log.record_columns import decode_columns
from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.records.batch import resolve_legacy_wrapper
from kafkaforensics.records.schema import SOURCE_LEVELS, level_columns, spark_columns, spark_ddl
from kafkaforensics.log.schema_topic import load_schema_store
from kafkaforensics.records.schema_decode import SchemaDecoder
from kafkaforensics.log.partition import LogDir, partition_of_dir_name
from kafkaforensics.log.segment import INDEX, TIMEINDEX, BatchScanner, LogSlice, release_pages
from kafkaforensics.log.indexing import SegmentIndexes
from kafkaforensics.spark.scan_plan import (OPEN_COST_BYTES, Bounds, Layout, PlanStep, Source, bounds_from_filters,
                                            bounds_from_options, layout, merge, pack, segment_base, segment_range,
                                            split_size)
from kafkaforensics.spark import parquet_dir
from kafkaforensics.spark.record_runs import BatchColumns, FileRun
from kafkaforensics.spark.remote_inputs import REMOTE, REMOTE_OPTIONS
from kafkaforensics.spark.storage import S3_OPTIONS, NotKafkaInput, Storage
from kafkaforensics.records import walks

class _Run:
    """Batches waiting to be decoded together: (batch, source, uri, shift) each, and their bytes."""

    __slots__ = ("items", "bytes")

    def __init__(self):
        self.items, self.bytes = [], 0


class FleetSplit(InputPartition):
    """One scan partition: the :class:`~kafkaforensics.spark.scan_plan.PlanStep` s one task reads."""

    def __init__(self, index: int, pieces: list):
        super().__init__(index)
        self.pieces = pieces

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.pieces)


ARROW_BATCH_ROWS = 8192
#: bytes of batches decoded together into one Arrow batch at the records level (across segments)
RECORDS_RUN_BYTES = 4 << 20
#: a local segment up to this size is read into memory rather than mapped (cheaper for small ones,
#: and its batches can then wait in a run that spans segments)
SMALL_FILE_BYTES = 4 << 20


#: every option the source reads: its kind -- ``int``, ``bool`` (true/false, 1/0, yes/no), ``ints``
#: (comma-separated) or ``text`` -- and its value when it is not given (None: none); Spark hands a
#: data source its options by any case.  The reader takes them through :func:`read_options` only.
SOURCE_OPTIONS = {"level": ("text", "batches"), "path": ("text", ""), "paths": ("text", ""),
                  "maxPartitionBytes": ("int", DEFAULT_SPLIT_BYTES), "splitBytes": ("int", None),
                  "openCostInBytes": ("int", OPEN_COST_BYTES), "minPartitions": ("int", None),
                  "includeCorrupt": ("bool", False), "scanRecords": ("bool", False), "pushdown": ("bool", True),
                  "topics": ("text", None), "partitions": ("ints", None), "fromOffset": ("int", None),
                  "toOffset": ("int", None), "fromTimestamp": ("int", None), "toTimestamp": ("int", None),
                  "timestampDisorderMs": ("int", None), "decode": ("bool", False), "schemas": ("text", None),
                  "schemaRegistry": ("text", None), **{k: ("text", None) for k in S3_OPTIONS},
                  **{k: ("text", None) for k in REMOTE_OPTIONS}}
_OPTION_NAMES = {k.lower(): k for k in SOURCE_OPTIONS}
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")


class SourceOptionError(ValueError):
    """An option ``kafka_segments`` does not read, or a value it could not use: the user's mistake,
    said in one line (see :func:`one_line_in_spark`)."""


def _unknown(key: str) -> str:
    """What to say of ``key``, an option the source does not read: its name (as Spark handed it
    over: lower-cased) and the closest option the source reads, by the source's own spelling."""
    close = difflib.get_close_matches(str(key).lower(), _OPTION_NAMES, n=1, cutoff=0.6)
    return f"{key}: no such kafka_segments option" + (f"; did you mean {_OPTION_NAMES[close[0]]}?" if close else "")


def _option_name(key: str) -> str:
    """``key`` as the source spells it; SourceOptionError, naming it, for an option the source does not read."""
    _check_names([key])
    return _OPTION_NAMES[str(key).lower()]


def _check_names(keys) -> None:
    """SourceOptionError naming every one of ``keys`` the source does not read (in order of name:
    Spark hands the options over in no order), each with the closest option it reads."""
    unknown = sorted(str(k) for k in keys if str(k).lower() not in _OPTION_NAMES)
    if unknown:
        raise SourceOptionError(f"{'; '.join(_unknown(k) for k in unknown)} (its options: {', '.join(sorted(SOURCE_OPTIONS))})")


@contextlib.contextmanager
def one_line_in_spark():
    """Around what Spark's Python worker calls of the source (``schema``, ``reader``): a
    :class:`SourceOptionError` reaches the user as its one line.  The worker formats the error it
    catches with its traceback (17 lines inside Spark's ``AnalysisException``) unless
    ``SPARK_HIDE_TRACEBACK`` is set in its environment, which it reads as it formats; the worker
    exits after reporting an error, so setting it there hides no other error's traceback."""
    try:
        yield
    except SourceOptionError:
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
        raise


def checked_option(key: str, value: str) -> tuple[str, str]:
    """``key`` as the source spells it and ``value`` checked against its kind (:data:`SOURCE_OPTIONS`);
    ValueError, naming the option, for one the source does not read or a value it could not use."""
    name = _option_name(key)
    _typed(name, value)
    return name, value


def _typed(name: str, value):
    """An option's value as its kind (:data:`SOURCE_OPTIONS`); ValueError, naming it, for a bad one."""
    kind = SOURCE_OPTIONS[name][0]
    try:
        if kind == "int":
            return int(value)
        if kind == "ints":
            return [int(x) for x in str(value).split(",") if x]
    except ValueError:
        raise SourceOptionError(f"{name}={value!r}: not {'an integer' if kind == 'int' else 'comma-separated integers'}") from None
    if kind == "bool":
        text = str(value).lower()
        if text not in _TRUE + _FALSE:
            raise SourceOptionError(f"{name}={value!r}: not true or false")
        return text in _TRUE
    return str(value)


def read_options(options) -> dict:
    """A read's options checked once: every option of :data:`SOURCE_OPTIONS` by its own spelling, as
    its kind, its default where not given.  ValueError for an option the source does not read (a
    typo in ``.option(...)`` would otherwise read the whole fleet unwindowed) or a bad value."""
    given = {str(k): v for k, v in options.items() if v is not None and v != ""}
    _check_names(given)
    given = {_OPTION_NAMES[k.lower()]: v for k, v in given.items()}
    out = {name: default for name, (_, default) in SOURCE_OPTIONS.items()}
    out.update({name: _typed(name, v) for name, v in given.items()})
    if "splitBytes" in given and "maxPartitionBytes" not in given:  # splitBytes: the old name
        out["maxPartitionBytes"] = out["splitBytes"]
    if out["minPartitions"] is None:
        out["minPartitions"] = os.cpu_count() or 1
    return out


def input_paths(options: dict) -> list[str]:
    """The paths of checked options: ``path`` comma-separated, or Spark's ``paths`` (a JSON list,
    from ``load([a, b])``, or comma-separated)."""
    if not options["path"] and options["paths"].startswith("["):
        try:
            return [p for p in json.loads(options["paths"]) if p]
        except ValueError:
            raise SourceOptionError(f"paths={options['paths']!r}: not a JSON list of paths") from None
    return [p for p in (options["path"] or options["paths"]).split(",") if p]


def _remote_source(log_dir: str, topic: str, partition: int, dir_name: str) -> Source:
    """The :class:`~.scan_plan.Source` of a remote tier's partition (no broker or cluster id)."""
    return Source(log_dir, None, None, topic, partition, dir_name, REMOTE)


def _segment_indexes(storage: Storage, uri: str, base: int) -> SegmentIndexes:
    ix = SegmentIndexes(base)
    data = storage.index_bytes(uri, INDEX)
    if data:
        ix.offsets = offset_index.read_entries(data, base)[0]
    data = storage.index_bytes(uri, TIMEINDEX)
    if data:
        ix.times = time_index.read_entries(data, base)[0]
    return ix


#: the last instant a Spark TIMESTAMP holds (9999-12-31T23:59:59.999Z), in epoch ms: a Kafka timestamp
#: is any long, and one past this (a producer's bug, a forged batch) has no TIMESTAMP beside it
MAX_UTC_MS = 253_402_300_799_999


def spark_schema(level: str, decode: bool = False):
    """The Spark schema of a level (the types :func:`spark_columns` gives its DDL), made here:
    pyspark parses DDL in the JVM, a round trip that took a cold driver half a second of a short
    `kfx scan`."""
    scalar = {"string": T.StringType(), "tinyint": T.ByteType(), "smallint": T.ShortType(), "int": T.IntegerType(),
              "bigint": T.LongType(), "binary": T.BinaryType(), "boolean": T.BooleanType(),
              "timestamp": T.TimestampType()}

    def typ(t: str):
        if t.startswith("array<struct<") and t.endswith(">>"):
            fields = [f.split(":") for f in t[len("array<struct<"):-2].split(",")]
            return T.ArrayType(T.StructType([T.StructField(n, scalar[x]) for n, x in fields]))
        return scalar[t]
    return T.StructType([T.StructField(name, typ(t)) for name, t in spark_columns(level_columns(level, decode))])


def schema_decoder(paths, options: dict) -> SchemaDecoder | None:
    """The decoder of the records level's ``decode`` option: the ``_schemas`` topic of the local
    inputs' log dirs, then ``schemas`` (an exported dir), then ``schemaRegistry`` (a URL); None
    without ``decode``.  ValueError when ``decode`` finds no schemas at all."""
    if not options["decode"]:
        return None
    local = [p[len("file://"):] if p.startswith("file://") else p for p in paths if "://" not in p or p.startswith("file://")]
    store = load_schema_store(local, schema_dir=options["schemas"], registry_url=options["schemaRegistry"])
    if store is None:
        raise ValueError("decode=true needs schemas: no _schemas topic in the local inputs' log dirs; give "
                         "schemas=DIR or schemaRegistry=URL")
    return SchemaDecoder(store)


def _utc(ms):
    """An epoch-ms timestamp as the microseconds of a Spark TIMESTAMP (None for -1, none, and for
    one no TIMESTAMP holds: the epoch-ms long keeps it)."""
    return None if ms is None or ms < 0 or ms > MAX_UTC_MS else ms * 1000


class KafkaSegmentsReader(DataSourceReader):
    """Reads the segments of ``path`` at one level; see the module's docstring for the options."""

    def __init__(self, options, level: str, schema=None):
        self.level = level
        self.spark_schema = schema
        self._schema = None
        options = read_options(options)
        self.paths = input_paths(options)
        self.max_bytes = options["maxPartitionBytes"]
        self.open_cost = options["openCostInBytes"]
        self.min_partitions = options["minPartitions"]
        self.include_corrupt = options["includeCorrupt"]
        self.scan_records = options["scanRecords"]
        self.window = bounds_from_options(options)
        self.bounds = self.window
        self.storage = Storage(options)
        self.decoder = schema_decoder(self.paths, options) if level == "records" else None

    def pushFilters(self, filters):
        """Prune with what the filters allow (see :mod:`~kafkaforensics.spark.scan_plan`).  The
        filters this reader applies exactly -- topic and partition (whole pieces), and at the records
        level offset and timestamp bounds and key equality (row by row) -- are kept (Spark's
        ``explain()`` lists them as PushedFilters); the others are returned for Spark to apply to
        the rows, pruning having only decided what is read."""
        filters = list(filters)
        pushed = bounds_from_filters(filters, self.window.disorder_ms)
        if self.level in ("anomalies", "scan"):  # damage is reported whole: only topic and partition prune it
            pushed = Bounds(topics=pushed.topics, partitions=pushed.partitions)
        self.bounds = merge(self.window, pushed)
        return [f for f in filters if not self._exact(f)]

    def _exact(self, f) -> bool:
        """Whether this reader applies filter ``f`` exactly (so Spark need not)."""
        if len(getattr(f, "attribute", ())) != 1:
            return False
        col, v = f.attribute[0], getattr(f, "value", None)
        values = tuple(f.value) if isinstance(f, In) else (v,)
        if isinstance(f, (EqualTo, In)) and col in ("topic", "partition"):
            kind = str if col == "topic" else int
            return all(isinstance(x, kind) and not isinstance(x, bool) for x in values)
        if self.level != "records":
            return False
        if col in ("offset", "timestamp") and isinstance(f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
            return isinstance(v, int) and not isinstance(v, bool)
        if col == "offset" and isinstance(f, EqualTo):
            return isinstance(v, int) and not isinstance(v, bool)
        if col == "key" and isinstance(f, (EqualTo, In)):
            return all(isinstance(x, (bytes, bytearray)) for x in values)
        return False

    # ------------------------------------------------------------------------- planning ----
    def listing(self) -> Layout:
        """The inputs listed, one listing per input, and sorted out (:func:`~.scan_plan.layout`):
        what :meth:`pieces` plans from.  The reads of one scan planned in the driver share one."""
        entries, seen = [], set()
        for p in self.paths:
            listed = self.storage.list_entries(p)
            if len(listed) == 1 and not listed[0][2] and segment_base(posixpath.basename(listed[0][0])) is None:
                raise NotKafkaInput(f"{p}: not a Kafka segment (named <base offset>.log), partition dir or log dir")
            if not any(segment_base(name) is not None or LogDir.is_meta_properties(name) or (is_dir and partition_of_dir_name(name))
                       for name, is_dir in ((posixpath.basename(u.rstrip("/")), d) for u, _s, d in listed)):
                raise NotKafkaInput(f"{p}: no Kafka segment, partition dir or log dir in it")
            # inputs that overlap (a log dir and one of its partition dirs) are read once: a local entry
            # is known by its path under its input's real path (one realpath an input, not a file:
            # listings do not follow links; a segment file that is a link into another input is
            # read under both names)
            fs, local = self.storage.resolve(p)
            base = None if fs is not None else (local.rstrip("/") or "/")
            real = None if base is None else os.path.realpath(base)
            for entry in listed:
                u = entry[0]
                key = real + u[len(base):] if base is not None and real is not None and u.startswith(base) else u
                if key not in seen:
                    seen.add(key)
                    entries.append(entry)
        lay = layout(entries, self.storage.read_file)
        if self.storage.remote:
            self.storage.remote.add_to(lay, _remote_source)
        return lay

    def pieces(self, listing: Layout | None = None) -> list[PlanStep]:
        """What the scan reads, in listing order: per partition dir its own row (at the scan level)
        and its segments' ranges (segments the bounds exclude left out), then stray files.  From
        ``listing`` (:meth:`listing`) when given, else from a listing of its own."""
        lay = self.listing() if listing is None else listing
        b = self.bounds
        out = [PlanStep("bad-meta", LogDir.over(self.storage.read_file, ld).meta_properties_file, Source(ld, None, None, None, None), note=why)
               for ld, why in lay.bad_meta.items() if b.topics is None and b.partitions is None]
        for d in sorted(lay.partitions):
            src = lay.partitions[d]
            if not b.wants(src.topic, src.partition):
                continue
            if self.level == "scan":  # a partition dir's own row (an empty one seen too): the scan level's only
                out.append(PlanStep("partition", d, src, first_offset=lay.empty_ends.get(d)))
            for uri, off, kind, detail in lay.lost.get(d, ()):  # its log gone, past a checkpoint: an anomaly
                out.append(PlanStep("lost", uri, src, first_offset=off, note=f"{kind}: {detail}"))
            segs, prior = lay.segments[d], None
            for i, (base, uri, size) in enumerate(segs):
                nxt = segs[i + 1][0] if i + 1 < len(segs) else None
                r, seg_max = segment_range(b, base, nxt, lambda: _segment_indexes(self.storage, uri, base), prior,
                                           functools.partial(self.storage.base_offset_at, uri, size=size))
                if seg_max is not None:
                    prior = seg_max if prior is None else max(prior, seg_max)
                if r is not None:
                    end = size if r.end is None else min(r.end, size)
                    out.append(PlanStep("segment", uri, src, size, min(r.start, end), end, r.end is None,
                                     r.first_offset, r.last_offset, base, nxt))
        for uri, size, src in lay.strays:
            if (src.topic is None and b.topics is None and b.partitions is None) or \
                    (src.topic is not None and b.wants(src.topic, src.partition)):
                out.append(PlanStep("stray", uri, src, size))
        return out

    def partitions(self, listing: Layout | None = None):
        pieces = self.pieces(listing)
        split = split_size(pieces, self.max_bytes, self.open_cost, self.min_partitions)
        cut = []
        for p in pieces:
            if p.kind != "segment" or p.bytes <= split:
                cut.append(p)
                continue
            points = [x for x in self.storage.split_points(p.uri, p.size, split) if p.start < x < p.end]
            edges = [p.start] + points + [p.end]
            for i in range(len(edges) - 1):
                cut.append(dataclasses.replace(p, start=edges[i], end=edges[i + 1], first=i == 0,
                                               last=p.last and i == len(edges) - 2))
        groups = pack(cut, split, self.open_cost)
        return [FleetSplit(i, g) for i, g in enumerate(groups)] or [FleetSplit(0, [])]

    # -------------------------------------------------------------------------- reading ----
    def _batches(self, sc: BatchScanner, piece: PlanStep):
        """(batch, wanted) for the scanner's batches: at the anomalies and scan levels every batch
        (its damage is reported whether wanted or not), else only wanted ones; stops where no
        later batch can be wanted."""
        b = self.bounds
        first, last, stop = piece.first_offset, piece.last_offset, b.ts_stop
        everything = self.level in ("anomalies", "scan")
        running = None
        for batch in sc:
            if batch.magic < 2 and batch.count is None:
                try:
                    resolve_legacy_wrapper(batch)
                except KafkaFormatError:
                    if everything:
                        yield batch, False
                    continue
            if last is not None and batch.base_offset > last:
                return
            wanted = (first is None or batch.last_offset >= first) and b.batch_wanted(batch)
            if wanted or everything:
                yield batch, wanted
            if stop is not None and batch.magic > 0:
                running = batch.max_timestamp if running is None else max(running, batch.max_timestamp)
                if running > stop:
                    return

    def _fast_when_unbounded(self) -> bool:
        """Whether segments go through :class:`~.record_runs.FileRun` (the records level, no offset
        or time window: what the batch-by-batch walk would skip is then nothing)."""
        b = self.bounds
        return (self.level == "records" and b.ts_stop is None
                and b.offset_lo is None and b.offset_hi is None and b.ts_lo is None and b.ts_hi is None)

    def _never_fast(self) -> bool:
        """``_fast`` with ``records.walks.SPEEDUPS`` off: every segment batch by batch."""
        return False

    #: whether this read takes the header runs: chosen once, at import
    _fast = walks.bind("_fast", _fast_when_unbounded, _never_fast)

    def read(self, split: InputPartition):
        """The Arrow batches of one of :meth:`partitions`' splits (a :class:`FleetSplit`)."""
        if not isinstance(split, FleetSplit):
            raise TypeError(f"a kafka_segments reader reads its own partitions (FleetSplit), not {type(split).__name__}")
        level = self.level
        damage = level in ("anomalies", "scan")
        fast = FileRun() if self._fast() else None
        rows, run = [], _Run()
        for piece in split.pieces:
            src = piece.src
            if piece.kind == "partition":
                if level == "scan":
                    rows.append(self._row({"rowKind": "partition", "nextOffset": piece.first_offset}, src, piece.uri))
                continue
            if piece.kind != "segment":
                if damage:
                    rows.append(self._row(self._file_anomaly(piece), src, piece.uri))
                continue
            if level == "scan" and piece.first:  # a segment file's own row (an empty one counted too)
                rows.append(self._row({"rowKind": "segment"}, src, piece.uri))
            if piece.size == 0 and piece.last:
                if level == "scan":
                    rows.append(self._piece_row(piece, None, None))
                continue
            with contextlib.ExitStack() as opened:
                try:
                    buf, shift, start, end = opened.enter_context(self.storage.open_range(
                        piece.uri, piece.start, None if piece.last else piece.end, small=SMALL_FILE_BYTES))
                except KafkaFormatError as e:  # a remote tier's chunk that does not decode: located
                    if src.tier != REMOTE:
                        raise
                    if damage:
                        rows.append(self._row(self._unreadable(e, piece), src, piece.uri))
                    if level == "scan":
                        rows.append(self._piece_row(piece, None, e.kind))
                    continue
                at = start  # where the batch-by-batch walk takes over (end: nothing left for it)
                if fast is not None and piece.first_offset is None and piece.last_offset is None:
                    if run.items:
                        yield from self._flush(run, rows)
                    if isinstance(buf, bytes):  # a small segment: taken whole or not at all
                        at = end if fast.add(buf, start, end, shift, piece) else start
                    else:  # a mapped one: copies of its batches, run by run
                        while at < end:
                            nxt = fast.take(buf, at, end, shift, piece, RECORDS_RUN_BYTES - fast.bytes)
                            release_pages(buf, at, nxt)
                            if fast.bytes >= RECORDS_RUN_BYTES:
                                yield from self._fast_arrow(fast, rows)
                                fast = FileRun()
                            if nxt == at:
                                break
                            at = nxt
                    if fast.bytes >= RECORDS_RUN_BYTES:
                        yield from self._fast_arrow(fast, rows)
                        fast = FileRun()
                    handled = at >= end
                else:
                    handled = False
                if not handled:
                    if fast:
                        yield from self._fast_arrow(fast, rows)
                        fast = FileRun()
                    yield from self._segment(LogSlice(buf, shift, at, end, piece.uri, piece.base), piece, rows, run)
            if len(rows) >= ARROW_BATCH_ROWS:
                yield self._arrow(rows)
                rows = []
        if fast:
            yield from self._fast_arrow(fast, rows)
        if run.items:
            yield from self._flush(run, rows)
        if rows:
            yield self._arrow(rows)

    def _segment(self, held: LogSlice, piece: PlanStep, rows: list, run: "_Run"):
        """The batch-by-batch walk of one segment's bytes ``held`` (of the plan's step ``piece``):
        batches, anomaly rows into ``rows``, wanted batches' records into ``run`` (Arrow batches
        yielded as it fills)."""
        level, src = self.level, piece.src
        records = level == "records" or (level == "scan" and self.scan_records)
        buf, shift, end = held.buf, held.shift, held.end
        sc = held.walk()
        seen = None
        for b, wanted in self._batches(sc, piece):
            seen = b
            if level != "records":
                rows.extend(self._row(r, src, piece.uri) for r in self._rows(b, shift, wanted))
            if records and wanted:  # decoded a run of batches at a time, straight to columns
                run.items.append((b, src, piece.uri, shift))
                run.bytes += b.size
                if run.bytes >= RECORDS_RUN_BYTES:
                    yield from self._flush(run, rows)
        if run.items and not isinstance(buf, bytes):  # a mapped file's batches must not outlive it
            yield from self._flush(run, rows)
        if sc.stop is not None and level in ("anomalies", "scan"):
            rows.append(self._row(self._stop_anomaly(sc.stop, piece, seen, shift, end), src, piece.uri))
        if level == "scan":
            rows.append(self._piece_row(piece, None if seen is None else seen.next_offset,
                                        None if sc.stop is None else sc.stop.kind))

    def _piece_row(self, piece: PlanStep, next_offset: int | None, stop: str | None) -> dict:
        """The scan level's row of a piece of a segment walked: where it starts, its segment's base
        offset, the offset after the last batch its walk kept (None: none) and the damage that stopped
        the walk (None: it read to the piece's end) -- what the inventory's ``logEndOffset`` is folded
        from (:func:`~kafkaforensics.spark.scan_plan.log_end_of_pieces`)."""
        return self._row({"rowKind": "piece", "position": piece.start, "baseOffset": piece.base,
                          "nextOffset": next_offset, "kind": stop}, piece.src, piece.uri)

    def _flush(self, run: "_Run", rows: list):
        items, run.items, run.bytes = run.items, [], 0
        yield from self._records_arrow(items, rows)

    def _fast_arrow(self, fast: FileRun, rows: list):
        """The records of a :class:`~.record_runs.FileRun`; when it declines, its segments walked
        batch by batch."""
        got = fast.decode(self.include_corrupt)
        if got is None:
            run = _Run()
            for held, piece in fast.segments():
                yield from self._segment(held, piece, rows, run)
            if run.items:
                yield from self._flush(run, rows)
            return
        cols, table = got
        if len(cols):
            yield self._columns_arrow(cols, table)

    @staticmethod
    def _row(row: dict, src, uri: str) -> dict:
        row["logDir"], row["brokerId"], row["clusterId"], row["tier"] = src.log_dir, src.broker_id, src.cluster_id, src.tier
        row["topic"], row["partition"], row["partitionDir"], row["file"] = src.topic, src.partition, src.dir_name, uri
        return row

    @staticmethod
    def _file_anomaly(piece: PlanStep) -> dict:
        """The anomaly row of a piece that is no segment: a bad meta.properties, a stray file, or a
        checkpoint past the log end of a partition whose log is gone (``lost``)."""
        if piece.kind == "lost":
            kind, _, detail = (piece.note or "").partition(": ")
            return {"rowKind": "anomaly", "kind": kind, "offset": piece.first_offset, "detail": detail}
        if piece.kind == "bad-meta":
            return {"rowKind": "anomaly", "kind": "bad-meta-properties",
                    "detail": f"{piece.note}: broker and cluster ids of this log dir unknown"}
        where = "partition" if piece.src.topic is not None else "log"
        return {"rowKind": "anomaly", "kind": "stray-file", "bytesNotRead": piece.size,
                "detail": f"not a file Kafka writes in a {where} dir: its {piece.size} bytes were not read"}

    @staticmethod
    def _unreadable(e: KafkaFormatError, piece: PlanStep) -> dict:
        """The anomaly of a remote segment's byte range whose chunks could not be read (fetched,
        decompressed, decrypted): where in the object, and what of the segment was not read."""
        p, end = e.problem, piece.size if piece.last else piece.end
        at = "" if p.position is None else f" at byte {p.position}"
        return {"rowKind": "anomaly", "kind": e.kind, "offset": piece.base if piece.start == 0 else None,
                "position": piece.start,
                "detail": f"{p.file or piece.uri}{at}: {p.detail}; bytes {piece.start}..{end} of the segment "
                          f"(based at {piece.base}) were not read",
                "bytesNotRead": end - piece.start, "batchesNotRead": None,
                "recordsNotRead": None}

    @staticmethod
    def _stop_anomaly(p, piece: PlanStep, seen, shift: int, end: int) -> dict:
        """The anomaly where a segment's framing breaks: the first offset not read is the one after
        the last sound batch (the bytes at the break say nothing trustworthy), and what was not read."""
        if seen is not None:
            offset = seen.next_offset
        else:
            offset = piece.base if piece.start == 0 else None
        lost = max(0, end - p.position)
        detail = f"{p.detail}; the walk stops here: {lost} bytes not read"
        records = None
        if offset is not None and piece.last and piece.next_base is not None and piece.next_base >= offset:
            records = piece.next_base - offset
            detail += f", offsets {offset}..{piece.next_base - 1} (the next segment starts at {piece.next_base})"
        elif offset is not None:
            detail += f", offsets from {offset} on"
        return {"rowKind": "anomaly", "offset": offset, "kind": p.kind, "detail": detail,
                "position": p.position + shift if p.position is not None else None,
                "bytesNotRead": lost, "batchesNotRead": None if lost else 0, "recordsNotRead": records}

    def arrow_schema(self):
        """The Arrow schema of the batches :meth:`read` yields."""
        if self._schema is None:
            self._schema = to_arrow_schema(self.spark_schema, timezone="UTC")
        return self._schema

    def _records_arrow(self, run, rows):
        """The records of a run of batches (b, source, file, shift) as Arrow record batches, built
        from the columnar decoder's spans with no Python object per record.  A batch whose CRC
        fails is left out (``includeCorrupt``: kept, with ``crcValid`` false); a batch that does not
        decode is left out (at the scan level an anomaly row in ``rows`` says so)."""
        crc = [b.crc_valid() for b, *_ in run]
        if not self.include_corrupt and not all(crc):
            run = [x for x, ok in zip(run, crc) if ok]
            crc = [True] * len(run)
        if not run:
            return
        try:
            cols = decode_columns([b for b, *_ in run])
        except KafkaFormatError as e:
            if len(run) > 1:  # find the batch at fault: the others' records still go out
                for x in run:
                    yield from self._records_arrow([x], rows)
            elif crc[0] and self.level == "scan":  # a bad CRC's anomaly row already says it
                b, src, uri, shift = run[0]
                rows.append(self._row({"rowKind": "anomaly", "position": b.position + shift, "offset": b.base_offset,
                                       "kind": "undecodable-records",
                                       "detail": f"its {b.count} records could not be decoded: {e.problem.detail}",
                                       "bytesNotRead": b.size, "batchesNotRead": 1, "recordsNotRead": b.count},
                                      src, uri))
            return
        if len(cols):
            yield self._columns_arrow(cols, BatchColumns.of_batches(run, crc))

    def _columns_arrow(self, cols, table: BatchColumns):
        schema = self.arrow_schema()
        n, which = len(cols), cols.batch
        types = {f.name: f.type for f in schema}
        file = table.file[which]

        def per_file(name, values):
            return record_arrow.per_batch(values, file, types[name])

        def per_batch(name, values):
            return pa.array(values[which], types[name])
        key = record_arrow.spans(cols.buf, cols.key_start, cols.key_length)
        ts = np.asarray(cols.timestamp, np.int64)
        no_utc = (ts < 0) | (ts > MAX_UTC_MS)
        srcs = [s for s, _uri in table.files]
        column = {
            "logDir": per_file("logDir", [s.log_dir for s in srcs]),
            "brokerId": per_file("brokerId", [s.broker_id for s in srcs]),
            "clusterId": per_file("clusterId", [s.cluster_id for s in srcs]),
            "topic": per_file("topic", [s.topic for s in srcs]),
            "partition": per_file("partition", [s.partition for s in srcs]),
            "partitionDir": per_file("partitionDir", [s.dir_name for s in srcs]),
            "file": per_file("file", [uri for _s, uri in table.files]),
            "tier": per_file("tier", [s.tier for s in srcs]),
            "rowKind": record_arrow.constant("record", n, pa.string()),
            "offset": pa.array(cols.offset, types["offset"]),
            "timestamp": pa.array(ts, types["timestamp"]),
            "timestampUtc": pa.array(np.where(no_utc, 0, ts) * 1000, pa.int64(), mask=no_utc).cast(types["timestampUtc"]),
            "timestampType": pa.array(BatchColumns.TIMESTAMP_TYPES, types["timestampType"]).take(
                pa.array(table.timestamp_type[which])),
            "key": key,
            "value": record_arrow.spans(cols.buf, cols.value_start, cols.value_length),
            "headers": record_arrow.headers(cols, types["headers"]),
            "batchBaseOffset": per_batch("batchBaseOffset", table.base_offset),
            "batchPosition": per_batch("batchPosition", table.position),
            "producerId": per_batch("producerId", table.producer_id),
            "isTransactional": per_batch("isTransactional", table.transactional),
            "isControl": per_batch("isControl", table.control),
            "crcValid": per_batch("crcValid", table.crc_valid),
        }
        if self.decoder is not None:  # decode=true: a Python pass over the keys and values
            got = self.decoder.columns(column["topic"].to_pylist(), key.to_pylist(), column["value"].to_pylist())
            column.update({name: pa.array(values, types[name]) for name, values in got.items()})
        batch = pa.RecordBatch.from_arrays([column[f.name] if f.name in column else pa.nulls(n, f.type)
                                            for f in schema], schema=schema)
        b = self.bounds
        keep = None

        def both(a, c):
            return c if a is None else pc.and_(a, c)
        if b.offset_lo is not None:
            keep = both(keep, pc.greater_equal(column["offset"], b.offset_lo))
        if b.offset_hi is not None:
            keep = both(keep, pc.less_equal(column["offset"], b.offset_hi))
        if b.ts_lo is not None:
            keep = both(keep, pc.greater_equal(column["timestamp"], b.ts_lo))
        if b.ts_hi is not None:
            keep = both(keep, pc.less_equal(column["timestamp"], b.ts_hi))
        if b.keys is not None:
            wanted = pa.array(sorted(b.keys), pa.binary())
            keep = both(keep, pc.fill_null(pc.is_in(key, value_set=wanted), False))
        return batch if keep is None else batch.filter(keep)

    def _arrow(self, rows):
        """Batch, anomaly and partition rows (dicts by column name) as one Arrow record batch; a
        column a row does not have is null."""
        return pa.RecordBatch.from_pylist(rows, schema=self.arrow_schema())

    def _not_exported(self, b) -> tuple[str, int | None]:
        """Why the records of bad-CRC batch ``b`` are not exported ('' when they are), and how many."""
        if not self.include_corrupt:
            return (f"; its {b.count} records are left out (includeCorrupt=true exports them with crcValid false)",
                    b.count)
        try:
            decode_columns([b])
        except KafkaFormatError as e:
            return (f"; none of its {b.count} records came back even with includeCorrupt: "
                    f"{e.problem.detail}", b.count)
        return "; its records are exported with crcValid false", 0

    def _rows(self, b, shift, wanted=True):
        """The batches-level row of ``b`` (when ``wanted``) and the anomalies its header or records
        show, as the level wants them."""
        problem, wrapped = None, True
        lost: tuple[int, int, int | None] = (0, 0, 0)  # bytes, batches, records not read (None: unknown)
        if not b.crc_valid():
            why, n = self._not_exported(b)
            problem = ("crc-mismatch", f"stored CRC {b.crc} does not match the batch{why}")
            lost = (b.size, 1, n) if n else (0, 0, 0)
        elif b.magic < 2 and b.count is None:
            try:
                resolve_legacy_wrapper(b)
            except KafkaFormatError as e:
                problem, wrapped = (e.kind, f"{e.problem.detail}; its records were not read"), False
                lost = (b.size, 1, None)
        if self.level != "anomalies" and wrapped and wanted and self._batch_in_window(b):
            row = b.to_json()  # the batches level (records go through _records_arrow)
            row["position"] = b.position + shift
            row["rowKind"] = "batch"
            row["firstTimestampUtc"], row["maxTimestampUtc"] = _utc(row["firstTimestamp"]), _utc(row["maxTimestamp"])
            yield row
        if problem and self.level != "batches":
            yield {"rowKind": "anomaly", "position": b.position + shift, "offset": b.base_offset,
                   "kind": problem[0], "detail": problem[1], "bytesNotRead": lost[0], "batchesNotRead": lost[1],
                   "recordsNotRead": lost[2]}

    def _batch_in_window(self, b) -> bool:
        w = self.bounds
        return ((w.offset_lo is None or b.last_offset >= w.offset_lo)
                and (w.offset_hi is None or b.base_offset <= w.offset_hi))


class KafkaSegments(DataSource):
    """``spark.read.format("kafka_segments")``."""

    @classmethod
    def name(cls):
        return "kafka_segments"

    def _level(self) -> str:
        level = read_options(self.options)["level"]
        if level not in SOURCE_LEVELS:
            raise SourceOptionError(f"level must be one of {sorted(SOURCE_LEVELS)}, not {level!r}")
        return level

    def schema(self):
        with one_line_in_spark():
            return spark_ddl(level_columns(self._level(), read_options(self.options)["decode"]))

    def reader(self, schema):
        with one_line_in_spark():
            if not read_options(self.options)["pushdown"]:
                return _UnprunedReader(self.options, self._level(), schema)
            return KafkaSegmentsReader(self.options, self._level(), schema)


class SplitReads:
    """What ``mapInArrow`` runs over a scan's split numbers (``spark.range``) when the driver planned
    the scan itself (``spark_jobs.planned_read.read_planned``): each number's split read by ``reader``, as
    Spark's Python data source reads it.  ``shipped`` is a broadcast of the splits' pickles, so that
    a task unpickles its own split only."""

    def __init__(self, reader: KafkaSegmentsReader, shipped):
        self.reader, self.shipped = reader, shipped

    def __call__(self, numbers):
        for _, split in self.numbered(numbers):
            yield from self.reader.read(split)

    def numbered(self, numbers):
        """(number, split) for each split number in ``numbers`` (Arrow batches of them)."""
        splits = self.shipped.value
        for batch in numbers:
            for i in batch.column(0).to_pylist():
                yield i, pickle.loads(splits[i])


class SplitWrites(SplitReads):
    """What ``mapInArrow`` runs over the split numbers to have the tasks write a read's rows
    themselves (``spark_jobs.output.write_planned``): each split read as :class:`SplitReads` reads
    it and written into ``into`` (a temp dir the driver commits, on a file system the tasks share
    with it: a local master's) by the one part writer, the one a scan with no Spark writes with
    (:func:`~kafkaforensics.spark.parquet_dir.write_parts`): the part file of its number, or, with
    ``partition_by``, one in each ``key=value`` dir it reaches; the first split's even when empty, as
    Spark's first task writes one.  Each task yields a row (``split``, ``part``, ``rows``) a split,
    ``part`` the paths it wrote (relative to ``into``, ``\n``-separated): the driver keeps the parts
    reported, whatever attempt wrote them."""

    #: the rows the tasks yield
    SCHEMA = "split long, part string, rows long"

    def __init__(self, reader: KafkaSegmentsReader, shipped, into: str, job: str, partition_by: tuple = ()):
        super().__init__(reader, shipped)
        self.into, self.job, self.partition_by = into, job, tuple(partition_by)
        self.row_group_bytes = parquet_dir.ROW_GROUP_BYTES  # the driver's, shipped with the tasks

    def __call__(self, numbers):
        for i, split in self.numbered(numbers):
            part, rows = self.write(i, self.reader.read(split))
            yield pa.RecordBatch.from_pydict({"split": [i], "part": [part], "rows": [rows]})

    def write(self, i: int, batches) -> tuple[str, int]:
        """Split ``i``'s ``batches`` as its part file(s): (their paths, ``\n``-separated, or "" when it
        wrote none; its rows)."""
        rows, parts = parquet_dir.write_parts(batches, self.into, parquet_dir.part_name(i, self.job),
                                              self.reader.arrow_schema(), self.partition_by, empty_too=i == 0,
                                              row_group_bytes=self.row_group_bytes)
        return "\n".join(parts), rows


class _UnprunedReader(KafkaSegmentsReader):
    """The reader without filter pushdown (``pushdown=false``), for sessions that leave
    ``spark.sql.python.filterPushdown.enabled`` off."""

    pushFilters = DataSourceReader.pushFilters
