"""The run that records the driver JVM's class archive: a small scan, as a first ``kfx scan`` would
run one (started in a process of its own by
:func:`~spark_jobs.class_archive.start_class_archive_recording`)."""
from __future__ import annotations

import contextlib
import os
import tempfile

from kafkaforensics.log import writer as log_writer
from kafkaforensics.records import batch as records_batch
from kafkaforensics.records import builder as records_builder
from kafkaforensics.spark.engine import DRIVER, ScanEngine
from spark_jobs import scan as spark_jobs_scan
from spark_jobs.class_archive import class_archive_path, recording_pid
from spark_jobs.session import end_session, get_spark


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
