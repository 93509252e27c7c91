"""`make bench`: every figure in one run, each next to its ceiling or its peers on the same bytes.

Each measurement runs in a child process (so its peak RSS is its own) over data generated into
benchmarks/data/.  Prints a table and writes benchmarks/results.json.

    python benchmarks/run.py [--size-mb 1024] [--deep-mb 64] [--repeat 3] [--compact-records 0] [--spark-mb 0]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data")
sys.path.insert(0, ROOT)

T0 = 1_700_000_000_000
#: deep iteration: ours per record (Record objects), ours to columns, and the peers' readers
OUR_DEEP = ("kafkaforensics", "kafkaforensics-columns")
DEEP_IMPLS = OUR_DEEP + ("kafka-python", "aiokafka")


# ---------------------------------------------------------------- data generation (parent) ----
def _template(codec: int, n: int, value_size: int):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    import random
    rnd = random.Random(codec)
    recs = [Record(j, T0 + j, f"key-{j % 1000:04d}".encode(),
                   (b"%08d " % j) + bytes(rnd.choice(b"abcdefghij klmnop") for _ in range(value_size)),
                   [("trace", b"abc")] if j % 10 == 0 else []) for j in range(n)]
    return bytearray(build_v2(recs, base_offset=0, codec=codec)), n


def make_segment(path: str, size: int, codec: int = 0, records_per_batch: int = 100, value_size: int = 150) -> str:
    """A segment of about ``size`` bytes: one template batch repeated with advancing base offsets
    (the base offset lies outside the CRC, so every batch stays valid)."""
    if os.path.exists(path) and abs(os.path.getsize(path) - size) < 1 << 20:
        d = os.path.dirname(path)
        for n in os.listdir(d):  # indexes left by an earlier run (reindex builds them afresh)
            if n != os.path.basename(path):
                os.unlink(os.path.join(d, n))
        return path
    import shutil
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # stale indexes of an older size must go too
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmpl, n = _template(codec, records_per_batch, value_size)
    off = 0
    with open(path + ".tmp", "wb") as f:
        written = 0
        while written < size:
            tmpl[0:8] = off.to_bytes(8, "big")
            f.write(tmpl)
            written += len(tmpl)
            off += n
    os.replace(path + ".tmp", path)
    return path


def make_compaction_log(d: str, records: int, keys: int) -> str:
    """``records`` records over ``keys`` distinct keys, 100 a batch, several segments."""
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.writer import write_partition
    if os.path.isdir(d):
        return d
    tmp = d + ".tmp"
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)

    def batches():
        for b in range(records // 100):
            base = b * 100
            yield build_v2([Record(base + j, T0 + base + j, b"key-%08d" % ((base + j) * 7919 % keys),
                                   b"value-%012d" % (base + j), []) for j in range(100)], base_offset=base)
    write_partition(tmp, batches(), segment_bytes=32 << 20)
    os.rename(tmp, d)
    return d


def partition_with(seg_path: str, name: str) -> str:
    d = os.path.join(DATA, name)
    os.makedirs(d, exist_ok=True)
    target = os.path.join(d, "00000000000000000000.log")
    if not os.path.exists(target):
        os.link(seg_path, target)
    return d


# --------------------------------------------------------------------- measurements (child) ----
def _records_ours(path):
    """Every record as a Record object, through the library's deep iteration."""
    from kafkaforensics.log.record_columns import iter_records
    n = 0
    for r in iter_records(path):
        r.key, r.value, r.headers, r.timestamp
        n += 1
    return n


def _records_columns(path):
    """Every record decoded to columns: offsets, timestamps and attributes as arrays; keys, values
    and the headers' keys and values as spans of the decompressed bytes (no object per record)."""
    from kafkaforensics.log.record_columns import iter_record_columns
    n = 0
    for cols in iter_record_columns(path):
        cols.offset, cols.timestamp, cols.key_start, cols.value_start, cols.header_key_start, cols.header_value_start
        n += len(cols)
    return n


def _records_peer(path, mod):
    MemoryRecords = __import__(mod + ".record.memory_records", fromlist=["MemoryRecords"]).MemoryRecords
    with open(path, "rb") as f:
        data = f.read()
    mr = MemoryRecords(data)
    n = 0
    while True:
        b = mr.next_batch()
        if b is None:
            return n
        for r in b:
            r.key, r.value, r.headers, r.timestamp
            n += 1


def _batch_bounds(path: str) -> list:
    """(start, end) of each v2 batch's CRC-covered bytes, from the length fields."""
    import struct
    out, pos, end = [], 0, os.path.getsize(path)
    with open(path, "rb", buffering=0) as f:
        while pos + 61 <= end:
            size = struct.unpack(">i", os.pread(f.fileno(), 4, pos + 8))[0]
            out.append((pos + 21, pos + 12 + size))
            pos += 12 + size
    return out


KFX = os.path.join(os.path.dirname(sys.executable), "kfx")
#: a whole process reading a file 1 MiB at a time and crc32c'ing it: what `kfx verify` is judged against
READ_CRC = ("import crc32c, sys\nc = 0\nwith open(sys.argv[1], 'rb', buffering=0) as f:\n"
            "    while b := f.read(1 << 20):\n        c = crc32c.crc32c(b, c)\n")
#: a whole process reading a file 1 MiB at a time: what `kfx dump --format json` is judged against
READ = "import sys\nwith open(sys.argv[1], 'rb', buffering=0) as f:\n    while f.read(1 << 20):\n        pass\n"
#: a whole process reading every segment of a log dir 1 MiB at a time: what `kfx recover LOG_DIR` is judged against
READ_TREE = ("import os, sys\nfor root, _d, files in sorted(os.walk(sys.argv[1])):\n    for n in files:\n"
             "        if n.endswith('.log'):\n            with open(os.path.join(root, n), 'rb', buffering=0) as f:\n"
             "                while f.read(1 << 20):\n                    pass\n")
#: the same partitions recovered one after the other in one process: the sum of single-partition recoveries
RECOVER_EACH = ("import sys\nfrom kafkaforensics.log.partition import LogDir\n"
                "from kafkaforensics.repair.recovery import recover\n"
                "for p in LogDir(sys.argv[1]).partition_dirs():\n    recover(p, backup=False)\n")
#: the whole-process ceiling of `kfx scan --level records --search` on one machine: the plain single-process
#: kafka-python script a user would otherwise write over the same files -- walk every .log, check every
#: batch's CRC, decode every record, search key, value and headers, collect a time window, count records per
#: partition (argv: the fleet, the pattern, the window's start and end in epoch ms)
PLAIN_SCAN_SCRIPT = """
import collections, os, re, sys
from kafka.record.memory_records import MemoryRecords
root, pattern, lo, hi = sys.argv[1], re.compile(sys.argv[2].encode()), int(sys.argv[3]), int(sys.argv[4])
hits, window, per_partition, bad = [], [], collections.Counter(), 0
for d, _dirs, files in sorted(os.walk(root)):
    for n in sorted(f for f in files if f.endswith(".log")):
        with open(os.path.join(d, n), "rb") as f:
            records = MemoryRecords(f.read())
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                bad += 1
                continue
            for r in batch:
                per_partition[d] += 1
                if (pattern.search(r.key or b"") or pattern.search(r.value or b"")
                        or any(pattern.search(v or b"") for _k, v in r.headers)):
                    hits.append((d, r.offset, r.key, r.value, r.headers))
                if lo <= r.timestamp < hi:
                    window.append((d, r.offset, r.timestamp, r.key, r.value))
print(len(hits), len(window), sum(per_partition.values()), bad)
"""
#: what the scan-vs-script pair searches for (a key of every batch of benchmark segments) and its window
SCAN_PATTERN, SCAN_WINDOW = "key-0042", (T0 + 10, T0 + 20)
PROCESSES = {
    "process-bare-interpreter": lambda a: [sys.executable, "-c", "pass"],
    "process-kfx-help": lambda a: [KFX, "--help"],
    "process-kfx-dump-small": lambda a: [KFX, "dump", a],
    "process-kfx-verify-small": lambda a: [KFX, "verify", a],
    "process-read-crc32c": lambda a: [sys.executable, "-c", READ_CRC, a],
    "process-kfx-verify": lambda a: [KFX, "verify", a],
    "process-read": lambda a: [sys.executable, "-c", READ, a],
    "process-kfx-dump-json": lambda a: [KFX, "dump", "--format", "json", a],
    # the log-dir recovery group: this checkout's kfx (not the installed one), all three over one log dir
    "process-read-logdir": lambda a: [sys.executable, "-c", READ_TREE, a],
    "process-kfx-recover-logdir-jobs2": lambda a: [sys.executable, "-m", "cli.main", "recover", "--jobs", "2",
                                                   "--no-backup", a],
    "process-recover-partitions-one-by-one": lambda a: [sys.executable, "-c", RECOVER_EACH, a],
    # the scan-vs-script pair: this checkout's kfx scan (no --master: as a user runs it), and the plain script
    "process-kfx-scan-records-search": lambda a: [sys.executable, "-m", "cli.main", "scan", a, "--out", _fresh_out(),
                                                  "--level", "records", "--search", SCAN_PATTERN],
    "process-plain-kafka-python-scan": lambda a: [sys.executable, "-c", PLAIN_SCAN_SCRIPT, a, SCAN_PATTERN,
                                                  *map(str, SCAN_WINDOW)],
}


def _fresh_out() -> str:
    """A new --out for a kfx scan run (the one before removed)."""
    out = os.path.join(DATA, "scan-vs-script-out")
    subprocess.run(["rm", "-rf", out], check=True)
    return out


def run_scan_vs_script_group(mb: int, partitions: int, repeat: int) -> tuple[list[dict], dict]:
    """The whole `kfx scan --level records --search` (no --master) of a fleet of ``mb`` MiB in
    ``partitions`` partitions, against the plain kafka-python script doing the same work over the
    same files (:data:`PLAIN_SCAN_SCRIPT`), interleaved: (the rows, the script's time over kfx's)."""
    fleet = os.path.join(DATA, f"scan-fleet-{mb}-{partitions}")
    for i in range(partitions):
        make_segment(os.path.join(fleet, f"bench-{i}", "00000000000000000000.log"), (mb << 20) // partitions)
    _compile_ours()
    res = run_group([(n, fleet) for n in ("process-kfx-scan-records-search", "process-plain-kafka-python-scan")],
                    repeat)
    by = {r["name"]: r for r in res}
    return res, {f"kfx_scan_search_{mb}mb_vs_plain_script_process": by["process-plain-kafka-python-scan"]["seconds"]
                 / by["process-kfx-scan-records-search"]["seconds"]}


#: the archive pair: the whole `kfx scan ARCHIVE --out DIR --level records --search X` (no --master) and the
#: plain kafka-python script of the same work, over issue 57's fleet archive (benchmarks/archive.py)
ARCHIVE_PROCESSES = ("process-kfx-scan-archive", "process-plain-kafka-python-archive")
_KFX_ANSWERS = re.compile(r"^(\d+) records rows .*?; (\d+) search hits", re.M)


def archive_process(name: str, arg: str) -> dict:
    """One run of the archive pair (``arg``: the archive): its wall time, the peak resident size of its
    whole process tree (sampled, benchmarks/spark_group.PeakMemory) and its answers (records read from
    batches whose CRC holds, search hits), from what it prints."""
    from benchmarks.archive import SEARCH, WEEK_MS, _MARCH_1
    from benchmarks.spark_group import PeakMemory
    if name == ARCHIVE_PROCESSES[0]:
        cmd = [sys.executable, "-m", "cli.main", "scan", arg, "--out", _fresh_out(), "--level", "records",
               "--search", SEARCH]
    else:
        cmd = [sys.executable, "-c", PLAIN_SCAN_SCRIPT, arg, SEARCH, str(_MARCH_1), str(_MARCH_1 + WEEK_MS)]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with PeakMemory(p.pid) as mem:
        printed, said = p.communicate()
    out = {"bytes": _log_bytes(arg), "seconds_override": time.perf_counter() - t0, "peak_rss_mb": mem.peak / 2**20}
    if name == ARCHIVE_PROCESSES[0]:
        found = _KFX_ANSWERS.search(printed)
        if p.returncode not in (0, 1) or found is None:
            raise SystemExit(f"{name} failed ({p.returncode}):\n{printed}{said}")
        out["records"], out["hits"] = int(found[1]), int(found[2])
    else:
        if p.returncode != 0:
            raise SystemExit(f"{name} failed ({p.returncode}):\n{printed}")
        hits, _window, records, _bad = map(int, printed.split())
        out["records"], out["hits"] = records, hits
    return out


def _compile_ours() -> None:
    """Our modules' bytecode compiled once, as an install has it (a checkout run with
    PYTHONDONTWRITEBYTECODE would compile every module of ours in every process, ~0.1-0.3 s)."""
    import compileall
    for package in ("cli", "kafkaforensics", "specs", "spark_jobs"):
        compileall.compile_dir(os.path.join(ROOT, package), quiet=1)


def run_archive_scan_group(scale: float, repeat: int) -> tuple[list[dict], dict]:
    """Issue 57's row: the whole `kfx scan` of the fleet archive (``scale`` times the issue's 203 MB)
    against the plain kafka-python script of the same work, interleaved; both must give the same answers
    (records, search hits) in every run.  (The rows, the script's time over kfx's and the peaks.)"""
    from benchmarks.archive import build_archive
    archive = build_archive(os.path.join(DATA, f"archive-{scale:g}"), scale)
    _compile_ours()
    run_child(ARCHIVE_PROCESSES[1], archive)  # warm the page cache
    res = run_group([(n, archive) for n in ARCHIVE_PROCESSES], repeat)
    answers = {(r["records"], r["hits"]) for r in res}
    if len(answers) != 1:
        raise SystemExit(f"the archive pair's answers differ (records, hits): {answers}")
    kfx, script = res
    return res, {"kfx_scan_archive_vs_plain_script_process": script["seconds"] / kfx["seconds"],
                 "kfx_scan_archive_peak_rss_mb": kfx["peak_rss_mb"],
                 "plain_script_archive_peak_rss_mb": script["peak_rss_mb"]}


def make_log_dir(path: str, size: int, partitions: int) -> str:
    """A log dir of ``partitions`` partitions of one segment each, ``size`` bytes in all, loaded once
    (indexes built, recovery points checkpointed at 0: every run recovers every segment)."""
    for i in range(partitions):
        make_segment(os.path.join(path, f"bench-{i}", "00000000000000000000.log"), size // partitions)
    from kafkaforensics.repair.load_logs import recover_log_dirs
    recover_log_dirs([path], jobs=2, backup=False)
    return path


def _log_bytes(arg: str) -> int:
    if os.path.isfile(arg):
        return os.path.getsize(arg)
    return sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(arg) for f in fs if f.endswith(".log"))


#: the whole-process ceiling of `kfx scan --level records`: Spark's own Parquet -> Parquet copy of the
#: same rows, as a plain PySpark script on local[2] (argv: the Parquet dir, the output)
SPARK_COPY_SCRIPT = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").appName("parquet-copy").getOrCreate()
spark.read.parquet(sys.argv[1]).write.mode("overwrite").parquet(sys.argv[2])
spark.stop()
"""


def child(name: str, arg: str) -> dict:
    size = _log_bytes(arg)
    # imports (numpy, the peers' modules, ours) are not part of any figure: each is a once-per-process cost
    import crc32c  # noqa: F401
    import kafkaforensics.inspect.dump  # noqa: F401
    import kafkaforensics.repair.recovery  # noqa: F401
    import kafkaforensics.repair.reindex  # noqa: F401
    import kafkaforensics.repair.salvage  # noqa: F401
    import kafkaforensics.inspect.verify  # noqa: F401
    if name.startswith("deep-"):
        import aiokafka.record.memory_records  # noqa: F401
        import kafka.record.memory_records  # noqa: F401
        import kafkaforensics.log.record_columns  # noqa: F401
    if name == "crc32c-per-batch":
        bounds = _batch_bounds(arg)  # where each batch's CRC range starts and ends: not timed
    t = time.perf_counter()
    out = {"bytes": size}
    if name == "crc32c-per-batch":
        # one crc32c call per batch, over the 1 MiB copies verify reads: any check of every batch's
        # CRC from Python makes these calls, so this is verify's floor with the crc32c package
        import crc32c
        window = 1 << 20
        chunk = memoryview(bytearray(window))
        with open(arg, "rb", buffering=0) as f:
            fd, i, n_b = f.fileno(), 0, len(bounds)
            while i < n_b:
                origin = bounds[i][0] - 21
                n = os.preadv(fd, [chunk[:window]], origin)
                while i < n_b and bounds[i][1] - origin <= n:
                    crc32c.crc32c(chunk[bounds[i][0] - origin:bounds[i][1] - origin])
                    i += 1
        out["batches"] = n_b
    elif name == "copy-floor":
        # the 1 MiB preadv copies verify walks, and nothing else: what a walk over copies pays
        # before any CRC (the read ceiling is this plus crc32c over each copy)
        chunk = memoryview(bytearray(1 << 20))
        with open(arg, "rb", buffering=0) as f:
            fd, pos = f.fileno(), 0
            while n := os.preadv(fd, [chunk], pos):
                pos += n
    elif name == "walk-mapping-floor":
        # the header walk over the mapped file (each batch's length read where it lies), and
        # nothing else: what a walk without copies pays before any CRC
        from kafkaforensics.log.segment import LOG_PREFIX, open_buffer, release_pages
        from specs.record_batch import HEADER_SIZE, LOG_OVERHEAD
        prefix = LOG_PREFIX.unpack_from
        with open_buffer(arg) as buf:
            pos, end, released, n_b = 0, len(buf), 0, 0
            while pos + HEADER_SIZE <= end:
                pos += LOG_OVERHEAD + prefix(buf, pos)[1]
                n_b += 1
                if pos - released > 64 << 20:
                    release_pages(buf, released, pos - (1 << 20))
                    released = pos - (1 << 20)
        out["batches"] = n_b
    elif name == "crc32c-ceiling-mmap":  # crc32c over the mapped file, 16 MiB per call
        import crc32c
        from kafkaforensics.log.segment import open_buffer, release_pages
        with open_buffer(arg) as buf:
            step = 1 << 24
            for i in range(0, len(buf), step):
                crc32c.crc32c(buf[i:i + step])
                release_pages(buf, 0, i)
    elif name == "crc32c-ceiling-read":  # crc32c over the file read 1 MiB at a time into one buffer
        import crc32c
        chunk = memoryview(bytearray(1 << 20))
        with open(arg, "rb", buffering=0) as f:
            while True:
                n = f.readinto(chunk)
                if not n:
                    break
                crc32c.crc32c(chunk[:n])
    elif name == "disk-write-ceiling":
        from kafkaforensics.log.segment import open_buffer, release_pages
        dest = os.path.join(DATA, "ceiling.out")
        with open_buffer(arg) as buf, open(dest, "wb") as f:
            step = 1 << 24
            for i in range(0, len(buf), step):
                f.write(buf[i:i + step])
                release_pages(buf, 0, i)
            f.flush()
            os.fsync(f.fileno())
        os.unlink(dest)
    elif name == "verify":
        from kafkaforensics.inspect.verify import verify
        rep = verify([arg])
        out["batches"] = rep.batches
        assert rep.ok, rep.problems[:3]
    elif name == "dump-json":
        from kafkaforensics.inspect.dump import DumpOptions, dump
        with open(os.devnull, "w") as null:
            dump([arg], DumpOptions(fmt="json"), out=null, err=sys.stderr)
    elif name.startswith("deep-"):
        impl = name.split("-", 2)[2]
        if impl == "kafkaforensics":
            out["records"] = _records_ours(arg)
        elif impl == "kafkaforensics-columns":
            out["records"] = _records_columns(arg)
        else:
            out["records"] = _records_peer(arg, {"kafka-python": "kafka", "aiokafka": "aiokafka"}[impl])
    elif name == "write":
        import shutil
        from kafkaforensics.log.segment import iter_batches
        from kafkaforensics.log.writer import write_partition
        dest = os.path.join(DATA, "written-0")
        shutil.rmtree(dest, ignore_errors=True)
        write_partition(dest, (bytes(b.data) for b in iter_batches(arg)))
        shutil.rmtree(dest, ignore_errors=True)
    elif name == "reindex":
        from kafkaforensics.repair.reindex import reindex
        reindex(arg, backup=False)
    elif name in ("scan-small-fleet", "scan-small-fleet-first", "scan-small-fleet-here"):
        # the whole `kfx scan` process: on Spark (its start-up included), or with no --master, where a
        # scan this small needs no Spark (no JVM, so no class archive: every run is as a first run)
        import shutil
        dest = os.path.join(DATA, "scan-out")
        shutil.rmtree(dest, ignore_errors=True)
        # the driver JVM's class archive: the first run records it, later Spark runs map it; the run with
        # no Spark gets an empty cache of its own (it must neither use nor remove the Spark runs' archive)
        here = name == "scan-small-fleet-here"
        cache = os.path.join(DATA, "kfx-cache-here" if here else "kfx-cache")
        if name in ("scan-small-fleet-first", "scan-small-fleet-here"):
            shutil.rmtree(cache, ignore_errors=True)
        t0 = time.perf_counter()
        r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "kfx"), "scan", arg, "--out", dest,
                            *([] if here else ["--master", "local[2]"]), "--level", "records"], capture_output=True,
                           text=True, env={**os.environ, "KFX_CACHE_DIR": cache, "KFX_CLASS_ARCHIVE_RECORDING": "background"})
        out["seconds_override"] = time.perf_counter() - t0  # the kfx process, not the recording waited for below
        if r.returncode not in (0, 1):
            raise SystemExit(r.stderr)
        recording = re.search(r"in the background\s+\(pid (\d+)", r.stderr)
        while recording:  # the first run's archive, recorded after it: later runs map it (not timed)
            try:
                os.kill(int(recording.group(1)), 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        from pyarrow import parquet
        out["records"] = parquet.read_table(os.path.join(dest, "records"), columns=["offset"]).num_rows
        shutil.rmtree(dest, ignore_errors=True)
    elif name in ("process-kfx-scan-records", "process-spark-parquet-copy"):
        # whole processes as a user runs them, their start-up included: `kfx scan --level records` of a
        # fleet on local[2] (the class archive scan-small-fleet-first recorded, mapped), and a plain
        # PySpark script copying the very same rows Parquet -> Parquet on local[2] (what
        # spark_group.py's kafka_segments wrote); the peak RSS is the whole process tree's
        import shutil

        from pyarrow import parquet

        from benchmarks.spark_group import PeakMemory
        dest = os.path.join(DATA, "process-out")
        shutil.rmtree(dest, ignore_errors=True)
        if name == "process-kfx-scan-records":
            cmd = [os.path.join(os.path.dirname(sys.executable), "kfx"), "scan", arg, "--out", dest,
                   "--master", "local[2]", "--level", "records"]
            written = os.path.join(dest, "records")
        else:
            src = os.path.join(DATA, "spark-work", os.path.basename(arg)[len("spark-fleet-"):])
            cmd, written = [sys.executable, "-c", SPARK_COPY_SCRIPT, src, dest], dest
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "KFX_CACHE_DIR": os.path.join(DATA, "kfx-cache")})
        with PeakMemory(p.pid) as mem:  # the command's process tree, not this harness
            _, err = p.communicate()
        out["seconds_override"] = time.perf_counter() - t0
        # 1: kfx found anomalies (and wrote its outputs); a Python error is 1 too, and writes none
        if p.returncode not in ((0, 1) if name == "process-kfx-scan-records" else (0,)) or not os.path.isdir(written):
            raise SystemExit(f"{name} failed ({p.returncode}):\n{err}")
        out["peak_rss_mb"] = mem.peak / 2**20
        out["records"] = sum(parquet.ParquetFile(os.path.join(written, f)).metadata.num_rows
                             for f in os.listdir(written) if f.endswith(".parquet"))
        shutil.rmtree(dest, ignore_errors=True)
    elif name == "dump-deep-json":
        from kafkaforensics.inspect.dump import DumpOptions, dump
        with open(os.devnull, "w") as null:
            dump([os.path.join(arg, f) for f in sorted(os.listdir(arg)) if f.endswith(".log")],
                 DumpOptions(fmt="json", deep=True), out=null, err=sys.stderr)
        out["records"] = sum(b.count for f in os.listdir(arg) if f.endswith(".log")
                             for b in __import__("kafkaforensics.log.segment", fromlist=["x"]).iter_batches(os.path.join(arg, f)))
    elif name == "sendfile-ceiling":
        import socket
        import threading
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]

        def send():
            conn, _ = srv.accept()
            with open(arg, "rb") as f:
                off, n = 0, os.path.getsize(arg)
                while off < n:
                    off += os.sendfile(conn.fileno(), f.fileno(), off, n - off)
            conn.close()
        t0 = time.perf_counter()
        th = threading.Thread(target=send)
        th.start()
        c = socket.create_connection(("127.0.0.1", port))
        buf = bytearray(1 << 20)
        while c.recv_into(buf):
            pass
        th.join()
        c.close()
        out["seconds_override"] = time.perf_counter() - t0
    elif name == "serve-kcat":
        import socket
        part_dir = arg
        s0 = socket.socket()
        s0.bind(("127.0.0.1", 0))
        port = s0.getsockname()[1]
        s0.close()
        kfx = os.path.join(os.path.dirname(sys.executable), "kfx")
        srv = subprocess.Popen([kfx, "serve", os.path.dirname(part_dir), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            topic = os.path.basename(part_dir).rsplit("-", 1)[0]
            from kafkaforensics.log.segment import iter_batches
            want = sum(b.count for f in sorted(os.listdir(part_dir)) if f.endswith(".log")
                       for b in iter_batches(os.path.join(part_dir, f)))
            # -c: done at the last record.  (-e would add the final empty fetch, which the broker --
            # any Kafka broker -- holds for fetch.wait.max.ms, 500 ms, waiting for new data.)
            t0 = time.perf_counter()
            r = subprocess.run(["kcat", "-b", f"127.0.0.1:{port}", "-C", "-t", topic, "-p", "0", "-o", "beginning",
                                "-c", str(want), "-q", "-X", "fetch.message.max.bytes=8388608", "-f", "%o\n"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300)
            out["seconds_override"] = time.perf_counter() - t0
            out["records"] = r.stdout.count(b"\n")
            assert out["records"] == want, (out["records"], want)
        finally:
            srv.terminate()
            srv.wait(10)
    elif name == "compact":
        from kafkaforensics.repair.cleaner import CompactOptions, compact
        rep = compact(arg, CompactOptions(now=T0 + 10**9, segment_bytes=1 << 30, include_active=True,
                                          ignore_checkpoint=True))  # a fresh copy: clean it all
        j = rep.to_json()
        out["records"] = j["records"]["before"]
        out["records_after"] = j["records"]["after"]
        out["offset_map_mb"] = j["offsetMapBytes"] / 1e6
    elif name == "recover":
        from kafkaforensics.repair.recovery import recover
        rep = recover(arg, backup=False, full=True)
        out["truncated"] = rep.truncated_at is not None
    elif name == "salvage":
        import shutil
        from kafkaforensics.repair.salvage import salvage
        dest = os.path.join(DATA, "salvaged-0")
        shutil.rmtree(dest, ignore_errors=True)
        rep = salvage([arg], dest)
        out["batches"] = rep.batches
        shutil.rmtree(dest, ignore_errors=True)
    elif name in ARCHIVE_PROCESSES:
        out.update(archive_process(name, arg))
    elif name in PROCESSES:  # a whole process as a user starts it: interpreter, imports and work
        r = subprocess.run(PROCESSES[name](arg), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode not in (0, 1):
            raise SystemExit(r.stderr.decode(errors="replace"))
        out["seconds_override"] = time.perf_counter() - t
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    else:
        raise SystemExit(f"unknown benchmark {name}")
    out["seconds"] = out.pop("seconds_override", None) or (time.perf_counter() - t)
    out.setdefault("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def run_child(name: str, arg: str) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", name, arg], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{name} failed:\n{r.stderr}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["name"] = name
    return res


def _finish(res: dict) -> dict:
    res["mb_per_s"] = res["bytes"] / res["seconds"] / 1e6
    if "records" in res:
        res["records_per_s"] = res["records"] / res["seconds"]
    return res


def run_spark_group(size: int, repeat: int, fleets: str) -> dict:
    """The Spark group (benchmarks/spark_group.py) in its own process: one session, interleaved."""
    from benchmarks.spark_group import make_timeline
    timeline = make_timeline(os.path.join(DATA, "spark-timeline", "events-0"), 4 * size)  # "a year of archive"
    out = os.path.join(DATA, "spark-group.json")
    subprocess.run([sys.executable, os.path.join(HERE, "spark_group.py"), out, "--fleets", fleets,
                    "--timeline", os.path.dirname(timeline), "--repeat", str(repeat)], check=True)
    with open(out) as f:
        return json.load(f)


def run_group(jobs, repeat: int) -> list[dict]:
    """Run each (name, arg) ``repeat`` times, the group interleaved (a ceiling and what is compared
    with it see the same moments of this shared machine); each keeps its median run, and all run
    times are kept in ``runs``."""
    runs = {name: [] for name, _ in jobs}
    for _ in range(repeat):
        for name, arg in jobs:
            runs[name].append(run_child(name, arg))
    out = []
    for name, _ in jobs:
        rs = sorted(runs[name], key=lambda r: r["seconds"])
        med = dict(rs[len(rs) // 2])
        med["runs"] = [round(r["seconds"], 4) for r in runs[name]]
        if "records" in med:
            med["records_runs"] = [r.get("records") for r in runs[name]]
        med["peak_rss_mb"] = max(r["peak_rss_mb"] for r in rs)
        out.append(_finish(med))
    return out


def run_log_dir_group(mb: int, partitions: int, repeat: int) -> tuple[list[dict], dict]:
    """`kfx recover --jobs 2 LOG_DIR` over ``mb`` MiB in ``partitions`` partitions (no clean-shutdown
    marker, recovery points 0: every segment walked, CRC-checked and its indexes compared), next to the
    same partitions recovered one by one in one process and to a process reading the same bytes."""
    ld = make_log_dir(os.path.join(DATA, f"logdir-{mb}-{partitions}"), mb << 20, partitions)
    run_child("process-read-logdir", ld)  # warm the page cache
    res = run_group([(n, ld) for n in ("process-read-logdir", "process-kfx-recover-logdir-jobs2",
                                       "process-recover-partitions-one-by-one")], repeat)
    by = {r["name"]: r for r in res}
    jobs2 = by["process-kfx-recover-logdir-jobs2"]["seconds"]
    return res, {"recover_logdir_jobs2_vs_one_by_one": by["process-recover-partitions-one-by-one"]["seconds"] / jobs2,
                 "recover_logdir_jobs2_vs_read_process": by["process-read-logdir"]["seconds"] / jobs2}


# ---------------------------------------------------------------------------------- main ----
def run_serve_group(size: int, rep: int) -> tuple[list[dict], dict]:
    """The replay broker: a librdkafka consumer (kcat) reading a whole partition of 16 KB records (so
    that the byte path, not kcat's per-message printing, is measured), and the loopback sendfile
    ceiling of the same file, interleaved."""
    serve_dir = os.path.join(DATA, "serve-16k", "bench-0")
    seg = os.path.join(serve_dir, "00000000000000000000.log")
    if not os.path.exists(seg) or abs(os.path.getsize(seg) - size) >= 1 << 20 or \
            not os.path.exists(seg[:-4] + ".index"):
        make_segment(seg, size, records_per_batch=16, value_size=16000)
        from kafkaforensics.repair.reindex import reindex
        reindex(serve_dir, backup=False)
    run_child("sendfile-ceiling", seg)  # warm the page cache first, as for the crc32c ceiling
    # both sides of this pair swing by 2x from run to run on a shared machine: five runs, as for verify
    res = run_group([("sendfile-ceiling", seg), ("serve-kcat", serve_dir)], max(rep, 5))
    by = {r["name"]: r for r in res}
    return res, {"serve_kcat_vs_sendfile_ceiling": by["serve-kcat"]["mb_per_s"] / by["sendfile-ceiling"]["mb_per_s"]}


def run_verify_process_group(rep: int, more: tuple = ()) -> tuple[list[dict], dict]:
    """A 512 MiB segment: a kfx verify process next to a process that reads it and crc32c's it
    (``more``: further whole processes over the same file, interleaved with them)."""
    import compileall
    for package in ("cli", "kafkaforensics", "specs"):  # as an install has them (see main)
        compileall.compile_dir(os.path.join(ROOT, package), quiet=1)
    mid = make_segment(os.path.join(DATA, "mid", "00000000000000000000.log"), 512 << 20)
    res = run_group([(n, mid) for n in ("process-read-crc32c", "process-kfx-verify") + tuple(more)], max(rep, 5))
    by = {r["name"]: r for r in res}
    return res, {"verify_process_vs_read_crc32c_process":
                 by["process-read-crc32c"]["seconds"] / by["process-kfx-verify"]["seconds"]}


#: ``--only NAME``: one pair run alone (sizes from --size-mb, runs from --repeat)
ONLY_GROUPS = {"serve": run_serve_group, "verify": lambda size, rep: run_verify_process_group(rep)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--deep-mb", type=int, default=64)
    ap.add_argument("--compact-records", type=int, default=10_000_000)
    ap.add_argument("--compact-keys", type=int, default=1_000_000)
    ap.add_argument("--spark-mb", type=int, default=256)
    ap.add_argument("--spark-fleets", default="small-2000,small-20000,big-1024",
                    help="the Spark group's fleets (benchmarks/spark_group.py)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each figure (the median is kept)")
    ap.add_argument("--logdir-mb", type=int, default=1024, help="the log-dir recovery group's log dir (0: skip)")
    ap.add_argument("--logdir-partitions", type=int, default=200)
    ap.add_argument("--only-logdir", action="store_true", help="run the log-dir recovery group alone")
    ap.add_argument("--scan-script-mb", type=int, default=24,
                    help="the scan-vs-script pair's fleet (0: skip): whole kfx scan against a plain kafka-python script")
    ap.add_argument("--scan-script-partitions", type=int, default=8)
    ap.add_argument("--only-scan-script", action="store_true", help="run the scan-vs-script pair alone (printed)")
    ap.add_argument("--archive-scale", type=float, default=1.0,
                    help="the archive pair's fleet archive, times issue 57's 203 MB (0: skip): whole kfx scan "
                         "against a plain kafka-python script of the same work")
    ap.add_argument("--only-archive-scan", action="store_true", help="run the archive pair alone (printed)")
    ap.add_argument("--only", choices=sorted(ONLY_GROUPS),
                    help="run one pair alone and print its rows and ratio (serve: kfx serve against the sendfile "
                         "ceiling; verify: a kfx verify process against a read+crc32c process)")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.only:
        results, summary = ONLY_GROUPS[args.only](args.size_mb << 20, args.repeat)
        for r in results:
            print(f"{r['name']}: {r['seconds']:.3f} s, {r['mb_per_s']:.0f} MB/s, runs {r['runs']}")
        for k, v in summary.items():
            print(f"{k}: {v:.2f}")
        return
    if args.only_logdir or args.only_scan_script or args.only_archive_scan:
        results, summary = (run_log_dir_group(args.logdir_mb, args.logdir_partitions, args.repeat) if args.only_logdir
                            else run_archive_scan_group(args.archive_scale, args.repeat) if args.only_archive_scan
                            else run_scan_vs_script_group(args.scan_script_mb, args.scan_script_partitions, args.repeat))
        for r in results:
            print(f"{r['name']}: {r['seconds']:.2f} s, {r['mb_per_s']:.0f} MB/s, peak RSS {r['peak_rss_mb']:.0f} MB, "
                  f"runs {r['runs']}")
        for k, v in summary.items():
            print(f"{k}: {v:.2f}")
        return
    size = args.size_mb << 20
    rep = args.repeat
    big = make_segment(os.path.join(DATA, "big", "00000000000000000000.log"), size)
    results = []
    # warm the page cache so every reader sees the same (cached) bytes
    run_child("crc32c-ceiling-mmap", big)
    # the ceiling is the faster of two ways of feeding crc32c the same bytes; verify is noisy on a
    # shared machine, so this group takes at least five runs
    results += run_group([("crc32c-ceiling-mmap", big), ("crc32c-ceiling-read", big), ("crc32c-per-batch", big),
                          ("copy-floor", big), ("walk-mapping-floor", big), ("verify", big)], max(rep, 5))
    results += run_group([("dump-json", big), ("reindex", os.path.dirname(big))], rep)
    # whole processes, as an operator's shell loop meets them: start-up on a small segment next to a
    # bare interpreter, and a 512 MiB segment next to a process that reads it (and crc32c's it)
    # an installed wheel comes with its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE would
    # compile every module of ours in every process (~0.1 s): compile them once, as an install does
    _compile_ours()
    small = os.path.join(ROOT, "tests", "fixtures", "sample-logdir", "orders-0", "00000000000000000225.log")
    results += run_group([(n, small) for n in ("process-bare-interpreter", "process-kfx-help",
                                               "process-kfx-dump-small", "process-kfx-verify-small")], max(rep, 5))
    results += run_verify_process_group(rep, ("process-read", "process-kfx-dump-json"))[0]
    results += run_group([("disk-write-ceiling", big), ("write", big)], rep)
    # recovery of a 1 GiB segment with a torn last batch (each run truncates it again: a fresh copy)
    rec = os.path.join(DATA, "recover-0")
    os.makedirs(rec, exist_ok=True)
    seg = os.path.join(rec, "00000000000000000000.log")
    rec_runs = []
    for _ in range(rep):
        subprocess.run(["cp", "--reflink=auto", big, seg], check=True)
        for n in os.listdir(rec):
            if n != os.path.basename(seg):
                os.unlink(os.path.join(rec, n))
        os.truncate(seg, os.path.getsize(seg) - 100)
        rec_runs.append(run_child("recover", rec))
    rec_runs.sort(key=lambda r: r["seconds"])
    results.append(_finish(dict(rec_runs[len(rec_runs) // 2], runs=[round(r["seconds"], 4) for r in rec_runs])))
    # salvage over a damaged image: the big segment with garbage and zeroed regions punched in
    img = os.path.join(DATA, "damaged.img")
    subprocess.run(["cp", "--reflink=auto", big, img], check=True)
    with open(img, "r+b") as f:
        n = os.path.getsize(img)
        for k in range(1, 16):
            f.seek(n * k // 16)
            f.write(os.urandom(1 << 16) if k % 2 else b"\0" * (1 << 16))
    results += run_group([("salvage", img)], rep)
    # the replay broker: a librdkafka consumer (kcat) reading a whole partition of 16 KB records
    # (so that the byte path, not kcat's per-message printing, is measured), and the ceiling
    results += run_serve_group(size, rep)[0]
    if args.compact_records:
        src = make_compaction_log(os.path.join(DATA, f"compact-src-{args.compact_records}-0"), args.compact_records,
                                  args.compact_keys)
        work = os.path.join(DATA, "compact-work-0")
        subprocess.run(["rm", "-rf", work], check=True)
        subprocess.run(["cp", "-r", src, work], check=True)
        results.append(_finish(run_child("compact", work)))  # one run: it takes a minute
    spark_group = None
    summary_processes = {}
    if args.spark_mb:
        sp = make_segment(os.path.join(DATA, "spark", "scan-0", "00000000000000000000.log"), args.spark_mb << 20)
        results.append(_finish(run_child("dump-deep-json", os.path.dirname(sp))))
        fleet = os.path.join(ROOT, "tests", "fixtures", "sample-logdir")
        results.append(_finish(run_child("scan-small-fleet-first", fleet)))  # one run: it records the class archive
        results += run_group([("scan-small-fleet", fleet), ("scan-small-fleet-here", fleet)], rep)
        spark_group = run_spark_group(args.spark_mb << 20, rep, args.spark_fleets)
        # whole processes: kfx scan of each fleet against a PySpark script copying its rows (the Parquet
        # the Spark group wrote), interleaved
        from benchmarks.spark_group import fleet_path
        for fleet_name in filter(None, args.spark_fleets.split(",")):
            path = fleet_path(fleet_name)
            res = run_group([("process-kfx-scan-records", path), ("process-spark-parquet-copy", path)], rep)
            if len({n for r in res for n in r["records_runs"]}) != 1:  # every run of both, the same rows
                raise SystemExit(f"{fleet_name}: kfx scan wrote {res[0]['records_runs']} records, "
                                 f"the copy {res[1]['records_runs']}")
            for r in res:
                r["name"] += f" ({fleet_name})"
                r["fleet"] = fleet_name
            results += res
            summary_processes[f"kfx_scan_records_process_{fleet_name.replace('-', '_')}_vs_spark_copy_process"] = (
                res[0]["seconds"] / res[1]["seconds"])
    deep = {}
    for codec, cname in ((0, "none"), (3, "lz4"), (4, "zstd")):
        p = make_segment(os.path.join(DATA, f"deep-{cname}", "00000000000000000000.log"), args.deep_mb << 20, codec=codec)
        for r in run_group([(f"deep-{cname}-{impl}", p) for impl in DEEP_IMPLS], max(rep, 5)):
            r["codec"] = cname
            results.append(r)
            deep[(cname, r["name"].split("-", 2)[2])] = r["records_per_s"]
    summary_scan_script = {}
    if args.scan_script_mb:
        res, summary_scan_script = run_scan_vs_script_group(args.scan_script_mb, args.scan_script_partitions, rep)
        results += res
    if args.archive_scale:
        res, summary_archive = run_archive_scan_group(args.archive_scale, rep)
        results += res
        summary_scan_script.update(summary_archive)
    summary_logdir = {}
    if args.logdir_mb:
        res, summary_logdir = run_log_dir_group(args.logdir_mb, args.logdir_partitions, rep)
        results += res
    by = {r["name"]: r for r in results}
    ceiling = max(by["crc32c-ceiling-mmap"]["mb_per_s"], by["crc32c-ceiling-read"]["mb_per_s"])
    summary_serve = {"serve_kcat_vs_sendfile_ceiling": by["serve-kcat"]["mb_per_s"] / by["sendfile-ceiling"]["mb_per_s"]}
    summary_spark = dict(spark_group["ratios"]) if spark_group else {}
    if "scan-small-fleet" in by:  # target: under 15 s once the class archive is recorded
        summary_spark["scan_small_fleet_seconds"] = by["scan-small-fleet"]["seconds"]
        summary_spark["scan_small_fleet_first_run_seconds"] = by["scan-small-fleet-first"]["seconds"]
        # target: a first run within 10 s on a fresh install (no --master: no JVM, no class archive)
        summary_spark["scan_small_fleet_no_spark_seconds"] = by["scan-small-fleet-here"]["seconds"]
    summary = {
        # whole processes (targets: --help, dump and verify of a small file within 0.15 s; verify of
        # 512 MiB at >= 0.70 of the read+crc32c process)
        **{f"{n[len('process-'):]}_seconds": by[n]["seconds"] for n in PROCESSES if n.endswith(("small", "help", "interpreter"))},
        "verify_process_vs_read_crc32c_process": by["process-read-crc32c"]["seconds"] / by["process-kfx-verify"]["seconds"],
        "dump_json_process_vs_read_process": by["process-read"]["seconds"] / by["process-kfx-dump-json"]["seconds"],
        "verify_vs_crc32c_ceiling": by["verify"]["mb_per_s"] / ceiling,
        "verify_vs_crc32c_per_batch": by["verify"]["mb_per_s"] / by["crc32c-per-batch"]["mb_per_s"],
        "crc32c_per_batch_vs_crc32c_ceiling": by["crc32c-per-batch"]["mb_per_s"] / ceiling,
        # time shares of the ceiling's time that a walk pays before any CRC (> 0.3: 70 % is out of reach)
        "copy_floor_time_vs_ceiling_time": ceiling / by["copy-floor"]["mb_per_s"],
        "walk_mapping_floor_time_vs_ceiling_time": ceiling / by["walk-mapping-floor"]["mb_per_s"],
        **{f"deep_{c}_{ours}_vs_{peer}": deep[(c, ours)] / deep[(c, peer)]
           for c in ("none", "lz4", "zstd") for ours in OUR_DEEP for peer in ("kafka-python", "aiokafka")},
        **summary_spark,
        **summary_processes,
        **summary_serve,
        **summary_logdir,
        **summary_scan_script,
    }
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "python": platform.python_version(), "system": platform.platform()}
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump({"machine": machine, "results": results, "summary": summary, "spark": spark_group}, f, indent=1)
    from rich.console import Console
    from rich.table import Table
    t = Table(title=f"kafkaforensics benchmarks ({args.size_mb} MiB segment, {args.deep_mb} MiB deep, "
                    f"median of {rep} runs)")
    for c in ("benchmark", "MB/s", "records/s", "seconds", "peak RSS MB"):
        t.add_column(c, justify="left" if c == "benchmark" else "right")
    for r in results:
        t.add_row(r["name"], f"{r['mb_per_s']:.0f}", f"{r['records_per_s']:,.0f}" if "records_per_s" in r else "",
                  f"{r['seconds']:.2f}", f"{r['peak_rss_mb']:.0f}")
    c = Console(width=None if sys.stdout.isatty() else 250)  # piped or logged: whole columns, never cut
    c.print(t)
    if spark_group:
        st = Table(title=f"Spark, one local[2] session, median of {rep} interleaved runs")
        for col in ("fleet", "segments", "MiB", "records", "kafka_segments s", "parquet copy s", "ratio",
                    "kfx scan's export s", "ratio", "hand-over floor s", "ratio", "peak RSS MB (copy)", "tasks", "files"):
            st.add_column(col, justify="left" if col == "fleet" else "right")
        for name, f in spark_group["fleets"].items():
            st.add_row(name, f"{f['segments']:,}", f"{f['bytes'] / 2**20:.0f}", f"{f['records']:,}", f"{f['median_s']:.2f}",
                       f"{f['copy_median_s']:.2f}", f"{f['ratio_vs_copy']:.2f}",
                       f"{f['planned_median_s']:.2f}", f"{f['planned_ratio_vs_copy']:.2f}",
                       f"{f['floor_median_s']:.2f}", f"{f['floor_ratio_vs_copy']:.2f}",
                       f"{f['peak_rss_mb']:.0f} ({f['copy_peak_rss_mb']:.0f})", str(f["scan_partitions"]),
                       str(f["output_files"]))
        c.print(st)
        if "window_rows" in spark_group:
            c.print(f"window: {spark_group['window_rows']} rows (full scan: {spark_group['window_rows_full_scan']})")
    for k, v in summary.items():
        c.print(f"{k}: {v:.2f}")


if __name__ == "__main__":
    main()
