"""The hand-over floor by hand: what Spark pays to take rows from a Python worker at all.

    python benchmarks/hand_over_floor.py big-1024 [--repeat 3]

Reads the records Parquet that ``benchmarks/spark_group.py`` wrote for a fleet (``spark-work/<fleet>``)
and, in one local[2] session, interleaves three figures writing the same rows to Parquet: Spark's own
Parquet -> Parquet copy; the rows decoded by pyarrow in the tasks and handed to ``mapInArrow`` (the
group's "hand-over floor"); and the same Arrow batches held in each Python worker's memory (decoded
once, during two warm-up rounds), so that nothing but the hand-over is measured.  Medians and each
round's times.  Not part of ``make bench``: the held batches (about twice the fleet) stay in the
workers for the session and would weigh on the group's memory figures.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: each Python worker's Arrow batches, by Parquet file (filled on first use, kept for the session)
_HELD: dict = {}


def held_batches(path: str) -> list:
    """The Arrow batches of a Parquet file, decoded once in this process."""
    got = _HELD.get(path)
    if got is None:
        import pyarrow.parquet as pq
        got = _HELD[path] = list(pq.ParquetFile(path).iter_batches(batch_size=8192))
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("fleet")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(HERE))
    from spark_jobs.session import get_spark
    work = os.path.join(HERE, "data", "spark-work")
    src = os.path.join(work, args.fleet)
    files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".parquet"))
    spark = get_spark("local[2]", app="hand-over-floor", console_progress=False, conf={"spark.driver.memory": "4g"})
    schema = spark.read.parquet(src).schema

    def decoded(numbers):
        import pyarrow.parquet as pq
        for b in numbers:
            for i in b.column(0).to_pylist():
                yield from pq.ParquetFile(files[i]).iter_batches(batch_size=8192)

    def held(numbers):
        from benchmarks.hand_over_floor import held_batches as batches  # this module, kept by the worker
        for b in numbers:
            for i in b.column(0).to_pylist():
                yield from batches(files[i])

    def handed(f, tag):
        (spark.range(len(files), numPartitions=len(files)).mapInArrow(f, schema)
         .write.mode("overwrite").parquet(os.path.join(work, args.fleet + tag)))

    figures = {"parquet -> parquet copy": lambda: spark.read.parquet(src).write.mode("overwrite").parquet(
                   os.path.join(work, args.fleet + "-copy")),
               "pyarrow -> mapInArrow -> parquet": lambda: handed(decoded, "-floor"),
               "held batches -> mapInArrow -> parquet": lambda: handed(held, "-held")}
    for _ in range(2):
        for f in figures.values():
            f()
    times = {k: [] for k in figures}
    for _ in range(args.repeat):
        for k, f in figures.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    copy = statistics.median(times["parquet -> parquet copy"])
    for k, v in times.items():
        print(f"{k}: median {statistics.median(v):.2f} s ({' '.join('%.2f' % x for x in v)}), "
              f"{statistics.median(v) / copy:.2f}x the copy")


if __name__ == "__main__":
    main()
