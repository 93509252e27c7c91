"""The replay broker without sockets: request bytes through :mod:`kafkaforensics.protocol` and
:class:`~kafkaforensics.replay.ReplayBroker`, response bytes decoded with the same specs."""
import struct

import pytest

from kafkaforensics.protocol import Connection, Request, UnsupportedRequest, encode_response
from kafkaforensics.replay import ReplayBroker
from specs import kafka_errors as E
from specs import protocol_messages as P


def frame(api_key, version, body, corr=7, client="t"):
    m = P.REQUESTS[api_key]
    hv = 2 if m.is_flexible(version) else 1
    head = P.RequestHeader.build({"RequestApiKey": api_key, "RequestApiVersion": version, "CorrelationId": corr,
                                  "ClientId": client}, hv)
    payload = head + m.build(body, version)
    return struct.pack(">i", len(payload)) + payload


def roundtrip(broker, api_key, version, body):
    """Bytes in, the broker's answer decoded from bytes out."""
    (ev,) = Connection().receive_data(frame(api_key, version, body))
    assert isinstance(ev, Request), ev
    out = encode_response(api_key, version, ev.correlation_id, broker.handle(api_key, version, ev.body))
    m = P.RESPONSES[api_key]
    hv = 1 if m.is_flexible(version) and api_key != 18 else 0
    header, used = P.ResponseHeader.read_prefix(out[4:], hv)
    assert header["CorrelationId"] == ev.correlation_id
    return m.read(out[4 + used:], version)


@pytest.fixture
def wb(tmp_path):
    b = ReplayBroker(str(tmp_path), writable=True)
    b.create_topics(0, {"Topics": [{"Name": "t", "NumPartitions": 1}]})
    return b


def _fence(b):
    first = b.init_producer_id(0, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000})
    second = b.init_producer_id(0, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000})
    assert second["ProducerEpoch"] == first["ProducerEpoch"] + 1
    return first["ProducerId"], first["ProducerEpoch"]


@pytest.mark.parametrize("version", range(0, 6))
def test_fenced_producer_gets_invalid_producer_epoch_from_end_txn(wb, version):
    pid, old_epoch = _fence(wb)
    r = roundtrip(wb, 26, version, {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": old_epoch,
                                    "Committed": True})
    assert r["ErrorCode"] == E.INVALID_PRODUCER_EPOCH == 47


@pytest.mark.parametrize("version", range(0, 4))
def test_fenced_producer_gets_invalid_producer_epoch_from_add_partitions(wb, version):
    pid, old_epoch = _fence(wb)
    r = roundtrip(wb, 24, version, {"V3AndBelowTransactionalId": "tx", "V3AndBelowProducerId": pid,
                                    "V3AndBelowProducerEpoch": old_epoch,
                                    "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]})
    (topic,) = r["ResultsByTopicV3AndBelow"]
    assert [p["PartitionErrorCode"] for p in topic["ResultsByPartition"]] == [E.INVALID_PRODUCER_EPOCH]


def test_error_table_is_kafkas():
    assert (E.NONE, E.OFFSET_OUT_OF_RANGE, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNSUPPORTED_VERSION) == (0, 1, 3, 35)
    assert E.NAMES[47] == "INVALID_PRODUCER_EPOCH" and E.NAMES[-1] == "UNKNOWN_SERVER_ERROR"
    assert len(set(E.NAMES)) == len(E.NAMES)
