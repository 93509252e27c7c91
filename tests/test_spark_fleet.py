"""`kfx scan` and the jobs over a fleet built here (tests/spark_fleet.py): replicas of a partition
on two brokers, two clusters, empty partitions, stray files, a late record, a compressed batch whose
CRC fails and a broken frame.  Every output is read back by pyarrow; every row says where it is."""
import os

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from kafkaforensics.spark.spark_source import KafkaSegmentsReader
from tests.spark_fleet import (CLUSTER_A, CLUSTER_B, HOUR, LAGGING, LATE_BATCH, ORDERS_BATCHES, PER_BATCH, T0,
                               build_fleet)
from tests.conftest import SAMPLE
from tests.test_spark import spark  # noqa: F401  (the session fixture)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fleet"))
    facts = build_fleet(root)
    facts["root"] = root
    return facts


@pytest.fixture(scope="module")
def scanned(spark, fleet, tmp_path_factory):  # noqa: F811
    from tests.conftest import Kfx
    out = tmp_path_factory.mktemp("scan") / "out"
    r = Kfx()("scan", fleet["root"], "--out", out, "--master", "local[2]", "--level", "records",
              "--search", "value-9", "--include-corrupt")
    r.out_dir = out
    tables = {name: pq.read_table(str(out / name)) for name in
              ("records", "inventory", "replicas", "anomalies", "search")}
    return r, {k: t.to_pylist() for k, t in tables.items()}, tables


def test_every_output_reads_back_and_says_where_each_row_is(scanned, fleet):
    r, out, tables = scanned
    assert r.exit_code == 1, r.output  # damage found
    assert tables["records"].schema.field("key").type == tables["records"].schema.field("value").type
    assert str(tables["records"].schema.field("value").type) == "binary"
    assert str(tables["search"].schema.field("value").type) == "binary"
    assert str(tables["records"].schema.field("timestampUtc").type).startswith("timestamp")
    for name in ("records", "anomalies", "search"):
        assert all(x["logDir"] for x in out[name]), name
    a1 = [x for x in out["records"] if x["logDir"] == fleet["a1"]]
    assert a1 and {(x["brokerId"], x["clusterId"]) for x in a1} == {(1, CLUSTER_A)}
    b1 = [x for x in out["records"] if x["logDir"] == fleet["b1"]]
    assert {(x["brokerId"], x["clusterId"]) for x in b1} == {(1, CLUSTER_B)}


def test_inventory_has_one_row_per_log_dir_and_partition_and_counts_what_was_exported(scanned, fleet):
    _r, out, _t = scanned
    inv = {(x["logDir"], x["topic"], x["partition"]): x for x in out["inventory"]}
    assert len(inv) == len(out["inventory"])
    for ld in (fleet["a1"], fleet["a2"], fleet["b1"]):
        assert (ld, "__cluster_metadata", 0) in inv and (ld, "orders", 0) in inv
    for ld in (fleet["a1"], fleet["a2"]):  # the empty partition, on both brokers
        empty = inv[(ld, "orders", 1)]
        assert empty["batches"] == 0 and empty["records"] == 0 and empty["firstOffset"] is None
        assert empty["segments"] == 1  # its empty active segment is a segment
    for (ld, topic, partition), row in inv.items():  # every segment file counted, damaged or empty ones too
        d = os.path.join(ld, row["partitionDir"])
        assert row["segments"] == sum(f.endswith(".log") for f in os.listdir(d)), (d, row)
    assert inv[(fleet["a1"], "orders", 0)]["records"] == ORDERS_BATCHES * PER_BATCH
    assert inv[(fleet["a2"], "orders", 0)]["records"] == (ORDERS_BATCHES - LAGGING) * PER_BATCH
    assert {inv[(ld, "__cluster_metadata", 0)]["clusterId"] for ld in (fleet["a1"], fleet["b1"])} == {CLUSTER_A, CLUSTER_B}
    exported = {}
    for x in out["records"]:
        k = (x["logDir"], x["topic"], x["partition"])
        exported[k] = exported.get(k, 0) + 1
    assert {k: v["records"] for k, v in inv.items() if v["records"]} == exported
    assert inv[(fleet["a1"], "payments", 0)]["records"] == 19 * 4  # the bad batch's records never came back


def test_replicas_are_compared_not_summed(scanned, fleet):
    _r, out, _t = scanned
    rep = {(x["clusterId"], x["topic"], x["partition"]): x for x in out["replicas"]}
    orders = rep[(CLUSTER_A, "orders", 0)]
    last_common = (ORDERS_BATCHES - LAGGING) * PER_BATCH - 1
    assert orders["replicas"] == 2 and orders["brokerIds"] == [1, 2]
    # the lagging copy is a prefix of the other: behind, not diverged (issue 57)
    assert orders["equalUpTo"] == last_common and orders["divergesAt"] is None and orders["state"] == "behind"
    assert orders["summary"] == (f"2 replicas, behind: equal up to offset {last_common}, "
                                 f"the longest goes on to {ORDERS_BATCHES * PER_BATCH - 1}")
    assert rep[(CLUSTER_B, "orders", 0)]["replicas"] == 1
    assert rep[(CLUSTER_A, "__cluster_metadata", 0)]["summary"] == "2 replicas, identical"
    assert rep[(CLUSTER_B, "__cluster_metadata", 0)]["replicas"] == 1
    assert rep[(CLUSTER_A, "orders", 1)]["summary"].endswith("no batches")


def test_anomaly_rows_say_what_was_not_read(scanned, fleet):
    _r, out, _t = scanned
    by_kind = {}
    for a in out["anomalies"]:
        by_kind.setdefault(a["kind"], []).append(a)
    strays = sorted(os.path.basename(a["file"]) for a in by_kind["stray-file"])
    assert strays == ["00000000000000000000.log.bak", "notes.txt"]
    assert all(a["bytesNotRead"] == os.path.getsize(a["file"]) for a in by_kind["stray-file"])
    broken = [a for k, v in by_kind.items() for a in v if a["file"] == fleet["broken"]]
    assert len(broken) == 1
    b = broken[0]
    assert b["position"] == fleet["broken_position"] and b["offset"] == 30  # not 0 from the zeroed bytes
    assert b["bytesNotRead"] == fleet["broken_bytes"] and b["recordsNotRead"] == fleet["broken_next_base"] - 30
    crc = by_kind["crc-mismatch"]
    assert len(crc) == 1 and crc[0]["recordsNotRead"] == 4 and crc[0]["batchesNotRead"] == 1
    assert "none of its 4 records came back" in crc[0]["detail"]


def test_search_hits_carry_crc_valid_and_binary_values(scanned):
    _r, out, _t = scanned
    hits = out["search"]
    assert hits and all(h["crcValid"] is True for h in hits)
    assert all(b"value-9" in h["value"] and h["value"].endswith(b"\xff\xfe") for h in hits if h["topic"] == "orders")
    assert all("value-9" in h["valueText"] and "\ufffd" in h["valueText"] for h in hits if h["topic"] == "orders")
    assert {tuple(h["matchedIn"]) for h in hits} == {("value",)}


def test_a_few_search_hits_are_one_parquet_file_in_their_order(scanned):
    """Not one part file a task for a handful of rows (issue 57)."""
    r, out, _t = scanned
    parts = [f for f in os.listdir(r.out_dir / "search") if f.endswith(".parquet")]
    assert len(parts) == 1, parts
    keys = [(h["topic"], h["partition"], h["logDir"], h["partitionDir"], h["offset"]) for h in out["search"]]
    assert keys == sorted(keys)


def test_late_record_is_inside_its_window_by_default(spark, fleet):  # noqa: F811
    from spark_jobs.planned_read import read
    lo, hi = T0 + 18 * HOUR, T0 + 19 * HOUR
    df = read(spark, fleet["a1"], "records").where((F.col("timestamp") >= lo) & (F.col("timestamp") < hi))
    late = set(range(LATE_BATCH * PER_BATCH, (LATE_BATCH + 1) * PER_BATCH))
    got = {r["offset"] for r in df.where(F.col("topic") == "orders").collect()}
    assert got == set(range(18 * PER_BATCH, 19 * PER_BATCH)) | late
    opted = (read(spark, fleet["a1"], "records", options={"timestampDisorderMs": str(HOUR)})
             .where((F.col("timestamp") >= lo) & (F.col("timestamp") < hi) & (F.col("topic") == "orders")))
    assert not late & {r["offset"] for r in opted.collect()}  # the opt-in bound loses it, as documented


def test_window_options_and_pushed_filters_in_explain(spark, fleet, tmp_path):  # noqa: F811
    from spark_jobs.job_args import window_options
    from spark_jobs.planned_read import read
    from spark_jobs.scan import ScanRequest, scan
    opts = window_options(["orders"], [0], T0 + 18 * HOUR, T0 + 19 * HOUR)
    r = scan(spark, ScanRequest([fleet["a1"]], str(tmp_path / "w"), "records", options=opts))
    rows = pq.read_table(str(tmp_path / "w" / "records")).to_pylist()
    assert {x["offset"] for x in rows} == set(range(90, 95)) | set(range(125, 130)) and r.rows == 10
    for driver_bytes in (None, 0):  # read in the driver, and by Spark's tasks
        out = tmp_path / f"o{driver_bytes}"
        kw = {} if driver_bytes is None else {"driver_bytes": driver_bytes}
        r = scan(spark, ScanRequest([fleet["a1"]], str(out), "records", options=window_options(from_offset=3, to_offset=7)),
                 **kw)
        exported = {}
        for x in pq.read_table(str(out / "records")).to_pylist():
            exported[(x["topic"], x["partition"])] = exported.get((x["topic"], x["partition"]), 0) + 1
        assert exported and set(exported.values()) == {5}  # a window's records, not its batches' records
        for inv in (r.inventory, pq.read_table(str(out / "inventory")).to_pylist()):
            assert {(x["topic"], x["partition"]): x["records"] for x in inv if x["records"]} == exported
    df = read(spark, fleet["root"], "records").where((F.col("topic") == "orders") & (F.col("offset") >= 100))
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(mode="formatted")
    assert "PushedFilters: [EqualTo(topic,orders), GreaterThanOrEqual(offset,100)]" in buf.getvalue()
    assert {x["offset"] >= 100 and x["topic"] == "orders" for x in df.collect()} == {True}


def test_a_windowed_scan_s_inventory_and_findings_are_the_window_s(spark, fleet, tmp_path):  # noqa: F811
    """The inventory of a windowed records export describes the window (its first and last offsets,
    batches, records, anomalies); damage outside the window is a note (no finding), damage inside
    one -- the same on Spark's tasks, in the driver, and with no Spark (issue 57)."""
    from spark_jobs.job_args import window_options
    from spark_jobs.scan import ScanRequest, scan, scan_here
    hours = window_options(["orders"], [0], T0 + 18 * HOUR, T0 + 19 * HOUR)  # offsets 90..94 and the late 125..129
    bad_crc = window_options(["payments"], from_offset=20, to_offset=40)   # the bad batch at 28 inside
    past_it = window_options(["payments"], from_offset=40)                 # the bad batch read, outside
    runs = {"spark tasks": lambda out, o: scan(spark, ScanRequest([fleet["a1"]], out, "records", options=o), driver_bytes=0),
            "spark sql": lambda out, o: scan(spark, ScanRequest([fleet["a1"]], out, "records", options=o), driver_bytes=0,
                                             summary_rows=0),
            "driver": lambda out, o: scan(spark, ScanRequest([fleet["a1"]], out, "records", options=o)),
            "no spark": lambda out, o: scan_here(ScanRequest([fleet["a1"]], out, "records", options=o))}
    for how, run in runs.items():
        got = {}
        for name, opts in (("hours", hours), ("bad_crc", bad_crc), ("past_it", past_it)):
            out = str(tmp_path / f"{how}-{name}".replace(" ", "_"))
            r = run(out, opts)
            for inv in (r.inventory, pq.read_table(os.path.join(out, "inventory")).to_pylist()):
                got[name] = [(x["partitionDir"], x["firstOffset"], x["lastOffset"], x["batches"], x["records"],
                              x["anomalies"]) for x in inv], (r.anomalies, r.notes)
        assert got["hours"] == ([("orders-0", 90, 129, 2, 10, 0)], (0, 1)), how  # its stray file: a note
        assert got["bad_crc"] == ([("payments-0", 20, 40, 5, 17, 1)], (1, 0)), how
        assert got["past_it"] == ([("payments-0", 40, 79, 10, 40, 0)], (0, 1)), how


def test_kfx_scan_of_a_window_exits_0_for_damage_outside_it_and_1_inside(fleet, kfx, tmp_path):
    outside = kfx("scan", fleet["a1"], "--out", tmp_path / "o1", "--level", "records", "--topic", "payments",
                  "--from-offset", "40")
    assert outside.exit_code == 0, outside.output
    assert "0 anomalies in the window (1 outside it: notes" in outside.stdout
    inside = kfx("scan", fleet["a1"], "--out", tmp_path / "o2", "--level", "records", "--topic", "payments",
                 "--from-offset", "20", "--to-offset", "40")
    assert inside.exit_code == 1, inside.output


def test_kfx_scan_prints_a_summary_of_a_long_inventory_and_all_of_it_with_verbose(fleet, kfx, tmp_path, monkeypatch):
    """Past SCAN_TABLE_ROWS partitions the console gets the totals, the partitions with anomalies and
    the largest ones, and where the whole table is; --verbose prints every partition (issue 57)."""
    from cli.commands import scan as cli_scan
    monkeypatch.setattr(cli_scan, "SCAN_TABLE_ROWS", 3)
    short = kfx("scan", fleet["root"], "--out", tmp_path / "o1")
    rows = pq.read_table(str(tmp_path / "o1" / "inventory")).to_pylist()
    assert len(rows) > 3 + cli_scan.SCAN_LARGEST
    assert f"{len(rows)} partition copies in " in short.stdout and "largest partitions" in short.stdout
    assert "partitions with anomalies" in short.stdout and f"every partition: {tmp_path / 'o1' / 'inventory'}" in short.stdout
    assert "orders-1" not in short.stdout  # an empty partition: neither damaged nor large
    whole = kfx("scan", fleet["root"], "--out", tmp_path / "o2", "--verbose")
    assert "orders-1" in whole.stdout and "largest partitions" not in whole.stdout


def test_the_plan_line_says_why_there_are_more_splits_than_segments():
    from cli.commands.scan import _plan_line
    from spark_jobs.scan import ScanPlan
    assert _plan_line(ScanPlan(3, 2, 5000)) == "read 2 segments, 5,000 bytes, in 3 splits (large segments cut at batch boundaries)"
    assert _plan_line(ScanPlan(1, 2, 5000)) == "read 2 segments, 5,000 bytes, in 1 splits"


def test_small_segments_are_packed_into_few_scan_partitions(fleet):
    pieces = KafkaSegmentsReader({"path": fleet["root"], "minPartitions": "2"}, "scan").partitions()
    segments = [p for s in pieces for p in s.pieces if p.kind == "segment"]
    assert len(segments) > 10 and len(pieces) <= 3
    one_each = KafkaSegmentsReader({"path": fleet["root"], "maxPartitionBytes": "1", "openCostInBytes": "1"},
                                   "scan").partitions()
    assert len(one_each) >= len(segments)
    kinds = [p.kind for s in pieces for p in s.pieces]
    assert kinds.count("partition") == 9 and kinds.count("stray") == 2


def test_missing_local_path_or_bad_option_is_one_line_exit_2(kfx, tmp_path):
    (tmp_path / "notes.txt").write_text("not a segment")
    for args in ([str(tmp_path / "nope")], [str(tmp_path / "notes.txt")], [str(tmp_path), "--option", "novalue"], [str(tmp_path), "--from-time", "soon"],
                 [str(tmp_path), "--option", "level=records"], [str(tmp_path), "--option", "timestampDisorderMS=x"],
                 [str(tmp_path), "--option", "timestampDisorder=5"], [str(tmp_path), "--option", "includeCorrupt=maybe"],
                 [str(tmp_path), "--from-time", "2026-01-02", "--to-time", "2026-01-01"],
                 [str(tmp_path), "--from-offset", "9", "--to-offset", "3"]):
        r = kfx("scan", *args, "--out", tmp_path / "o")
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output


def test_layout_tells_partition_dirs_from_what_holds_them_and_reports_what_kafka_never_reads():
    """A partition dir holds Kafka's files itself. A subdir in it (a copy someone left, `sub/x`)
    leaves it a partition dir and is a stray of that partition; a dir named like a partition with
    log dirs below it (a fleet's `broker-3`, a log dir called `kafka-logs-1`) is none; what sits in a
    log dir's other subdirs (`lost+found`) is a stray of that log dir; a segment in no partition dir
    is read as one of an unnamed partition."""
    from kafkaforensics.spark.scan_plan import layout
    seg = "00000000000000000000.log"
    files = [f"/f/broker-3/kafka-logs/orders-0/{seg}", "/f/broker-3/kafka-logs/orders-0/sub/x",
             "/f/broker-3/kafka-logs/meta.properties", "/f/broker-3/kafka-logs/lost+found/#123",
             "/f/broker-3/kafka-logs/notapartition/blob", "/f/kafka-logs-1/meta.properties",
             f"/f/kafka-logs-1/clients-2/{seg}", f"/f/kafka-logs-1/clients-2.0123456789abcdef0123456789abcdef-delete/{seg}",
             "/f/kafka-logs-7/meta.properties", f"/f/loose/{seg}"]
    entries = [(u, 10, False) for u in files] + [("/f/kafka-logs-1/empty-0", 0, True)]
    meta = {"/f/broker-3/kafka-logs/meta.properties": "broker.id=3\ncluster.id=c\n",
            "/f/kafka-logs-1/meta.properties": "broker.id=1\n", "/f/kafka-logs-7/meta.properties": "broker.id=7\n"}
    got = layout(entries, meta.get)
    logs = "/f/broker-3/kafka-logs"
    deleted = "clients-2.0123456789abcdef0123456789abcdef-delete"
    assert {d: (s.log_dir, s.broker_id, s.topic, s.partition, s.dir_name) for d, s in got.partitions.items()} == {
        f"{logs}/orders-0": (logs, 3, "orders", 0, "orders-0"),
        "/f/kafka-logs-1/clients-2": ("/f/kafka-logs-1", 1, "clients", 2, "clients-2"),
        f"/f/kafka-logs-1/{deleted}": ("/f/kafka-logs-1", 1, "clients", 2, deleted),  # told apart by its dir
        "/f/kafka-logs-1/empty-0": ("/f/kafka-logs-1", 1, "empty", 0, "empty-0"), "/f/loose": ("/f", None, None, None, None)}
    assert {u: (s.log_dir, s.topic, s.partition) for u, _size, s in got.strays} == {
        f"{logs}/orders-0/sub/x": (logs, "orders", 0), f"{logs}/lost+found/#123": (logs, None, None),
        f"{logs}/notapartition/blob": (logs, None, None)}
    assert [u for _b, u, _s in got.segments[f"{logs}/orders-0"]] == [f"{logs}/orders-0/{seg}"]


def test_options_are_checked_and_spelled_as_the_source_spells_them():
    """Spark hands a data source its options by any case; `kfx scan` and the jobs read them through
    the same reader, so `--option` spells them as the source does, and refuses a typo or a value
    the source could not use instead of ignoring it."""
    from spark_jobs.job_args import parse_options
    assert parse_options(["timestampdisorderms=5", "INCLUDECORRUPT=true", "s3.endpoint=http://x"]) == {
        "timestampDisorderMs": "5", "includeCorrupt": "true", "s3.endpoint": "http://x"}
    for bad, says in (("timestampDisorder=5", "no such kafka_segments option"), ("fromOffset=x", "not an integer"),
                      ("partitions=1,b", "comma-separated integers"), ("pushdown=maybe", "not true or false")):
        with pytest.raises(ValueError, match=says):
            parse_options([bad])


def test_timestamps_far_ahead_read_back_right_from_the_parquet_outputs(kfx, tmp_path):
    """Spark writes TIMESTAMPs to Parquet as INT96 by default, which pyarrow (and other readers)
    take as nanoseconds: wrong past the year 2262. The outputs use Parquet's INT64 microseconds."""
    import datetime

    from kafkaforensics.log import writer
    from kafkaforensics.records import batch, builder
    year_3000 = int(datetime.datetime(3000, 1, 1, tzinfo=datetime.timezone.utc).timestamp() * 1000)
    writer.write_partition(str(tmp_path / "logs" / "far-0"),
                           [builder.build_v2([batch.Record(0, year_3000, b"k", b"v", [])], base_offset=0)])
    r = kfx("scan", tmp_path / "logs", "--out", tmp_path / "out", "--level", "records")
    assert r.exit_code == 0, r.output
    rec = pq.read_table(str(tmp_path / "out" / "records")).to_pylist()
    assert [x["timestampUtc"].replace(tzinfo=None) for x in rec] == [datetime.datetime(3000, 1, 1)]


def test_jobs_never_write_over_what_no_spark_job_wrote(spark, tmp_path):  # noqa: F811
    """A job replaces its --out whole (Spark's overwrite): a regular file there, or a directory
    holding someone's files, is one line and exit 2 and left as it was; an earlier run's output is
    replaced, as Spark jobs do; an --out that cannot be made is said before any work."""
    from spark_jobs import export, inventory
    from spark_jobs import scan as scan_job
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "important.txt").write_text("keep")
    named = tmp_path / "named"
    named.mkdir()
    (named / "topic=orders.txt").write_text("keep")  # named like a partitionBy dir, but a file
    for job, out in ((export, victim), (inventory, mine), (export, "/proc/kfx-cannot-be-made"), (scan_job, mine),
                     (export, named)):
        with pytest.raises(SystemExit) as e:
            job.main([SAMPLE, "--out", str(out)])
        assert e.value.code == 2, (job.__name__, out)
    assert victim.read_text() == "precious" and os.listdir(mine) == ["important.txt"]
    assert os.listdir(named) == ["topic=orders.txt"]
    for _ in range(2):  # a second run replaces the first's output
        export.main([SAMPLE, "--out", str(tmp_path / "export"), "--level", "batches"])
        with pytest.raises(SystemExit) as e:
            scan_job.main([SAMPLE, "--out", str(tmp_path / "scan")])
        assert e.value.code == 0
    assert pq.read_table(str(tmp_path / "export")).num_rows == pq.read_table(str(tmp_path / "scan" / "batches")).num_rows


def test_only_local_outputs_are_written_here_and_killed_runs_temp_dirs_are_reclaimed(tmp_path):
    """The tasks write a records export themselves (``write_planned``) only on a local master and to
    a path of this machine, however its URI is spelled (``file:`` in each of its forms) -- never to
    another scheme or a file URI of another host, which Spark's writer writes.  A killed run's temp
    dirs in --out are removed by a job's check of its --out and by ``kfx scan --overwrite``, a live
    run's are left alone."""
    import subprocess
    import sys
    from cli.spark_start import clear_outputs
    from kafkaforensics import fsutil
    from spark_jobs.output import check_out, local_path, tasks_write_here
    for uri, path in (("/tmp/out", "/tmp/out"), ("out", "out"), ("file:///tmp/out", "/tmp/out"),
                      ("file://localhost/tmp/out", "/tmp/out"), ("file:/tmp/out", "/tmp/out"),
                      ("FILE:/tmp/out", "/tmp/out"), ("file://other-host/tmp/out", None), ("hdfs:/tmp/out", None),
                      ("hdfs://nn:8020/out", None), ("s3a://bucket/out", None), ("s3://bucket/out", None)):
        assert local_path(uri) == path, uri
        assert tasks_write_here("local[2]", uri) is (path is not None), uri
        assert not tasks_write_here("spark://127.0.0.1:7077", uri), uri
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for reclaim in (check_out, clear_outputs):
        out = tmp_path / reclaim.__name__
        out.mkdir()
        killed = out / f".records.{dead.pid}.abc.kfx-tmp"
        killed.mkdir()
        (killed / "part-00000-x-c000.snappy.parquet").write_bytes(b"PAR1")
        reclaim(str(out))
        assert os.listdir(out) == [], reclaim
        live = out / f".records.{os.getpid()}.abc.kfx-tmp"  # a run still writing there
        live.mkdir()
        if reclaim is check_out:  # a job refuses to write where another run writes
            with pytest.raises(SystemExit) as e:
                check_out(str(out))
            assert e.value.code == 2
        else:
            clear_outputs(str(out))
        assert os.listdir(out) == [live.name] and fsutil.is_temp(live.name)


def test_inputs_that_overlap_are_read_once_and_inputs_with_nothing_of_kafka_are_refused(tmp_path):
    from kafkaforensics.log.partition import partition_of_dir_name
    from kafkaforensics.spark.storage import MissingInput
    from spark_jobs.scan import plan
    once = plan([SAMPLE], None, {})
    for inputs in ([SAMPLE, os.path.join(SAMPLE, "orders-0")], [SAMPLE, os.path.abspath(SAMPLE)]):
        twice = plan(inputs, None, {})
        assert (twice.segments, twice.bytes) == (once.segments, once.bytes), inputs
    (tmp_path / "empty").mkdir()
    os.mkfifo(tmp_path / "00000000000000000000.log")
    for bad, says in ((tmp_path / "empty", "no Kafka segment, partition dir or log dir"),
                      (tmp_path / "00000000000000000000.log", "not a regular file or directory")):
        with pytest.raises(MissingInput, match=says):
            plan([str(bad)], None, {})
    calls = []
    real = os.path.realpath
    try:  # one realpath an input, not one a file (40,000 of them cost a 20,000-segment plan 2.5 s)
        os.path.realpath = lambda p, *a, **k: calls.append(p) or real(p, *a, **k)
        plan([SAMPLE, os.path.join(SAMPLE, "orders-0")], None, {})
    finally:
        os.path.realpath = real
    assert len(calls) == 2, calls
    assert partition_of_dir_name("topic-2147483647") == ("topic", 2147483647)
    assert partition_of_dir_name("topic-2147483648") is None  # no Java int: no partition dir


def test_a_search_pattern_java_refuses_or_a_failing_scan_is_one_line_and_exit_2(kfx, tmp_path, monkeypatch):
    for pattern, says in (("(", "no Java regular expression"), ("", "empty")):
        r = kfx("scan", SAMPLE, "--out", tmp_path / f"o{len(pattern)}", "--search", pattern)
        assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, r.output
        assert not os.path.exists(tmp_path / f"o{len(pattern)}")  # said before anything is written, --out not left
    from spark_jobs import scan as scan_job
    from cli import spark_start
    # on Spark, and in this process (a small scan with no --master): the same cleanup
    for run, master, name, at in (("spark", ["--master", "local[2]"], "scan", 1), ("here", [], "scan_here", 0)):
        def fails(*a, **k):  # a scan that wrote one output, then failed
            os.makedirs(os.path.join(a[at].out, "batches", "_temporary"))
            raise RuntimeError("the disk went away\nand a page of stack")
        monkeypatch.setattr(scan_job, name, fails)
        r = kfx("scan", SAMPLE, "--out", tmp_path / f"o{run}", *master)
        assert r.exit_code == 2 and "the scan stopped: RuntimeError: the disk went away" in r.output, r.output
        assert "page of stack" not in r.output and not os.path.exists(tmp_path / f"o{run}")  # it made --out: all gone
        (tmp_path / f"mine{run}").mkdir()  # an empty --out of the user's: it stays, the scan's outputs go
        r = kfx("scan", SAMPLE, "--out", tmp_path / f"mine{run}", *master)
        assert r.exit_code == 2 and os.listdir(tmp_path / f"mine{run}") == [], r.output

        def interrupted(*a, **k):
            os.makedirs(os.path.join(a[at].out, "records"))
            raise KeyboardInterrupt
        monkeypatch.setattr(scan_job, name, interrupted)
        stopped = []
        monkeypatch.setattr(spark_start, "stop_driver_jvm", lambda: stopped.append(1))  # not this session's JVM
        r = kfx("scan", SAMPLE, "--out", tmp_path / f"i{run}", *master)
        assert r.exit_code == 130 and "interrupted: nothing of the scan was left in" in r.output, r.output
        assert stopped == [1] and not os.path.exists(tmp_path / f"i{run}")
