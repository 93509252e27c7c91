"""`kfx scan` as a library function: a fleet of segments read into an export (records, batches or
anomalies), an inventory (one row per log dir and partition), a replica view, the anomalies and,
with a pattern, the search hits -- all Parquet.  Its summary (batches, anomalies, partition dirs)
is one read, cached or held in the driver (one row a batch: memory bounded by the batch count, not
the bytes); a records export is a second read straight into Parquet, and search runs over what that
wrote.  On a local master, to a local ``out``, the tasks that read the records export write it too,
with pyarrow (``output.write_planned``): its rows never cross into the JVM.  A summary of up to
:data:`SUMMARY_ROWS_HERE` rows is collected to the driver once cached, and its inventory and replica
view computed there in pyarrow (and, to a local ``out``, written there with the export and the
anomalies).
Each read is planned here, in the driver (``planned_read.read_planned``), not by Spark's Python data
source machinery: the same splits and rows, two Python processes fewer.  A short scan on a local
master (up to ``engine.DRIVER_READ_BYTES``) is read in the driver and its inventory and replica view
computed there in pyarrow; to a local ``out``, pyarrow writes its outputs too (Spark writes to any
other).  ``kfx scan`` of such a scan on its default master, with no search, needs not even that:
:func:`scan_here` writes the same outputs with no JVM at all.

    spark-submit spark_jobs/scan.py --level records --search 'order-42' --out s3a://bucket/scan s3a://bucket/kafka-logs
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import uuid
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from kafkaforensics.log.record_arrow import arrow_without_pandas
from kafkaforensics.records.schema import ROW_KINDS, SOURCE_COLUMNS
from kafkaforensics.spark.parquet_dir import DAY_MS, PARTITION_COLUMNS, parquet_dir, part_name, write_parquet_dir, write_parts
from kafkaforensics.spark.scan_plan import Layout
from kafkaforensics.spark.engine import RunPlan, ScanAsk, on_session, plan_run
from kafkaforensics.spark.java_regex import python_pattern
from spark_jobs.job_args import fail, job_arguments, source_options
from spark_jobs.output import check_out, write_planned, written_here
from spark_jobs.planned_read import check_inputs, frame_of, listing_of, planned_reader, read_here, read_planned, segment_bytes, source_for
from spark_jobs.session import job_spark
from spark_jobs.inventory import WHERE, inventory_of, inventory_table, replicas_of, replicas_table
from spark_jobs.races import RACES_SCHEMA, RaceRecords, races_of, races_table, replicated, slim_records
from spark_jobs.search import matches, pattern_problem, search_table, sorted_hits


#: each export level and the ``rowKind`` of its rows
LEVEL_KINDS = {"batches": "batch", "records": "record", "anomalies": "anomaly"}
#: what a scan writes in its ``out``, one Parquet output each
OUTPUTS = (*LEVEL_KINDS, "inventory", "replicas", "races", "search")
#: the rows of a summary (one a batch, partition dir and segment file) that Spark's tasks read which
#: are collected to the driver once cached, for its inventory and replica view to be computed in
#: pyarrow (milliseconds) rather than by a dozen Spark jobs (seconds: 6 of a 1 GiB scan's 12).  At a
#: few hundred bytes a row, some 100 MiB (held once in the JVM's cache and once here, until it is
#: dropped from the cache): a fleet of 25 million records in 100-record batches.
SUMMARY_ROWS_HERE = 250_000
#: the search hits written to one Parquet file (a few hits are one file, not one a task)
SEARCH_ROWS_A_FILE = 1_000_000


@dataclass
class ScanPlan:
    """What the scan will read, known before it starts: for progress; and the inputs' ``listing``
    it was planned from, which :func:`scan` can read from instead of listing them again."""
    splits: int
    segments: int
    bytes: int
    listing: Layout | None = field(default=None, repr=False, compare=False)


@dataclass
class ScanResult:
    out: str
    level: str
    rows: int                       # rows written at ``level``
    anomalies: int                  # anomalies in what the scan was asked (a window's: inside it)
    hits: int | None                # search hits, when a pattern was given
    inventory: list = field(default_factory=list)   # one dict per log dir and partition
    plan: ScanPlan | None = None
    notes: int = 0                  # anomalies outside a window (in ``out/anomalies`` too): no finding
    races: int = 0                  # the replica view's race outcomes (``out/races``): findings


@dataclass(frozen=True)
class Window:
    """What a scan was asked about: ``any`` (a topic, partition, offset or time window at all),
    ``records`` (a window that keeps part of a partition's records: offsets or times) and its offset
    bounds (inclusive, None: open).  An anomaly of a windowed scan is a finding only inside it
    (:func:`_scoped`); outside, a note."""
    any: bool = False
    records: bool = False
    offset_lo: int | None = None
    offset_hi: int | None = None


def window_of(opts: dict) -> Window:
    """The :class:`Window` of a scan's source options."""
    def given(k):
        return opts.get(k) not in (None, "")
    lo, hi = (int(opts[k]) if given(k) else None for k in ("fromOffset", "toOffset"))
    return Window(any(given(k) for k in ("topics", "partitions") + _RECORD_WINDOW), _windowed(opts), lo, hi)


def plan(paths, split_bytes=None, options=None, min_partitions=None) -> ScanPlan:
    """The splits, segments and bytes a scan of ``paths`` reads (the source's own planning, with the
    options a read gets).
    Raises :class:`~kafkaforensics.spark.storage.MissingInput` for an input with nothing at it."""
    reader = source_for(paths, "scan", split_bytes, options, min_partitions or os.cpu_count() or 1).reader(None)
    listing = reader.listing()
    return dataclasses.replace(plan_of(reader.partitions(listing)), listing=listing)


def plan_of(splits) -> ScanPlan:
    """The splits, segments and bytes of a scan's splits."""
    segments = {p.uri for s in splits for p in s.pieces if p.kind == "segment"}
    return ScanPlan(sum(1 for s in splits if s.pieces), len(segments), segment_bytes(splits))


def _watch(spark, total_tasks: int, progress, stop: threading.Event) -> None:
    """Report the reading stage's finished tasks to ``progress(done, total)`` until ``stop``."""
    tracker = spark.sparkContext.statusTracker()
    best = 0
    while not stop.wait(0.25):
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None and info.numTasks == total_tasks:
                best = max(best, info.numCompletedTasks)
        progress(best, total_tasks)


@dataclass(frozen=True)
class ScanRequest:
    """What a scan is asked: its input ``paths``, ``out``, export ``level``, ``search`` pattern (a Java
    regular expression), ``split_bytes``, source ``options`` (a window among them), the inputs'
    ``listing`` when already made (:func:`plan`'s: they are then not listed again), and the
    :data:`PARTITION_COLUMNS` a records export is partitioned by."""
    paths: list
    out: str
    level: str = "batches"
    search: str | None = None
    split_bytes: int | None = None
    options: dict | None = None
    listing: Layout | None = field(default=None, repr=False, compare=False)
    partition_by: tuple = ()


def scan(spark, request: ScanRequest, progress=None, *, driver_bytes: int | None = None,
         tasks_write: bool | None = None, summary_rows: int = SUMMARY_ROWS_HERE) -> ScanResult:
    """Scan ``paths`` (a :class:`ScanRequest`'s, as the rest below) and write ``out/<level>``, ``out/inventory``, ``out/replicas``,
    ``out/anomalies`` and, with a ``search`` pattern, ``out/search`` (Parquet).  ``options`` are
    source options (a window among them).  ``progress(done_splits, total_splits)`` is called while
    Spark's tasks read what the export is (the records, or the summary), and once with the total
    when they are done (only then, for a read held in the driver).  On a local master, a read of at
    most ``driver_bytes`` of segments is done in the driver (0: every read by Spark's tasks; the
    outputs are the same).  The inputs are listed once for all its reads, or not at all when their
    ``listing`` is given (:func:`plan`'s).
    A records export is written with pyarrow when ``tasks_write`` (``write_planned``: by the tasks
    that read it, whose rows then never cross into the JVM, or here for a read held here); by Spark's
    Parquet writer when not.  A summary read by the tasks of at most ``summary_rows`` rows is
    collected to the driver once cached, and its views computed there in pyarrow (0: by Spark SQL);
    with ``tasks_write``, pyarrow also writes every output of a summary held here (its views, the
    anomalies, and a batches or anomalies export).  Default ``driver_bytes`` and ``tasks_write``: the
    engine's for a scan on a session it was not planned for (``engine.on_session``: reads of up to
    ``DRIVER_READ_BYTES`` held in the driver on a local master, pyarrow writing when the master is local
    and ``out`` a local path); ``kfx scan`` gives its plan's (:func:`run_on_spark`).  Every way writes the same outputs.
    ``partition_by``: :data:`PARTITION_COLUMNS` a records export is partitioned by (its writer's ``key=value`` dirs)."""
    paths, out, level, search, split_bytes = request.paths, request.out, request.level, request.search, request.split_bytes
    partition_by = request.partition_by
    opts, listing = _scan_inputs(paths, level, request.options, request.listing)
    check_partition_by(level, partition_by)
    unplanned = on_session(spark.sparkContext.master, out)
    driver_bytes = unplanned.driver_bytes if driver_bytes is None else driver_bytes
    tasks_write = unplanned.pyarrow_writes if tasks_write is None else tasks_write
    read = functools.partial(read_planned, spark, paths, split_bytes=split_bytes, options=opts, driver_bytes=driver_bytes,
                             listing=listing)
    reads = [read("scan")]
    summary = reads[0].frame if reads[0].table is not None else reads[0].frame.persist()
    try:
        return _write_outputs(spark, Writes(out, level, search, window_of(opts), tuple(partition_by), tasks_write,
                                            summary_rows), read, progress, summary, reads)
    finally:
        summary.unpersist()
        for r in reads:
            r.release()


def planned_run(ask: ScanAsk) -> tuple[ScanPlan, RunPlan]:
    """``ask``'s inputs listed once and planned (:func:`plan`: a missing one raises
    :class:`~kafkaforensics.spark.storage.MissingInput`, an option it cannot use ValueError), and how
    it runs, decided once from that plan's bytes (``engine.plan_run``)."""
    check_partition_by(ask.level, ask.partition_by)
    planned = plan(list(ask.inputs), ask.split_bytes, ask.options)
    return planned, plan_run(ask, planned.bytes, planned.listing)


def request_of(run: RunPlan, out: str | None = None) -> ScanRequest:
    """What ``run`` asks of :func:`scan` or :func:`scan_here` (into ``out``, default its own), with
    the listing it was planned from."""
    a = run.ask
    return ScanRequest(list(a.inputs), a.out if out is None else out, a.level, a.search, a.split_bytes,
                       a.options, run.listing, a.partition_by)


def run_here(run: RunPlan) -> ScanResult | None:
    """``run`` (an engine of no Spark) read and written in this process (:func:`scan_here`; None:
    its rows outgrow it, ``run.outgrown()`` says how Spark then runs it)."""
    return scan_here(request_of(run, run.here_out))


def run_on_spark(spark, run: RunPlan, progress=None) -> ScanResult:
    """``run`` on ``spark`` as its engine says: its reads in the driver or by Spark's tasks, its
    outputs written by pyarrow or by Spark's writer (:func:`scan`)."""
    return scan(spark, request_of(run), progress, driver_bytes=run.engine.driver_bytes,
                tasks_write=run.engine.pyarrow_writes)


def scan_here(request: ScanRequest, min_partitions: int | None = None) -> ScanResult | None:
    """:func:`scan` of ``request`` with no Spark at all, for a scan this process can hold (``kfx scan`` with no
    ``--master``, as ``engine.here_limit`` allows: no JVM starts).  The same reads as :func:`scan`
    makes in the driver, the same views (the pyarrow ones, proven equal to Spark SQL's), the same
    outputs with the same schemas, each written by pyarrow as one Parquet file in Spark's layout
    (:mod:`~kafkaforensics.spark.parquet_dir`) -- but a records export, streamed split by split into a
    part file a split (:func:`_stream_records`; partitioned by ``partition_by``, streamed the same way into
    its ``key=value`` dirs).  A ``search`` pattern (a Java
    regular expression) runs here when Python reads it as Java does (:func:`python_pattern`; else
    ValueError: Spark must run it), its hits the rows Spark's :func:`matches` gives.  Returns None,
    having written nothing, when a read it holds would pass ``DRIVER_TABLE_BYTES`` in memory (Spark's
    tasks must read it).  ``min_partitions``: the
    parallelism its splits are planned for (default: this machine's cores, as ``local[*]``)."""
    arrow_without_pandas()  # nothing here uses pandas: pyarrow's first conversion must not import it
    paths, out, level, search, split_bytes = request.paths, request.out, request.level, request.search, request.split_bytes
    partition_by = request.partition_by
    opts, listing = _scan_inputs(paths, level, request.options, request.listing)
    check_partition_by(level, partition_by)
    python = None if search is None else python_pattern(search)
    if search is not None and python is None:
        raise ValueError(f"the search pattern {search!r} needs Java's reading of it: Spark runs it")
    read = functools.partial(read_here, paths, split_bytes=split_bytes, options=opts, min_partitions=min_partitions,
                             listing=listing)
    summary, splits = read("scan")
    streamed = level == "records"  # written split by split, never held whole (partitioned or not)
    races = summary is not None and replicated(_rows_of(summary, "partition").to_pylist())
    records = None
    if summary is not None and not streamed and (level == "records" or search is not None):
        records, _ = read("records")
        if records is None:
            return None
    if summary is None:
        return None
    window = window_of(opts)
    exported, found = None, None
    planned = dataclasses.replace(request, options=opts, listing=listing)
    if streamed:  # what the races need of its records kept as they stream by
        slim = RaceRecords(summary) if races else None
        exported, found, n_records = _stream_records(planned, min_partitions, python, slim)
        records = slim.table(lambda: _races_records(planned, min_partitions)) if slim is not None else None
    elif window.records and level == "records":
        exported = _records_counted(records)
    elif races and records is None:
        records = _races_records(planned, min_partitions)
    outputs, rows, findings = _outputs_here(summary, exported if window.records else None, window)
    outputs["races"] = races_table(summary, records) if races else RACES_SCHEMA.empty_table()
    anomalies = outputs["anomalies"]
    if level != "anomalies" and not streamed:
        outputs[level] = records if level == "records" else _rows_of(summary, LEVEL_KINDS[level])
    if search is not None and python is not None:  # (a pattern python cannot run was refused above)
        outputs["search"] = found if streamed else search_table(records, search, python)
    for name, table in outputs.items():
        write_parquet_dir(table, os.path.join(out, name))
    written = {"records": n_records if streamed else outputs["records"].num_rows if level == "records" else None,
               "batches": sum(r["batches"] for r in rows), "anomalies": anomalies.num_rows}[level]
    hits = outputs["search"].num_rows if search is not None else None
    return ScanResult(out, level, written, findings, hits, rows, plan_of(splits), anomalies.num_rows - findings,
                      outputs["races"].num_rows)


def _races_records(request: ScanRequest, min_partitions):
    """What the replica view's races read of a scan's records (``races.slim_records``: no value), read
    split by split, for a scan that holds no records (None: none read)."""
    reader, _, splits = planned_reader(request.paths, "records", request.split_bytes, request.options,
                                       min_partitions or os.cpu_count() or 1, request.listing)
    slim = [slim_records(pa.Table.from_batches([b])) for split in splits for b in reader.read(split) if b.num_rows]
    return pa.concat_tables(slim) if slim else None


def _stream_records(request: ScanRequest, min_partitions, python, slim: RaceRecords | None = None):
    """A records export of ``request`` written split by split into ``out/records`` (a part file a split,
    or, partitioned by ``request.partition_by``, a part file a split in each ``key=value`` dir it
    reaches; by pyarrow, as Spark's tasks write it: memory bounded by a split's batches, not the fleet), what it
    holds per inventory row (:data:`_EXPORTED`) and, with a ``search``, its hits (:func:`search_table`
    over each Arrow batch): (those counts, the hits or None, the rows written).  ``slim``: what keeps
    the replica view's races' rows of each batch (``races.RaceRecords``)."""
    search, into = request.search, os.path.join(request.out, "records")
    reader, _, splits = planned_reader(request.paths, "records", request.split_bytes, request.options,
                                       min_partitions or os.cpu_count() or 1, request.listing)
    schema = reader.arrow_schema()
    counts: dict[tuple, dict] = {}
    hits = [] if search is None else [search_table(schema.empty_table(), search, python)]

    def watched(split):
        for b in reader.read(split):
            if b.num_rows:
                t = pa.Table.from_batches([b])
                _count_into(counts, t)
                if slim is not None:
                    slim.add(t)
                if search is not None:
                    hits.append(search_table(t, search, python))
            yield b
    rows, job = 0, str(uuid.uuid4())
    with parquet_dir(into) as tmp:
        for i, split in enumerate(splits):  # the one part writer, as Spark's tasks write with it (SplitWrites)
            rows += write_parts(watched(split), tmp, part_name(i, job), schema, tuple(request.partition_by),
                                empty_too=i == 0)[0]
        if not splits and not request.partition_by:
            write_parts(iter(()), tmp, part_name(0, job), schema, empty_too=True)
    for got in counts.values():
        got["batches"] = len(got["batches"])
    return counts, None if search is None else sorted_hits(pa.concat_tables(hits)), rows


def _count_into(counts: dict, records) -> None:
    """Add what an Arrow batch of records holds per inventory row to ``counts`` (batches as sets of
    base offsets: a batch's records may span two Arrow batches)."""
    for where, got in _records_counted(records, batch_sets=True).items():
        have = counts.get(where)
        if have is None:
            counts[where] = {**got, "batches": set(got["batches"])}
            continue
        have["records"] += got["records"]
        have["batches"].update(got["batches"])
        for name, pick in (("firstOffset", min), ("lastOffset", max), ("firstTimestamp", min), ("lastTimestamp", max)):
            values = [v for v in (have[name], got[name]) if v is not None]
            have[name] = pick(values) if values else None


def check_partition_by(level: str, partition_by) -> None:
    """ValueError, one line, for a partitioning a scan cannot write."""
    unknown = [c for c in partition_by if c not in PARTITION_COLUMNS]
    if unknown:
        raise ValueError(f"--partition-by {unknown[0]}: one of {', '.join(PARTITION_COLUMNS)}")
    if partition_by and level != "records":
        raise ValueError("--partition-by partitions the records export: give --level records")


def _dated_frame(records):
    """A records DataFrame with its ``date`` column, as ``parquet_dir.dated_table`` computes it."""
    ts = F.col("timestamp")
    return records.withColumn("date", F.date_from_unix_date(F.when(ts >= 0, F.floor(ts / DAY_MS).cast("int"))))


def _scan_inputs(paths, level: str, options: dict | None, listing: Layout | None):
    """A scan's checked ``level``, its source options (``scanRecords`` is the scan's own) and its
    inputs' listing (made here when not given)."""
    if level not in LEVEL_KINDS:
        raise ValueError(f"level must be one of {sorted(LEVEL_KINDS)}, not {level!r}")
    opts = dict(options or {})
    opts.pop("scanRecords", None)
    return opts, (listing_of(paths, opts) if listing is None else listing)


def _windowed(opts: dict) -> bool:
    """Whether a scan's options keep part of a batch's records (:data:`_RECORD_WINDOW`)."""
    return any(opts.get(k) not in (None, "") for k in _RECORD_WINDOW)


def _columns(kind: str) -> list[str]:
    """The columns of an export of ``kind`` rows (``rowKind``)."""
    return [n for n, _ in SOURCE_COLUMNS + ROW_KINDS[kind]]


def _rows_of(summary, kind: str):
    """The ``kind`` rows of a summary held in the driver (an Arrow table), with their columns."""
    return summary.filter(pc.equal(summary["rowKind"], kind)).select(_columns(kind))


def _outputs_here(summary, exported: dict | None = None, window: Window = Window()):
    """The anomalies, the inventory and the replica view of a summary held in the driver (Arrow
    tables, computed in pyarrow), the inventory's rows and the anomalies that are findings (inside
    the ``window``).  ``exported``: what a windowed records export holds per inventory row, which
    the inventory then describes (:func:`_count_exported`)."""
    inv = inventory_table(summary)
    rows = inv.to_pylist()
    anomalies = _rows_of(summary, "anomaly")
    if exported is not None:
        _count_exported(rows, exported)
    findings = _scoped(rows, anomalies.select(_ANOMALY_WHERE).to_pylist(), window)
    if exported is not None or window.any:
        inv = pa.Table.from_pylist(rows, schema=inv.schema)
    return {"anomalies": anomalies, "inventory": inv, "replicas": replicas_table(summary)}, rows, findings


#: the options that keep part of a batch's records (a topic or partition keeps whole partitions)
_RECORD_WINDOW = ("fromOffset", "toOffset", "fromTimestamp", "toTimestamp")


#: what a windowed records export's inventory row says of the records exported for it: the column
#: and how it is aggregated over them (a batch is told by its base offset within a partition dir)
_EXPORTED = {"records": ("offset", "count"), "batches": ("batchBaseOffset", "count_distinct"),
             "firstOffset": ("offset", "min"), "lastOffset": ("offset", "max"),
             "firstTimestamp": ("_timestamp", "min"), "lastTimestamp": ("timestamp", "max")}
#: the columns of an anomaly :func:`_scoped` reads
_ANOMALY_WHERE = list(WHERE) + ["offset"]


def _records_exported(spark, out: str, records) -> dict:
    """What a records export holds, per inventory row (:data:`WHERE`; :data:`_EXPORTED`): ``records``
    is the read held in the driver, or None for the export written by Spark's tasks (read back)."""
    if records is not None:
        return _records_counted(records)
    how = {"count": F.count, "count_distinct": F.countDistinct, "min": F.min, "max": F.max}
    df = spark.read.parquet(os.path.join(out, "records")).withColumn(
        "_timestamp", F.when(F.col("timestamp") >= 0, F.col("timestamp")))
    counted = df.groupBy(*WHERE).agg(*(how[f](c).alias(n) for n, (c, f) in _EXPORTED.items())).collect()
    return {tuple(r[k] for k in WHERE): {n: r[n] for n in _EXPORTED} for r in counted}


def _records_counted(records, batch_sets: bool = False) -> dict:
    """What a records read held in the driver (an Arrow table) holds, per inventory row
    (``batch_sets``: its batches as the list of their base offsets, not their count)."""
    ts = records["timestamp"]
    records = records.select(list(WHERE) + ["offset", "batchBaseOffset", "timestamp"]).append_column(
        "_timestamp", pc.if_else(pc.greater_equal(ts, 0), ts, pa.scalar(None, ts.type)))
    how = dict(_EXPORTED, **({"batches": ("batchBaseOffset", "distinct")} if batch_sets else {}))
    counted = records.group_by(list(WHERE), use_threads=False).aggregate(list(how.values()))
    return {tuple(r[k] for k in WHERE): {n: r[f"{c}_{f}"] for n, (c, f) in how.items()}
            for r in counted.to_pylist()}


def _count_exported(inventory: list, exported: dict) -> None:
    """Have each inventory row describe the records exported for it (under a window): their count,
    batches, first and last offsets and timestamps (none: 0 and nulls)."""
    for r in inventory:
        got = exported.get(tuple(r[k] for k in WHERE))
        for name in _EXPORTED:
            r[name] = got[name] if got else (0 if name in ("records", "batches") else None)


def _scoped(inventory: list, anomalies: list, window: Window) -> int:
    """The ``anomalies`` (dicts of :data:`_ANOMALY_WHERE`) that are findings of a scan asked about
    ``window``; each inventory row's ``anomalies`` then counts those of its copy.  With no window,
    every one.  Under one, a log dir's own (a stray file beside the partitions) is outside it; under
    a window of offsets or times, so is one whose offset is unknown or outside the copy's span --
    the offset bounds, and the offsets its rows run over (``firstOffset``..``lastOffset`` + 1: the
    window's, for a records export) -- and any of a copy with no rows in the window."""
    if not window.any:
        return len(anomalies)
    rows = {tuple(r[k] for k in WHERE): r for r in inventory}
    inside = dict.fromkeys(rows, 0)
    for a in anomalies:
        where = tuple(a[k] for k in WHERE)
        row = rows.get(where)
        if row is None or a["topic"] is None:
            continue
        if window.records:
            lo, hi, offset = row["firstOffset"], row["lastOffset"], a["offset"]
            if offset is None or lo is None or not lo <= offset <= hi + 1:
                continue
            if (window.offset_lo is not None and offset < window.offset_lo) or \
                    (window.offset_hi is not None and offset > window.offset_hi):
                continue
        inside[where] += 1
    for where, row in rows.items():
        row["anomalies"] = inside[where]
    return sum(inside.values())


@contextlib.contextmanager
def _watching(spark, splits: int, progress):
    """Report the reading stage's progress to ``progress`` (if any) while in the ``with``, and the
    whole when it ends without an error."""
    if progress is None:
        yield
        return
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(spark, max(1, splits), progress, stop), daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    progress(splits, splits)


@dataclass(frozen=True)
class Writes:
    """What a Spark scan writes and how: its ``out``, export ``level``, ``search`` pattern, ``window``
    and the records export's ``partition_by``; ``tasks_write``: pyarrow writes a records export (by
    the tasks that read it, or here) and, to a local ``out``, every output of a summary held here;
    ``summary_rows``: a summary the tasks read of at most this many rows is collected to the driver
    (0: never)."""
    out: str
    level: str
    search: str | None = None
    window: Window = Window()
    partition_by: tuple = ()
    tasks_write: bool = False
    summary_rows: int = 0

    @property
    def here(self) -> bool:
        """Whether pyarrow writes the outputs of a summary held in the driver: as it writes a records
        export (the engine's writer, ``engine.pyarrow_writes``: only to a local ``out``)."""
        return self.tasks_write


def _export_records(spark, w: Writes, reads) -> int | None:
    """A records export (the last of ``reads``) written as ``w`` says: with pyarrow by the one part
    writer, by the tasks that read it (``tasks_write``: its rows), else by Spark's writer (None), the
    second implementation, proven to write the same rows and schema (``tests/test_spark_views.py``)."""
    path = os.path.join(w.out, w.level)
    if w.tasks_write:
        return write_planned(spark, reads[-1], path, partition_by=w.partition_by)
    frame = _dated_frame(reads[-1].frame) if "date" in w.partition_by else reads[-1].frame
    writer = frame.write.mode("overwrite")
    (writer.partitionBy(*w.partition_by) if w.partition_by else writer).parquet(path)
    return None


def _held(summary, held, counted: int | None, summary_rows: int):
    """The summary as an Arrow table held in the driver: read there, or collected from Spark's cache
    when it has at most ``summary_rows`` rows (``counted``: its rows when already counted); else None."""
    if held is not None or not summary_rows:
        return held
    if counted is None:
        counted = summary.count()  # the tasks read it into Spark's cache
    return summary.toArrow() if counted <= summary_rows else None


def _write_search(spark, w: Writes, read, reads) -> int | None:
    """The search hits written to ``out/search`` (None: no search): over the records export read back,
    or the records read (made here for a scan that exports no records)."""
    if not w.search:
        return None
    if w.level != "records":
        reads.append(read("records"))
    if w.level == "records" and reads[-1].table is None:  # read back, not read again
        records = spark.read.parquet(os.path.join(w.out, "records"))
    else:
        records = reads[-1].frame
    found = matches(records, w.search).persist()
    hits = found.count()
    found.coalesce(max(1, -(-hits // SEARCH_ROWS_A_FILE))).write.mode("overwrite").parquet(os.path.join(w.out, "search"))
    found.unpersist()
    return hits


def _write_outputs(spark, w: Writes, read, progress, summary, reads) -> ScanResult:
    """:func:`scan`'s outputs from its ``summary`` (the first of its planned ``reads``, cached or held
    in the driver; a records read for the export or the search, ``read("records")``, is added to
    them), written as ``w`` says; the views of a summary held here are computed by pyarrow."""
    scan_plan = plan_of(reads[0].splits)
    written = counted = None
    if w.level == "records":
        reads.append(read("records"))
    with _watching(spark, scan_plan.splits, progress):  # the read of what the export is
        if w.level == "records":
            written = _export_records(spark, w, reads)
        elif reads[0].table is None:  # the tasks read the summary into Spark's cache, which every output reads
            counted = summary.count()
    held = _held(summary, reads[0].table, counted, w.summary_rows)
    if held is not None and w.here:  # computed and written here: no Spark job
        summary.unpersist()  # nothing reads the JVM's copy again (Spark's writes below would)
        n_anomalies, findings, inv = _write_outputs_here(spark, w.out, w.level, held, reads, w.window)
    else:
        n_anomalies, findings, inv = _write_outputs_by_spark(spark, w.out, w.level, summary, held, reads, w.window)
    if w.level != "records":
        rows = sum(r["batches"] for r in inv) if w.level == "batches" else n_anomalies
    elif written is not None:
        rows = written
    else:
        done = reads[-1].table
        rows = done.num_rows if done is not None else spark.read.parquet(os.path.join(w.out, w.level)).count()
    hits = _write_search(spark, w, read, reads)
    races = _write_races(spark, w.out, summary, held, inv, lambda: _records_read(reads, read, w.level, w.search), w.here)
    return ScanResult(w.out, w.level, rows, findings, hits, inv, scan_plan, n_anomalies - findings, races)


def _records_read(reads, read, level, search):
    """The records read of a scan: the export's or the search's when it made one, else a new one."""
    if level != "records" and not search:
        reads.append(read("records"))
    return reads[-1]


def _write_races(spark, out, summary, held, inventory, records, here: bool) -> int:
    """The replica view's race outcomes (:mod:`spark_jobs.races`) written to ``out/races``: none
    unless the ``inventory`` holds a partition in two log dirs; judged here over a summary ``held``
    in the driver and records read here, else by Spark's tasks; written by pyarrow when ``here``.
    ``records()``: the scan's records read.  Returns the rows written."""
    table = RACES_SCHEMA.empty_table()
    if replicated(inventory):
        r = records()
        if held is not None and r.table is not None:
            table = races_table(held, r.table)
        else:
            found = races_of(summary if held is None else frame_of(spark, held), r.frame).persist()
            try:
                found.write.mode("overwrite").parquet(os.path.join(out, "races"))
                return found.count()
            finally:
                found.unpersist()
    if here:
        write_parquet_dir(table, written_here(os.path.join(out, "races")), replace=True)
    else:
        frame_of(spark, table).coalesce(1).write.mode("overwrite").parquet(os.path.join(out, "races"))
    return table.num_rows


def _exported_under_window(spark, out, level, reads, window: Window) -> dict | None:
    """What a windowed records export holds per inventory row (None when no window keeps part of a
    batch's records, or the level is not records)."""
    return _records_exported(spark, out, reads[-1].table) if window.records and level == "records" else None


def _write_outputs_here(spark, out, level, held, reads, window: Window):
    """The export (at a summary's level), anomalies, inventory and replica view of a summary ``held``
    in the driver, computed and written here by pyarrow (:func:`_outputs_here`, replacing earlier
    outputs as Spark's overwrite does): (the anomalies, those that are findings, the inventory's rows)."""
    outputs, inv, findings = _outputs_here(held, _exported_under_window(spark, out, level, reads, window), window)
    if level != "records":
        outputs[level] = _rows_of(held, LEVEL_KINDS[level])
    for name, table in outputs.items():
        write_parquet_dir(table, written_here(os.path.join(out, name)), replace=True)
    return outputs["anomalies"].num_rows, findings, inv


def _write_outputs_by_spark(spark, out, level, summary, held, reads, window: Window):
    """The export (at a summary's level), anomalies, inventory and replica view of the cached
    ``summary``, written by Spark; the views are computed by pyarrow when the summary is ``held`` in
    the driver too (:func:`_outputs_here`), else by Spark SQL: (the anomalies, those that are
    findings, the inventory's rows)."""
    exported = _exported_under_window(spark, out, level, reads, window)
    cached = []  # released whatever happens
    try:
        if held is not None:
            tables, inv, findings = _outputs_here(held, exported, window)
            n_anomalies = tables["anomalies"].num_rows
            inv_df, rep_df = (frame_of(spark, tables[n]).coalesce(1) for n in ("inventory", "replicas"))
        else:
            anomalies = summary.where(F.col("rowKind") == "anomaly").select(*_ANOMALY_WHERE).collect()
            n_anomalies = len(anomalies)
            inv_df, rep_df = inventory_of(summary).persist(), replicas_of(summary)
            cached.append(inv_df)
            inv = [r.asDict() for r in inv_df.collect()]
            if exported is not None:  # a window keeps part of a batch's records: describe those exported
                _count_exported(inv, exported)
            findings = _scoped(inv, [a.asDict() for a in anomalies], window)
            if exported is not None or window.any:  # the rows collected say the window: written from them
                cached.pop().unpersist()
                inv_df = spark.createDataFrame(inv, inv_df.schema).coalesce(1)
        for name in dict.fromkeys(n for n in (level, "anomalies") if n != "records"):  # the export, the anomalies
            kind = LEVEL_KINDS[name]
            rows = summary.where(F.col("rowKind") == kind).select(*_columns(kind))
            rows.write.mode("overwrite").parquet(os.path.join(out, name))
        inv_df.write.mode("overwrite").parquet(os.path.join(out, "inventory"))
        rep_df.write.mode("overwrite").parquet(os.path.join(out, "replicas"))
    finally:
        for df in cached:
            df.unpersist()
    return n_anomalies, findings, inv


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--level", default="batches", choices=sorted(LEVEL_KINDS))
    ap.add_argument("--search")
    args = ap.parse_args(argv)
    options = source_options(args)
    listing = check_inputs(args.paths, options)
    if args.search is not None and (problem := pattern_problem(None, args.search)):
        fail(problem)
    check_out(args.out, OUTPUTS)
    spark = job_spark(args.master, register_source=False)
    if args.search is not None and (problem := pattern_problem(spark, args.search)):
        fail(problem)
    r = scan(spark, ScanRequest(args.paths, args.out, args.level, args.search, options=options, listing=listing))
    print(f"{r.rows} {r.level} rows, {r.anomalies} anomalies" + (f" ({r.notes} more outside the window)" if r.notes else "")
          + (f", {r.hits} search hits" if r.hits is not None else ""))
    raise SystemExit(1 if r.anomalies else 0)


if __name__ == "__main__":
    main()
