"""`make bench`'s Spark group: the kafka_segments source against Spark's own handling of the same
data, every figure measured in one local[2] session, interleaved, medians of ``--repeat`` runs.

    python benchmarks/spark_group.py SEGMENT_DIR TIMELINE_DIR OUT_JSON [--repeat 3]

- records -> Parquet: ``kafka_segments`` at the records level written to Parquet;
- Parquet -> Parquet: Spark copying those very rows (its own reader and writer);
- count over the source; ``binaryFile`` reading the same bytes;
- a one-hour timestamp window over a year of archive with filter pushdown, against the same query
  with pushdown off (a full scan), and the bytes each plans to read.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

T0 = 1_700_000_000_000
YEAR_MS = 365 * 86_400_000
HOUR_MS = 3_600_000


def make_timeline(d: str, size: int) -> str:
    """A partition of about ``size`` bytes whose batches' timestamps spread evenly over a year, in
    8 MiB segments with their indexes: one template batch, its offsets and timestamps rewritten
    (and its CRC recomputed) for each copy."""
    if os.path.isdir(d):
        return d
    from crc32c import crc32c

    from benchmarks.run import _template
    from kafkaforensics.log.writer import write_partition
    from specs import record_batch as R
    tmpl, n = _template(0, 100, 150)
    count = max(1, size // len(tmpl))
    step = YEAR_MS // count

    def batches():
        for i in range(count):
            ts = T0 + i * step
            tmpl[0:8] = (i * n).to_bytes(8, "big")
            tmpl[27:35] = ts.to_bytes(8, "big")                     # baseTimestamp
            tmpl[35:43] = (ts + n - 1).to_bytes(8, "big")          # maxTimestamp: the template's deltas run 0..n-1
            tmpl[R.CRC_OFFSET:R.CRC_OFFSET + 4] = crc32c(memoryview(tmpl)[R.ATTRIBUTES_OFFSET:]).to_bytes(4, "big")
            yield bytes(tmpl)
    write_partition(d + ".tmp", batches(), segment_bytes=8 << 20)
    os.rename(d + ".tmp", d)
    return d


def window_start(timeline: str) -> int:
    """Ten minutes before the first indexed timestamp of the middle segment: a window that holds
    records, half way through the year."""
    from kafkaforensics.log import time_index
    from kafkaforensics.log.segment import offset_from_name
    part = os.path.join(timeline, sorted(os.listdir(timeline))[0])
    segs = sorted(f for f in os.listdir(part) if f.endswith(".timeindex"))
    mid = os.path.join(part, segs[len(segs) // 2])
    with open(mid, "rb") as f:
        entries, _ = time_index.read_entries(f.read(), offset_from_name(mid))
    return entries[0][0] - 600_000


def main() -> None:
    seg_dir, timeline, out_json = sys.argv[1:4]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    from pyspark.sql import functions as F

    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    from spark_jobs.common import get_spark, read
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThanOrEqual
    t_start = time.perf_counter()
    # binaryFile holds a whole segment in one row: the driver (local mode's executor) needs room for it
    spark = get_spark("local[2]", app="kafkaforensics-bench", console_progress=False,
                      conf={"spark.driver.memory": "4g"})
    session_s = time.perf_counter() - t_start
    work = os.path.join(os.path.dirname(out_json), "spark-work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src_parquet, copy_parquet = os.path.join(work, "records"), os.path.join(work, "copy")
    size = sum(os.path.getsize(os.path.join(seg_dir, f)) for f in os.listdir(seg_dir) if f.endswith(".log"))
    lo = window_start(timeline)
    hi = lo + HOUR_MS - 1
    window = F.col("timestamp").between(lo, hi)

    def records_to_parquet():
        read(spark, seg_dir, "records").write.mode("overwrite").parquet(src_parquet)

    def copy():
        spark.read.parquet(src_parquet).write.mode("overwrite").parquet(copy_parquet)

    def count():
        return read(spark, seg_dir, "records").count()

    def binary_file():
        spark.read.format("binaryFile").load(seg_dir).select(F.length("content")).collect()

    def window_query(pushdown):
        return read(spark, timeline, "records", options={"pushdown": pushdown}).where(window).count()

    figures = {"records->parquet": records_to_parquet, "parquet->parquet copy": copy, "count": count,
               "binaryFile read": binary_file, "window, pushdown": lambda: window_query("true"),
               "window, full scan": lambda: window_query("false")}
    records_to_parquet()  # warm-up: the JVM compiles the Parquet writer and the Arrow path once
    copy()
    times: dict = {k: [] for k in figures}
    answers: dict = {}
    for _ in range(repeat):
        for name, f in figures.items():  # interleaved: each figure sees the same moments of the machine
            t0 = time.perf_counter()
            answers[name] = f()
            times[name].append(time.perf_counter() - t0)
    records = spark.read.parquet(src_parquet).count()
    schema = read(spark, timeline, "records").schema
    planned = {}
    for label, filters in (("full scan", []), ("pushdown", [GreaterThanOrEqual(("timestamp",), lo),
                                                            LessThanOrEqual(("timestamp",), hi)])):
        r = KafkaSegmentsReader({"path": timeline}, "records", schema)
        r.pushFilters(filters)
        splits = r.partitions()
        planned[label] = {"bytes": sum(s.end - s.start for s in splits), "segments": len({s.uri for s in splits})}
    spark.stop()
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {
        "session_start_s": session_s, "segment_bytes": size, "records": records, "runs": times, "median_s": med,
        "window_rows": answers["window, pushdown"], "window_rows_full_scan": answers["window, full scan"],
        "planned": planned,
        "ratios": {
            "records_to_parquet_vs_copy": med["records->parquet"] / med["parquet->parquet copy"],
            "count_vs_binaryFile": med["count"] / med["binaryFile read"],
            "window_pushdown_vs_full_scan": med["window, pushdown"] / med["window, full scan"],
            "window_bytes_read_share": planned["pushdown"]["bytes"] / planned["full scan"]["bytes"],
        },
    }
    with open(out_json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
