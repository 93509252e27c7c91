"""The kafka_segments data source and `kfx scan` on a local SparkSession, checked against `kfx dump`."""
import base64
import json
import os
import shutil

import pytest

from kafkaforensics.inspect.dump import DumpOptions, dump
from kafkaforensics.spark.spark_source import spark_schema
from tests.conftest import SAMPLE


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.session import get_spark
    s = get_spark("local[2]", app="kafkaforensics-tests")
    yield s
    s.stop()


def _dump_json(paths, deep=False):
    import io
    out = io.StringIO()
    dump(paths, DumpOptions(fmt="json", deep=deep), out=out, err=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _logs(root):
    return sorted(os.path.join(d, f) for d, _s, fs in os.walk(root) for f in fs if f.endswith(".log"))


def test_batches_level_equals_dump(spark):
    from spark_jobs.planned_read import read
    rows = read(spark, SAMPLE, "batches").collect()
    got = sorted((r["file"], r["position"]) + tuple(r[k] for k in _dump_json([_logs(SAMPLE)[0]])[0]) for r in rows)
    want = []
    for f in _logs(SAMPLE):
        for o in _dump_json([f]):
            want.append((f, o["position"]) + tuple(o.values()))
    assert got == sorted(want)
    topics = {(r["topic"], r["partition"]) for r in rows}
    assert topics == {("orders", 0), ("clients", 0), ("legacy", 0)}


def test_the_schema_read_gives_is_the_one_the_source_declares(spark):
    from spark_jobs.planned_read import read
    for level in ("batches", "records", "anomalies", "scan"):
        declared = spark.read.format("kafka_segments").option("level", level).load(SAMPLE).schema
        assert spark_schema(level) == declared, level  # made without the JVM's DDL parser, the same
        assert read(spark, SAMPLE, level).schema == declared, level
    with pytest.raises(Exception, match="level must be one of"):
        read(spark, SAMPLE, "bogus").schema


def test_a_read_planned_in_the_driver_gives_the_source_s_splits_and_rows(spark, tmp_path):
    """kfx scan's reads (``read_planned``: the driver's splits read by mapInArrow) against the
    data source's, row for row and column for column, over a fleet with replicas, strays, a
    compressed bad-CRC batch and a broken frame: every level, windows, includeCorrupt, many splits."""
    from spark_jobs.planned_read import read, read_planned
    from spark_jobs.scan import plan, plan_of
    from tests.spark_fleet import T0, HOUR, build_fleet
    build_fleet(str(tmp_path))
    paths = [str(tmp_path)]
    cases = [(level, {}) for level in ("batches", "records", "anomalies", "scan")] + [
        ("records", {"includeCorrupt": "true", "maxPartitionBytes": "4096"}),
        ("records", {"topics": "orders", "fromTimestamp": str(T0 + 5 * HOUR), "toTimestamp": str(T0 + 20 * HOUR)}),
        ("scan", {"topics": "orders,payments", "partitions": "0", "scanRecords": "true", "openCostInBytes": "1"}),
        ("batches", {"fromOffset": "20", "toOffset": "60", "pushdown": "false"})]
    for level, options in cases:
        planned = read_planned(spark, [str(tmp_path)], level, options=options)
        source = read(spark, [str(tmp_path)], level, options=options)
        assert planned.frame.schema == source.schema
        assert len(planned.splits) == source.rdd.getNumPartitions(), (level, options)
        got, want = sorted(map(repr, planned.frame.collect())), sorted(map(repr, source.collect()))
        assert got and got == want, (level, options)
        if level == "scan":  # kfx scan's plan (before Spark starts) is the one its read makes
            assert plan(paths, None, options, spark.sparkContext.defaultParallelism) == plan_of(planned.splits)
        planned.release()
    assert len(read_planned(spark, paths, "records", options={"maxPartitionBytes": "4096"}).splits) > 4
    # options are case-insensitive, as Spark gives them to a source
    assert plan(paths, None, {"maxpartitionbytes": "4096"}) == plan(paths, None, {"maxPartitionBytes": "4096"})
    assert plan(paths, None, {"maxpartitionbytes": "4096"}).splits > plan(paths).splits


def test_records_level_equals_deep_dump(spark):
    from spark_jobs.planned_read import read
    rows = read(spark, SAMPLE, "records").collect()
    got = sorted((r["file"], r["offset"], r["timestamp"], r["key"], r["value"],
                  tuple((h["key"], h["value"]) for h in r["headers"])) for r in rows)
    want = []
    dec = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
    for f in _logs(SAMPLE):
        for o in _dump_json([f], deep=True):
            for rec in o["records"]:
                want.append((f, rec["offset"], rec["timestamp"], dec(rec["key"]), dec(rec["value"]),
                             tuple((h["key"], dec(h["value"])) for h in rec["headers"])))
    assert got == sorted(want)
    assert {r["timestampType"] for r in rows} >= {"CreateTime", "LogAppendTime", "NoTimestampType"}


def test_damaged_file_valid_prefix_read_and_damage_reported(spark, tmp_path):
    from spark_jobs.planned_read import read
    d = tmp_path / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), d)
    seg = str(d / "00000000000000000225.log")
    data = bytearray(open(seg, "rb").read())
    batches = _dump_json([seg])
    cut = batches[5]["position"]
    data[batches[2]["position"] + 40] ^= 0xFF          # CRC damage in batch 2
    data = data[:cut] + b"\x00" * 300                   # zeroed tail from batch 5 on
    open(seg, "wb").write(bytes(data))
    b = read(spark, str(d), "batches").where(f"file = '{seg}'").collect()
    assert sorted(r["position"] for r in b) == [x["position"] for x in batches[:5]]
    assert [r["crcValid"] for r in sorted(b, key=lambda r: r["position"])] == [True, True, False, True, True]
    a = read(spark, str(d), "anomalies").collect()
    kinds = {(r["kind"], r["position"]) for r in a}
    assert kinds == {("crc-mismatch", batches[2]["position"]), ("zeroed-tail", cut)}
    assert all(r["topic"] == "orders" and r["partition"] == 0 for r in a)


def test_large_segment_is_split_at_index_positions(spark, tmp_path):
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader
    from spark_jobs.planned_read import read
    d = tmp_path / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), d)
    splits = KafkaSegmentsReader({"path": str(d), "splitBytes": "4000"}, "batches").partitions()
    assert len(splits) > 3
    df = spark.read.format("kafka_segments").option("splitBytes", "4000").load(str(d))
    assert df.count() == len(_dump_json(_logs(str(d))))


def test_kfx_scan_writes_parquet_that_matches(spark, kfx, tmp_path):
    out = tmp_path / "scan"
    r = kfx("scan", SAMPLE, "--out", out, "--master", "local[2]", "--level", "records", "--search", "txn-40")
    assert r.exit_code == 0, r.output
    recs = spark.read.parquet(str(out / "records"))
    assert recs.count() == sum(len(o["records"]) for f in _logs(SAMPLE) for o in _dump_json([f], deep=True))
    inv = {(x["topic"], x["partition"]): x for x in spark.read.parquet(str(out / "inventory")).collect()}
    assert inv[("orders", 0)]["firstOffset"] == 0 and inv[("orders", 0)]["lastOffset"] == 403
    assert inv[("orders", 0)]["records"] == 404 and inv[("orders", 0)]["anomalies"] == 0
    hits = spark.read.parquet(str(out / "search")).collect()
    assert hits and all(b"txn-40" in h["key"] and "txn-40" in h["keyText"] for h in hits)
    assert "orders-0" in r.stdout and "legacy-0" in r.stdout


def test_export_and_anomaly_jobs(spark, tmp_path):
    from spark_jobs.anomalies import anomalies, summary
    from spark_jobs.export import export
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    seg = d / "orders-0" / "00000000000000000000.log"
    with open(seg, "ab") as f:
        f.write(b"\x01" * 40)  # garbage after the last batch
    out = export(spark, [str(d)], "records", str(tmp_path / "export"))
    df = spark.read.parquet(out)
    assert df.count() == 668 and {r["topic"] for r in df.select("topic").distinct().collect()} == {"orders", "clients", "legacy"}
    a = anomalies(spark, [str(d)])
    rows = a.collect()
    assert len(rows) == 1 and rows[0]["file"] == str(seg) and rows[0]["position"] == os.path.getsize(seg) - 40
    assert summary(a).collect()[0]["count"] == 1


def test_split_points_a_damaged_index_gives_are_not_trusted(tmp_path):
    """An offset index whose positions point inside batches (damaged, or forged), or at batches that
    do not hold their offsets, must not start a split there: the splits would report good batches as
    broken framing and hide them.  A point is taken only where a whole batch with a valid CRC bears
    the entry out; with every one wrong the segments are read whole, and every batch is read either
    way, with no anomaly.  Each segment has one ``segment`` row however many pieces it is read in."""
    import struct
    from kafkaforensics.spark.spark_source import KafkaSegmentsReader, spark_schema

    def read(d, level):
        reader = KafkaSegmentsReader({"path": str(d), "splitBytes": "4000"}, level, spark_schema(level))
        splits = reader.partitions()
        return splits, [r for s in splits for b in reader.read(s) for r in b.to_pylist()]
    d = tmp_path / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), d)
    good_splits, good = read(d, "batches")
    assert len(good_splits) > 3 and not read(d, "anomalies")[1]
    segment_rows = [r["file"] for r in read(d, "scan")[1] if r["rowKind"] == "segment"]
    assert sorted(segment_rows) == sorted(str(p) for p in d.glob("*.log"))  # one a file, split or not
    indexes = {ix: ix.read_bytes() for ix in d.glob("*.index")}
    for damage in ("inside a batch", "at the next entry's batch"):
        for ix, data in indexes.items():
            entries = [struct.unpack_from(">ii", data, i) for i in range(0, len(data) - len(data) % 8, 8)]
            entries = [e for e in entries if e != (0, 0)]
            if damage == "inside a batch":
                forged = [(rel, pos + 5) for rel, pos in entries]
            else:  # a real batch start, but past the offset the entry names
                forged = [(rel, nxt) for (rel, _), (_, nxt) in zip(entries, entries[1:])]
            ix.write_bytes(b"".join(struct.pack(">ii", rel, pos) for rel, pos in forged))
        splits, rows = read(d, "batches")
        assert len(splits) < len(good_splits), damage
        assert sorted(r["baseOffset"] for r in rows) == sorted(r["baseOffset"] for r in good), damage
        assert read(d, "anomalies")[1] == [], damage
