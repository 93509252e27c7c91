"""The Spark session the jobs share: local by default, any master through spark-submit."""
from __future__ import annotations

import os
import sys


def get_spark(master: str | None = None, app: str = "kafkaforensics", console_progress: bool = True):
    """A SparkSession with the ``kafka_segments`` data source registered.

    Locally it binds to 127.0.0.1, has no UI, and runs its Python workers with this interpreter
    (so they see the same installed packages).  Under spark-submit the submitted master wins.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app)
    if not console_progress:  # the caller shows its own progress instead of Spark's stage bars
        b = b.config("spark.ui.showConsoleProgress", "false")
    if master:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = (b.master(master).config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "4"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark) -> None:
    """Register ``kafka_segments`` in ``spark`` and let it prune with pushed filters (Spark 4.1+
    passes filters to a Python data source only with ``spark.sql.python.filterPushdown.enabled``)."""
    from kafkaforensics.spark_source import KafkaSegments
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkaSegments)


def read(spark, paths, level: str, split_bytes: int | None = None, options: dict | None = None):
    """``paths`` read by ``kafka_segments`` at ``level``, with the source's ``options``; the scan is
    spread over at least the session's default parallelism."""
    r = spark.read.format("kafka_segments").option("level", level)
    r = r.option("minPartitions", str(spark.sparkContext.defaultParallelism))
    if split_bytes:
        r = r.option("splitBytes", str(split_bytes))
    for k, v in (options or {}).items():
        r = r.option(k, str(v))
    return r.load(",".join(paths) if isinstance(paths, (list, tuple)) else paths)


def add_source_arguments(ap) -> None:
    """The command-line options every job passes to the source: ``--option KEY=VALUE`` (repeatable;
    e.g. ``s3.endpoint=http://127.0.0.1:9000``, ``includeCorrupt=true``) and ``--master``."""
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a kafka_segments option (s3.endpoint, s3.accessKey, s3.secretKey, s3.region, ...)")
    ap.add_argument("--master", help="Spark master (spark-submit's own wins when it gives one)")


def source_options(args) -> dict:
    """The ``--option KEY=VALUE`` pairs as a dict."""
    out = {}
    for pair in args.option:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--option takes KEY=VALUE, not {pair!r}")
        out[key] = value
    return out
