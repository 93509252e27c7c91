"""A short `kfx scan` is read in the driver and its views computed in pyarrow: proven equal to the
Spark path -- the views' Spark SQL against their pyarrow twins over hypothesis-made scan rows, and
whole scans of the test fleet both ways, every output read back by pyarrow."""
import functools
import os
import time
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records.schema import SOURCE_LEVELS, spark_ddl
from spark_jobs import output, planned_read
from spark_jobs.planned_read import frame_of, read_planned
from spark_jobs.inventory import inventory_of, inventory_table, replicas_of, replicas_table
from kafkaforensics.spark.spark_source import SplitWrites
from kafkaforensics.spark.storage import Storage
from spark_jobs import scan as scan_module
from spark_jobs.scan import ScanRequest, plan, scan, scan_here
from tests import realdirs
from tests.conftest import SAMPLE
from tests.spark_fleet import build_fleet
from tests.test_spark import spark  # noqa: F401  (the session fixture)

#: small domains, so that copies of a partition, equal and differing batches, and null ids meet
LOG_DIRS = ("/a/kafka-logs", "/b/kafka-logs", "/c/kafka-logs")
CLUSTERS = (None, "", "q1Sh-9_ISia_zwGINzRvyQ")
TOPICS = ("orders", "payments")
#: a live partition dir, and copies Kafka set aside beside it (never replicas; rows of their own)
SET_ASIDE = ("", "", ".0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete", ".0f1e2d3c4b5a69788796a5b4c3d2e1f0-future")


@st.composite
def scan_rows(draw):
    """Scan-level rows as the source gives them: a partition row per copy, segment rows, batch rows (good and bad
    CRCs, replicated or not), anomalies (with and without a topic, records not exported or not)."""
    rows = []
    copies = draw(st.lists(st.tuples(st.sampled_from(LOG_DIRS), st.sampled_from(CLUSTERS), st.sampled_from(TOPICS),
                                     st.integers(0, 1), st.sampled_from(SET_ASIDE)),
                           min_size=0, max_size=6, unique_by=lambda c: c[0] + c[2] + str(c[3]) + c[4]))
    for log_dir, cluster, topic, partition, aside in copies:
        where = {"logDir": log_dir, "brokerId": draw(st.sampled_from((None, 1, 2))), "clusterId": cluster,
                 "topic": topic, "partition": partition, "partitionDir": f"{topic}-{partition}{aside}"}
        rows.append({**where, "file": f"{log_dir}/{where['partitionDir']}", "rowKind": "partition",
                     "nextOffset": draw(st.sampled_from((None, 0, 40)))})   # a log without segments' end
        for base in sorted(draw(st.sets(st.sampled_from((0, 20, 40))))):  # segment files, empty ones among them
            rows.append({**where, "file": f"{log_dir}/{where['partitionDir']}/{base:020d}.log", "rowKind": "segment"})
            for position in draw(st.sets(st.sampled_from((0, 100, 200)), min_size=1)):  # its pieces walked
                rows.append({**where, "file": f"{log_dir}/{where['partitionDir']}/{base:020d}.log", "rowKind": "piece",
                             "position": position, "baseOffset": base,
                             "nextOffset": draw(st.sampled_from((None, base + 5, base + 15, base + 30))),
                             "kind": draw(st.sampled_from((None, None, "torn-tail")))})
        for i in range(draw(st.integers(0, 6))):
            base = draw(st.integers(0, 4)) * 10
            rows.append({**where, "file": f"{log_dir}/{where['partitionDir']}/{draw(st.sampled_from((0, 20))):020d}.log",
                         "rowKind": "batch", "baseOffset": base, "lastOffset": base + 9, "count": 10,
                         "position": i * 100, "size": 100, "crc": draw(st.sampled_from((7, 8))),
                         "crcValid": draw(st.sampled_from((True, True, False))),
                         "compression": draw(st.sampled_from(("none", "gzip", "zstd"))),
                         "isTransactional": draw(st.booleans()), "isControl": draw(st.booleans()),
                         "producerId": draw(st.sampled_from((-1, 5, 6))),
                         "firstTimestamp": draw(st.sampled_from((-1, 1000, 2000))), "maxTimestamp": 3000})
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(("crc-mismatch", "undecodable-records", "torn-tail", "stray-file")))
            rows.append({**where, "file": f"{log_dir}/{where['partitionDir']}/x.log", "rowKind": "anomaly", "kind": kind,
                         "position": draw(st.sampled_from((None, 40))), "bytesNotRead": draw(st.integers(0, 99)),
                         "recordsNotRead": draw(st.sampled_from((None, 3)))})
    for _ in range(draw(st.integers(0, 1))):  # a log dir's own anomaly: no topic
        rows.append({"logDir": LOG_DIRS[0], "file": LOG_DIRS[0] + "/notes.txt", "rowKind": "anomaly",
                     "kind": "stray-file", "bytesNotRead": 5})
    return rows


def _arrow(spark, rows):  # noqa: F811
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType
    schema = StructType.fromDDL(spark_ddl(SOURCE_LEVELS["scan"]))
    return pa.Table.from_pylist(rows, schema=to_arrow_schema(schema, timezone="UTC")), schema


def _fleets(draw_many):
    """Several fleets' rows in one table, each fleet's topics named apart (so that no view's group
    spans two fleets): one Spark evaluation checks them all."""
    rows = []
    for i, fleet in enumerate(draw_many):
        rows += [{**r, "topic": f"{r['topic']}.{i}", "partitionDir": r["partitionDir"].replace(r["topic"], f"{r['topic']}.{i}", 1)}
                 if r.get("topic") else r for r in fleet]
    return rows


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(fleets=st.lists(scan_rows(), min_size=1, max_size=8))
def test_the_views_in_pyarrow_equal_the_views_in_spark(spark, fleets):  # noqa: F811
    table, schema = _arrow(spark, _fleets(fleets))
    frame = frame_of(spark, table, schema)
    for of_spark, of_arrow in ((inventory_of, inventory_table), (replicas_of, replicas_table)):
        want = of_spark(frame)
        got = of_arrow(table)
        assert frame_of(spark, got).schema == want.schema, of_arrow.__name__
        assert got.to_pylist() == [r.asDict() for r in want.collect()], of_arrow.__name__


#: real brokers' log dirs (tests/realdirs.py) whose inventories are computed both ways: three generations
#: (0.10.1 with message format v1, 2.7, 2.8), a few hundred KB to 1.6 MB each
REAL_SUBSET = ("magic1-kafka0101-zk", "kafka27-zk-compacted-offsets", "snappy-xerial-kafka28-zk")


@pytest.mark.skipif(not realdirs.tarballs(), reason="the real log dirs (../shared/real-logdirs) are not on this machine")
def test_the_inventory_s_log_end_is_the_load_s_in_pyarrow_and_on_spark_over_real_log_dirs(spark, tmp_path):  # noqa: F811
    """Issue 52: the inventory's ``logEndOffset`` of every partition of real log dirs, read in 3 KB pieces
    (so that segments are cut into byte ranges) -- its Spark SQL view and its pyarrow view are equal,
    row for row, and each partition's is ``kfx verify``'s (the load's rule over its segments)."""
    from kafkaforensics.inspect.verify import verify
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader, spark_schema
    for name in REAL_SUBSET:
        rd = realdirs.unpack(name, str(tmp_path))
        reader = KafkaSegmentsReader({"path": rd.log_dir, "splitBytes": "3000"}, "scan", spark_schema("scan"))
        table = pa.Table.from_batches([b for split in reader.partitions() for b in reader.read(split)],
                                      schema=reader.arrow_schema())
        here = inventory_table(table).to_pylist()
        assert here == [r.asDict() for r in inventory_of(frame_of(spark, table, spark_schema("scan"))).collect()], name
        ends = {os.path.basename(r["path"]): r["logEndOffset"] for r in verify([rd.log_dir]).partitions}
        assert {r["partitionDir"]: r["logEndOffset"] for r in here} == ends, name
        assert any(e for e in ends.values()), name


def test_a_copy_kafka_set_aside_has_its_own_inventory_row_and_is_no_replica(spark):  # noqa: F811
    """A `-delete` dir (a deleted partition awaiting removal) beside the live `orders-0` of the same
    log dir, and a live copy on a second broker: three inventory rows, never summed, and two replicas."""
    rows, dirs = [], (("/a/kafka-logs", 1, "orders-0"), ("/a/kafka-logs", 1, "orders-0.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete"),
                      ("/b/kafka-logs", 2, "orders-0"))
    for log_dir, broker, name in dirs:
        where = {"logDir": log_dir, "brokerId": broker, "clusterId": "c", "topic": "orders", "partition": 0,
                 "partitionDir": name}
        rows.append({**where, "file": f"{log_dir}/{name}", "rowKind": "partition"})
        rows += [{**where, "file": f"{log_dir}/{name}/{0:020d}.log", "rowKind": "batch", "baseOffset": b * 10,
                  "lastOffset": b * 10 + 9, "count": 10, "position": b * 100, "size": 100,
                  "crc": b + (100 if name.endswith("delete") else 0), "crcValid": True,
                  "compression": "none", "isTransactional": False, "isControl": False, "producerId": -1,
                  "firstTimestamp": 1000, "maxTimestamp": 1000} for b in range(3 if name.endswith("delete") else 2)]
    table, schema = _arrow(spark, rows)
    for inv in (inventory_table(table).to_pylist(), [r.asDict() for r in inventory_of(frame_of(spark, table, schema)).collect()]):
        assert [(r["logDir"], r["partitionDir"], r["records"]) for r in inv] == [
            ("/a/kafka-logs", "orders-0", 20), ("/a/kafka-logs", dirs[1][2], 30), ("/b/kafka-logs", "orders-0", 20)]
    for rep in (replicas_table(table).to_pylist(), [r.asDict() for r in replicas_of(frame_of(spark, table, schema)).collect()]):
        assert [(r["replicas"], r["logDirs"], r["equalUpTo"], r["divergesAt"]) for r in rep] == [
            (2, ["/a/kafka-logs", "/b/kafka-logs"], 19, None)]  # the deleted copy's other batches are not compared


def _replica_rows(copies):
    """Scan rows of partition orders-0 copies: ``copies`` maps a log dir to its batches (base offset,
    CRC), ten records each."""
    rows = []
    for n, (log_dir, batches) in enumerate(copies.items()):
        where = {"logDir": log_dir, "brokerId": n, "clusterId": "c", "topic": "orders", "partition": 0,
                 "partitionDir": "orders-0"}
        rows.append({**where, "file": f"{log_dir}/orders-0", "rowKind": "partition"})
        rows += [{**where, "file": f"{log_dir}/orders-0/{0:020d}.log", "rowKind": "batch", "baseOffset": base,
                  "lastOffset": base + 9, "count": 10, "position": i * 100, "size": 100, "crc": crc, "crcValid": True,
                  "compression": "none", "isTransactional": False, "isControl": False, "producerId": -1,
                  "firstTimestamp": 1000, "maxTimestamp": 1000} for i, (base, crc) in enumerate(batches)]
    return rows


@pytest.mark.parametrize("b_copy, want", [
    ([(0, 1), (10, 2)], ("behind", None, 19, "2 replicas, behind: equal up to offset 19, the longest goes on to 39")),
    ([(0, 1), (10, 2), (20, 9)], ("diverged", 20, 19, "2 replicas, diverged at offset 20: equal up to offset 19")),
    ([(0, 7)], ("diverged", 0, None, "2 replicas, diverged: differ from offset 0")),
    ([(0, 1), (10, 2), (20, 3), (30, 4)], ("identical", None, 39, "2 replicas, identical")),
])
def test_the_replica_view_tells_a_copy_behind_from_a_copy_that_diverged(spark, b_copy, want):  # noqa: F811
    """A copy that is a prefix of the other is behind (no divergesAt); different bytes at an offset
    both copies hold is a divergence -- in Spark SQL and in pyarrow alike."""
    table, schema = _arrow(spark, _replica_rows({"/a": [(0, 1), (10, 2), (20, 3), (30, 4)], "/b": b_copy}))
    for rep in (replicas_table(table).to_pylist(), [r.asDict() for r in replicas_of(frame_of(spark, table, schema)).collect()]):
        assert [(r["state"], r["divergesAt"], r["equalUpTo"], r["summary"]) for r in rep] == [want]


def test_a_search_hit_says_what_matched_and_carries_its_headers_as_text(spark, tmp_path):  # noqa: F811
    """A key-only, a value-only and a header-only hit each say so (``matchedIn``); header values are
    there as text (``headerTexts``) beside the binary headers; a record matching nowhere is no hit."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.spark.java_regex import python_pattern
    from spark_jobs.search import matches, search_table
    recs = [Record(0, 1000, b"ORD-1", b"plain", [("trace", b"x")]),
            Record(1, 1000, b"k", b"has ORD-1 in it", []),
            Record(2, 1000, b"k", b"plain", [("ref", b"ORD-1\xff"), ("other", b"no")]),
            Record(3, 1000, b"k", b"plain", [("ref", b"none")])]
    write_partition(str(tmp_path / "orders-0"), [build_v2(recs, base_offset=0)])
    read = read_planned(spark, [str(tmp_path / "orders-0")], "records", driver_bytes=1 << 30)
    hits = [r.asDict(recursive=True) for r in matches(read.frame, "ORD-1").collect()]
    here = search_table(read.table, "ORD-1", python_pattern("ORD-1")).to_pylist()  # with no Spark: the same hits
    assert [{k: v for k, v in h.items() if k != "timestampUtc"} for h in here] == [
        {k: v for k, v in h.items() if k != "timestampUtc"} for h in hits]
    assert [(h["offset"], h["matchedIn"]) for h in hits] == [(0, ["key"]), (1, ["value"]), (2, ["header:ref"])]
    assert hits[2]["headerTexts"] == [{"key": "ref", "valueText": "ORD-1\ufffd"}, {"key": "other", "valueText": "no"}]
    assert hits[2]["headers"][0]["value"] == b"ORD-1\xff"


def _outputs(out):
    """Every output of a scan, read back by pyarrow: (schema, rows sorted)."""
    got = {}
    for name in sorted(os.listdir(out)):
        t = pq.read_table(os.path.join(out, name))
        got[name] = (t.schema.remove_metadata(), sorted(map(repr, t.to_pylist())))
    return got


@pytest.mark.parametrize("level", ["records", "batches", "anomalies"])
def test_a_scan_read_in_the_driver_writes_what_spark_s_tasks_write(spark, tmp_path, level, monkeypatch):  # noqa: F811
    root = str(tmp_path / "fleet")
    build_fleet(root)
    opts = {"includeCorrupt": "true"}
    held = read_planned(spark, [root], "scan", options=opts, driver_bytes=1 << 30)
    tasks = read_planned(spark, [root], "scan", options=opts)
    assert held.table is not None and tasks.table is None and tasks.shipped is not None
    tasks.release()
    # pyspark slices a larger table into many partitions (16 for the 59 MB of benchmarks' small-2000);
    # a held read is coalesced to its splits, so that its export is no more files than Spark's tasks write
    with monkeypatch.context() as m:
        m.setattr(planned_read, "frame_of", lambda *a: frame_of(*a).repartition(8))
        many = read_planned(spark, [root], "records", options=opts, driver_bytes=1 << 30)
        assert many.table is not None and 1 <= many.frame.rdd.getNumPartitions() <= len(many.splits) < 8
    listed = []
    list_entries = Storage.list_entries
    monkeypatch.setattr(Storage, "list_entries", lambda self, uri: listed.append(uri) or list_entries(self, uri))
    both = {}
    # a records export under a window: the inventory counts what was exported
    window = {"fromOffset": "3", "toOffset": "40"} if level == "records" else {}
    # read in the driver; read by the tasks, the summary collected to the driver once it is cached;
    # read by the tasks, the views computed by Spark SQL; each written here by pyarrow (a local out)
    # or, as to a remote out, by Spark
    variants = {"driver": (1 << 30, 1 << 20, None), "tasks": (0, 1 << 20, None), "sql": (0, 0, None),
                "driver, by Spark": (1 << 30, 1 << 20, False), "tasks, by Spark": (0, 1 << 20, False)}
    for name, (limit, summary_rows, tasks_write) in variants.items():
        # the scan's reads (the summary, the records for the export or the search) share one listing:
        # its own, or the plan's
        listing = plan([root], options=opts).listing if not name.startswith("driver") else None
        del listed[:]
        with monkeypatch.context() as m:  # the views computed where they should be, and only there
            unused = "replicas_of" if summary_rows else "replicas_table"
            m.setattr(scan_module, unused, lambda *a: pytest.fail(f"{name}: {unused} called"))
            r = scan(spark, ScanRequest([root], str(tmp_path / name), level, search="value-9", options={**opts, **window},
                                      listing=listing), driver_bytes=limit, summary_rows=summary_rows, tasks_write=tasks_write)
        assert listed == ([] if listing is not None else [root]), name
        both[name] = (r.rows, r.anomalies, r.hits, r.inventory, r.plan, _outputs(str(tmp_path / name)))
    assert len({repr(v) for v in both.values()}) == 1, {k: v[:3] for k, v in both.items()}
    rows, anomalies, hits, inventory, _plan, outputs = both["driver"]
    assert rows and anomalies and hits and inventory
    assert set(outputs) == {level, "anomalies", "inventory", "races", "replicas", "search"}
    for name in variants:
        for output in ("inventory", "replicas", level, "anomalies"):
            files = os.listdir(tmp_path / name / output)
            if output in ("inventory", "replicas"):  # one file each, as sorted_small writes them
                assert len([f for f in files if f.endswith(".parquet")]) == 1, (name, output)
            # pyarrow writes no .crc files: a summary held here is written here (as scan_here writes
            # it), and a records export by the tasks, unless Spark's writer is asked for
            by_spark = variants[name][2] is False or (output != "records" and name == "sql")
            assert any(f.endswith(".crc") for f in files) == by_spark, (name, output, files)


@pytest.mark.parametrize("level", ["records", "batches", "anomalies"])
def test_a_scan_reports_its_progress_in_splits_and_the_whole_once_done(spark, tmp_path, level):  # noqa: F811
    """``progress(done, total)``: while Spark's tasks read what the export is, never more done than
    the plan's splits, never going back, and the whole as the last call; a read held in the driver
    reports none done until the whole."""
    root = str(tmp_path / "fleet")
    build_fleet(root)
    opts = {"includeCorrupt": "true"}
    for name, limit in (("tasks", 0), ("driver", 1 << 30)):
        calls = []
        r = scan(spark, ScanRequest([root], str(tmp_path / name), level, options=opts), driver_bytes=limit,
                 progress=lambda done, total: calls.append((done, total)))
        splits = r.plan.splits
        assert splits > 1 and calls[-1] == (splits, splits), (name, calls)
        assert all(0 <= d <= t == max(1, splits) for d, t in calls[:-1]), (name, calls)
        assert [d for d, _ in calls[:-1]] == sorted(d for d, _ in calls[:-1]), (name, calls)
        if name == "driver":  # no task reads it
            assert all(d == 0 for d, _ in calls[:-1]), calls


class _Tracker:
    """Spark's status tracker as ``_watch`` sees it: the reading stage of ``tasks`` tasks completes
    ``step`` more at each look; a stage of another size (another job's) is always done."""

    def __init__(self, tasks: int, step: int = 1):
        self.tasks, self.step, self.done = tasks, step, 0

    def getActiveStageIds(self):
        return [1, 2]

    def getStageInfo(self, stage):
        if stage == 2:
            return SimpleNamespace(numTasks=self.tasks + 3, numCompletedTasks=self.tasks + 3)
        self.done = min(self.tasks, self.done + self.step)
        return SimpleNamespace(numTasks=self.tasks, numCompletedTasks=self.done)


def _fake_spark(tracker):
    return SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))


def test_scan_progress_follows_the_reading_stage_alone_and_says_the_whole_only_on_success():
    calls = []
    with scan_module._watching(_fake_spark(_Tracker(4)), 4, lambda done, total: calls.append((done, total))):
        deadline = time.monotonic() + 30
        while not any(done == 4 for done, _ in calls) and time.monotonic() < deadline:
            time.sleep(0.05)
    done = [d for d, _ in calls]
    assert calls[-1] == (4, 4) and {t for _, t in calls} == {4}
    assert done == sorted(done) and 1 <= len(set(done)) and max(done) == 4  # the other stage never counts
    assert any(0 < d < 4 for d in done), calls  # seen on the way
    calls.clear()
    with pytest.raises(RuntimeError), scan_module._watching(_fake_spark(_Tracker(4, step=0)), 4,
                                                            lambda done, total: calls.append((done, total))):
        time.sleep(0.6)
        raise RuntimeError("a write failed")
    assert calls and all(d == 0 for d, _ in calls), calls  # and no whole, after an error


def _spark_read(spark, out):
    """Every output of a scan, read back by Spark: (schema, rows sorted)."""
    return {name: (spark.read.parquet(os.path.join(out, name)).schema,
                   sorted(map(repr, spark.read.parquet(os.path.join(out, name)).collect())))
            for name in sorted(os.listdir(out))}


@pytest.mark.parametrize("level", ["records", "batches", "anomalies"])
def test_a_scan_written_here_with_no_spark_writes_what_spark_writes(spark, tmp_path, level):  # noqa: F811
    root = str(tmp_path / "fleet")
    build_fleet(root)
    # a window keeps part of some batches' records: the inventory then counts what was exported
    for window in ({}, {"fromOffset": "3", "toOffset": "40"}):
        opts = {"includeCorrupt": "true", **window}
        here, tasks = str(tmp_path / f"here{len(window)}"), str(tmp_path / f"tasks{len(window)}")
        os.makedirs(here)
        search = "-9|amount=3"  # keys and values hit (a search Python reads as Java does runs here too)
        r = scan_here(ScanRequest([root], here, level, search, options=opts),
                      min_partitions=spark.sparkContext.defaultParallelism)
        s = scan(spark, ScanRequest([root], tasks, level, search, options=opts), driver_bytes=0,  # read and written by Spark's tasks
                 tasks_write=False, summary_rows=0)  # the views by Spark SQL
        assert (r.rows, r.anomalies, r.inventory, r.plan, r.hits) == (s.rows, s.anomalies, s.inventory, s.plan, s.hits)
        assert r.rows and r.anomalies and r.hits
        assert _outputs(here) == _outputs(tasks)  # read back by pyarrow: schemas and rows
        assert _spark_read(spark, here) == _spark_read(spark, tasks)  # and by Spark
        for name in os.listdir(here):  # Spark's layout: one part file a dir (records: one a split), and _SUCCESS
            files = sorted(os.listdir(os.path.join(here, name)))
            parts = max(1, r.plan.splits) if name == "records" else 1
            assert files[0] == "_SUCCESS" and len(files) <= 1 + parts and files[1].endswith(".snappy.parquet"), files
        assert sorted(os.listdir(here)) == sorted({level, "anomalies", "inventory", "races", "replicas", "search"})  # no temp dir left


def _part_numbers(out):
    """The task numbers of a records export's part files (``part-NNNNN-...``)."""
    return sorted(int(f.split("-")[1]) for f in os.listdir(os.path.join(out, "records")) if f.startswith("part-"))


def test_a_records_export_written_by_spark_s_tasks_themselves_is_what_spark_s_writer_writes(spark, tmp_path,  # noqa: F811
                                                                                           monkeypatch):
    """A records export read by Spark's tasks and written by them with pyarrow (on a local master,
    to a local --out: the rows never cross into the JVM) against the same read written by Spark's
    Parquet writer: the same result, rows and schemas read back by pyarrow and by Spark, a part file
    a split in Spark's layout, row groups gathered from the batches read, a window that leaves
    splits empty, an empty export, an earlier output replaced, and what a failed attempt wrote not
    kept."""
    from kafkaforensics.spark import parquet_dir
    root = str(tmp_path / "fleet")
    build_fleet(root)
    opts = {"includeCorrupt": "true"}
    planned = read_planned(spark, [root], "records", options=opts)
    batches_read = [len(list(planned.reader.read(split))) for split in planned.splits]
    planned.release()
    assert max(batches_read) > 1  # so that gathering them into row groups shows

    def groups(out):
        parts = [f for f in sorted(os.listdir(os.path.join(out, "records"))) if f.endswith(".snappy.parquet")]
        return [pq.ParquetFile(os.path.join(out, "records", f)).metadata.num_row_groups for f in parts]
    for window in ({}, {"fromOffset": "3", "toOffset": "40"}, {"fromOffset": "1000000"}):
        opts = {"includeCorrupt": "true", **window}
        tasks, spark_wrote = str(tmp_path / f"tasks{len(str(window))}"), str(tmp_path / f"spark{len(str(window))}")
        os.makedirs(os.path.join(tasks, "records"))  # an earlier run's, replaced as Spark's overwrite replaces it
        r = scan(spark, ScanRequest([root], tasks, "records", search="value-9", options=opts), driver_bytes=0)
        s = scan(spark, ScanRequest([root], spark_wrote, "records", search="value-9", options=opts), driver_bytes=0,
                 tasks_write=False, summary_rows=0)  # the views by Spark SQL
        assert (r.rows, r.anomalies, r.hits, r.inventory, r.plan) == (s.rows, s.anomalies, s.hits, s.inventory, s.plan)
        assert _outputs(tasks) == _outputs(spark_wrote)
        assert _spark_read(spark, tasks) == _spark_read(spark, spark_wrote)
        files = sorted(os.listdir(os.path.join(tasks, "records")))
        parts = [f for f in files if f.endswith(".snappy.parquet")]
        assert files == ["_SUCCESS", *parts] and parts, files  # nothing being written, no temp dir beside
        assert _part_numbers(tasks) == _part_numbers(spark_wrote)  # the parts Spark's tasks write
        assert sorted(os.listdir(tasks)) == ["anomalies", "inventory", "races", "records", "replicas", "search"]
        if not window:
            assert r.rows and len(parts) == r.plan.splits == len(batches_read)  # a part file a split
            assert groups(tasks) == [1] * len(parts)  # its batches gathered into one row group
            everything = r.rows
        if window.get("fromOffset") == "1000000":  # past every offset: every split reads nothing
            assert r.rows == 0 and len(parts) == 1  # the schema, in one part, as Spark writes it
    monkeypatch.setattr(parquet_dir, "ROW_GROUP_BYTES", 4096)  # shipped with the tasks
    r = scan(spark, ScanRequest([root], str(tmp_path / "small-groups"), "records", options={"includeCorrupt": "true"}),
             driver_bytes=0)
    assert max(groups(str(tmp_path / "small-groups"))) > 1

    class WritesTwice(SplitWrites):  # defined here: pickled by value, run by the tasks
        """Attempts that were lost: one wrote a part under another job's name, one was killed
        writing, one wrote this part in full; then the attempt that is reported."""

        def write(self, i, batches):
            batches = list(batches)
            with open(os.path.join(self.into, f".{parquet_dir.part_name(i, self.job)}.x.writing"), "wb") as f:
                f.write(b"half a part")
            self.job, job = "lost-attempt", self.job
            super().write(i, iter(batches))
            self.job = job
            super().write(i, iter(batches[:1]))
            return super().write(i, iter(batches))
    monkeypatch.setattr(scan_module, "write_planned", functools.partial(output.write_planned, writes=WritesTwice))
    again = str(tmp_path / "again")
    r = scan(spark, ScanRequest([root], again, "records", options={"includeCorrupt": "true"}), driver_bytes=0)
    files = sorted(os.listdir(os.path.join(again, "records")))
    assert len(files) == 1 + r.plan.splits and "lost" not in "".join(files), files
    assert pq.read_table(os.path.join(again, "records")).num_rows == r.rows == everything


def test_the_first_split_writes_a_part_even_when_empty_as_spark_s_first_task_does(spark, tmp_path):  # noqa: F811
    """Spark's Parquet writer writes a part file for its first task even when it has no rows (and
    none for a later empty task): so do the tasks that write a records export themselves."""
    for keep, numbers in (("id >= 2", [0, 1]), ("id < 2", [0])):  # the first task's rows left out, or the second's
        d = str(tmp_path / f"spark-{len(numbers)}")
        spark.range(0, 4, 1, 2).where(keep).write.parquet(d)
        assert sorted(int(f.split("-")[1]) for f in os.listdir(d) if f.startswith("part-")) == numbers
    reader, _, _ = planned_read.planned_reader([SAMPLE], "records", None, None, 1)
    writes = SplitWrites(reader, None, str(tmp_path), "job")
    assert writes.write(1, iter([])) == ("", 0)
    part, rows = writes.write(0, iter([]))
    assert rows == 0 and part.startswith("part-00000-job-")
    t = pq.read_table(tmp_path / part)
    assert t.num_rows == 0 and t.schema.remove_metadata() == reader.arrow_schema().remove_metadata()
    assert sorted(f for f in os.listdir(tmp_path) if not f.startswith("spark-")) == [part]  # nothing else written


def test_a_scan_here_gives_way_to_spark_when_its_rows_outgrow_the_process(tmp_path, monkeypatch):
    root = str(tmp_path / "fleet")
    build_fleet(root)
    os.makedirs(tmp_path / "out")
    summary, _ = planned_read.read_here([root], "scan")
    records, _ = planned_read.read_here([root], "records")
    # the summary outgrows it (any level)
    monkeypatch.setattr(planned_read, "DRIVER_TABLE_BYTES", summary.nbytes - 1)
    for level in ("records", "batches"):
        assert scan_here(ScanRequest([root], str(tmp_path / "out"), level)) is None, level
        assert os.listdir(tmp_path / "out") == []  # nothing written
    monkeypatch.setattr(planned_read, "DRIVER_TABLE_BYTES", max(summary.nbytes, records.nbytes - 1))
    assert scan_here(ScanRequest([root], str(tmp_path / "out"), "batches")) is not None  # a batches scan holds no records
    # a records export is streamed split by split (issue 57), partitioned or not: its records never held whole
    r = scan_here(ScanRequest([root], str(tmp_path / "streamed"), "records"))
    assert r is not None and r.rows == records.num_rows
    want = sorted(repr(sorted(row.items())) for row in pq.read_table(tmp_path / "streamed" / "records").to_pylist())
    for pb in (("topic",), ("topic", "date")):
        out = tmp_path / f"streamed-{'-'.join(pb)}"
        p = scan_here(ScanRequest([root], str(out), "records", partition_by=pb))
        assert p is not None and p.rows == records.num_rows, pb
        got = pq.read_table(out / "records").to_pylist()
        for row in got:  # the partition columns come back from the dir names (as categories: as text)
            row.pop("date", None)
            row["topic"] = str(row["topic"])
        assert sorted(repr(sorted(row.items())) for row in got) == want, pb  # partition columns last



def test_a_partitioned_export_here_holds_a_split_not_the_export(tmp_path, monkeypatch):
    """--partition-by without Spark streams (issue 57): the Arrow memory held while a 24 MB export of
    20 splits is read and written into its topic/date dirs stays within a few splits' batches (about
    1.4 MB measured), where holding the export whole takes all of it (24 MB); sampled after each
    batch the source reads (pyarrow's allocations, which tracemalloc does not see)."""
    from kafkaforensics.log import writer as log_writer
    from kafkaforensics.records import batch as records_batch
    from kafkaforensics.records import builder as records_builder
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    logs, value = tmp_path / "logs", b"v" * 2000
    log_writer.write_partition(str(logs / "big-0"), (records_builder.build_v2(
        [records_batch.Record(b * 200 + i, 1700000000000 + b * 3_600_000, b"k%d" % i, value, []) for i in range(200)],
        base_offset=b * 200, codec=0) for b in range(60)))
    peak, base, read = [0], pa.total_allocated_bytes(), KafkaSegmentsReader.read

    def sampled(self, split):
        for b in read(self, split):
            yield b
            peak[0] = max(peak[0], pa.total_allocated_bytes() - base)
    monkeypatch.setattr(KafkaSegmentsReader, "read", sampled)
    r = scan_here(ScanRequest([str(logs)], str(tmp_path / "out"), "records", split_bytes=1 << 20,
                              partition_by=("topic", "date")))
    assert r is not None and r.rows == 12000 and r.plan.splits >= 16
    exported = sum(f.stat().st_size for f in logs.rglob("*.log"))
    assert 0 < peak[0] < exported // 4, (peak[0], exported)
    assert pq.read_table(tmp_path / "out" / "records").num_rows == 12000

def test_a_records_export_partitioned_by_topic_and_date_is_the_same_here_and_on_spark(spark, tmp_path):  # noqa: F811
    """--partition-by topic and/or date (the UTC day of the record timestamp): Spark's layout
    (``topic=orders/date=2023-11-14/part-...``), the same rows read back here and on Spark (issue 57):
    written by Spark's tasks with the one part writer, and by Spark's own writer (the second
    implementation, kept for a cluster's remote --out: the same rows and schema, read back by Spark
    and by pyarrow)."""
    import datetime
    root = str(tmp_path / "fleet")
    build_fleet(root)
    for pb in (("topic",), ("topic", "date")):
        here, tasks, by_spark = (str(tmp_path / f"{n}{len(pb)}") for n in ("here", "tasks", "spark"))
        os.makedirs(here)
        r = scan_here(ScanRequest([root], here, "records", partition_by=pb))
        s = scan(spark, ScanRequest([root], tasks, "records", partition_by=pb), driver_bytes=0)
        w = scan(spark, ScanRequest([root], by_spark, "records", partition_by=pb), driver_bytes=0, tasks_write=False)
        assert r.rows == s.rows == w.rows and r.rows > 0
        got, want, spark_wrote = (sorted(map(repr, (x.asDict() for x in spark.read.parquet(os.path.join(d, "records")).collect())))
                                  for d in (here, tasks, by_spark))
        assert got == want == spark_wrote
        assert (spark.read.parquet(os.path.join(here, "records")).schema
                == spark.read.parquet(os.path.join(by_spark, "records")).schema)
        assert _outputs(here)["records"] == _outputs(by_spark)["records"]  # by pyarrow: schema and rows
        assert not any(f.endswith(".crc") for _, _, fs in os.walk(os.path.join(tasks, "records")) for f in fs)
        top = sorted(os.listdir(os.path.join(here, "records")))
        assert "_SUCCESS" in top and "topic=orders" in top and not any(f.endswith(".parquet") for f in top)
        if "date" in pb:
            rows = spark.read.parquet(os.path.join(here, "records")).select("timestamp", "date").collect()
            assert rows and all(x["date"] == datetime.datetime.fromtimestamp(x["timestamp"] / 1000, datetime.timezone.utc).date()
                                for x in rows if x["timestamp"] >= 0)
            assert any(d.startswith("date=") for d in os.listdir(os.path.join(here, "records", "topic=orders")))
    with pytest.raises(ValueError, match="--partition-by hour: one of topic, date"):
        scan_here(ScanRequest([root], str(tmp_path / "x"), "records", partition_by=("hour",)))


def _part_bytes(out):
    """A records export's part files, each path with its job's uuid left out, and their bytes."""
    got = {}
    for root, _, files in os.walk(os.path.join(out, "records")):
        for f in files:
            if f.endswith(".parquet"):
                name = f.split("-")  # part, task, the uuid's five, c000.snappy.parquet
                with open(os.path.join(root, f), "rb") as fh:
                    got[os.path.join(os.path.relpath(root, out), "-".join(name[:2] + name[-1:]))] = fh.read()
    return got


@pytest.mark.parametrize("partition_by", [(), ("topic",), ("topic", "date")])
def test_a_records_export_has_one_writer_here_and_in_spark_s_tasks(spark, tmp_path, partition_by):  # noqa: F811
    """Issue 53: a records export has one writer (``parquet_dir.write_parts``), whichever engine ran:
    written here with no Spark, by Spark's tasks, and in Spark's driver for a read held there, the
    same part files, byte for byte, in the same (``key=value``) dirs -- partitioned ones too, which
    Spark's own writer wrote before, and a held read's, which was one part before."""
    root = str(tmp_path / "fleet")
    build_fleet(root)
    here, tasks = str(tmp_path / "here"), str(tmp_path / "tasks")
    os.makedirs(here)
    r = scan_here(ScanRequest([root], here, "records", partition_by=partition_by),
                  min_partitions=spark.sparkContext.defaultParallelism)
    s = scan(spark, ScanRequest([root], tasks, "records", partition_by=partition_by), driver_bytes=0)
    held = str(tmp_path / "held")  # read in the driver, written there a part a split
    d = scan(spark, ScanRequest([root], held, "records", partition_by=partition_by), driver_bytes=1 << 30)
    assert r.rows == s.rows == d.rows > 0 and r.plan == s.plan == d.plan
    got, want, in_driver = _part_bytes(here), _part_bytes(tasks), _part_bytes(held)
    assert got and got.keys() == want.keys() and all(got[k] == want[k] for k in got), sorted(got)
    assert got == in_driver, (sorted(got), sorted(in_driver))
    assert all(k.endswith("-c000.snappy.parquet") for k in got)  # as Spark names a task's first file
    if partition_by:
        assert all("topic=" in k for k in got)


def test_the_export_job_s_spark_writer_writes_what_the_one_part_writer_writes(spark, tmp_path):  # noqa: F811
    """Issue 53: Spark's own Parquet writer stays only where pyarrow's cannot write (``spark_jobs/export.py``
    on a cluster, to object storage): the same archive through it and through the one part writer
    (``kfx scan --level records --partition-by topic`` with no Spark) reads back the same, row for row
    and schema for schema, by pyarrow and by Spark."""
    from spark_jobs.export import export
    root = str(tmp_path / "fleet")
    build_fleet(root)
    here = str(tmp_path / "here")
    os.makedirs(here)
    r = scan_here(ScanRequest([root], here, "records", partition_by=("topic",)))
    job = export(spark, [root], "records", str(tmp_path / "job"))
    ours, theirs = os.path.join(here, "records"), job
    assert r.rows > 0 and sorted(os.listdir(ours)) == sorted(d for d in os.listdir(theirs) if not d.startswith("."))
    a, b = (pq.read_table(d) for d in (ours, theirs))
    assert a.schema.remove_metadata() == b.schema.remove_metadata()
    assert sorted(map(repr, a.to_pylist())) == sorted(map(repr, b.to_pylist())) and a.num_rows == r.rows
    sa, sb = (spark.read.parquet(d) for d in (ours, theirs))
    assert sa.schema == sb.schema
    assert sorted(map(repr, (x.asDict() for x in sa.collect()))) == sorted(map(repr, (x.asDict() for x in sb.collect())))


def test_a_log_without_segments_ends_at_its_log_start_here_and_on_spark(spark, tmp_path):  # noqa: F811
    """A partition dir with no segment, its log start checkpointed at 40 and its recovery point at 45:
    both paths ask the load's rule (Kafka's LogLoader gives it an empty segment at its log start), so the
    log ends at 40 -- one anomaly, the recovery point's, against 40 (the old judgement, a log end of 0,
    flagged both checkpoints) -- and the no-Spark scan's outputs are Spark's."""
    from tests.test_one_loader import _empty_partition
    root = tmp_path / "logs"
    part = _empty_partition(root)
    outs = []
    for name in ("here", "tasks"):
        out = str(tmp_path / name)
        if name == "here":
            os.makedirs(out)
            got = scan_here(ScanRequest([str(root)], out, "anomalies"), min_partitions=spark.sparkContext.defaultParallelism)
        else:
            got = scan(spark, ScanRequest([str(root)], out, "anomalies"), driver_bytes=0, tasks_write=False, summary_rows=0)
        outs.append((got.anomalies, got.inventory, _outputs(out)))
    assert outs[0] == outs[1]
    rows = pq.read_table(tmp_path / "here" / "anomalies").to_pylist()
    assert [(a["partitionDir"], a["kind"], a["offset"]) for a in rows] == [("events-1", "checkpoint-beyond-log-end", 45)]
    assert "says 45 but the log ends at 40" in rows[0]["detail"] and os.path.basename(part) == "events-1"
