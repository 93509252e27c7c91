"""The Spark session the jobs share: local by default, any master through spark-submit; its driver
JVM's start-up options, and its end."""
from __future__ import annotations

import importlib
import os
import sys
import threading

from kafkaforensics.spark import spark_source
from kafkaforensics.spark.engine import ScanEngine
from specs.lazy import lazy
from spark_jobs.class_archive import _cache_dir, _keep_archive, class_archive_path
from spark_jobs.job_args import fail

#: imported on first use (specs/lazy.py)
pyspark = lazy("pyspark", globals())
pyspark_errors = lazy("pyspark.errors", globals())
pyspark_sql = lazy("pyspark.sql", globals())


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


def register(spark) -> None:
    """Register ``kafka_segments`` in ``spark`` and let it prune with pushed filters (Spark 4.1+
    passes filters to a Python data source only with ``spark.sql.python.filterPushdown.enabled``)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(spark_source.KafkaSegments)
