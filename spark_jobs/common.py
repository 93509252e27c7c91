"""The Spark session the jobs share: local by default, any master through spark-submit."""
from __future__ import annotations

import os
import sys


def get_spark(master: str | None = None, app: str = "kafkaforensics"):
    """A SparkSession with the ``kafka_segments`` data source registered.

    Locally it binds to 127.0.0.1, has no UI, and runs its Python workers with this interpreter
    (so they see the same installed packages).  Under spark-submit the submitted master wins.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kafkaforensics.spark_source import KafkaSegments

    b = SparkSession.builder.appName(app)
    if master:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = (b.master(master).config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "4"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafkaSegments)
    return spark


def read(spark, paths, level: str, split_bytes: int | None = None):
    r = spark.read.format("kafka_segments").option("level", level)
    if split_bytes:
        r = r.option("splitBytes", str(split_bytes))
    return r.load(",".join(paths) if isinstance(paths, (list, tuple)) else paths)
