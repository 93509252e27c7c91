"""`kfx scan --remote` and the ``kafka_segments`` source's ``remote`` option (issue 55 item 4): partitions
split across a local log dir and a tiered-storage bucket (moto's S3 server; every transform of the
plugin: plain, zstd, encrypted) read back record for record, each row saying its tier; pruned with the
manifest's indexes; a damaged chunk one located anomaly, not a traceback."""
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from spark_jobs.planned_read import planned_reader, source_for
from tests.remote_fixtures import TRANSFORMS, moto_s3
from tests.remote_split import make_split
from tests.test_spark import spark  # noqa: F401  (the session fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def moto():
    """moto's S3 server, the environment pointing at it (the CLI's children inherit it)."""
    with moto_s3(buckets=[f"tier-{t}" for t in TRANSFORMS] + ["tier-damaged"]) as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def splits(moto, tmp_path_factory):
    """One split pair of partitions a transform, its tier in a bucket of the moto server."""
    return {t: make_split(str(tmp_path_factory.mktemp(f"split-{t}")), f"s3://tier-{t}/cluster", t)
            for t in TRANSFORMS}


def kfx(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=timeout)


def _exported(out):
    """{(topic, partition): [(offset, key, value)]} of a records export, and {tier: {offsets}}."""
    t = pq.read_table(os.path.join(out, "records")).to_pylist()
    got, tiers = {}, {}
    for r in sorted(t, key=lambda r: (r["topic"], r["partition"], r["offset"])):
        if not r["isControl"]:
            got.setdefault((r["topic"], r["partition"]), []).append((r["offset"], r["key"], r["value"]))
        tiers.setdefault(r["tier"], set()).add((r["topic"], r["partition"], r["offset"]))
    return got, tiers


def _check(split, out):
    got, tiers = _exported(out)
    assert got == split.records   # record for record, both tiers, every partition
    for (topic, partition), start in split.local_start.items():
        assert all(o < start for t, p, o in tiers["remote"] if (t, p) == (topic, partition))
        assert all(o >= start for t, p, o in tiers["local"] if (t, p) == (topic, partition))
        assert any((t, p) == (topic, partition) for t, p, _o in tiers["remote"])


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_scan_reads_both_tiers_record_for_record(splits, moto, tmp_path, transform):
    s = splits[transform]
    out = str(tmp_path / "out")
    r = kfx("scan", s.logs, "--remote", s.tier, "--key-file", s.key_arg, "--level", "records", "--out", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "needs no Spark" in r.stderr
    _check(s, out)
    inv = pq.read_table(os.path.join(out, "inventory")).to_pylist()
    remote = [x for x in inv if x["logDir"] == s.tier]
    assert sorted((x["topic"], x["partition"]) for x in remote) == [("events", 0), ("events", 1)]
    assert all(x["partitionDir"].endswith("/") and x["anomalies"] == 0 for x in remote)
    assert pq.read_table(os.path.join(out, "races")).num_rows == 0   # a tier is no replica


def test_scan_of_the_tier_alone(splits, moto, tmp_path):
    s = splits["plain"]
    out = str(tmp_path / "out")
    r = kfx("scan", "--remote", s.tier, "--level", "records", "--out", out)
    assert r.returncode == 0, r.stdout + r.stderr
    got, tiers = _exported(out)
    assert set(tiers) == {"remote"}
    for tp, start in s.local_start.items():
        assert got[tp] == [x for x in s.records[tp] if x[0] < start]


def test_remote_segments_are_pruned_with_the_manifest_indexes(splits, moto):
    """A window's start skips the remote segments below it and starts inside the one holding it at the
    byte its remote offset index gives, as a local segment's ``.index`` does; the rows are exact."""
    s = splits["zstd"]
    start = s.local_start[("events", 0)]
    want = start // 2
    reader, _schema, splits = planned_reader([s.logs], "records", None, {
        "remote": s.tier, "remoteKeyFiles": s.key_arg, "topics": "events", "partitions": "0",
        "fromOffset": str(want)}, 1)
    pieces = [p for p in reader.pieces() if p.kind == "segment" and p.src.tier == "remote"]
    unpruned = [p for p in source_for([s.logs], "records", None, {"remote": s.tier, "remoteKeyFiles": s.key_arg,
                                                                  "topics": "events", "partitions": "0"},
                                      1).reader(None).pieces() if p.kind == "segment" and p.src.tier == "remote"]
    assert len(pieces) < len(unpruned)
    holder = pieces[0]
    assert holder.base <= want and holder.start > 0   # the remote .index's entry: not read from byte 0
    rows = [r for split in splits for b in reader.read(split) for r in b.to_pylist()]
    assert sorted((r["offset"], r["key"], r["value"]) for r in rows if not r["isControl"]) == \
        [x for x in s.records[("events", 0)] if x[0] >= want]


def test_a_damaged_chunk_is_a_located_anomaly(splits, moto, tmp_path):
    """A chunk of an encrypted segment flipped in the bucket: its authentication fails; the scan goes
    on (the other segments' records exported), the damage one anomaly naming the object, exit 1."""
    from pyarrow.fs import FileSelector, S3FileSystem
    s = splits["encrypted"]
    fs = S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                      endpoint_override=moto.split("://")[1])
    logs = []
    for fi in fs.get_file_info(FileSelector("tier-encrypted/cluster", recursive=True)):
        if fi.type.name == "File":
            data = fs.open_input_file(fi.path).read()
            dst = "tier-damaged/" + fi.path.split("/", 1)[1]
            if dst.endswith(".log") and "/0/" in dst and not logs:
                logs.append(dst)
                data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
            with fs.open_output_stream(dst) as f:
                f.write(data)
    out = str(tmp_path / "out")
    r = kfx("scan", s.logs, "--remote", "s3://tier-damaged/cluster", "--key-file", s.key_arg,
            "--level", "records", "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    bad = pq.read_table(os.path.join(out, "anomalies")).to_pylist()
    assert len(bad) == 1 and bad[0]["tier"] == "remote" and bad[0]["file"] == "s3://" + logs[0]
    assert bad[0]["kind"].startswith("remote") and "were not read" in bad[0]["detail"]
    got, _ = _exported(out)
    assert got[("events", 1)] == s.records[("events", 1)]


def test_a_tier_that_cannot_be_opened_is_one_line_and_exit_2(tmp_path, splits, moto):
    s = splits["encrypted"]
    r = kfx("scan", s.logs, "--remote", str(tmp_path / "nothing"), "--out", str(tmp_path / "o1"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = kfx("scan", s.logs, "--remote", s.tier, "--key-file", "key1", "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "ID=PEM" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = kfx("scan", "--out", str(tmp_path / "o3"))
    assert r.returncode == 2 and "--remote" in r.stderr, r.stderr


def test_one_spark_run_reads_both_tiers(splits, moto, tmp_path):
    """The same scan on Spark (local[2]): a remote segment's splits read by the tasks, through its chunks."""
    s = splits["zstd"]
    out = str(tmp_path / "out")
    r = kfx("scan", s.logs, "--remote", s.tier, "--level", "records", "--out", out, "--master", "local[2]",
            "--split-bytes", str(1 << 16))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "starting Spark (local[2])" in r.stderr
    _check(s, out)


def test_a_raw_layout_tier_is_scanned_too(tmp_path):
    """The raw layout (segment copies under ``topic-partition/`` and an ``offset.wm``) read as a tier:
    its rows are remote, record for record, its partitionDir the prefix (no replica of the local copy)."""
    from kafkaforensics.log.segment import LOG
    from tests.corruption import make_partition
    from tests.remote_fixtures import upload_raw
    from tests.remote_split import _records
    part = str(tmp_path / "src" / "events-0")
    make_partition(part, seed=9, n=60)
    upload_raw([os.path.join(part, f) for f in os.listdir(part) if f.endswith(LOG)], str(tmp_path / "raw"),
               style="dash")
    out = str(tmp_path / "out")
    r = kfx("scan", "--remote", str(tmp_path / "raw"), "--level", "records", "--out", out)
    assert r.returncode == 0, r.stdout + r.stderr
    got, tiers = _exported(out)
    assert set(tiers) == {"remote"} and got[("events", 0)] == _records(part)
    inv = pq.read_table(os.path.join(out, "inventory")).to_pylist()
    assert [x["partitionDir"] for x in inv] == ["events-0/"]


def test_a_damaged_manifest_is_one_located_anomaly(tmp_path):
    """A segment's ``.rsm-manifest`` overwritten: one anomaly at its base offset naming the manifest
    (exit 1), every other segment's records exported."""
    from kafkaforensics.log.remote import RemoteTier
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "zstd", partitions=((("events", 0), 7),))
    second = RemoteTier.open(s.tier).segments("events", 0)[1]
    with open(os.path.join(RemoteTier.open(s.tier).uri, second.manifest_key), "wb") as f:
        f.write(b"{not json")
    out = str(tmp_path / "out")
    r = kfx("scan", s.logs, "--remote", s.tier, "--level", "records", "--out", out)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    bad = pq.read_table(os.path.join(out, "anomalies")).to_pylist()
    assert len(bad) == 1 and bad[0]["offset"] == second.base_offset and bad[0]["file"].endswith(".rsm-manifest")
    assert bad[0]["kind"] == "remote-manifest" and bad[0]["tier"] == "remote"
    got, _ = _exported(out)
    third = RemoteTier.open(s.tier).segments("events", 0)[2].base_offset
    assert got[("events", 0)] == [x for x in s.records[("events", 0)] if not second.base_offset <= x[0] < third]


def test_the_kafka_segments_dataframe_reads_the_tier(spark, tmp_path):  # noqa: F811
    """``spark.read.format("kafka_segments")`` with the ``remote`` and ``remoteKeyFiles`` options (Spark's own
    Python data source, its filters pushed): both tiers, each row's tier, an offset filter pruned exactly."""
    from spark_jobs.planned_read import read
    s = make_split(str(tmp_path), str(tmp_path / "tier"), "encrypted", partitions=((("events", 0), 7),))
    df = read(spark, [s.logs], "records", options={"remote": s.tier, "remoteKeyFiles": s.key_arg})
    start = s.local_start[("events", 0)]
    rows = df.where(f"offset >= {start - 20} and not isControl").select("offset", "key", "value", "tier").collect()
    got = sorted((r["offset"], bytes(r["key"]) if r["key"] is not None else None,
                  bytes(r["value"]) if r["value"] is not None else None) for r in rows)
    assert got == [x for x in s.records[("events", 0)] if x[0] >= start - 20]
    assert {r["tier"] for r in rows if r["offset"] < start} == {"remote"}
    assert {r["tier"] for r in rows if r["offset"] >= start} == {"local"}
