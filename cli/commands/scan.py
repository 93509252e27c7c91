"""``kfx scan``: a fleet of segments scanned once (here, or on Spark) into Parquet outputs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import List, Optional

from cli import heavy, plain, spark_start, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail
from cli.declare import Argument, Exit, Option
from cli.options import SCHEMA_REGISTRY, SCHEMAS
from cli.remote import KEY_FILE, REMOTE, key_files
from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
from kafkaforensics.spark import engine as spark_engine
from kafkaforensics.spark import storage as spark_storage
from spark_jobs import class_archive as spark_jobs_class_archive
from spark_jobs import job_args as spark_jobs_job_args
from spark_jobs import output as spark_jobs_output
from spark_jobs import scan as spark_jobs_scan
from spark_jobs import search as spark_jobs_search
from spark_jobs import session as spark_jobs_session


class Level(str, Enum):
    batches = "batches"
    records = "records"
    anomalies = "anomalies"


def scan(inputs: Optional[List[str]] = Argument(None, metavar="INPUT", help="Segment files, partition dirs, log dirs or fleets of them (local, file://, hdfs://, s3://, s3a://); none with --remote alone"),
         out: str = Option(..., "--out", metavar="DIR", help="Directory for the Parquet results (new or empty; a scan that does not finish leaves nothing there)"),
         master: Optional[str] = Option(None, "--master", metavar="URL",
                                        help="Spark master (default local[*]: Spark embedded here; without --master "
                                             "(and a --search Python reads as Java does), a scan is read and written here with no JVM: "
                                             "any size on a machine of 2 cores, up to 1 GiB on more)"),
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
                                               "record timestamp (a date column), as Spark's partitionBy (repeatable)"),
         decode: bool = Option(False, "--decode", help="Records export: Confluent-framed keys and values decoded "
                                                       "(keyDecoded/valueDecoded JSON, schema id, subject columns)"),
         schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY,
         remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Scan a fleet of segments with Spark (a small one needs none), reading it once: export, inventory, anomalies (and search hits) as Parquet."""
    if key_file and not remote:
        fail("--key-file needs --remote URI")
    run = _scan_ready(ScanArgs(inputs or [], out, master, level.value, search, split_bytes, include_corrupt,
                               (s3_endpoint, s3_access_key, s3_secret_key, s3_region), overwrite, verbose,
                               (topic, partition, from_time, to_time, from_offset, to_offset), option,
                               tuple(partition_by), (decode, schemas, schema_registry),
                               (remote, key_files(key_file) if remote else {})))
    c = plain.console(stderr=True)
    result, spark = _scan_running(c, run)
    c.print(_plan_line(result.plan), highlight=False, soft_wrap=True)
    _print_inventory(out, result.inventory, verbose)
    plain.console().print(f"{result.rows} {level.value} rows -> {os.path.join(out, level.value)}; {result.anomalies} anomalies"
                    + (f" in the window ({result.notes} outside it: notes, in {os.path.join(out, 'anomalies')})"
                       if result.notes else "")
                    + (f"; {result.hits} search hits -> {os.path.join(out, 'search')}" if result.hits is not None else "")
                    + (f"; {result.races} replica race outcome(s) -> {os.path.join(out, 'races')}" if result.races else ""),
                    highlight=False, soft_wrap=True)
    if spark is not None:
        _scan_session_end(c, spark)
    raise Exit(EXIT_PROBLEMS if result.anomalies or result.races else EXIT_OK)


@dataclass
class ScanArgs:
    """``kfx scan``'s options as typer parsed them: ``s3`` (endpoint, access key, secret key, region),
    ``window`` (topics, partitions, from and to time, from and to offset)."""
    inputs: list
    out: str
    master: str | None
    level: str
    search: str | None
    split_bytes: int
    include_corrupt: bool
    s3: tuple
    overwrite: bool
    verbose: bool
    window: tuple
    option: list
    partition_by: tuple
    #: (--decode, --schemas, --schema-registry)
    decode: tuple = (False, None, None)
    #: (--remote URI, --key-file's {key id: PEM file})
    remote: tuple = (None, {})

    def source_options(self) -> dict:
        """The ``kafka_segments`` source options they give (ValueError: one that is not)."""
        options = {k: v for k, v in zip(("includeCorrupt", "s3.endpoint", "s3.accessKey", "s3.secretKey", "s3.region"),
                                         ("true" if self.include_corrupt else None, *self.s3)) if v}
        decode, schemas, registry = self.decode
        options.update({k: v for k, v in (("decode", "true" if decode else None), ("schemas", schemas),
                                          ("schemaRegistry", registry)) if v})
        uri, keys = self.remote
        if uri:
            options["remote"] = uri
        if keys:
            options["remoteKeyFiles"] = ",".join(f"{k}={v}" for k, v in keys.items())
        options.update(spark_jobs_job_args.window_options(*self.window))
        options.update(spark_jobs_job_args.parse_options(self.option))
        return options


def _scan_ready(a: ScanArgs) -> "ScanRun":
    """``kfx scan`` checked, planned and its engine chosen (``kafkaforensics.spark.engine``), ``--out``
    made ready last: every refusal (one line, exit 2) before anything is written."""
    if not a.inputs and not a.remote[0]:
        fail("give an INPUT (a segment file, partition dir, log dir or fleet), or a tier with --remote URI")
    if a.decode[0] and a.level != "records":
        fail("--decode adds columns to the records export: give --level records")
    search_here = a.search is None or spark_jobs_search.python_pattern(a.search) is not None
    out_local = spark_jobs_output.local_path(a.out) is not None
    may_run_here = spark_engine.may_run_here(a.master, search_here, out_local)
    for problem in (None if may_run_here else spark_start.java_problem(),
                    a.search is not None and spark_jobs_search.pattern_problem(None, a.search)):  # before anything starts
        if problem:
            fail(problem)
    try:
        options = a.source_options()
        spark_jobs_scan.check_partition_by(a.level, a.partition_by)
        planned = spark_jobs_scan.plan(a.inputs, a.split_bytes, options)  # lists every input once: a missing one ends here
    except (ValueError, spark_storage.MissingInput) as e:
        fail(str(e))
    engine = spark_engine.choose(a.master, planned.bytes, search_here, out_local)
    if may_run_here and engine.spark and (problem := spark_start.java_problem()):  # still before --out is touched
        fail(problem)
    made_out = spark_start.out_is_new(a.out)
    problem = spark_start.out_problem(a.out, a.overwrite)  # last of the checks: it makes a new --out
    if problem:
        fail(problem)
    run = ScanRun(a.inputs, a.out, a.level, a.search, a.split_bytes, options, planned, a.verbose,
                  spark_start.left_behind(a.out), a.partition_by, engine, made_out)  # what a scan that does not finish leaves
    if a.overwrite:
        spark_start.clear_outputs(a.out)
    return run


def _scan_running(c, run: "ScanRun"):
    """``run`` run as its engine says -- here, or on Spark (also when its rows outgrow this process):
    (its result, the Spark session or None).  Whatever ends it early discards its outputs; Ctrl-C
    exits 130."""
    finished = interrupted = False
    result = spark = None
    try:
        if not run.engine.spark:
            result = _scan_here(c, run)
            if result is None:
                c.print("its rows outgrow what this process holds: Spark reads it", highlight=False)
                run.engine = run.engine.outgrown()
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


def _scan_here(c, run: "ScanRun"):
    """``run`` read and written in this process, with no Spark (None: its rows outgrow it)."""
    planned = run.planned
    c.print(f"reading {planned.bytes:,} bytes of segments here: a scan this small needs no Spark "
            f"(--master {LOCAL_MASTER} runs it on Spark)", highlight=False, soft_wrap=True)
    try:
        return spark_jobs_scan.scan_here(_scan_request(run, spark_jobs_output.written_here(run.out)))
    except Exception as e:  # noqa: BLE001 -- one line, not a traceback (exit 1 means damage)
        if run.verbose:
            raise
        fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")


def _scan_request(run: "ScanRun", out: str):
    """What ``run`` asks of ``spark_jobs.scan``, into ``out``: its inputs' listing made once, for the plan."""
    return spark_jobs_scan.ScanRequest(run.inputs, out, run.level, run.search, run.split_bytes, run.options,
                                       run.planned.listing, run.partition_by)


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
    planned: spark_jobs_scan.ScanPlan
    verbose: bool
    left: str
    partition_by: tuple
    engine: spark_engine.ScanEngine
    made_out: bool = False


def _scan_on_spark(c, run: ScanRun):
    """``kfx scan``'s ``run`` on Spark, from the JVM's start, as its engine says: (its result, the
    session)."""
    planned, verbose, search, engine = run.planned, run.verbose, run.search, run.engine
    master = engine.master
    c.print(f"starting Spark ({master})...", highlight=False)
    try:
        with spark_start.quiet_start(verbose):
            spark = spark_jobs_session.get_spark(master, console_progress=False, class_archive=True,
                                                engine=engine,
                                                record_class_archive=spark_jobs_class_archive.class_archive_recording() == "now",
                                                register_source=False)  # scan reads what it plans: no data source
    except spark_jobs_session.SparkStartError as e:
        fail(str(e))
    if search is not None and (problem := spark_jobs_search.pattern_problem(spark, search)):
        fail(problem)
    if not verbose:
        spark_start.quiet_python_logs()
    if spark_jobs_session.records_class_archive(spark):
        c.print("first run: recording the driver JVM's classes for faster starts (once)", highlight=False)
    with heavy.rich_progress.Progress(heavy.rich_progress.TextColumn("[progress.description]{task.description}"), heavy.rich_progress.BarColumn(),
                                heavy.rich_progress.TextColumn("{task.fields[splits]}"),
                                heavy.rich_progress.TimeRemainingColumn(), console=c, transient=True) as bar:
        task = bar.add_task("reading", total=max(1, planned.splits), splits=f"0/{planned.splits} splits")

        def progress(done, total):  # once read, no second pass of the same splits is shown
            bar.update(task, completed=done, total=total, **({"description": "writing the outputs", "splits": ""}
                                                             if done >= total else {"splits": f"{done}/{total} splits"}))
        try:
            return spark_jobs_scan.scan(spark, _scan_request(run, run.out), progress, driver_bytes=engine.driver_bytes,
                                        tasks_write=engine.pyarrow_writes), spark
        except Exception as e:  # noqa: BLE001 -- Spark's and the JVM's: one line, not a traceback (exit 1 means damage)
            if verbose:
                raise
            fail(f"the scan stopped: {spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")
