"""Cross-implementation: kafka-python and aiokafka build, we read; we build, they read."""
import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from aiokafka.record.legacy_records import LegacyRecordBatch as AioLegacyBatch
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from hypothesis import given, settings
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.legacy_records import LegacyRecordBatch as KpLegacyBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder

from kafkaforensics.records import builder
from kafkaforensics.records.batch import Record, parse_legacy_header, parse_v2_header
from kafkaforensics.log.segment import BatchScanner
from tests.strategies import batch_kwargs, records
from tests.batch_args import v2_kwargs

CODECS = range(5)
T0 = 1_700_000_000_000


def sample_records(n=25, base=0):
    out = []
    for j in range(n):
        key = None if j % 5 == 0 else f"key-{j}".encode()
        value = None if j % 7 == 0 else (f"value {j} " * (j + 1)).encode()
        headers = [("h1", f"{j}".encode()), ("nul", None)] if j % 3 == 0 else []
        out.append(Record(base + j, T0 + j * 10, key, value, headers))
    return out


def their_view(recs):
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in recs]


@pytest.mark.parametrize("Builder", [KpBuilder, AioBuilder], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_v2_built_by_clients_is_read_identically(Builder, codec):
    recs = sample_records()
    b = Builder(magic=2, compression_type=codec, is_transactional=0, producer_id=77, producer_epoch=3,
                base_sequence=10, batch_size=1 << 20)
    for r in recs:
        b.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
    data = bytes(b.build())
    ours = parse_v2_header(data, 0)
    assert ours.crc_valid()
    assert ours.compression == codec
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (77, 3, 10)
    assert ours.last_sequence == 10 + len(recs) - 1
    assert their_view(ours.records()) == their_view(recs)
    # and their own reader agrees with ours
    theirs = list(KpBatch(data))
    assert their_view(theirs) == their_view(ours.records())


@pytest.mark.parametrize("Reader", [KpBatch, AioBatch], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("codec", CODECS)
def test_v2_we_build_is_read_identically_by_clients(Reader, codec):
    recs = sample_records(base=500)
    data = builder.build_v2(recs, base_offset=500, codec=codec,
                            producer=builder.BatchProducer(producer_id=5, producer_epoch=1, base_sequence=0),
                            transactional=True, partition_leader_epoch=9)
    batch = Reader(bytearray(data))
    assert batch.validate_crc()
    assert batch.base_offset == 500 and batch.producer_id == 5 and batch.is_transactional
    assert batch.compression_type == codec
    assert their_view(list(batch)) == their_view(recs)


@settings(max_examples=40, deadline=None)
@given(records(base_offset=123), batch_kwargs)
def test_v2_property_both_ways(recs, kw):
    data = builder.build_v2(recs, base_offset=123, **v2_kwargs(**kw))
    kp = KpBatch(bytearray(data))
    assert kp.validate_crc()
    assert their_view(list(kp)) == their_view(recs)
    assert their_view(list(AioBatch(bytearray(data)))) == their_view(recs)


def _walk(data):
    out = []
    for b in BatchScanner(data):
        assert b.crc_valid()
        out.extend(b.records())
    return out


def _legacy_cases(kp, aio):
    """Every (implementation, magic, codec); aiokafka refuses LZ4 with magic 0 outright
    (UnsupportedCodecError), so that one combination is covered by kafka-python alone."""
    return [pytest.param(impl, m, c, id=f"{name}-v{m}-{c}")
            for name, impl in (("kafka-python", kp), ("aiokafka", aio))
            for m in (0, 1) for c in (0, 1, 2, 3) if not (impl is aio and m == 0 and c == 3)]


@pytest.mark.parametrize("Builder,magic,codec", _legacy_cases(KpLegacyBuilder, AioLegacyBuilder))
def test_legacy_built_by_clients_is_read_identically(Builder, magic, codec):
    b = Builder(magic=magic, compression_type=codec, batch_size=1 << 20)
    recs = sample_records(10)
    for r in recs:
        b.append(r.offset, timestamp=r.timestamp, key=r.key, value=r.value)
    data = bytearray(b.build())
    if codec:  # the broker assigns the wrapper the last absolute offset
        data[0:8] = (len(recs) - 1).to_bytes(8, "big")
    got = _walk(bytes(data))
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in recs]
    if magic == 1:
        assert [r.timestamp for r in got] == [r.timestamp for r in recs]
    else:
        assert all(r.timestamp == -1 for r in got)


@pytest.mark.parametrize("Reader,magic,codec", _legacy_cases(KpLegacyBatch, AioLegacyBatch))
def test_legacy_we_build_is_read_identically_by_clients(Reader, magic, codec):
    recs = sample_records(10)
    data = builder.build_legacy(recs, magic=magic, codec=codec)
    if codec == 0:
        got = []
        for b in BatchScanner(data):
            got.extend(Reader(bytearray(b.data), magic))
    else:
        got = list(Reader(bytearray(data), magic))
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in recs]
    if magic == 1:
        assert [r.timestamp for r in got] == [r.timestamp for r in recs]


def test_magic0_lz4_uses_kafkas_broken_header_checksum():
    """Kafka 0.8/0.9 computed the LZ4 frame header checksum over the magic too; kafka-python does likewise."""
    from kafka.codec import lz4_encode_old_kafka

    from kafkaforensics.records import compression
    payload = b"kafka " * 500
    ours = compression.compress(compression.LZ4, payload, magic=0)
    theirs = lz4_encode_old_kafka(payload)
    assert ours[:7] == theirs[:7]  # the same (broken) header checksum byte
    assert compression.decompress(compression.LZ4, theirs, magic=0) == payload


def test_snappy_java_framing_read_and_written():
    from kafka.codec import snappy_decode, snappy_encode

    from kafkaforensics.records import compression
    payload = bytes(range(256)) * 400
    ours = compression.compress(compression.SNAPPY, payload)
    assert ours.startswith(b"\x82SNAPPY\x00")
    assert snappy_decode(ours) == payload
    assert compression.decompress(compression.SNAPPY, snappy_encode(payload, xerial_compatible=True)) == payload
    assert compression.decompress(compression.SNAPPY, snappy_encode(payload, xerial_compatible=False)) == payload


def test_streamed_zstd_without_content_size():
    import zstandard

    from kafkaforensics.records import compression
    payload = b"z" * 100_000
    cobj = zstandard.ZstdCompressor().compressobj()
    framed = cobj.compress(payload) + cobj.flush()
    assert compression.decompress(compression.ZSTD, framed) == payload


def test_legacy_v1_wrapper_relative_offsets_and_log_append_time():
    recs = sample_records(5, base=40)
    data = bytearray(builder.build_legacy(recs, magic=1, codec=1, log_append_time=True, wrapper_timestamp=T0 + 999))
    (b,) = list(BatchScanner(bytes(data)))
    assert b.last_offset == 44 and b.timestamp_type == "LogAppendTime"
    got = b.records()
    assert [r.offset for r in got] == [40, 41, 42, 43, 44]
    assert all(r.timestamp == T0 + 999 for r in got)
