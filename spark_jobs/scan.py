"""`kfx scan` as a library function: one read of a fleet of segments -- its batches, its records
when they are wanted, its anomalies -- cached, from which the export, the inventory, the anomaly
list and the search hits are all written.  Each segment is decoded once.

    spark-submit spark_jobs/scan.py --level records --search 'order-42' --out s3a://bucket/scan s3a://bucket/kafka-logs
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from pyspark.sql import functions as F

from kafkaforensics.records.schema import ROW_KINDS, SOURCE_COLUMNS
from spark_jobs.common import get_spark, job_arguments, read, source_options
from spark_jobs.inventory import inventory_of
from spark_jobs.search import matches

#: each export level and the ``rowKind`` of its rows
LEVEL_KINDS = {"batches": "batch", "records": "record", "anomalies": "anomaly"}


@dataclass
class ScanPlan:
    """What the scan will read, known before it starts: for progress."""
    splits: int
    segments: int
    bytes: int


@dataclass
class ScanResult:
    out: str
    level: str
    rows: int                       # rows written at ``level``
    anomalies: int
    hits: int | None                # search hits, when a pattern was given
    inventory: list = field(default_factory=list)   # one dict a partition
    plan: ScanPlan | None = None


def plan(paths, split_bytes=None, options=None, min_partitions=None) -> ScanPlan:
    """The splits, segments and bytes a scan of ``paths`` reads (the source's own planning)."""
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    opts = {"path": ",".join(paths), **(options or {})}
    if split_bytes:
        opts["splitBytes"] = str(split_bytes)
    if min_partitions:
        opts["minPartitions"] = str(min_partitions)
    splits = [s for s in KafkaSegmentsReader(opts, "scan").partitions() if s.uri]
    return ScanPlan(len(splits), len({s.uri for s in splits}), sum(s.end - s.start for s in splits))


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


def scan(spark, paths, out: str, level: str = "batches", search: str | None = None, split_bytes=None,
         options: dict | None = None, progress=None) -> ScanResult:
    """Scan ``paths`` once and write ``out/<level>``, ``out/inventory``, ``out/anomalies`` and, with a
    ``search`` pattern, ``out/search`` (Parquet).  ``progress(done_splits, total_splits)`` is called
    while the segments are read."""
    if level not in LEVEL_KINDS:
        raise ValueError(f"level must be one of {sorted(LEVEL_KINDS)}, not {level!r}")
    opts = dict(options or {})
    opts["scanRecords"] = "true" if level == "records" or search else "false"
    parallelism = spark.sparkContext.defaultParallelism
    scan_plan = plan(paths, split_bytes, opts, parallelism)
    kind = LEVEL_KINDS[level]
    rows = read(spark, paths, "scan", split_bytes, opts).persist()
    stop = threading.Event()
    watcher = None
    if progress is not None:
        watcher = threading.Thread(target=_watch, args=(spark, max(1, scan_plan.splits), progress, stop), daemon=True)
        watcher.start()
    try:
        columns = [name for name, _ in SOURCE_COLUMNS + ROW_KINDS[kind]]
        # the one read of the segments: this write fills the cache every later output comes from
        rows.where(F.col("rowKind") == kind).select(*columns).write.mode("overwrite").parquet(os.path.join(out, level))
    finally:
        stop.set()
        if watcher is not None:
            watcher.join()
            progress(scan_plan.splits, scan_plan.splits)
    try:
        if level != "anomalies":
            anomaly_columns = [name for name, _ in SOURCE_COLUMNS + ROW_KINDS["anomaly"]]
            (rows.where(F.col("rowKind") == "anomaly").select(*anomaly_columns)
             .write.mode("overwrite").parquet(os.path.join(out, "anomalies")))
        inv_df = inventory_of(rows, F.count(F.when(F.col("rowKind") == kind, 1)).alias("_rows")).persist()
        inv = [r.asDict() for r in inv_df.collect()]
        inv_df.drop("_rows").write.mode("overwrite").parquet(os.path.join(out, "inventory"))
        inv_df.unpersist()
        hits = None
        if search:
            found = matches(rows.where(F.col("rowKind") == "record"), search).persist()
            found.write.mode("overwrite").parquet(os.path.join(out, "search"))
            hits = found.count()
            found.unpersist()
    finally:
        rows.unpersist()
    written = sum(r.pop("_rows") for r in inv)
    return ScanResult(out, level, written, sum(r["anomalies"] for r in inv), hits, inv, scan_plan)


def main(argv=None):
    ap = job_arguments(__doc__)
    ap.add_argument("--level", default="batches", choices=sorted(LEVEL_KINDS))
    ap.add_argument("--search")
    args = ap.parse_args(argv)
    r = scan(get_spark(args.master), args.paths, args.out, args.level, args.search, options=source_options(args))
    print(f"{r.rows} {r.level} rows, {r.anomalies} anomalies" + (f", {r.hits} search hits" if r.hits is not None else ""))


if __name__ == "__main__":
    main()
