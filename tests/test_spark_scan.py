"""The records level's integrity flag, filter pushdown (segments and byte ranges skipped through the
indexes, results equal to an unpruned scan) and `kfx scan`'s one-read outputs."""
import os
import shutil

import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.spark.spark_source import KafkaSegmentsReader
from kafkaforensics.log.writer import write_partition
from tests.conftest import SAMPLE
from tests.test_spark import _dump_json, spark  # noqa: F401  (the session fixture)

T0 = 1_700_000_000_000
HOUR = 3_600_000


@pytest.fixture(scope="module")
def timeline(tmp_path_factory):
    """A log dir with two partitions of many small segments: 600 batches of 10 records, one
    batch a minute (records 6 s apart), every segment indexed densely."""
    root = tmp_path_factory.mktemp("timeline")
    for p in (0, 1):
        def batches():
            for i in range(600):
                base = i * 10
                yield build_v2([Record(base + j, T0 + (base + j) * 6000, b"key-%05d" % (base + j), b"v" * 40, [])
                                for j in range(10)], base_offset=base)
        write_partition(str(root / f"events-{p}"), batches(), segment_bytes=16 << 10, index_interval_bytes=256)
    return str(root)


def _reader(spark, path, level="records", **options):  # noqa: F811
    schema = spark.read.format("kafka_segments").option("level", level).load(path).schema
    return KafkaSegmentsReader({"path": path, **options}, level, schema)


def _read_in_process(reader):
    out = []
    for split in reader.partitions():
        for batch in reader.read(split):
            out += batch.to_pylist()
    return out


def _planned_bytes(reader):
    return sum(s.bytes for s in reader.partitions())


def test_records_of_a_batch_whose_crc_fails_are_left_out_or_flagged(spark, tmp_path):  # noqa: F811
    from spark_jobs.planned_read import read
    d = tmp_path / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), d)
    seg = str(d / "00000000000000000225.log")
    batches = _dump_json([seg], deep=True)
    data = bytearray(open(seg, "rb").read())
    data[batches[2]["position"] + 70] ^= 0xFF  # inside batch 2's records: its CRC no longer matches
    open(seg, "wb").write(bytes(data))
    bad = {r["offset"] for r in batches[2]["records"]}
    rows = read(spark, str(d), "records").where(F.col("file") == seg).collect()
    assert bad and not bad & {r["offset"] for r in rows}
    assert all(r["crcValid"] for r in rows)
    assert len(rows) == sum(len(b["records"]) for b in batches) - len(bad)
    flagged = read(spark, str(d), "records", options={"includeCorrupt": "true"}).where(F.col("file") == seg).collect()
    assert {r["offset"] for r in flagged if not r["crcValid"]} == bad
    assert {r["batchPosition"] for r in flagged if not r["crcValid"]} == {batches[2]["position"]}


def test_timestamp_window_reads_only_the_segments_that_can_hold_it(spark, timeline):  # noqa: F811
    lo, hi = T0 + 5 * HOUR, T0 + 6 * HOUR - 1
    full = _reader(spark, timeline)
    pruned = _reader(spark, timeline, timestampDisorderMs="0")
    pruned.pushFilters([GreaterThanOrEqual(("timestamp",), lo), LessThanOrEqual(("timestamp",), hi)])
    # 10 hours of log, a one-hour window: a tenth of the bytes, give or take a segment each side
    assert _planned_bytes(pruned) < _planned_bytes(full) * 0.2
    want = sorted((r["topic"], r["partition"], r["offset"]) for r in _read_in_process(full) if lo <= r["timestamp"] <= hi)
    got = sorted((r["topic"], r["partition"], r["offset"]) for r in _read_in_process(pruned) if lo <= r["timestamp"] <= hi)
    assert got == want and len(want) == 2 * 600


def test_pushed_filters_give_the_rows_of_an_unpruned_scan(spark, timeline):  # noqa: F811
    def rows(pushdown, condition):
        df = (spark.read.format("kafka_segments").option("level", "records").option("pushdown", pushdown)
              .load(timeline).where(condition))
        return sorted((r["topic"], r["partition"], r["offset"]) for r in df.collect())
    for condition in (F.col("timestamp").between(T0 + 2 * HOUR, T0 + 2 * HOUR + 600_000),
                      F.col("offset").between(1234, 1300) & (F.col("partition") == 1),
                      F.col("key") == F.lit(b"key-03000"),
                      (F.col("topic") == "events") & (F.col("offset") > 5990)):
        want = rows("false", condition)
        assert want and rows("true", condition) == want


def test_offset_and_partition_bounds_skip_segments(spark, timeline):  # noqa: F811
    r = _reader(spark, timeline)
    r.pushFilters([GreaterThanOrEqual(("offset",), 3000), LessThanOrEqual(("offset",), 3009), EqualTo(("partition",), 0)])
    segments = [p for s in r.partitions() for p in s.pieces if p.kind == "segment"]
    assert len({p.uri for p in segments}) == 1 and "events-0" in segments[0].uri
    got = [x["offset"] for x in _read_in_process(r) if 3000 <= x["offset"] <= 3009]
    assert got == list(range(3000, 3010))


def test_late_records_are_found_unless_a_disorder_bound_is_asked_for(spark, tmp_path):  # noqa: F811
    """A record appended hours after its timestamp (a replay) sits past the window's end: pruning is
    exact by default and finds it; an opt-in one-hour disorder bound stops before it."""
    def batches():
        for i in range(300):
            ts = T0 + i * 60_000 if i != 290 else T0 + 30 * 60_000  # batch 290 carries a 4-hour-old timestamp
            yield build_v2([Record(i, ts, b"k", b"v" * 40, [])], base_offset=i)
    d = write_partition(str(tmp_path / "late-0"), batches(), segment_bytes=4096, index_interval_bytes=128)
    window = [GreaterThanOrEqual(("timestamp",), T0 + 30 * 60_000), LessThanOrEqual(("timestamp",), T0 + 30 * 60_000)]
    found = {}
    for bound in ("3600000", "-1", None):
        r = _reader(spark, d, **({"timestampDisorderMs": bound} if bound else {}))
        r.pushFilters(window)
        found[bound] = sorted(x["offset"] for x in _read_in_process(r) if x["timestamp"] == T0 + 30 * 60_000)
    assert found["-1"] == found[None] == [30, 290]
    assert found["3600000"] == [30]


def test_kfx_scan_reads_once_and_writes_every_output(spark, kfx, tmp_path):  # noqa: F811
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    seg = d / "orders-0" / "00000000000000000000.log"
    with open(seg, "ab") as f:
        f.write(b"\x01" * 40)  # garbage after the last batch
    out = tmp_path / "scan"
    r = kfx("scan", d, "--out", out, "--master", "local[2]", "--level", "records")
    assert r.exit_code == 1, r.output  # damage found
    anomalies = spark.read.parquet(str(out / "anomalies")).collect()
    assert [(a["file"], a["position"]) for a in anomalies] == [(str(seg), os.path.getsize(seg) - 40)]
    inv = {(x["topic"], x["partition"]): x for x in spark.read.parquet(str(out / "inventory")).collect()}
    assert inv[("orders", 0)]["anomalies"] == 1 and inv[("clients", 0)]["anomalies"] == 0
    assert spark.read.parquet(str(out / "records")).count() == sum(x["records"] for x in inv.values())
    assert "read 5 segments" in r.output


def test_driver_jvm_options_record_then_map_the_class_archive(tmp_path, monkeypatch):
    from spark_jobs import class_archive, session
    monkeypatch.setenv("KFX_CACHE_DIR", str(tmp_path))
    archive = class_archive.class_archive_path()
    assert archive is not None and os.path.dirname(archive) == str(tmp_path)
    opts, recording = session._driver_java_options(short_run=True, class_archive=True, quiet=True)
    assert recording == f"{archive}.{os.getpid()}.tmp"
    assert f"-XX:ArchiveClassesAtExit={recording}" in opts and "-XX:TieredStopAtLevel=1" in opts
    opts_now, none = session._driver_java_options(short_run=True, class_archive=True, quiet=True, record=False)
    assert none is None and not [o for o in opts_now if "Archive" in o]  # the recording is left to its own process
    log4j = [o for o in opts if o.startswith("-Dlog4j2.configurationFile=file:")]
    assert log4j and "rootLogger.level = error" in open(log4j[0].split("file:", 1)[1]).read()
    open(archive, "wb").close()
    opts, recording = session._driver_java_options(short_run=False, class_archive=True)
    assert recording is None and f"-XX:SharedArchiveFile={archive}" in opts and "-Xshare:auto" in opts
    assert "-XX:TieredStopAtLevel=1" not in opts
    assert session._driver_java_options(short_run=False, class_archive=False) == ([], None)


def _fake_jdk(tmp_path):
    """A JDK's layout, as far as the class archive's name looks: bin/java and its base archive."""
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "lib" / "server").mkdir(parents=True)
    (jdk / "bin" / "java").write_bytes(b"")
    base = jdk / "lib" / "server" / "classes.jsa"
    base.write_bytes(b"base")
    return jdk, base


def test_the_class_archive_is_keyed_on_the_jdk_s_own_archive(tmp_path, monkeypatch):
    """A dynamic class archive is recorded on top of the JDK's base archive, and the JVM silently
    ignores it once the base is dumped anew (a package upgrade, ``java -Xshare:dump``): a new base
    must name a new archive, or every later scan starts seconds slower, unarchived, for good."""
    from spark_jobs import class_archive
    jdk, base = _fake_jdk(tmp_path)
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    monkeypatch.setenv("KFX_CACHE_DIR", str(tmp_path / "cache"))
    first = class_archive.class_archive_path()
    assert first is not None and first == class_archive.class_archive_path()
    os.utime(base, ns=(1, 1_000_000_000))  # dumped anew
    second = class_archive.class_archive_path()
    assert second != first
    base.unlink()  # a JDK without a base archive still gets one of its own
    assert class_archive.class_archive_path() not in (None, first, second)


def test_checkouts_sharing_a_virtualenv_share_one_class_archive(tmp_path, monkeypatch):
    """About 190 MB each: a checkout whose .venv is a symlink to another's reaches the same PySpark jars
    by another path; the archive depends on the files (the JVM maps it through any path to them), so
    both name one archive, not one a checkout (issue 50)."""
    import pyspark
    from spark_jobs import class_archive
    jdk, _base = _fake_jdk(tmp_path)
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    monkeypatch.setenv("KFX_CACHE_DIR", str(tmp_path / "cache"))
    real = os.path.dirname(os.path.realpath(pyspark.__file__))
    link = tmp_path / "checkout-b" / ".venv"
    link.parent.mkdir()
    link.symlink_to(os.path.dirname(real))  # checkout B's .venv -> the shared site-packages
    first = class_archive.class_archive_path()
    monkeypatch.setattr(pyspark, "__file__", str(link / "pyspark" / "__init__.py"))
    assert class_archive.class_archive_path() == first
    assert class_archive._current_archive_inputs()["pyspark"] == real


def test_archives_no_jvm_can_map_are_pruned_when_a_new_one_is_kept(tmp_path, monkeypatch):
    """About 190 MB each: once a JDK upgrade, a re-dumped base archive or a removed PySpark has made
    an archive useless, keeping a new one removes it; one still good for another install, one of an
    older kafkaforensics (no inputs beside it) and a recording under way are left alone."""
    import json
    from spark_jobs import class_archive
    jdk, base = _fake_jdk(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    monkeypatch.setenv("KFX_CACHE_DIR", str(cache))

    def pyspark_at(name, version):
        d = tmp_path / name / "pyspark"
        d.mkdir(parents=True)
        (d / "version.py").write_text(f'__version__: str = "{version}"\n')
        return str(d)

    def archive(name, inputs):
        path = cache / f"spark-driver-{name}.jsa"
        path.write_bytes(b"archive")
        if inputs is not None:
            (cache / f"spark-driver-{name}.inputs.json").write_text(json.dumps(inputs))
        return path
    java = os.path.realpath(jdk / "bin" / "java")
    other = archive("other", class_archive._archive_inputs(java, pyspark_at("venv2", "4.0.1"), "4.0.1"))
    gone = archive("gone", class_archive._archive_inputs(java, str(tmp_path / "removed" / "pyspark"), "4.3.0"))
    upgraded = archive("upgraded", class_archive._archive_inputs(java, pyspark_at("venv3", "4.1.0"), "4.1.0"))
    (tmp_path / "venv3" / "pyspark" / "version.py").write_text('__version__ = "4.2.0"\n')
    older = archive("older", None)
    recording = cache / "spark-driver-xyz.jsa.123.tmp"
    recording.write_bytes(b"half")
    keep = class_archive.class_archive_path()
    new = cache / "new.jsa.tmp"
    new.write_bytes(b"recorded")
    class_archive._keep_archive(str(new), keep)
    assert open(keep, "rb").read() == b"recorded" and not new.exists()
    assert json.loads(open(keep[:-4] + ".inputs.json").read()) == class_archive._current_archive_inputs()
    assert not gone.exists() and not upgraded.exists()
    assert not (cache / "spark-driver-gone.inputs.json").exists()
    assert other.exists() and older.exists() and recording.exists()
    os.utime(base, ns=(1, 1_000_000_000))  # the JDK's base archive dumped anew: every one recorded on it goes
    assert set(class_archive.prune_class_archives(class_archive.class_archive_path())) == {keep, str(other)}
    assert older.exists() and recording.exists()


def test_a_short_run_plans_interpreted_and_the_callers_conf_wins():
    from kafkaforensics.spark import engine
    from spark_jobs import session
    short = session.session_conf(True)
    assert short["spark.sql.adaptive.enabled"] == "false" and short["spark.sql.codegen.wholeStage"] == "false"
    assert session.session_conf(False) == session.SESSION_CONF
    assert "spark.sql.codegen.factoryMode" not in short  # interpreted expressions cost more past a tiny run
    tiny = session.session_conf(False, tiny_run=True)
    assert tiny["spark.sql.codegen.factoryMode"] == "NO_CODEGEN" and tiny["spark.sql.adaptive.enabled"] == "false"
    assert engine.held_in_driver("local[2]", engine.DRIVER_READ_BYTES) and not engine.held_in_driver(
        "local[*]", engine.DRIVER_READ_BYTES + 1) and not engine.held_in_driver("spark://h:7077", 1)
    assert session.session_conf(True, {"spark.sql.adaptive.enabled": "true"})["spark.sql.adaptive.enabled"] == "true"
    assert session.session_conf(False, {"spark.driver.memory": "4g"}) == {**session.SESSION_CONF, "spark.driver.memory": "4g"}


def test_bounds_on_the_timestamp_columns_prune_as_their_epoch_ms_would(spark, timeline):  # noqa: F811
    """A Spark user filters on `timestampUtc` (a TIMESTAMP): it prunes as the same instant on the
    epoch-ms `timestamp` would, to the millisecond each way, and Spark filters the rows again."""
    import datetime
    utc = datetime.timezone.utc

    def at(ms, micros=0):
        return datetime.datetime.fromtimestamp(ms / 1000, utc) + datetime.timedelta(microseconds=micros)
    lo, hi = T0 + 5 * HOUR, T0 + 6 * HOUR
    r = _reader(spark, timeline, timestampDisorderMs="0")
    left = r.pushFilters([GreaterThanOrEqual(("timestampUtc",), at(lo, 1)), LessThan(("timestampUtc",), at(hi))])
    assert (r.bounds.ts_lo, r.bounds.ts_hi) == (lo + 1, hi - 1) and len(list(left)) == 2  # Spark filters again
    assert _planned_bytes(r) < _planned_bytes(_reader(spark, timeline)) * 0.2
    r = _reader(spark, timeline)
    r.pushFilters([GreaterThan(("timestampUtc",), at(lo, 1)), LessThanOrEqual(("timestampUtc",), at(hi, 999))])
    assert (r.bounds.ts_lo, r.bounds.ts_hi) == (lo + 1, hi)

    def rows(pushdown):
        df = (spark.read.format("kafka_segments").option("level", "records").option("pushdown", pushdown).load(timeline)
              .where((F.col("timestampUtc") >= F.lit(at(lo))) & (F.col("timestampUtc") < F.lit(at(lo + 600_000)))))
        return sorted((x["topic"], x["partition"], x["offset"]) for x in df.collect())
    assert rows("false") and rows("true") == rows("false")


def test_options_are_read_once_checked_and_typed():
    """Every option by its own spelling, in any case, as its kind, with its default; the old name
    ``splitBytes`` still sizes splits; Spark's ``paths`` (``load([a, b])``: a JSON list) and a
    comma-separated ``path`` both list the inputs; a misspelt option or a bad value is an error."""
    from kafkaforensics.defaults import DEFAULT_SPLIT_BYTES
    from kafkaforensics.spark.spark_source import input_paths, read_options
    o = read_options({"FROMOFFSET": "5", "includecorrupt": "yes", "partitions": "1,2", "path": "a,b"})
    assert (o["fromOffset"], o["includeCorrupt"], o["partitions"], o["pushdown"]) == (5, True, [1, 2], True)
    assert o["maxPartitionBytes"] == DEFAULT_SPLIT_BYTES and o["toOffset"] is None and input_paths(o) == ["a", "b"]
    assert read_options({"splitBytes": "4000"})["maxPartitionBytes"] == 4000
    assert read_options({"splitBytes": "4000", "maxPartitionBytes": "9"})["maxPartitionBytes"] == 9
    assert input_paths(read_options({"paths": '["/x/a,1", "/y"]'})) == ["/x/a,1", "/y"]
    assert input_paths(read_options({"path": "[2026]/logs"})) == ["[2026]/logs"]  # a path, not JSON
    with pytest.raises(ValueError, match="fromTimestmp: no such kafka_segments option; did you mean fromTimestamp"):
        read_options({"fromTimestmp": "1"})
    with pytest.raises(ValueError, match=r"fromtimestmp: no such kafka_segments option; did you mean fromTimestamp\?"):
        read_options({"fromtimestmp": "1"})  # as Spark hands it over, lower-cased
    with pytest.raises(ValueError, match=r"zzz: no such kafka_segments option \(its options"):
        read_options({"zzz": "1"})  # nothing close: no guess
    with pytest.raises(ValueError, match=r"^fromtimestmp: [^;]*; did you mean fromTimestamp\?; zzz: no such"):
        read_options({"zzz": "1", "fromtimestmp": "1"})  # every one named, in order of name
    with pytest.raises(ValueError, match="pushdown='maybe': not true or false"):
        read_options({"pushdown": "maybe"})


def test_a_misspelt_option_through_spark_read_is_one_line_with_the_closest_option(spark, timeline):  # noqa: F811
    """Issue 57: ``spark.read.format("kafka_segments").option("fromTimestmp", ...)`` was a 17-line worker
    traceback inside ``AnalysisException``.  Through Spark's own ``spark.read``, the error's own line
    names each misspelt option (as Spark hands it over: lower-cased) with the closest option by the
    source's spelling, and no worker traceback follows it."""
    with pytest.raises(Exception) as e:
        (spark.read.format("kafka_segments").option("level", "records").option("serach", "x")
         .option("fromTimestmp", "1").load(timeline).count())
    said = str(e.value)
    first = said.splitlines()[0]
    assert "fromtimestmp: no such kafka_segments option; did you mean fromTimestamp?" in first
    assert "serach: no such kafka_segments option" in first
    assert "Traceback" not in said and "File " not in said and len(said.splitlines()) <= 2  # Spark adds " SQLSTATE: ..."


def test_a_misspelt_option_fails_the_read_and_several_paths_load(spark, timeline):  # noqa: F811
    """``.option("fromTimestmp", ...)`` would read the whole fleet unwindowed if it were ignored: the
    read fails, naming it.  ``load([a, b])`` reads both paths."""
    with pytest.raises(Exception, match="(?i)fromTimestmp: no such kafka_segments option"):  # Spark lower-cases it
        spark.read.format("kafka_segments").option("level", "records").option("fromTimestmp", "1").load(timeline).count()
    parts = [os.path.join(timeline, "events-0"), os.path.join(timeline, "events-1")]
    both = spark.read.format("kafka_segments").option("level", "batches").load(parts)
    assert both.select("partition").distinct().count() == 2 and both.count() == 1200
