"""The Spark records level's fast path (whole segments walked in header runs and decoded together,
:mod:`kafkaforensics.spark.record_runs`) gives exactly the rows of the batch-by-batch walk, whatever
the damage; no Spark session is needed (the reader runs in-process)."""
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import walks
from kafkaforensics.spark import record_runs, spark_source
from tests.conftest import SAMPLE

SCHEMA = spark_source.spark_schema("records")


def _rows(path: str, **options) -> list:
    reader = spark_source.KafkaSegmentsReader({"path": path, "minPartitions": "2", **options}, "records", SCHEMA)
    return [row for split in reader.partitions() for batch in reader.read(split) for row in batch.to_pylist()]


def _both_ways(monkeypatch, path: str, **options) -> tuple[list, list]:
    out = []
    for fast in (True, False):
        with walks.use_speedups(fast):
            out.append(_rows(path, **options))
    return out[0], out[1]


def _count_fast(monkeypatch) -> dict:
    """How many runs the fast path decoded and declined (so a test can show it was taken)."""
    seen = {"decoded": 0, "declined": 0}
    decode = record_runs.FileRun.decode

    def counted(self, include_corrupt):
        got = decode(self, include_corrupt)
        seen["declined" if got is None else "decoded"] += 1
        return got
    monkeypatch.setattr(record_runs.FileRun, "decode", counted)
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_fast_path_rows_equal_batch_by_batch_whatever_the_damage(tmp_path_factory, monkeypatch, data):
    """Partitions of legacy entries, five codecs, transactions and markers in small segments, with
    bytes flipped, header fields set, offsets that go back and files cut: the same rows (every
    column), with and without ``includeCorrupt``, in runs of any size, segments read whole or
    mapped."""
    from tests.corruption import damaged_partition

    root = tmp_path_factory.mktemp("runs")
    damaged_partition(str(root / "t-0"), data)
    if data.draw(st.booleans()):  # a second partition, so that runs span partitions
        damaged_partition(str(root / "u-1"), data)
    monkeypatch.setattr(spark_source, "RECORDS_RUN_BYTES", data.draw(st.sampled_from([1, 5000, 4 << 20])))
    # segments read into memory whole, or mapped and copied run by run
    monkeypatch.setattr(spark_source, "SMALL_FILE_BYTES", data.draw(st.sampled_from([0, 4 << 20])))
    corrupt = data.draw(st.sampled_from(["false", "true"]))
    fast, reference = _both_ways(monkeypatch, str(root), includeCorrupt=corrupt)
    assert fast == reference
    shutil.rmtree(root)


def test_fast_path_is_taken_on_the_sample_and_falls_back_where_it_must(monkeypatch, tmp_path):
    """The bundled sample (legacy segments, five codecs, transactions) reads the same both ways;
    its v2 segments go through the fast path, its legacy ones are declined; a segment with a torn
    tail is left to the batch-by-batch walk whole, its sound batches still read."""
    seen = _count_fast(monkeypatch)
    fast, reference = _both_ways(monkeypatch, SAMPLE)
    assert fast == reference and len(fast) > 100
    assert seen["decoded"] >= 1

    part = tmp_path / "logs" / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), part)
    log = sorted(part.glob("*.log"))[0]
    whole = _rows(str(tmp_path / "logs"))
    with open(log, "r+b") as f:
        f.truncate(os.path.getsize(log) - 7)
    fast, reference = _both_ways(monkeypatch, str(tmp_path / "logs"))
    assert fast == reference
    assert 0 < len(fast) < len(whole)
    assert {r["offset"] for r in fast} < {r["offset"] for r in whole}  # only the torn batch's records are gone


@pytest.mark.parametrize("small", [0, 4 << 20])
@pytest.mark.parametrize("corrupt", ["false", "true"])
def test_fast_path_over_the_test_fleet(monkeypatch, tmp_path, corrupt, small):
    """The fleet of the Spark fleet tests (replicas, two clusters, a late record, a compressed
    batch whose CRC fails, a broken frame) plus a partition whose middle batch has a value byte
    flipped: the same rows both ways; that batch's records there, flagged, only with
    ``includeCorrupt``."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from tests.spark_fleet import build_fleet

    build_fleet(str(tmp_path / "fleet"))
    flipped = str(tmp_path / "fleet" / "broker-9" / "flipped-0")
    write_partition(flipped, [build_v2([Record(3 * i + j, 1000 + j, b"k", b"value", []) for j in range(3)],
                                       base_offset=3 * i) for i in range(3)])
    log = os.path.join(flipped, "00000000000000000000.log")
    data = bytearray(open(log, "rb").read())
    data[len(data) // 2] ^= 0xFF  # inside the second batch's records
    open(log, "wb").write(bytes(data))
    monkeypatch.setattr(spark_source, "SMALL_FILE_BYTES", small)
    fast, reference = _both_ways(monkeypatch, str(tmp_path / "fleet"), includeCorrupt=corrupt)
    assert fast == reference
    bad = [r["offset"] for r in fast if r["topic"] == "flipped" and not r["crcValid"]]
    assert bad == ([3, 4, 5] if corrupt == "true" else [])


def test_timestamps_past_what_a_spark_timestamp_holds_keep_their_long_and_no_utc(tmp_path, monkeypatch):
    """A Kafka timestamp is any long: one past 9999-12-31 (a producer's bug, a forged batch) has no
    TIMESTAMP beside it (null, where multiplying it into microseconds overflowed or failed), and the
    epoch-ms long keeps it, at both levels and both ways of reading records."""
    import datetime

    from kafkaforensics.log import writer
    from kafkaforensics.records import batch, builder
    edge = spark_source.MAX_UTC_MS
    stamps = [0, edge, edge + 1, 2 ** 62, 2 ** 63 - 1]
    part = tmp_path / "far-0"
    writer.write_partition(str(part), (builder.build_v2([batch.Record(i, ts, b"k", b"v", [])], base_offset=i)
                                       for i, ts in enumerate(stamps)))
    utc = {0: datetime.datetime(1970, 1, 1), edge: datetime.datetime(9999, 12, 31, 23, 59, 59, 999000)}
    for rows in _both_ways(monkeypatch, str(part)):
        got = [(r["timestamp"], r["timestampUtc"]) for r in rows]
        assert [ts for ts, _ in got] == stamps
        assert [u.replace(tzinfo=None) if u else u for _, u in got] == [utc.get(ts) for ts in stamps]
    reader = spark_source.KafkaSegmentsReader({"path": str(part)}, "batches", spark_source.spark_schema("batches"))
    rows = [row for split in reader.partitions() for b in reader.read(split) for row in b.to_pylist()]
    assert [r["maxTimestamp"] for r in rows] == stamps
    assert [r["maxTimestampUtc"].replace(tzinfo=None) if r["maxTimestampUtc"] else None for r in rows] == [
        utc.get(ts) for ts in stamps]


def test_an_offset_index_the_segment_does_not_bear_out_hides_no_record_of_a_window(tmp_path):
    """Pruning starts and stops where the offset index says; a damaged or forged index (an entry
    that puts an offset at a later batch's position, or a stop before the window's last offset) is
    checked against the batch it points to, and that end of the segment is then read whole."""
    import struct

    from kafkaforensics.log import writer
    from kafkaforensics.records import batch, builder
    part = tmp_path / "late-0"
    batches = [builder.build_v2([batch.Record(b * 10 + i, 1000, b"k", b"v", []) for i in range(10)], base_offset=b * 10)
               for b in range(20)]
    writer.write_partition(str(part), batches)
    seg = part / "00000000000000000000.log"
    positions, pos = [], 0
    for raw in batches:
        positions.append(pos)
        pos += len(raw)
    assert pos == seg.stat().st_size
    honest = [_rows(str(part), fromOffset=str(lo), toOffset=str(hi)) for lo, hi in ((95, 125), (160, 170))]
    assert [len(r) for r in honest] == [31, 11]

    def forge(entries):  # (offset, position) pairs, as Kafka's .index holds them relative to the base
        (part / "00000000000000000000.index").write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    forge([(149, positions[17])])  # says offsets up to 149 end at the batch that really holds 170..179
    assert _rows(str(part), fromOffset="160", toOffset="170") == honest[1]
    forge([(89, positions[12])])  # says reading 95.. can start at the batch that really holds 120..129
    assert _rows(str(part), fromOffset="95", toOffset="125") == honest[0]
    forge([(129, positions[10]), (139, positions[11])])  # says reading 95.. can stop at the batch of 110..119
    assert _rows(str(part), fromOffset="95", toOffset="125") == honest[0]


def test_a_runs_held_bytes_are_log_slices_walked_at_their_file_positions():
    """The bytes a :class:`~kafkaforensics.spark.record_runs.FileRun` holds are the one byte-range class,
    ``LogSlice`` (issue 52 item 2: no ``HeldSegment``): given back with their plan steps for the
    batch-by-batch walk, each walks its batches at their positions in their own file, a whole small
    segment's and a run's copy from the middle of a mapped one alike."""
    from kafkaforensics.log.segment import BatchScanner, LogSlice
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.spark.scan_plan import PlanStep, Source

    def segment(base: int, n: int) -> bytes:
        return b"".join(build_v2([Record(base + j, 1000 + j, b"k%d" % j, b"v" * j, [])], base_offset=base + j)
                        for j in range(n))

    def batches(data: bytes, base: int, shift: int = 0) -> list:
        return [(b.position + shift, b.base_offset) for b in BatchScanner(data, file="x", base_offset=base)]

    src = Source("ld", None, None, "t", 0)
    small, big = segment(0, 5), segment(100, 9)
    one = PlanStep("segment", "ld/t-0/00000000000000000000.log", src, len(small), 0, len(small), base=0)
    two = PlanStep("segment", "ld/t-0/00000000000000000100.log", src, len(big), 0, len(big), base=100)
    run = record_runs.FileRun()
    assert run.add(small, 0, len(small), 0, one)
    third = batches(big, 100)[3][0]   # a mapped segment's run taken from its fourth batch on
    assert run.take(big, third, len(big), 0, two, 1 << 20) == len(big)
    held = run.segments()
    assert [step for _h, step in held] == [one, two] and all(isinstance(h, LogSlice) for h, _s in held)
    assert [(h.file, h.base_offset) for h, _s in held] == [(one.uri, 0), (two.uri, 100)]
    walked = [[(b.position + h.shift, b.base_offset) for b in h.walk()] for h, _s in held]
    assert walked == [batches(small, 0), batches(big, 100)[3:]]


def test_a_reader_reads_only_the_splits_it_planned():
    """``read`` takes what ``partitions`` made (a FleetSplit, as Spark hands them back); any other
    input partition is refused by name, not an AttributeError on its missing ``pieces``."""
    from pyspark.sql.datasource import InputPartition

    reader = spark_source.KafkaSegmentsReader({"path": os.path.join(SAMPLE, "orders-0")}, "records", SCHEMA)
    assert _rows(os.path.join(SAMPLE, "orders-0"))  # its own splits read
    with pytest.raises(TypeError, match="reads its own partitions \\(FleetSplit\\), not InputPartition"):
        next(reader.read(InputPartition(0)))
