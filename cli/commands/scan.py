"""``kfx scan``: a fleet of segments scanned once (here, or on Spark) into Parquet outputs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional

from cli import heavy, plain, spark_start, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail
from cli.declare import Exit
from cli.options import SCHEMA_REGISTRY, SCHEMAS
from cli.remote import KEY_FILE, REMOTE, key_files
from cli.scan_options import (DECODE, FROM_OFFSET, FROM_TIME, INCLUDE_CORRUPT, INPUTS, LEVEL, MASTER, OUT, OVERWRITE,
                              PARTITION, PARTITION_BY, S3_ACCESS_KEY, S3_ENDPOINT, S3_REGION, S3_SECRET_KEY, SEARCH,
                              SOURCE_OPTION, SPLIT_BYTES, TO_OFFSET, TO_TIME, TOPIC, VERBOSE, Level, ScanOptions)
from kafkaforensics.spark import engine as spark_engine
from kafkaforensics.spark import storage as spark_storage
from spark_jobs import class_archive as spark_jobs_class_archive
from spark_jobs import scan as spark_jobs_scan
from spark_jobs import search as spark_jobs_search
from spark_jobs import session as spark_jobs_session


def scan(inputs: Optional[List[str]] = INPUTS, out: str = OUT, master: Optional[str] = MASTER, level: Level = LEVEL,
         search: Optional[str] = SEARCH, split_bytes: int = SPLIT_BYTES, include_corrupt: bool = INCLUDE_CORRUPT,
         s3_endpoint: Optional[str] = S3_ENDPOINT, s3_access_key: Optional[str] = S3_ACCESS_KEY,
         s3_secret_key: Optional[str] = S3_SECRET_KEY, s3_region: Optional[str] = S3_REGION,
         overwrite: bool = OVERWRITE, verbose: bool = VERBOSE, topic: List[str] = TOPIC, partition: List[int] = PARTITION,
         from_time: Optional[str] = FROM_TIME, to_time: Optional[str] = TO_TIME,
         from_offset: Optional[int] = FROM_OFFSET, to_offset: Optional[int] = TO_OFFSET,
         option: List[str] = SOURCE_OPTION, partition_by: List[str] = PARTITION_BY, decode: bool = DECODE,
         schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY,
         remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Scan a fleet of segments with Spark (a small one needs none), reading it once: export, inventory, anomalies (and search hits) as Parquet."""
    run = _scan_ready(ScanOptions(**locals()))  # every parameter, by its name: checked, planned, the engine decided
    c = plain.console(stderr=True)
    result, spark = _scan_running(c, run)
    c.print(_plan_line(result.plan), highlight=False, soft_wrap=True)
    _print_inventory(out, result.inventory, verbose)
    plain.console().print(_result_line(result, out), highlight=False, soft_wrap=True)
    if spark is not None:
        _scan_session_end(c, spark)
    raise Exit(EXIT_PROBLEMS if result.anomalies or result.races else EXIT_OK)


@dataclass
class ScanRun:
    """A scan ``kfx scan`` runs: its :class:`~kafkaforensics.spark.engine.RunPlan` (how it runs,
    decided once; its ``outgrown()`` when its rows outgrow this process), the splits, segments and
    bytes it reads (``planned``, for progress), whether Spark's own messages show, what a scan that
    does not finish leaves in ``--out`` (for its error line) and whether this run made ``--out``."""
    plan: spark_engine.RunPlan
    planned: spark_jobs_scan.ScanPlan
    verbose: bool
    left: str
    made_out: bool = False

    @property
    def out(self) -> str:
        return self.plan.ask.out


def _scan_ready(o: ScanOptions) -> ScanRun:
    """``kfx scan``'s options checked, its inputs planned and how it runs decided
    (``spark_jobs.scan.planned_run``: ``kafkaforensics.spark.engine``), ``--out`` made ready last:
    every refusal (one line, exit 2) before anything is written."""
    if o.key_file and not o.remote:
        fail("--key-file needs --remote URI")
    key_files(o.key_file)  # a malformed ID=PEM: one line, before anything else is checked
    if not o.inputs and not o.remote:
        fail("give an INPUT (a segment file, partition dir, log dir or fleet), or a tier with --remote URI")
    if o.decode and o.level != Level.records:
        fail("--decode adds columns to the records export: give --level records")
    asked = o.ask()  # what the engine reads before any input is listed
    for problem in (None if asked.may_run_here else spark_start.java_problem(),
                    asked.search is not None and spark_jobs_search.pattern_problem(None, asked.search)):
        if problem:  # before anything starts
            fail(problem)
    try:
        planned, plan = spark_jobs_scan.planned_run(o.ask(o.source_options()))  # a missing input ends here
    except (ValueError, spark_storage.MissingInput) as e:
        fail(str(e))
    if asked.may_run_here and plan.spark and (problem := spark_start.java_problem()):  # still before --out
        fail(problem)
    made_out = spark_start.out_is_new(o.out)
    problem = spark_start.out_problem(o.out, o.overwrite)  # last of the checks: it makes a new --out
    if problem:
        fail(problem)
    run = ScanRun(plan, planned, o.verbose, spark_start.left_behind(o.out), made_out)  # what a scan that does not finish leaves
    if o.overwrite:
        spark_start.clear_outputs(o.out)
    return run


def _scan_running(c, run: ScanRun):
    """``run`` run as its plan says -- here, or on Spark (also when its rows outgrow this process):
    (its result, the Spark session or None).  Whatever ends it early discards its outputs; Ctrl-C
    exits 130."""
    finished = interrupted = False
    result = spark = None
    try:
        if not run.plan.spark:
            result = _scan_here(c, run)
            if result is None:
                c.print("its rows outgrow what this process holds: Spark reads it", highlight=False)
                run.plan = run.plan.outgrown()
                if problem := spark_start.java_problem():  # not checked for a scan that could run here
                    fail(problem)
        if result is None:
            result, spark = _scan_on_spark(c, run)
        finished = True
    except KeyboardInterrupt:  # as a shell's Ctrl-C: 128 + SIGINT
        interrupted = True
    finally:
        if not finished:  # whatever ended it (an error, --verbose's traceback, Ctrl-C)
            if interrupted:  # its tasks would write on: pyspark's JVM ignores SIGINT
                spark_start.stop_driver_jvm()
            spark_start.discard_outputs(run.out, run.made_out)
    if interrupted:
        err().print(f"interrupted: {run.left}", highlight=False, soft_wrap=True)
        raise Exit(130)
    return result, spark


def _scan_here(c, run: ScanRun):
    """``run`` read and written in this process, with no Spark (None: its rows outgrow it)."""
    c.print(f"reading {run.plan.engine.nbytes:,} bytes of segments here: a scan this small needs no Spark "
            f"(--master {LOCAL_MASTER} runs it on Spark)", highlight=False, soft_wrap=True)
    try:
        return spark_jobs_scan.run_here(run.plan)
    except Exception as e:  # noqa: BLE001 -- one line, not a traceback (exit 1 means damage)
        if run.verbose:
            raise
        fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")


def _scan_session_end(c, spark) -> None:
    """The Spark session of a scan ended; on a first run, the driver JVM's classes recorded in the
    background for faster starts."""
    spark_jobs_session.end_session(spark)
    if spark_jobs_class_archive.class_archive_recording() == "background" and spark_jobs_class_archive.class_archive_missing():
        pid = spark_jobs_class_archive.start_class_archive_recording()
        if pid is not None:
            c.print(f"first run: recording the driver JVM's classes for faster starts, once, in the background "
                    f"(pid {pid}; {spark_jobs_class_archive.CLASS_ARCHIVE_RECORDING}=now records them during a scan, =no never)",
                    highlight=False, soft_wrap=True)


#: the master ``kfx scan`` runs Spark on when not told one
LOCAL_MASTER = spark_engine.LOCAL_MASTER
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


def _result_line(result, out: str) -> str:
    """What a scan wrote, and its findings, in one line."""
    level = result.level
    return (f"{result.rows} {level} rows -> {os.path.join(out, level)}; {result.anomalies} anomalies"
            + (f" in the window ({result.notes} outside it: notes, in {os.path.join(out, 'anomalies')})"
               if result.notes else "")
            + (f"; {result.hits} search hits -> {os.path.join(out, 'search')}" if result.hits is not None else "")
            + (f"; {result.races} replica race outcome(s) -> {os.path.join(out, 'races')}" if result.races else ""))


def _scan_on_spark(c, run: ScanRun):
    """``kfx scan``'s ``run`` on Spark, from the JVM's start, as its plan says: (its result, the
    session)."""
    spark = _spark_session(c, run)
    splits = run.planned.splits
    with heavy.rich_progress.Progress(heavy.rich_progress.TextColumn("[progress.description]{task.description}"), heavy.rich_progress.BarColumn(),
                                heavy.rich_progress.TextColumn("{task.fields[splits]}"),
                                heavy.rich_progress.TimeRemainingColumn(), console=c, transient=True) as bar:
        task = bar.add_task("reading", total=max(1, splits), splits=f"0/{splits} splits")

        def progress(done, total):  # once read, no second pass of the same splits is shown
            bar.update(task, completed=done, total=total, **({"description": "writing the outputs", "splits": ""}
                                                             if done >= total else {"splits": f"{done}/{total} splits"}))
        try:
            return spark_jobs_scan.run_on_spark(spark, run.plan, progress), spark
        except Exception as e:  # noqa: BLE001 -- Spark's and the JVM's: one line, not a traceback (exit 1 means damage)
            if run.verbose:
                raise
            fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")


def _spark_session(c, run: ScanRun):
    """The Spark session of ``run``, started as its plan's engine says (its master, a short or tiny
    run), its search pattern checked by the JVM before anything is written."""
    engine, search = run.plan.engine, run.plan.ask.search
    c.print(f"starting Spark ({engine.master})...", highlight=False)
    try:
        with spark_start.quiet_start(run.verbose):
            spark = spark_jobs_session.get_spark(engine.master, console_progress=False, class_archive=True,
                                                engine=engine,
                                                record_class_archive=spark_jobs_class_archive.class_archive_recording() == "now",
                                                register_source=False)  # scan reads what it plans: no data source
    except spark_jobs_session.SparkStartError as e:
        fail(str(e))
    if search is not None and (problem := spark_jobs_search.pattern_problem(spark, search)):
        fail(problem)
    if not run.verbose:
        spark_start.quiet_python_logs()
    if spark_jobs_session.records_class_archive(spark):
        c.print("first run: recording the driver JVM's classes for faster starts (once)", highlight=False)
    return spark
