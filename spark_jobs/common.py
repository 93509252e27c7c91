"""The Spark session the jobs share: local by default, any master through spark-submit."""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import NoReturn

from kafkaforensics import fsutil
from kafkaforensics.log import writer as log_writer
from kafkaforensics.records import batch as records_batch
from kafkaforensics.records import builder as records_builder
from kafkaforensics.records import schema as records_schema
from kafkaforensics.spark import parquet_dir as spark_parquet_dir
from kafkaforensics.spark import scan_plan as spark_scan_plan  # annotations only
from kafkaforensics.spark import spark_source
from kafkaforensics.spark import storage as spark_storage
from specs.lazy import lazy

from kafkaforensics.spark import engine as spark_engine
from kafkaforensics.spark.engine import (DRIVER, DRIVER_READ_BYTES, HERE_BYTES, SHORT_RUN_BYTES, ScanEngine,  # noqa: F401
                                         held_in_driver)

#: imported on first use (specs/lazy.py): pyspark and pyarrow, and spark_jobs.scan (which imports this module)
pyarrow = lazy("pyarrow", globals())
pyspark = lazy("pyspark", globals())
pyspark_errors = lazy("pyspark.errors", globals())
pyspark_sql = lazy("pyspark.sql", globals())
pyspark_sql_datasource = lazy("pyspark.sql.datasource", globals())
pyspark_sql_pandas_types = lazy("pyspark.sql.pandas.types", globals())
spark_jobs_scan = lazy("spark_jobs.scan", globals())


#: and Spark SQL runs its plans interpreted, as planned: a short run's plans (the inventory's and the
#: replica view's aggregations and joins over one row a batch) take seconds less than when each
#: stage's code is generated and compiled and adaptive execution re-plans after every shuffle
#: (measured on the sample fleet's `kfx scan`: benchmarks/README.md, session 15)
SHORT_RUN_SQL_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.adaptive.enabled": "false"}
#: and a scan read in the driver (``tiny_run``: see :data:`DRIVER_READ_BYTES`) also evaluates its
#: expressions interpreted: Spark then writes its few small tables without generating and compiling
#: code for each projection (0.9 s of a 9 s `kfx scan` of the sample, 4 interleaved pairs; Spark's
#: own test suite runs every expression both ways). Past that size it is not set: interpreted
#: projections over millions of rows cost more than compiling them (20 s more on 244 MB)
TINY_RUN_SQL_CONF = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
#: and only while that table stays within this many bytes (a compressed segment's records can take
#: many times its bytes): past them the driver drops what it read and Spark's tasks read it
DRIVER_TABLE_BYTES = 128 << 20


def class_archive_path() -> str | None:
    """Where the driver JVM's class-data archive (Java's AppCDS) for this Java and this PySpark
    lives: ``$KFX_CACHE_DIR`` or ``~/.cache/kafkaforensics``; None when no ``java`` is found."""
    inputs = _current_archive_inputs()
    return None if inputs is None else _archive_path(inputs)


def _current_archive_inputs() -> dict | None:
    """:func:`_archive_inputs` of the java PySpark runs (``$JAVA_HOME/bin/java``, else ``java`` on
    ``PATH``) and of this PySpark; None when no ``java`` is found. Both by their real paths: what the
    archive depends on is the JVM and the jar files of the driver's classpath, not the path a
    checkout reaches them by, so checkouts sharing one virtualenv (a symlinked ``.venv``) share one
    archive (the JVM maps it through any path to the same files)."""
    java = (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME")
            else shutil.which("java"))
    if not java or not os.path.exists(java):
        return None
    return _archive_inputs(os.path.realpath(java), os.path.realpath(os.path.dirname(pyspark.__file__)),
                           pyspark.__version__)


def _archive_path(inputs: dict) -> str:
    digest = hashlib.sha1(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(_cache_dir(), f"spark-driver-{digest}.jsa")


def _archive_inputs(java: str, pyspark_dir: str, pyspark_version: str) -> dict:
    """What an archive is good for, and named after: a JVM, a PySpark install, and the JDK's own
    base archives (ours is recorded on top of them; the JVM ignores ours, silently, once one is
    dumped anew: a package upgrade or ``java -Xshare:dump`` does)."""
    bases = []
    for base in _jdk_base_archives(java):
        with contextlib.suppress(OSError):
            st = os.stat(base)
            bases.append([base, st.st_mtime_ns, st.st_size])
    return {"java": java, "javaMtime": os.stat(java).st_mtime_ns, "pyspark": pyspark_dir,
            "pysparkVersion": pyspark_version, "bases": bases}


def _jdk_base_archives(java: str) -> list[str]:
    """The JDK's own class-data archives beside ``java`` (``lib/server/classes*.jsa``)."""
    server = os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "server")
    return [os.path.join(server, n) for n in ("classes.jsa", "classes_nocoops.jsa")]


def _pyspark_version_at(pyspark_dir: str) -> str | None:
    """The version of the PySpark installed at ``pyspark_dir`` (its ``version.py``), or None."""
    try:
        with open(os.path.join(pyspark_dir, "version.py")) as f:
            m = re.search(r"__version__[^=]*=\s*['\"]([^'\"]+)", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _archive_is_stale(inputs: dict) -> bool:
    """Whether an archive recorded for ``inputs`` (its ``.inputs.json``) can no longer be mapped by
    any JVM: its java, its PySpark or the JDK's base archives are gone or changed since."""
    try:
        version = _pyspark_version_at(inputs["pyspark"])
        return version is None or _archive_inputs(inputs["java"], inputs["pyspark"], version) != inputs
    except (OSError, KeyError, TypeError):
        return True


def prune_class_archives(keep: str) -> list[str]:
    """Remove the class archives in ``keep``'s directory (about 190 MB each) that no JVM can map any
    more (:func:`_archive_is_stale`), ``keep`` aside; those with no ``.inputs.json`` (recorded by an
    older kafkaforensics) are left. Returns the archives removed."""
    removed = []
    folder = os.path.dirname(keep)
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not (name.startswith("spark-driver-") and name.endswith(".jsa")) or path == keep:
            continue
        try:
            with open(f"{path[:-4]}.inputs.json") as f:
                inputs = json.load(f)
        except (OSError, ValueError):
            continue
        if _archive_is_stale(inputs):
            for p in (path, f"{path[:-4]}.inputs.json"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
            removed.append(path)
    return removed


def _keep_archive(recording: str, archive: str) -> None:
    """Put a recorded archive in place whole (a concurrent run never maps half of one), with what
    it was recorded for beside it, and remove the archives no JVM can map any more."""
    inputs = _current_archive_inputs()
    tmp = f"{archive[:-4]}.inputs.json.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(inputs, f, sort_keys=True)
    os.replace(tmp, f"{archive[:-4]}.inputs.json")
    os.replace(recording, archive)
    prune_class_archives(archive)


#: the driver JVM's own log lines (class-archive notes among them) go to stderr, errors only
QUIET_JVM_LOG = ["-Xlog:disable", "-Xlog:all=error:stderr"]


#: Spark's own log, errors only, on stderr: what a command that shows its own progress wants
QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _cache_dir() -> str:
    return os.environ.get("KFX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kafkaforensics")


def _quiet_log4j_file() -> str:
    """The path of a log4j2 configuration holding :data:`QUIET_LOG4J` (written once)."""
    path = os.path.join(_cache_dir(), "log4j2-quiet.properties")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(QUIET_LOG4J)
        os.replace(tmp, path)
    return path


def _driver_java_options(short_run: bool, class_archive: bool, quiet: bool = False,
                         record: bool = True) -> tuple[list[str], str | None]:
    """The driver JVM's start-up options, and the file it records its class archive into (None
    when it maps one already recorded, or none: without ``record`` a missing archive is not
    recorded by this JVM)."""
    opts = ["-XX:TieredStopAtLevel=1"] if short_run else []
    if quiet:
        opts.append(f"-Dlog4j2.configurationFile=file:{_quiet_log4j_file()}")
    archive = class_archive_path() if class_archive else None
    if archive is None:
        return opts, None
    opts += QUIET_JVM_LOG
    if os.path.exists(archive):  # a stale or foreign archive is ignored by the JVM (-Xshare:auto)
        return opts + [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"], None
    if not record:
        return opts, None
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    recording = f"{archive}.{os.getpid()}.tmp"
    return opts + [f"-XX:ArchiveClassesAtExit={recording}"], recording


#: every session: Parquet TIMESTAMPs as INT64 microseconds, Parquet's own type, not Spark's legacy
#: INT96 default, which pyarrow and others read as nanoseconds, wrong past the year 2262
SESSION_CONF = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}


def session_conf(short_run: bool, conf: dict | None = None, tiny_run: bool = False) -> dict:
    """The Spark settings :func:`get_spark` gives a session: :data:`SESSION_CONF`,
    :data:`SHORT_RUN_SQL_CONF` for a short run, :data:`TINY_RUN_SQL_CONF` too for a tiny one, then
    the caller's ``conf`` (which wins)."""
    return {**SESSION_CONF, **(SHORT_RUN_SQL_CONF if short_run or tiny_run else {}),
            **(TINY_RUN_SQL_CONF if tiny_run else {}), **(conf or {})}


#: what pyspark imports at its first call into a new JVM (py4j asks its numpy converter, which imports
#: ``pyspark.testing.utils``, which imports pandas): most of a second, imported beside the JVM's start
#: instead of after it
_IMPORTED_AT_FIRST_CALL = "pyspark.testing.utils"


def _import_while_the_jvm_starts() -> None:
    """Import :data:`_IMPORTED_AT_FIRST_CALL` in a thread while this one waits for the JVM (its
    launcher sleeps between looks); the first call then finds it imported, or waits for the rest."""
    def load():
        try:
            importlib.import_module(_IMPORTED_AT_FIRST_CALL)
        except BaseException:  # noqa: BLE001 -- the first call imports it again and reports what fails
            pass
    threading.Thread(target=load, name="kfx-import-beside-jvm", daemon=True).start()


def get_spark(master: str | None = None, app: str = "kafkaforensics", console_progress: bool = True,
              engine: ScanEngine | None = None, class_archive: bool = False, conf: dict | None = None,
              record_class_archive: bool = True, register_source: bool = True):
    """A SparkSession with the ``kafka_segments`` data source registered (unless ``register_source``
    is False: registering it costs a cold session 1.5-2 s, which ``kfx scan``, reading only what it
    plans itself, does not need).

    Locally it binds to 127.0.0.1, has no UI, and runs its Python workers with this interpreter
    (so they see the same installed packages).  Under spark-submit the submitted master wins.
    ``conf``: more Spark settings (e.g. ``spark.driver.memory``).

    When this process starts the driver JVM (not under spark-submit), two options shorten its
    start: the ``engine`` of the scan it is for (:mod:`kafkaforensics.spark.engine`) says whether it
    is a ``short_run``, which stops its JIT at the C1 compiler and runs Spark SQL's plans interpreted
    (:data:`SHORT_RUN_SQL_CONF`; for scans of up to ``SHORT_RUN_BYTES``; ``tiny_run``, for a scan
    read in the driver, also evaluates expressions interpreted: :data:`TINY_RUN_SQL_CONF`),
    and ``class_archive`` maps the classes Spark loads from an archive recorded by an earlier run
    (:func:`class_archive_path`); when there is none, this run records it (:func:`end_session`
    saves it) unless ``record_class_archive`` is False (``kfx scan`` leaves the recording to a
    process of its own: :func:`start_class_archive_recording`).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    short_run, tiny_run = (engine.short_run, engine.tiny_run) if engine is not None else (False, False)

    b = pyspark_sql.SparkSession.builder.appName(app)
    if not console_progress:  # the caller shows its own progress instead of Spark's stage bars
        b = b.config("spark.ui.showConsoleProgress", "false")
    recording = None
    # under spark-submit, or with a session in this process, the driver JVM runs already
    starts_jvm = "PYSPARK_GATEWAY_PORT" not in os.environ and pyspark.SparkContext._gateway is None
    for k, v in session_conf(short_run and starts_jvm, conf, tiny_run and starts_jvm).items():
        b = b.config(k, v)
    if starts_jvm:
        _import_while_the_jvm_starts()
        java_options, recording = _driver_java_options(short_run, class_archive, quiet=not console_progress,
                                                       record=record_class_archive)
        if java_options:
            b = b.config("spark.driver.extraJavaOptions", " ".join(java_options))
    if master:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = (b.master(master).config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "4"))
    try:
        spark = b.getOrCreate()
    except pyspark_errors.PySparkRuntimeError as e:
        if not starts_jvm:
            raise
        raise SparkStartError(f"Spark's driver JVM did not start ({e.getCondition()}); what it said is above "
                              "(check `java -version`, 17 or later, and the spark.driver settings)") from e
    spark.sparkContext.setLogLevel("ERROR")
    spark._kfx_class_archive_recording = recording
    if register_source:
        register(spark)
    return spark


class SparkStartError(RuntimeError):
    """The driver JVM :func:`get_spark` started exited before PySpark could talk to it (a bad
    ``JAVA_HOME``, an option the JVM refuses, too little memory): its own lines went to stderr."""


def job_spark(master: str | None, **kwargs):
    """:func:`get_spark` for a job's ``main``: a JVM that does not start is one line and exit 2."""
    try:
        return get_spark(master, **kwargs)
    except SparkStartError as e:
        fail(str(e))


def records_class_archive(spark) -> bool:
    """Whether ``spark``'s driver JVM is recording its class archive (the first run does)."""
    return bool(getattr(spark, "_kfx_class_archive_recording", None))


def end_session(spark, timeout: float = 120.0) -> None:
    """End a command's Spark work before its process exits.  When the driver JVM is recording its
    class archive (the first ``class_archive`` run), stop the session and the JVM and keep the
    archive, renamed into place whole so that a concurrent run never maps half of one; otherwise
    do nothing: the session and its JVM end with the process."""
    recording = getattr(spark, "_kfx_class_archive_recording", None)
    if not recording:
        return
    gateway = pyspark.SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        try:
            gateway.shutdown()
        except Exception:  # the JVM may be gone already; the wait below is what matters
            pass
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway JVM exits when its stdin closes, writing the archive
        try:
            proc.wait(timeout)
        except Exception:
            proc.kill()
            proc.wait()
        pyspark.SparkContext._gateway = pyspark.SparkContext._jvm = None
    spark._kfx_class_archive_recording = None
    if os.path.exists(recording):
        if proc is not None and proc.returncode == 0 and os.path.getsize(recording) > 0:
            _keep_archive(recording, recording[:-len(f".{os.getpid()}.tmp")])
        else:
            os.unlink(recording)


#: how ``kfx scan`` gets the class archive when there is none: ``background`` (the default: a
#: process of its own records it after the scan, as ``git gc --auto`` packs a repository), ``now``
#: (the scan records it itself and ends some 15 s later) or ``no`` (never; an archive already
#: recorded is still mapped)
CLASS_ARCHIVE_RECORDING = "KFX_CLASS_ARCHIVE_RECORDING"
_RECORDING_MODES = ("background", "now", "no")


def class_archive_recording() -> str:
    """The :data:`CLASS_ARCHIVE_RECORDING` mode in force (an unknown value reads as the default)."""
    mode = os.environ.get(CLASS_ARCHIVE_RECORDING, "background")
    return mode if mode in _RECORDING_MODES else "background"


def class_archive_missing() -> bool:
    """Whether a driver JVM started here could map a class archive, but none is recorded yet."""
    archive = class_archive_path()
    return archive is not None and not os.path.exists(archive)


def recording_pid() -> int | None:
    """The pid of the process recording the class archive in the background now, or None."""
    archive = class_archive_path()
    try:
        with open(f"{archive}.recording") as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (TypeError, OSError, ValueError):  # no archive path, no marker, or its process is gone
        return None
    return pid


def start_class_archive_recording() -> int | None:
    """Start a detached process that records the driver JVM's class archive (a small scan of a
    partition it writes, :func:`record_class_archive`) unless an archive or a recording exists
    already; its pid, or None.  Its output goes nowhere: the scan that started it has ended."""
    archive = class_archive_path()
    if archive is None or os.path.exists(archive) or recording_pid() is not None:
        return None
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    marker = f"{archive}.recording"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)  # a recording process that died left it
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None  # another scan started one a moment ago
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    with os.fdopen(fd, "w") as f:
        proc = subprocess.Popen([sys.executable, "-c", "from spark_jobs.common import record_class_archive as r; r()"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=tempfile.gettempdir())
        f.write(str(proc.pid))
    return proc.pid


def record_class_archive(master: str = "local[*]") -> None:
    """Record the driver JVM's class archive as a first ``kfx scan`` would: a records-level scan
    with a search of a small partition written for it, in a temp dir removed afterwards; read once
    in the driver, as a small fleet is, and once by Spark's tasks, as a larger one is."""
    archive = class_archive_path()
    try:
        if archive is None or os.path.exists(archive):
            return
        with tempfile.TemporaryDirectory(prefix="kfx-class-archive-") as tmp:
            logs = os.path.join(tmp, "logs")
            log_writer.write_partition(os.path.join(logs, "warm-0"), (
                records_builder.build_v2([records_batch.Record(b * 10 + i, 1700000000000 + b, b"key-%d" % i, b"value", [("h", b"v")]) for i in range(10)],
                         base_offset=b * 10, codec=b % 2) for b in range(20)))
            spark = get_spark(master, app="kafkaforensics-class-archive", console_progress=False,
                              engine=ScanEngine(DRIVER, master, True), class_archive=True)  # a short run, read in the driver
            spark_jobs_scan.scan(spark, spark_jobs_scan.ScanRequest([logs], os.path.join(tmp, "out"), "records", "value"))
            # and as a larger scan runs: read by Spark's tasks, its expressions compiled
            spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK")
            spark_jobs_scan.scan(spark, spark_jobs_scan.ScanRequest([logs], os.path.join(tmp, "tasks"), "records", "value"),
                                 driver_bytes=0)
            end_session(spark)
    finally:
        if archive is not None and recording_pid() in (None, os.getpid()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{archive}.recording")


def register(spark) -> None:
    """Register ``kafka_segments`` in ``spark`` and let it prune with pushed filters (Spark 4.1+
    passes filters to a Python data source only with ``spark.sql.python.filterPushdown.enabled``)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(spark_source.KafkaSegments)


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
    for a read done in the driver, the Arrow table it read."""
    frame: pyspark_sql.DataFrame
    splits: list
    shipped: pyspark.Broadcast | None = None
    table: pyarrow.Table | None = None
    reader: object = None

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


def _read_in_driver(reader, splits, limit: int):
    """Every split read here into one Arrow table, or None once its batches pass ``limit`` bytes."""
    batches, size = [], 0
    for split in splits:
        for batch in reader.read(split):
            size += batch.nbytes
            if size > limit:
                return None
            batches.append(batch)
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
        table = _read_in_driver(reader, splits, DRIVER_TABLE_BYTES)
        if table is not None:
            # in as many partitions as Spark's tasks would read it in, at most: an export writes as
            # many files (pyspark slices a table into many: 16 for 24 MB)
            return PlannedRead(frame_of(spark, table, schema).coalesce(len(splits)), splits, table=table)
    shipped = spark.sparkContext.broadcast([pickle.dumps(s) for s in splits])
    frame = spark.range(0, len(splits), 1, len(splits)).mapInArrow(spark_source.SplitReads(reader, shipped), schema)
    return PlannedRead(frame, splits, shipped, reader=reader)


def tasks_write_here(master: str, out: str) -> bool:
    """Whether the tasks of a session on ``master`` can write into ``out`` for the driver to commit
    (:func:`write_planned`): a local master's tasks share this machine's file system with it."""
    return spark_engine.pyarrow_writes(master, local_path(out) is not None)


def write_planned(spark, r: PlannedRead, path: str, writes=None) -> int:
    """The rows of a read planned in the driver (:func:`read_planned`) written to the Parquet dir
    ``path`` with pyarrow, not by Spark's Parquet writer: by the tasks that read them, a part file a
    split (:class:`~kafkaforensics.spark.spark_source.SplitWrites`), so that they are never handed
    to the JVM; or, for a read held in the driver, here, in one part.  The driver commits what the
    tasks report, as Spark's committer would (:func:`~kafkaforensics.spark.parquet_dir.parquet_dir`,
    replacing what is at ``path``); the same rows and schema as ``r.frame.write.parquet(path)``
    gives (``tests/test_spark_views.py``).  Only where the tasks share ``path`` with the driver
    (:func:`tasks_write_here`).  ``writes``: the tasks' writer, a ``SplitWrites`` (or its subclass).
    Returns the rows written."""
    local = local_path(path)
    if local is None:
        raise ValueError(f"{path}: the tasks write only to a local path; Spark's writer writes elsewhere")
    job = str(uuid.uuid4())
    with spark_parquet_dir.parquet_dir(local, replace=True) as tmp:
        if r.table is not None:
            spark_parquet_dir.write_part(r.table, tmp, 0, job)
            return r.table.num_rows
        n = len(r.splits)
        writes = (writes or spark_source.SplitWrites)(r.reader, r.shipped, tmp, job)
        done = spark.range(0, n, 1, max(1, n)).mapInArrow(writes, writes.SCHEMA).collect()
        parts = [d.part for d in done if d.part]
        spark_parquet_dir.keep_parts(tmp, parts)
        if not parts:  # no split at all: a part that holds the schema, as Spark writes then
            spark_parquet_dir.write_part(r.reader.arrow_schema().empty_table(), tmp, 0, job)
    return sum(d.rows for d in done)


def sorted_small(df, *cols):
    """``df`` sorted by ``cols`` in one task: for a result of a row or so per partition dir (the
    inventory, the replica view), one output file and no range-partitioning sample job, which
    ``orderBy`` runs first (a second job, seconds in a short run's cold JVM)."""
    return df.coalesce(1).sortWithinPartitions(*cols)


def parse_time(text: str) -> int:
    """A time given on a command line as epoch milliseconds: an integer is taken as such, else an
    ISO 8601 date or date-time (UTC when it names no zone)."""
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither epoch milliseconds nor an ISO 8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def window_options(topics=(), partitions=(), from_time=None, to_time=None, from_offset=None,
                   to_offset=None) -> dict:
    """The ``kafka_segments`` options of a window (see its docstring): topics and partitions, offsets
    ``from_offset``..``to_offset`` inclusive, times ``[from_time, to_time)`` (epoch ms or ISO 8601)."""
    out = {}
    if topics:
        out["topics"] = ",".join(topics)
    if partitions:
        out["partitions"] = ",".join(str(int(p)) for p in partitions)
    if from_time is not None:
        out["fromTimestamp"] = str(parse_time(from_time))
    if to_time is not None:
        out["toTimestamp"] = str(parse_time(to_time))
    if from_offset is not None:
        out["fromOffset"] = str(int(from_offset))
    if to_offset is not None:
        out["toOffset"] = str(int(to_offset))
    if "fromTimestamp" in out and "toTimestamp" in out and int(out["fromTimestamp"]) >= int(out["toTimestamp"]):
        raise ValueError(f"the time window is empty: {from_time} is not before {to_time} (--to-time is exclusive)")
    if "fromOffset" in out and "toOffset" in out and int(out["fromOffset"]) > int(out["toOffset"]):
        raise ValueError(f"the offset window is empty: {from_offset} is after {to_offset}")
    return out


#: source options a job sets itself, from its own arguments (``--level``, the input paths)
JOB_OPTIONS = ("level", "path", "paths")


def parse_options(pairs) -> dict:
    """``KEY=VALUE`` strings as a dict of source options, each key spelled as the source spells it
    (ValueError for one without ``=``, an option the source does not read or a value it could not
    use, :func:`~kafkaforensics.spark.spark_source.checked_option`; or for one of
    :data:`JOB_OPTIONS`, which the job's own arguments set)."""
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes KEY=VALUE, not {pair!r}")
        if key in JOB_OPTIONS:
            raise ValueError(f"--option {key}=... is not for this command: the {key} comes from its own arguments")
        try:
            key, value = spark_source.checked_option(key, value)
        except ValueError as e:
            raise ValueError(f"--option {e}") from None
        out[key] = value
    return out


def job_arguments(description: str):
    """The command line every job shares: its input paths (local, hdfs://, s3:// or s3a://), ``--out``,
    the window (``--topic``, ``--partition``, ``--from-time``, ``--to-time``, ``--from-offset``,
    ``--to-offset``), any source option as ``--option KEY=VALUE`` (repeatable; e.g.
    ``s3.endpoint=http://127.0.0.1:9000``, ``includeCorrupt=true``) and ``--master``.  The job adds its
    own options to the parser returned."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("paths", nargs="+", help="segment files, partition dirs, log dirs or fleets of them "
                    "(local paths, file://, hdfs://, s3://, s3a://)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--topic", action="append", default=[], help="only this topic (repeatable)")
    ap.add_argument("--partition", action="append", type=int, default=[], help="only this partition (repeatable)")
    ap.add_argument("--from-time", help="records from this time on (epoch ms or ISO 8601, UTC by default)")
    ap.add_argument("--to-time", help="records before this time (exclusive)")
    ap.add_argument("--from-offset", type=int, help="records from this offset on")
    ap.add_argument("--to-offset", type=int, help="records up to this offset (inclusive)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a kafka_segments option (s3.endpoint, s3.accessKey, s3.secretKey, s3.region, "
                         "includeCorrupt, timestampDisorderMs, maxPartitionBytes, ...)")
    ap.add_argument("--master", help="Spark master (spark-submit's own wins when it gives one)")
    return ap


def source_options(args) -> dict:
    """The window and the ``--option KEY=VALUE`` pairs of a job's arguments as source options."""
    try:
        out = window_options(args.topic, args.partition, args.from_time, args.to_time, args.from_offset,
                             args.to_offset)
        out.update(parse_options(args.option))
    except ValueError as e:
        fail(str(e))
    return out


def fail(message: str) -> NoReturn:
    """A job's usage or I/O error: one line on stderr, exit 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


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


#: what Spark writes in a directory it writes a DataFrame to, a partitionBy's ``key=value`` dirs among them
_SPARK_OUTPUT = re.compile(r"^(_SUCCESS|\._SUCCESS\.crc|_temporary|_committed_.*|_started_.*|\.?part-.*)$")
_SPARK_PARTITION_DIR = re.compile(r"^[^=]+=.*$")


def check_out(out: str, outputs: tuple = ()) -> None:
    """Exit 2 with one line unless a job may write ``out`` (Spark's ``overwrite`` replaces it whole):
    new (made here, so that one that cannot be made is said before Spark starts), empty, or holding
    only what Spark writes -- an earlier run's output, which a job replaces as Spark jobs do; never a
    regular file or a directory with files of someone else's.  ``outputs``: the names a job writes
    inside ``out`` (the scan job's levels), each of which may hold such an output.  The temp dirs of
    killed kfx runs there are removed.  Remote outputs (s3a://, hdfs://) are Spark's to judge."""
    local = local_path(out)
    if local is None:
        return
    if not os.path.exists(local):
        try:
            os.makedirs(local)
        except OSError as e:
            fail(f"--out {out}: cannot be created: {e.strerror or e}")
        return
    if not os.path.isdir(local):
        fail(f"--out {out}: not a directory (a job replaces its --out whole)")
    fsutil.clear_dead_temps(local)
    def spark_wrote(folder, name):
        return _SPARK_OUTPUT.match(name) or (_SPARK_PARTITION_DIR.match(name) and os.path.isdir(os.path.join(folder, name)))
    foreign = []
    for name in sorted(os.listdir(local)):
        path = os.path.join(local, name)
        if name in outputs and os.path.isdir(path):
            foreign += [f"{name}/{n}" for n in sorted(os.listdir(path)) if not spark_wrote(path, n)]
        elif not spark_wrote(local, name):
            foreign.append(name)
    if foreign:
        fail(f"--out {out} holds files no Spark job wrote ({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}), "
             "which writing there would delete: give a new or empty directory")


def check_inputs(paths, options=None) -> spark_scan_plan.Layout:
    """Exit 2 with one line when an input has nothing at it (no such path, bucket or prefix):
    the source's own listing, done before any Spark work.  Returns that listing
    (:func:`listing_of`), which a scan reads from."""
    try:
        return listing_of(paths, options)
    except spark_storage.MissingInput as e:
        fail(str(e))
