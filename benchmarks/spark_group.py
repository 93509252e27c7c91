"""`make bench`'s Spark group: the kafka_segments source against Spark's own handling of the same
rows, every figure measured in one local[2] session, interleaved rounds, medians.

    python benchmarks/spark_group.py OUT_JSON [--fleets small-2000,small-20000,big-1024] [--repeat 3]
                                     [--timeline DIR] [--profile]

Fleets (generated once into benchmarks/data/, reused):

- ``small-N``: N small segments, one a partition, over 4 broker log dirs and 50 topics, 60 records
  of about 200 bytes each (six batches of ten) -- a fleet whose cost is its file count;
- ``big-M``: M MiB in 16 segments of one log dir (100-record batches) -- a fleet whose cost is its bytes.

For each fleet: ``kafka_segments`` at the records level written to Parquet, and ``kfx scan``'s
records export of it (``planned_read.read_planned``: planned in the driver, no planner process; a fleet
of up to ``DRIVER_READ_BYTES`` read in the driver and written by Spark, a larger one read and
written by Spark's tasks with pyarrow, ``output.write_planned``), against Spark copying those very rows
Parquet -> Parquet (its own reader and writer), and the hand-over floor: those rows read by
pyarrow in the tasks and handed to Spark as Arrow batches (``mapInArrow``), what any producer
written in Python pays before decoding a byte of Kafka; the ratios of the medians; the peak
memory (RSS) of the whole process tree -- driver, JVM, Python workers -- during each; the scan
partitions and output files.  With ``--timeline`` (a partition spread over a year): a one-hour
window with filter pushdown against the same query with it off.  ``--profile`` adds where a small
file's time goes (listing and planning, one task a segment against packed tasks, the reading
itself in-process).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")

T0 = 1_700_000_000_000
YEAR_MS = 365 * 86_400_000
HOUR_MS = 3_600_000


# -------------------------------------------------------------------------------- fleets ----
def make_small_fleet(root: str, segments: int, brokers: int = 4, topics: int = 50) -> str:
    """``segments`` partition dirs of one small segment each (60 records in six batches), spread
    over ``brokers`` log dirs (each with a meta.properties) and ``topics`` topics."""
    if os.path.isdir(root):
        return root
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    tmpl = bytearray(build_v2([Record(j, T0 + j, b"key-%04d" % j, b"v" * 180, []) for j in range(10)], base_offset=0))
    seg = bytearray()
    for i in range(6):
        tmpl[0:8] = (i * 10).to_bytes(8, "big")  # the base offset lies outside the CRC
        seg += tmpl
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    per_topic = -(-segments // topics)
    for n in range(segments):
        broker = n % brokers
        log_dir = os.path.join(tmp, f"broker-{broker}", "kafka-logs")
        d = os.path.join(log_dir, f"topic-{n // per_topic:03d}-{n % per_topic}")
        os.makedirs(d)
        with open(os.path.join(d, "00000000000000000000.log"), "wb") as f:
            f.write(seg)
    for b in range(brokers):
        with open(os.path.join(tmp, f"broker-{b}", "kafka-logs", "meta.properties"), "w") as f:
            f.write(f"version=1\nnode.id={b}\ncluster.id=benchbenchbenchbenchbe\n")
    os.rename(tmp, root)
    return root


def make_big_fleet(root: str, mib: int, segments: int = 16) -> str:
    """``mib`` MiB in ``segments`` segments of one log dir (benchmarks/run.py's template batches)."""
    if os.path.isdir(root):
        return root
    from benchmarks.run import make_segment
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for i in range(segments):
        make_segment(os.path.join(tmp, f"events-{i}", "00000000000000000000.log"), (mib << 20) // segments)
    os.rename(tmp, root)
    return root


def fleet_path(name: str) -> str:
    kind, n = name.split("-")
    if kind == "small":
        return make_small_fleet(os.path.join(DATA, f"spark-fleet-{name}"), int(n))
    return make_big_fleet(os.path.join(DATA, f"spark-fleet-{name}"), int(n))


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


# ---------------------------------------------------------------------------- measuring ----
def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (from /proc)."""
    children: dict = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(p))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
    return total


class PeakMemory:
    """The largest resident size of this process tree (or ``pid``'s) while in the ``with`` (sampled
    every 0.2 s)."""

    def __init__(self, pid: int | None = None):
        self.pid = pid or os.getpid()

    def __enter__(self):
        self.peak, self._stop = 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while True:
            self.peak = max(self.peak, _tree_rss(self.pid))
            if self._stop.wait(0.2):
                return

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def _files(d: str) -> int:
    return sum(1 for _r, _d, fs in os.walk(d) for f in fs if f.endswith(".parquet"))


def profile_small_files(spark, fleet: str) -> dict:
    """Where a small segment's time goes: the driver's listing and planning; a count with one task
    per segment (how the source planned before) against packed tasks; the read of every piece
    in this process, with no Spark at all."""
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    from spark_jobs.planned_read import read
    out = {}
    t = time.perf_counter()
    splits = KafkaSegmentsReader({"path": fleet, "minPartitions": "2"}, "records").partitions()
    out["plan_s"] = time.perf_counter() - t
    pieces = [p for s in splits for p in s.pieces if p.kind == "segment"]
    out["segments"], out["packed_tasks"] = len(pieces), len(splits)
    schema = read(spark, fleet, "records").schema
    reader = KafkaSegmentsReader({"path": fleet}, "records", schema)
    t = time.perf_counter()
    rows = sum(b.num_rows for s in splits for b in reader.read(s))
    out["in_process_read_s"] = time.perf_counter() - t
    out["rows"] = rows
    # every segment its own task (an open cost of the split size), none cut: how the source planned before
    one_each = {"maxPartitionBytes": str(1 << 20), "openCostInBytes": str(1 << 20)}
    for label, opts in (("count_packed_s", {}), ("count_one_task_a_segment_s", one_each)):
        t = time.perf_counter()
        read(spark, fleet, "records", options=opts).count()
        out[label] = time.perf_counter() - t
    work = os.path.join(DATA, "spark-work", "profile")
    for label, opts in (("write_packed", {}), ("write_one_task_a_segment", one_each)):
        t = time.perf_counter()
        read(spark, fleet, "records", options=opts).write.mode("overwrite").parquet(work)
        out[label + "_s"] = time.perf_counter() - t
        out[label + "_files"] = _files(work)
    n = out["segments"]
    out["per_segment_ms"] = {
        "plan": 1000 * out["plan_s"] / n,
        "in_process_read": 1000 * out["in_process_read_s"] / n,
        "count, one task a segment": 1000 * out["count_one_task_a_segment_s"] / n,
        "count, packed": 1000 * out["count_packed_s"] / n,
        "write, one task a segment": 1000 * out["write_one_task_a_segment_s"] / n,
        "write, packed": 1000 * out["write_packed_s"] / n,
    }
    return out


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("out_json")
    ap.add_argument("--fleets", default="small-2000,small-20000,big-1024")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeline")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    fleets = {name: fleet_path(name) for name in args.fleets.split(",") if name}
    from pyspark.sql import functions as F

    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    from kafkaforensics.spark.engine import DRIVER_READ_BYTES
    from spark_jobs.output import write_planned
    from spark_jobs.planned_read import read, read_planned
    from spark_jobs.session import get_spark
    t_start = time.perf_counter()
    spark = get_spark("local[2]", app="kafkaforensics-bench", console_progress=False,
                      conf={"spark.driver.memory": "4g"})
    session_s = time.perf_counter() - t_start
    work = os.path.join(DATA, "spark-work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def records_to_parquet(name):
        read(spark, fleets[name], "records").write.mode("overwrite").parquet(os.path.join(work, name))

    def copy(name):
        spark.read.parquet(os.path.join(work, name)).write.mode("overwrite").parquet(os.path.join(work, name + "-copy"))

    def planned_to_parquet(name):  # kfx scan's records export (spark_jobs.scan.scan's, on a local master)
        r = read_planned(spark, fleets[name], "records", driver_bytes=DRIVER_READ_BYTES)
        try:
            write_planned(spark, r, os.path.join(work, name + "-planned"))  # by the tasks, or here when held here
        finally:
            r.release()

    def hand_over_floor(name):
        """The same rows reaching Spark from Python as Arrow batches at no Kafka cost at all: each task
        reads the source's Parquet files with pyarrow (C++) and yields their batches to
        ``mapInArrow``, then Spark writes Parquet.  What any Python producer pays to hand rows to the
        JVM; the floor under both our figures."""
        src = os.path.join(work, name)
        files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".parquet"))

        def batches(numbers):
            import pyarrow.parquet as pq
            for b in numbers:
                for i in b.column(0).to_pylist():
                    yield from pq.ParquetFile(files[i]).iter_batches(batch_size=8192)
        (spark.range(len(files), numPartitions=len(files)).mapInArrow(batches, spark.read.parquet(src).schema)
         .write.mode("overwrite").parquet(os.path.join(work, name + "-floor")))

    figures = {}
    for name in fleets:
        figures[f"{name}: kafka_segments -> parquet"] = (lambda n=name: records_to_parquet(n))
        figures[f"{name}: parquet -> parquet copy"] = (lambda n=name: copy(n))
        figures[f"{name}: kfx scan's records export"] = (lambda n=name: planned_to_parquet(n))
        figures[f"{name}: pyarrow -> mapInArrow -> parquet (hand-over floor)"] = (lambda n=name: hand_over_floor(n))
    if args.timeline:
        lo = window_start(args.timeline)
        window = F.col("timestamp").between(lo, lo + HOUR_MS - 1)
        for pushdown in ("true", "false"):
            figures[f"window, pushdown={pushdown}"] = (
                lambda p=pushdown: read(spark, args.timeline, "records", options={"pushdown": p}).where(window).count())
    for name in fleets:  # warm-up: the JVM compiles the Parquet writer and the Arrow path once
        records_to_parquet(name)
        copy(name)
        planned_to_parquet(name)
        hand_over_floor(name)
    times = {k: [] for k in figures}
    peak = {k: 0 for k in figures}
    answers = {}
    for _ in range(args.repeat):
        for label, f in figures.items():  # interleaved: each figure sees the same moments of the machine
            with PeakMemory() as mem:
                t0 = time.perf_counter()
                answers[label] = f()
                times[label].append(time.perf_counter() - t0)
            peak[label] = max(peak[label], mem.peak)
    med = {k: statistics.median(v) for k, v in times.items()}
    per_fleet = {}
    for name, path in fleets.items():
        splits = KafkaSegmentsReader({"path": path, "minPartitions": str(spark.sparkContext.defaultParallelism)},
                                     "records").partitions()
        pieces = [p for s in splits for p in s.pieces if p.kind == "segment"]
        ours, theirs = med[f"{name}: kafka_segments -> parquet"], med[f"{name}: parquet -> parquet copy"]
        planned = med[f"{name}: kfx scan's records export"]
        floor = med[f"{name}: pyarrow -> mapInArrow -> parquet (hand-over floor)"]
        if spark.read.parquet(os.path.join(work, name + "-planned")).count() != \
                spark.read.parquet(os.path.join(work, name)).count():
            raise SystemExit(f"{name}: kfx scan's export and kafka_segments wrote different row counts")
        per_fleet[name] = {
            "segments": len({p.uri for p in pieces}), "bytes": sum(p.bytes for p in pieces),
            "records": spark.read.parquet(os.path.join(work, name)).count(), "scan_partitions": len(splits),
            "output_files": _files(os.path.join(work, name)), "median_s": ours, "copy_median_s": theirs,
            "ratio_vs_copy": ours / theirs,
            "planned_median_s": planned, "planned_ratio_vs_copy": planned / theirs,
            "floor_median_s": floor, "floor_ratio_vs_copy": floor / theirs, "planned_ratio_vs_floor": planned / floor,
            "planned_output_files": _files(os.path.join(work, name + "-planned")),
            "peak_rss_mb": peak[f"{name}: kafka_segments -> parquet"] / 2**20,
            "copy_peak_rss_mb": peak[f"{name}: parquet -> parquet copy"] / 2**20,
        }
    out = {"session_start_s": session_s, "repeat": args.repeat, "runs": times, "median_s": med,
           "peak_rss_mb": {k: v / 2**20 for k, v in peak.items()}, "fleets": per_fleet,
           "ratios": {f"spark_{n.replace('-', '_')}_vs_parquet_copy": v["ratio_vs_copy"] for n, v in per_fleet.items()}}
    out["ratios"].update({f"kfx_scan_export_{n.replace('-', '_')}_vs_parquet_copy": v["planned_ratio_vs_copy"]
                          for n, v in per_fleet.items()})
    out["ratios"].update({f"hand_over_floor_{n.replace('-', '_')}_vs_parquet_copy": v["floor_ratio_vs_copy"]
                          for n, v in per_fleet.items()})
    out["ratios"].update({f"kfx_scan_export_{n.replace('-', '_')}_vs_hand_over_floor": v["planned_ratio_vs_floor"]
                          for n, v in per_fleet.items()})
    if args.timeline:
        out["window_rows"] = answers["window, pushdown=true"]
        out["window_rows_full_scan"] = answers["window, pushdown=false"]
        out["ratios"]["window_pushdown_vs_full_scan"] = med["window, pushdown=true"] / med["window, pushdown=false"]
    if args.profile:
        small = next((p for n, p in fleets.items() if n.startswith("small")), None)
        if small:
            out["profile"] = profile_small_files(spark, small)
    spark.stop()
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k in ("fleets", "ratios", "profile", "window_rows")}, indent=1))


if __name__ == "__main__":
    main()
