"""Produce is validated as a Kafka 4.x leader validates it (kafkaforensics/broker/log_validator.py): CRC-valid
batches Kafka's LogValidator and record readers refuse are refused with Kafka's error code, nothing is
appended and the log end offset stays; per-record errors come back in RecordErrors.  Each hostile request goes
over a raw socket while another connection is open: that one is answered within a second afterwards, and a
normal producer and consumer still work."""
import os
import socket
import struct
import time

import pytest

from kafkaforensics.broker.log_validator import TopicRules, validate
from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import HeaderOverrides, build_v2
from kafkaforensics.records.checksums import crc32c
from specs import kafka_errors as E
from specs import record_batch as R
from tests.test_serve_transactions import Raw
from tests.batch_args import v2_kwargs

NOW = int(time.time() * 1000)


def good(n=5, **kw):
    return build_v2([Record(i, NOW, b"k", b"value-%d" % i, []) for i in range(n)], base_offset=0, **v2_kwargs(**kw))


def patched(batch: bytes, body: bytes | None = None, **fields) -> bytes:
    """The batch with header fields (and the records section) replaced, its length and CRC made right again."""
    h = dict(zip(R.HEADER_FIELDS, R.HEADER_STRUCT.unpack_from(batch, 0)))
    body = batch[R.HEADER_SIZE:] if body is None else body
    h.update(fields)
    h["batchLength"] = R.HEADER_SIZE - R.LOG_OVERHEAD + len(body)
    h["crc"] = 0
    raw = bytearray(R.HEADER_STRUCT.pack(*(h[k] for k in R.HEADER_FIELDS)) + body)
    struct.pack_into(">I", raw, R.CRC_OFFSET, crc32c(bytes(raw[R.ATTRIBUTES_OFFSET:])))
    return bytes(raw)


GZIP_ATTR = 1


def _bomb() -> bytes:
    """A gzip batch of 80 KB whose records section inflates to 80 MiB of zeros (past the 64 MiB bound)."""
    from specs.codecs import compress
    return patched(good(1), body=compress(GZIP_ATTR, b"\x00" * (80 * 1024 * 1024)), attributes=GZIP_ATTR)


HOSTILE = {
    # what it is: (batch, Kafka's error code, per-record errors expected)
    "records-that-do-not-parse": (patched(good(), body=b"\x06\x00\x00\x00\x02x\x7f" * 5), E.INVALID_RECORD, False),
    "endless-varint": (patched(good(), body=b"\xff" * 64), E.INVALID_RECORD, False),
    "varint-of-six-bytes": (patched(good(1), body=b"\x80\x80\x80\x80\x80\x01" + b"\x00" * 8), E.INVALID_RECORD, False),
    "last-offset-delta-a-million": (patched(good(), lastOffsetDelta=1_000_000), E.INVALID_RECORD, False),
    "record-count-2^31-1": (patched(good(), recordCount=2**31 - 1, lastOffsetDelta=2**31 - 2), E.INVALID_RECORD, False),
    "record-count-2^31-1-delta-4": (patched(good(), recordCount=2**31 - 1), E.INVALID_RECORD, False),
    "record-count-zero": (patched(good(), recordCount=0, lastOffsetDelta=-1), E.INVALID_RECORD, False),
    "fewer-records-than-counted": (patched(good(3), recordCount=5, lastOffsetDelta=4), E.INVALID_RECORD, False),
    "more-records-than-counted": (patched(good(5), recordCount=3, lastOffsetDelta=2), E.INVALID_RECORD, False),
    "gzip-flag-on-uncompressed-records": (patched(good(), attributes=GZIP_ATTR), E.UNKNOWN_SERVER_ERROR, False),
    "control-batch-from-a-client": (patched(good(1), attributes=0x20), E.INVALID_RECORD, False),
    "base-offset-not-zero": (patched(good(), baseOffset=7), E.INVALID_RECORD, False),
    "producer-id-without-sequence": (patched(good(), producerId=5, producerEpoch=0, baseSequence=-1),
                                     E.INVALID_RECORD, False),
    "gzip-bomb": (_bomb(), E.INVALID_RECORD, False),
    "bad-crc": (good()[:-3] + bytes([good()[-3] ^ 0xFF]) + good()[-2:], E.CORRUPT_MESSAGE, False),
    "two-batches": (good() + good(), E.INVALID_RECORD, False),
    "timestamp-two-hours-ahead": (build_v2([Record(0, NOW, b"k", b"ok", []), Record(1, NOW + 7_200_000, b"k", b"x", [])],
                                           base_offset=0), E.INVALID_TIMESTAMP, True),
    # a LogAppendTime batch's records carry its max timestamp: two hours ahead is out of range
    "log-append-time-two-hours-ahead": (build_v2([Record(0, NOW + 7_200_000, b"k", b"v", [])], base_offset=0,
                                                 header=HeaderOverrides(log_append_time=True)), E.INVALID_TIMESTAMP, True),
}


@pytest.fixture(scope="module")
def vbroker(tmp_path_factory):
    d = tmp_path_factory.mktemp("pv") / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(d.parent / "s.json")) as b:
        b.dir = str(d)
        b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "v", "NumPartitions": 1, "ReplicationFactor": 1}]})
        yield b


def _produce(raw, batch, version):
    topic = {"Name": "v", "PartitionData": [{"Index": 0, "Records": batch}]}
    body = raw.call(0, version, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [topic]})
    return body["Responses"][0]["PartitionResponses"][0]


def _log_bytes(d):
    part = os.path.join(d, "v-0")
    return sum(os.path.getsize(os.path.join(part, f)) for f in os.listdir(part) if f.endswith(".log"))


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("version", [7, 9])
def test_hostile_batch_is_refused_and_nothing_appended(vbroker, case, version):
    batch, code, per_record = HOSTILE[case]
    other = Raw(vbroker.port)          # another client, connected while the hostile request is handled
    s = vbroker.broker.partitions[("v", 0)]
    end, size = s.log_end_offset, _log_bytes(vbroker.dir)
    raw = Raw(vbroker.port)
    r = _produce(raw, batch, version)
    raw.s.close()
    assert r["ErrorCode"] == code, (case, E.NAMES.get(r["ErrorCode"]))
    assert r["BaseOffset"] == -1
    assert s.log_end_offset == end and _log_bytes(vbroker.dir) == size
    if per_record and version >= 8:  # RecordErrors and ErrorMessage exist from Produce v8
        assert r["RecordErrors"] and r["ErrorMessage"]
        assert all(e["BatchIndex"] >= 0 and e["BatchIndexErrorMessage"] for e in r["RecordErrors"])
    start = time.monotonic()
    assert other.call(18, 3, {"ClientSoftwareName": "o", "ClientSoftwareVersion": "1"})["ErrorCode"] == 0
    assert time.monotonic() - start < 1.0
    other.s.close()


def test_a_good_batch_still_lands_and_reads_back(vbroker):
    raw = Raw(vbroker.port)
    s = vbroker.broker.partitions[("v", 0)]
    end = s.log_end_offset
    r = _produce(raw, good(5), 9)
    raw.s.close()
    assert (r["ErrorCode"], r["BaseOffset"]) == (0, end) and s.log_end_offset == end + 5
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=vbroker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=1500)
    c.assign([TopicPartition("v", 0)])
    c.seek(TopicPartition("v", 0), end)
    assert [m.value for m in c] == [b"value-%d" % i for i in range(5)]
    c.close()


def test_zstd_before_produce_v7_is_unsupported():
    from specs.codecs import ZSTD
    batch = build_v2([Record(0, NOW, b"k", b"v", [])], base_offset=0, codec=ZSTD)
    assert validate(batch, 6, NOW).error == E.UNSUPPORTED_COMPRESSION_TYPE
    assert validate(batch, 7, NOW).error == E.NONE


def test_topic_rules_compacted_needs_keys_and_max_message_bytes():
    keyless = build_v2([Record(0, NOW, None, b"v", [])], base_offset=0)
    v = validate(keyless, 9, NOW, TopicRules(compacted=True))
    assert v.error == E.INVALID_RECORD and v.record_errors[0][0] == 0
    assert validate(good(50), 9, NOW, TopicRules(max_message_bytes=100)).error == E.MESSAGE_TOO_LARGE
    assert validate(good(), 9, NOW + 10**12, TopicRules(before_max_ms=1000)).error == E.INVALID_TIMESTAMP


def test_trailing_bytes_too_short_for_a_batch_are_dropped():
    v = validate(good() + b"\x00" * 5, 9, NOW)
    assert v.error == E.NONE and v.batch == good()
