"""``kfx scan``: a fleet of segments scanned once (here, or on Spark) into Parquet outputs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from cli import heavy, plain, spark_start, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail
from cli.declare import Argument, Exit, Option
from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
from kafkaforensics.spark import storage as spark_storage
from spark_jobs import common as spark_jobs_common
from spark_jobs import scan as spark_jobs_scan
from spark_jobs import search as spark_jobs_search


class Level(str, Enum):
    batches = "batches"
    records = "records"
    anomalies = "anomalies"


def scan(inputs: List[str] = Argument(..., metavar="INPUT", help="Segment files, partition dirs, log dirs or fleets of them (local, file://, hdfs://, s3://, s3a://)"),
         out: str = Option(..., "--out", metavar="DIR", help="Directory for the Parquet results (new or empty; a scan that does not finish leaves nothing there)"),
         master: Optional[str] = Option(None, "--master", metavar="URL",
                                        help="Spark master (default local[*]: Spark embedded here; without --master "
                                             "(and a --search Python reads as Java does), a scan of up to 1 GiB of segments is read and written "
                                             "here with no JVM)"),
         level: Level = Option(Level.batches, "--level", metavar="batches|records|anomalies", help="Rows to export: batches, records or anomalies"),
         search: Optional[str] = Option(None, "--search", metavar="REGEX", help="Also write records matching this regex"),
         split_bytes: int = Option(DEFAULT_SPLIT_BYTES, "--split-bytes", min=1 << 16, metavar="BYTES",
                                         help="Split segments larger than this at batch boundaries"),
         include_corrupt: bool = Option(False, "--include-corrupt",
                                              help="Export the records of batches whose CRC fails (crcValid false)"),
         s3_endpoint: Optional[str] = Option(None, "--s3-endpoint", metavar="URL", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000"),
         s3_access_key: Optional[str] = Option(None, "--s3-access-key", metavar="KEY", help="S3 access key (else AWS_ACCESS_KEY_ID)"),
         s3_secret_key: Optional[str] = Option(None, "--s3-secret-key", metavar="KEY", help="S3 secret key (else AWS_SECRET_ACCESS_KEY)"),
         s3_region: Optional[str] = Option(None, "--s3-region", metavar="REGION", help="S3 region (else AWS_REGION)"),
         overwrite: bool = Option(False, "--overwrite", help="Replace an earlier run's outputs in --out (else a "
                                                                  "non-empty --out is refused)"),
         verbose: bool = Option(False, "--verbose", help="Show Spark's own start-up messages, and every partition of the inventory (else a summary past 20)"),
         topic: List[str] = Option([], "--topic", metavar="TOPIC", help="Only this topic (repeatable)"),
         partition: List[int] = Option([], "--partition", metavar="N", help="Only this partition (repeatable)"),
         from_time: Optional[str] = Option(None, "--from-time", metavar="TIME",
                                           help="Records from this time on (epoch ms or ISO 8601, UTC)"),
         to_time: Optional[str] = Option(None, "--to-time", metavar="TIME", help="Records before this time (exclusive)"),
         from_offset: Optional[int] = Option(None, "--from-offset", metavar="OFFSET", help="Records from this offset on"),
         to_offset: Optional[int] = Option(None, "--to-offset", metavar="OFFSET", help="Records up to this offset (inclusive)"),
         option: List[str] = Option([], "--option", metavar="KEY=VALUE",
                                    help="Any kafka_segments source option, e.g. timestampDisorderMs=3600000 (repeatable)"),
         partition_by: List[str] = Option([], "--partition-by", metavar="topic|date",
                                          help="Partition the records export by topic and/or the UTC date of the "
                                               "record timestamp (a date column), as Spark's partitionBy (repeatable)")):
    """Scan a fleet of segments with Spark (a small one needs none), reading it once: export, inventory, anomalies (and search hits) as Parquet."""
    # a scan small enough to be read and written here needs no Spark, hence no Java (unless it grows)
    may_run_here = (master is None and (search is None or spark_jobs_search.python_pattern(search) is not None)
                    and spark_jobs_common.local_path(out) is not None)  # a search Python reads as Java does
    for problem in (None if may_run_here else spark_start.java_problem(),
                    search is not None and spark_jobs_search.pattern_problem(None, search)):  # before anything starts
        if problem:
            fail(problem)
    c = plain.console(stderr=True)
    options = {k: v for k, v in (("includeCorrupt", "true" if include_corrupt else None), ("s3.endpoint", s3_endpoint),
                                 ("s3.accessKey", s3_access_key), ("s3.secretKey", s3_secret_key),
                                 ("s3.region", s3_region)) if v}
    try:
        options.update(spark_jobs_common.window_options(topic, partition, from_time, to_time, from_offset, to_offset))
        options.update(spark_jobs_common.parse_options(option))
        spark_jobs_scan.check_partition_by(level.value, partition_by)
        planned = spark_jobs_scan.plan(inputs, split_bytes, options)  # lists every input once: a missing one ends here
    except (ValueError, spark_storage.MissingInput) as e:
        fail(str(e))
    runs_here = may_run_here and spark_jobs_common.held_in_driver(LOCAL_MASTER, planned.bytes, spark_jobs_common.HERE_BYTES)
    if may_run_here and not runs_here and (problem := spark_start.java_problem()):  # still before --out is touched
        fail(problem)
    made_out = spark_start.out_is_new(out)
    problem = spark_start.out_problem(out, overwrite)  # last of the checks: it makes a new --out
    if problem:
        fail(problem)
    left = spark_start.left_behind(out)  # what a scan that does not finish leaves in --out
    run = ScanRun(inputs, out, level.value, search, split_bytes, options, planned, verbose, left, tuple(partition_by))
    if overwrite:
        spark_start.clear_outputs(out)
    finished = interrupted = False
    result = spark = None
    try:
        if runs_here:
            c.print(f"reading {planned.bytes:,} bytes of segments here: a scan this small needs no Spark "
                    f"(--master {LOCAL_MASTER} runs it on Spark)", highlight=False, soft_wrap=True)
            try:
                result = spark_jobs_scan.scan_here(inputs, spark_jobs_common.local_path(out), level.value, split_bytes,
                                                   options, listing=planned.listing, search=search,
                                                   partition_by=tuple(partition_by))
            except Exception as e:  # noqa: BLE001 -- one line, not a traceback (exit 1 means damage)
                if verbose:
                    raise
                fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {left}")
            if result is None:
                c.print("its rows outgrow what this process holds: Spark reads it", highlight=False)
        if result is None:
            result, spark = _scan_on_spark(c, run, master or LOCAL_MASTER, outgrew=runs_here)
        finished = True
    except KeyboardInterrupt:  # as a shell's Ctrl-C: 128 + SIGINT
        interrupted = True
    finally:
        if not finished:  # whatever ended it (an error, --verbose's traceback, Ctrl-C)
            if interrupted:  # its tasks would write on: pyspark's JVM ignores SIGINT
                spark_start.stop_driver_jvm()
            spark_start.discard_outputs(out, made_out)
    if interrupted:
        err().print(f"interrupted: {left}", highlight=False, soft_wrap=True)
        raise Exit(130)
    c.print(_plan_line(result.plan), highlight=False, soft_wrap=True)
    _print_inventory(out, result.inventory, verbose)
    plain.console().print(f"{result.rows} {level.value} rows -> {os.path.join(out, level.value)}; {result.anomalies} anomalies"
                    + (f" in the window ({result.notes} outside it: notes, in {os.path.join(out, 'anomalies')})"
                       if result.notes else "")
                    + (f"; {result.hits} search hits -> {os.path.join(out, 'search')}" if result.hits is not None else ""),
                    highlight=False, soft_wrap=True)
    if spark is not None:
        spark_jobs_common.end_session(spark)
        if spark_jobs_common.class_archive_recording() == "background" and spark_jobs_common.class_archive_missing():
            pid = spark_jobs_common.start_class_archive_recording()
            if pid is not None:
                c.print(f"first run: recording the driver JVM's classes for faster starts, once, in the background "
                        f"(pid {pid}; {spark_jobs_common.CLASS_ARCHIVE_RECORDING}=now records them during a scan, =no never)",
                        highlight=False, soft_wrap=True)
    raise Exit(EXIT_PROBLEMS if result.anomalies else EXIT_OK)


#: the master ``kfx scan`` runs Spark on when not told one
LOCAL_MASTER = "local[*]"


#: an inventory of up to this many rows is printed whole; a longer one as a summary (``--verbose``: whole)
SCAN_TABLE_ROWS = 20


#: the largest partitions a summary names
SCAN_LARGEST = 5


def _plan_line(p) -> str:
    """What a scan read: its segments, bytes and splits (a large segment is cut into several)."""
    cut = " (large segments cut at batch boundaries)" if p.splits > p.segments else ""
    return f"read {p.segments} segments, {p.bytes:,} bytes, in {p.splits} splits{cut}"


def _print_inventory(out: str, inventory: list, verbose: bool) -> None:
    """``kfx scan``'s inventory on the console: whole when short or ``verbose``; else its totals, the
    partitions with anomalies and the largest ones (the whole table is ``out/inventory``)."""
    def row(r):
        return (r["partitionDir"] or "(no partition dir)", "" if r["brokerId"] is None else r["brokerId"], r["logDir"],
                r["segments"], r["batches"], r["records"],
                f"{r['firstOffset']}..{r['lastOffset']}" if r["firstOffset"] is not None
                else "empty" if r["segments"] else "no log", r["bytes"],
                ",".join(r["codecs"]), r["anomalies"])
    columns = ("partition", "broker", "log dir", "segments", "batches", "records", "offsets", "bytes", "codecs",
               "anomalies")
    if verbose or len(inventory) <= SCAN_TABLE_ROWS:
        tables.print_table(f"kfx scan -> {out}", columns, [row(r) for r in inventory])
        return
    total = {k: sum(r[k] for r in inventory) for k in ("segments", "batches", "records", "bytes", "anomalies")}
    print(f"kfx scan -> {out}: {len(inventory)} partition copies in {len({r['logDir'] for r in inventory})} log dirs, "
          f"{total['segments']:,} segments, {total['batches']:,} batches, {total['records']:,} records, "
          f"{total['bytes']:,} bytes, {total['anomalies']:,} anomalies")
    damaged = [r for r in inventory if r["anomalies"]]
    if damaged:
        tables.print_table(f"partitions with anomalies ({len(damaged)})", columns,
                               [row(r) for r in sorted(damaged, key=lambda r: -r["anomalies"])[:SCAN_TABLE_ROWS]])
    largest = sorted(inventory, key=lambda r: -r["bytes"])[:SCAN_LARGEST]
    tables.print_table(f"the {len(largest)} largest partitions", columns, [row(r) for r in largest])
    print(f"every partition: {os.path.join(out, 'inventory')} (--verbose prints them all here)")


@dataclass
class ScanRun:
    """What ``kfx scan`` was asked to run, checked and planned: its inputs, ``--out``, level, search
    pattern, split size and source options, the plan (``spark_jobs.scan.plan``'s, with the inputs'
    listing), whether Spark's own messages show, and what a scan that does not finish leaves in
    ``--out`` (for its error line)."""
    inputs: list
    out: str
    level: str
    search: str | None
    split_bytes: int
    options: dict
    planned: object
    verbose: bool
    left: str
    partition_by: tuple = ()


def _scan_on_spark(c, run: ScanRun, master: str, outgrew: bool = False):
    """``kfx scan``'s ``run`` on Spark, from the JVM's start: (its result, the session).  ``outgrew``: a
    scan begun here whose rows outgrew this process (Spark's tasks read it: not the driver again)."""
    planned, verbose, search = run.planned, run.verbose, run.search
    if outgrew and (problem := spark_start.java_problem()) is not None:  # checked before, for any other
        fail(problem)
    tiny = not outgrew and spark_jobs_common.held_in_driver(master, planned.bytes)
    c.print(f"starting Spark ({master})...", highlight=False)
    try:
        with spark_start.quiet_start(verbose):
            spark = spark_jobs_common.get_spark(master, console_progress=False, class_archive=True,
                                                short_run=planned.bytes <= spark_jobs_common.SHORT_RUN_BYTES,
                                                tiny_run=tiny,
                                                record_class_archive=spark_jobs_common.class_archive_recording() == "now",
                                                register_source=False)  # scan reads what it plans: no data source
    except spark_jobs_common.SparkStartError as e:
        fail(str(e))
    if search is not None and (problem := spark_jobs_search.pattern_problem(spark, search)):
        fail(problem)
    if not verbose:
        spark_start.quiet_python_logs()
    if spark_jobs_common.records_class_archive(spark):
        c.print("first run: recording the driver JVM's classes for faster starts (once)", highlight=False)
    with heavy.rich_progress.Progress(heavy.rich_progress.TextColumn("[progress.description]{task.description}"), heavy.rich_progress.BarColumn(),
                                heavy.rich_progress.TextColumn("{task.fields[splits]}"),
                                heavy.rich_progress.TimeRemainingColumn(), console=c, transient=True) as bar:
        task = bar.add_task("reading", total=max(1, planned.splits), splits=f"0/{planned.splits} splits")

        def progress(done, total):  # once read, no second pass of the same splits is shown
            bar.update(task, completed=done, total=total, **({"description": "writing the outputs", "splits": ""}
                                                             if done >= total else {"splits": f"{done}/{total} splits"}))
        try:
            return spark_jobs_scan.scan(spark, run.inputs, run.out, run.level, search, run.split_bytes, run.options, progress,
                                        listing=planned.listing,  # listed once, for the plan
                                        partition_by=run.partition_by,
                                        **({"driver_bytes": 0} if outgrew else {})), spark
        except Exception as e:  # noqa: BLE001 -- Spark's and the JVM's: one line, not a traceback (exit 1 means damage)
            if verbose:
                raise
            fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")

