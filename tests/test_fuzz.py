"""Bad input gets the project's own error with a position: never another exception, never a hang."""
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import builder, compression
from kafkaforensics.records.batch import Record
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.segment import BatchScanner
from kafkaforensics.log.txn_index import read_entries as read_txn
from kafkaforensics.inspect.verify import verify
from specs import checkpoints as C
from specs import legacy as L
from specs import producer_snapshot as S
from specs import record_batch as R
from specs.primitives import parse
from specs.schemas import legacy as LS
from specs.schemas import producer_snapshot as SS
from specs.schemas import record_batch as RS

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid_log(n=5, codec=0):
    out, off = [], 0
    for i in range(n):
        recs = [Record(off + j, 1000 + j, b"k%d" % j, b"v" * j, [("h", b"x")]) for j in range(4)]
        out.append(builder.build_v2(recs, base_offset=off, codec=codec))
        off += 4
    return b"".join(out)


def _drain(data):
    """Walk and deep-decode everything; only KafkaFormatError may escape a batch."""
    sc = BatchScanner(data, file="fuzz.log", base_offset=0)
    for b in sc:
        b.crc_valid()
        try:
            b.records()
        except KafkaFormatError as e:
            assert e.problem.position is not None and e.problem.file == "fuzz.log"
    if sc.stop is not None:
        assert sc.stop.position is not None and sc.stop.kind
    return sc


@FUZZ
@given(st.binary(max_size=2048))
def test_scanner_on_arbitrary_bytes(data):
    _drain(data)


@FUZZ
@given(st.data())
def test_scanner_on_mutated_valid_logs(data):
    log = bytearray(_valid_log(codec=data.draw(st.integers(0, 4))))
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(log) - 1))
        log[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(log)))
    _drain(bytes(log[:cut]))


@FUZZ
@given(st.integers(0, 4), st.binary(max_size=512))
def test_decompress_garbage(codec, data):
    for magic in (0, 1, 2):
        try:
            compression.decompress(codec, data, magic=magic)
        except KafkaFormatError:
            pass


@FUZZ
@given(st.binary(max_size=512))
def test_specs_on_garbage(data):
    for spec in (RS.RecordBatch, RS.Record, LS.MessageSet, SS.ProducerSnapshot):
        try:
            parse(spec, data, file="x")
        except KafkaFormatError as e:
            assert e.problem.position is not None


@FUZZ
@given(st.binary(max_size=300))
def test_snapshot_and_txnindex_on_garbage(data):
    for fn in (read_snapshot, read_txn):
        try:
            fn(data, file="x")
        except KafkaFormatError as e:
            assert e.problem.position is not None


@FUZZ
@given(st.text(max_size=200))
def test_checkpoints_on_garbage(text):
    for spec in (C.OffsetCheckpoint, C.LeaderEpochCheckpoint):
        try:
            spec.parse(text)
        except KafkaFormatError:
            pass
    try:
        C.parse_partition_metadata(text)
    except KafkaFormatError:
        pass


def test_huge_length_fields_do_not_allocate():
    """A 2 GiB batch length, record count and varint lengths are bounded before use."""
    hdr = bytearray(_valid_log(1))
    hdr[8:12] = (2**31 - 1).to_bytes(4, "big")
    sc = _drain(bytes(hdr))
    assert sc.stop.kind == "truncated-batch"
    hdr = bytearray(_valid_log(1))
    hdr[57:61] = (2**31 - 1).to_bytes(4, "big")  # record count
    b = next(iter(BatchScanner(bytes(hdr))))
    try:
        b.records()
        raise AssertionError("must fail")
    except KafkaFormatError as e:
        assert "record count" in str(e)


def test_verify_on_fuzzed_partition_never_crashes(tmp_path):
    import random
    rnd = random.Random(7)
    base = _valid_log(20, codec=1)
    for trial in range(40):
        d = tmp_path / f"t-{trial}"
        d.mkdir()
        log = bytearray(base)
        for _ in range(rnd.randint(1, 6)):
            log[rnd.randrange(len(log))] = rnd.randrange(256)
        (d / "00000000000000000000.log").write_bytes(bytes(log[: rnd.randint(0, len(log))]))
        (d / "00000000000000000000.index").write_bytes(os.urandom(rnd.choice([0, 8, 13, 64])))
        (d / "00000000000000000000.timeindex").write_bytes(os.urandom(rnd.choice([0, 12, 20])))
        (d / "00000000000000000000.txnindex").write_bytes(os.urandom(rnd.choice([0, 34, 40])))
        (d / "leader-epoch-checkpoint").write_bytes(os.urandom(rnd.choice([0, 10])))
        rep = verify([str(d)])
        for p in rep.problems:
            assert p.kind and p.file


def test_zstd_frames_that_state_their_size_take_one_buffer_and_still_read_across_frames():
    """librdkafka's zstd frames state their size: they decompress straight into one buffer, equal
    to the streaming path; a second frame after the first is still read, as Kafka's stream does,
    and a size claim past the bound is not believed."""
    import pytest
    import zstandard
    from kafkaforensics.errors import CompressionError
    big = os.urandom(512) * 4096
    sized = zstandard.ZstdCompressor(write_content_size=True).compress(big)
    assert zstandard.frame_content_size(sized) == len(big)
    assert compression.decompress(compression.ZSTD, sized) == big
    assert compression.decompress(compression.ZSTD, sized + sized) == big + big
    with pytest.raises(CompressionError, match="bound"):
        compression.decompress(compression.ZSTD, sized, bound=len(big) - 1)
    with pytest.raises(CompressionError):
        compression.decompress(compression.ZSTD, sized[:-3])


def test_decompression_is_bounded_and_grows_in_steps():
    """A compression bomb stops at the bound; output far above the first step comes back whole."""
    import pytest
    from kafkaforensics.errors import CompressionError
    big = os.urandom(256) * 32768  # 8 MiB that compresses to little: many growth steps
    for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        for magic in (0, 1, 2):
            if codec == compression.ZSTD and magic < 2:
                continue
            packed = compression.compress(codec, big, magic=magic)
            assert len(packed) < len(big) // 8
            assert compression.decompress(codec, packed, magic=magic) == big
            assert compression.decompress(codec, packed, magic=magic, bound=len(big)) == big
            with pytest.raises(CompressionError, match="bound"):
                compression.decompress(codec, packed, magic=magic, bound=len(big) - 1)
            with pytest.raises(CompressionError):
                compression.decompress(codec, packed[: len(packed) // 2], magic=magic)
