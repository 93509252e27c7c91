"""The replay broker without sockets: request bytes through :mod:`kafkaforensics.broker.protocol` and the
sans-IO core (:class:`~kafkaforensics.broker.dispatch.BrokerCore` over :class:`~kafkaforensics.broker.replay.ReplayBroker`),
response bytes decoded with the same specs."""
import struct

import pytest

from kafkaforensics.broker.dispatch import BrokerCore, Reply
from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.protocol import Connection, Request, UnsupportedRequest
from kafkaforensics.broker.replay import ReplayBroker
from specs import kafka_errors as E
from specs import protocol_messages as P
from kafkaforensics.records.builder import HeaderOverrides
from tests.batch_args import v2_kwargs


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
    reply = BrokerCore(broker, GroupCoordinator(None)).handle(ev)
    assert isinstance(reply, Reply), reply
    out = reply.to_bytes()
    m = P.RESPONSES[api_key]
    hv = 1 if m.is_flexible(version) and api_key != P.ApiKey.API_VERSIONS else 0
    header, used = P.ResponseHeader.read_prefix(out[4:], hv)
    assert header["CorrelationId"] == ev.correlation_id
    return m.read(out[4 + used:], version)


@pytest.fixture
def wb(tmp_path):
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(0, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]})
    return b


def _fence(b):
    first = b.transactions.init_producer_id(0, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000})
    second = b.transactions.init_producer_id(0, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000})
    assert second.producer_epoch == first.producer_epoch + 1
    return first.producer_id, first.producer_epoch


@pytest.mark.parametrize("version", range(0, 6))
def test_fenced_producer_gets_invalid_producer_epoch_from_end_txn(wb, version):
    """PRODUCER_FENCED (90) from v2 on; INVALID_PRODUCER_EPOCH (47) to the versions before it, as KafkaApis maps it."""
    pid, old_epoch = _fence(wb)
    r = roundtrip(wb, 26, version, {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": old_epoch,
                                    "Committed": True})
    assert r["ErrorCode"] == (E.INVALID_PRODUCER_EPOCH if version < 2 else E.PRODUCER_FENCED)


@pytest.mark.parametrize("version", range(0, 4))
def test_fenced_producer_gets_invalid_producer_epoch_from_add_partitions(wb, version):
    pid, old_epoch = _fence(wb)
    r = roundtrip(wb, 24, version, {"V3AndBelowTransactionalId": "tx", "V3AndBelowProducerId": pid,
                                    "V3AndBelowProducerEpoch": old_epoch,
                                    "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]})
    (topic,) = r["ResultsByTopicV3AndBelow"]
    want = E.INVALID_PRODUCER_EPOCH if version < 2 else E.PRODUCER_FENCED
    assert [p["PartitionErrorCode"] for p in topic["ResultsByPartition"]] == [want]


def test_error_table_is_kafkas():
    assert (E.NONE, E.OFFSET_OUT_OF_RANGE, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNSUPPORTED_VERSION) == (0, 1, 3, 35)
    assert E.NAMES[47] == "INVALID_PRODUCER_EPOCH" and E.NAMES[-1] == "UNKNOWN_SERVER_ERROR"
    assert len(set(E.NAMES)) == len(E.NAMES)


@pytest.mark.parametrize("messages", [P.REQUESTS, P.RESPONSES], ids=["requests", "responses"])
def test_every_schema_round_trips_over_its_version_range(messages):
    for key, m in messages.items():
        for v in range(m.valid[0], m.valid[1] + 1):
            data = m.build({}, v)
            assert m.build(m.read(data, v), v) == data, (m.name, v)


def test_advertised_versions_are_kafka_4s_and_parseable():
    from kafkaforensics.broker.txn_coordinator import TransactionCoordinator
    b = ReplayBroker.__new__(ReplayBroker)
    b.writable, b.txn = True, TransactionCoordinator(lambda: 0)
    listed = {a.api_key: (a.min_version, a.max_version) for a in b.api_versions(4, {}).api_keys}
    assert listed[0] == (0, 13) and listed[1] == (4, 18) and listed[2] == (1, 11) and listed[3] == (0, 13)
    assert listed[8] == (2, 10) and listed[9] == (1, 10) and listed[10] == (0, 6) and listed[18] == (0, 4)
    assert all(listed[k] == (0, 5) for k in (22, 24, 26))
    for k, (lo, hi) in listed.items():  # every listed version parses, except Produce v0-2 (KAFKA-18659)
        m = P.REQUESTS[k]
        assert m.valid == ((3, 13) if k == 0 else (lo, hi)), m.name


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_every_version_names_topics_with_distinct_nonzero_ids(tmp_path, version):
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(2, {"Topics": [{"Name": "a", "NumPartitions": 2, "ReplicationFactor": 1}, {"Name": "b", "NumPartitions": 1, "ReplicationFactor": 1}]})
    r = roundtrip(b, 3, version, {"Topics": None if version >= 1 else []})
    names = [t["Name"] for t in r["Topics"]]
    assert names == ["a", "b"]  # v0's empty array and v1+'s null both ask for every topic
    if version >= 10:
        ids = {t["TopicId"] for t in r["Topics"]}
        assert len(ids) == 2 and "AAAAAAAAAAAAAAAAAAAAAA" not in ids


@pytest.mark.parametrize("version", [4, 12, 13, 18])
def test_fetch_by_name_and_by_topic_id(tmp_path, version):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(2, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]})
    recs = build_v2([Record(0, 1000, b"k", b"v", [])], base_offset=0)
    assert b.produce(9, {"Acks": 1, "TopicData": [{"Name": "t", "PartitionData": [{"Index": 0, "Records": recs}]}]}
                     ).responses[0].partition_responses[0].error_code == 0
    tid = b.partitions[("t", 0)].topic_id
    part = {"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}
    topic = {"TopicId": tid, "Partitions": [part]} if version >= 13 else {"Topic": "t", "Partitions": [part]}
    body = b.read_path.fetch(version, {"MaxBytes": 1 << 20, "Topics": [topic, {"TopicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                                                      "Topic": "nope", "Partitions": [part]}]})
    first, second = body.responses
    assert first.partitions[0].error_code == 0 and first.partitions[0].high_watermark == 1
    assert second.partitions[0].error_code == (E.UNKNOWN_TOPIC_ID if version >= 13 else
                                                    E.UNKNOWN_TOPIC_OR_PARTITION)


def test_unsupported_versions_are_refused_as_kafka_refuses_them():
    (ev,) = Connection().receive_data(frame(3, 13, {}).replace(struct.pack(">hh", 3, 13), struct.pack(">hh", 3, 14), 1))
    assert isinstance(ev, UnsupportedRequest) and (ev.api_key, ev.api_version) == (3, 14)
    (ev,) = Connection().receive_data(frame(0, 3, {"Acks": 1}).replace(struct.pack(">hh", 0, 3), struct.pack(">hh", 0, 2), 1))
    assert isinstance(ev, UnsupportedRequest)  # Produce v0-2: listed, never accepted


def _lo(b, ts, iso=0, version=7, topic="t"):
    r = b.read_path.list_offsets(version, {"IsolationLevel": iso, "Topics": [{"Name": topic, "Partitions": [
        {"PartitionIndex": 0, "Timestamp": ts}]}]})
    p = r.topics[0].partitions[0]
    return p.offset, p.timestamp, p.leader_epoch


def _append(b, recs, **kw):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    s = b.partitions[("t", 0)]
    base = s.next_offset
    err, _ = s.append(build_v2([Record(base + i, ts, b"k", b"v", []) for i, ts in enumerate(recs)],
                               base_offset=base, **v2_kwargs(**kw)))
    assert err == 0


def test_list_offsets_max_timestamp_isolation_and_epochs(wb):
    # offsets 0-2: timestamps 100, 900, 900 (the first 900 is the answer to -3), then 3-4 plain
    _append(wb, [100, 900, 900])
    _append(wb, [200, 300])
    assert _lo(wb, E_MAX) == (1, 900, 0)
    assert _lo(wb, 250) == (1, 900, 0)  # the first record at or after 250
    # an open transaction at 5-6 carries the largest timestamp: read_uncommitted sees it, read_committed
    # answers -1 (the found offset is at or past the last stable offset), as Kafka does
    _append(wb, [5000, 5001], transactional=True, producer_id=7, producer_epoch=0, base_sequence=0)
    assert wb.partitions[("t", 0)].last_stable_offset == 5
    assert _lo(wb, E_MAX, iso=0) == (6, 5001, 0)
    assert _lo(wb, E_MAX, iso=1) == (-1, -1, -1)
    assert _lo(wb, 4000, iso=1) == (-1, -1, -1) and _lo(wb, 4000, iso=0)[0] == 5
    assert _lo(wb, 250, iso=1) == (1, 900, 0)
    assert _lo(wb, -1, iso=1)[0] == 5 and _lo(wb, -1, iso=0)[0] == 7


def test_list_offsets_leader_epoch_is_the_offsets_not_the_current_one(sample_broker):
    # orders-0's leader-epoch-checkpoint: epoch 0 from 0, epoch 1 from 203
    assert _lo(sample_broker, 1_700_000_104_889, topic="orders")[2] == 0
    assert _lo(sample_broker, -2, topic="orders") == (0, -1, 0)
    off, _ts, epoch = _lo(sample_broker, E_MAX, topic="orders")
    assert off >= 203 and epoch == 1


def test_list_offsets_max_timestamp_answers_the_batchs_own_epoch_as_kafka_38(tmp_path):
    """Kafka 3.8+ (KAFKA-16310) answers -3 with the first record carrying the max timestamp and
    the leader epoch stamped in that batch (-1 when it has none), not the epoch cache's; a max
    timestamp no record carries (a lying header) gives no answer."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    part = str(tmp_path / "logs" / "t-0")
    write_partition(part, [build_v2([Record(0, 100, b"k", b"v", []), Record(1, 900, b"k", b"v", []),
                                     Record(2, 900, b"k", b"v", [])], base_offset=0, partition_leader_epoch=5),
                           build_v2([Record(3, 200, b"k", b"v", [])], base_offset=3)])
    b = ReplayBroker(str(tmp_path / "logs"))
    assert _lo(b, E_MAX) == (1, 900, 5)
    part = str(tmp_path / "logs2" / "t-0")
    write_partition(part, [build_v2([Record(0, 100, b"k", b"v", [])], base_offset=0,
                                    header=HeaderOverrides(max_timestamp=7000)),
                           build_v2([Record(1, 900, b"k", b"v", [])], base_offset=1)])
    assert _lo(ReplayBroker(str(tmp_path / "logs2")), E_MAX) == (-1, -1, -1)


E_MAX = -3


@pytest.fixture
def sample_broker():
    from tests.conftest import SAMPLE
    return ReplayBroker(SAMPLE)


ADMIN_BODIES = {
    60: {}, 35: {"Topics": None}, 61: {"Topics": [{"Name": "orders", "PartitionIndexes": [0, 9]}]},
    66: {"StateFilters": ["Ongoing", "NoSuchState"]}, 65: {"TransactionalIds": ["x"]},
    23: {"Topics": [{"Topic": "orders", "Partitions": [{"Partition": 0, "LeaderEpoch": 0}]}]},
    32: {"Resources": [{"ResourceType": 2, "ResourceName": "orders", "ConfigurationKeys": None},
                       {"ResourceType": 2, "ResourceName": "nope", "ConfigurationKeys": None},
                       {"ResourceType": 4, "ResourceName": "0", "ConfigurationKeys": ["log.dirs"]}]},
}


@pytest.mark.parametrize("api_key", sorted(ADMIN_BODIES))
def test_admin_apis_answer_every_advertised_version_over_the_wire(sample_broker, api_key):
    lo, hi = P.ADVERTISED[api_key]
    for v in range(lo, hi + 1):
        r = roundtrip(sample_broker, api_key, v, ADMIN_BODIES[api_key])
        assert r, (api_key, v)
    if api_key == 66:
        assert r["UnknownStateFilters"] == ["NoSuchState"]
    if api_key == 32:
        assert [x["ErrorCode"] for x in r["Results"]] == [0, E.UNKNOWN_TOPIC_OR_PARTITION, 0]
        assert [c["Name"] for c in r["Results"][2]["Configs"]] == ["log.dirs"]


def _sample(fields, structs, version, seed):
    """A value for every field present at ``version``, none of them the default (so each field's
    bytes matter), from the schema alone."""
    from specs.message_schema import _in, _sub_fields
    obj = {}
    for i, f in enumerate(fields):
        if not _in(f.versions, version):
            continue
        t, n = f.type, seed + i + 2
        elem = t[2:] if t.startswith("[]") else t
        sub = _sub_fields(f, structs)
        if sub is not None:
            one = _sample(sub, structs, version, n)
            obj[f.name] = [one] if t.startswith("[]") else one
            continue
        if elem in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            v = n % 100 + 1
        elif elem == "float64":
            v = n + 0.5
        elif elem == "bool":
            v = not f.default
        elif elem == "string":
            v = f"s{n}"
        elif elem == "uuid":
            import base64
            v = base64.urlsafe_b64encode(bytes([n % 250 + 1]) * 16).decode().rstrip("=")
        elif elem == "bytes":
            import base64
            v = base64.b64encode(b"b%d" % n).decode()
        elif elem == "records":
            v = b"r%d" % n
        else:
            raise AssertionError(f"{f.name}: no sample for type {t}")
        obj[f.name] = [v, v] if t.startswith("[]") else v
    return obj


@pytest.mark.parametrize("messages", [P.REQUESTS, P.RESPONSES], ids=["requests", "responses"])
def test_every_schema_round_trips_every_field_over_its_version_range(messages):
    for key, m in messages.items():
        for v in range(m.valid[0], m.valid[1] + 1):
            obj = _sample(m.fields, m.structs, v, key)
            data = m.build(obj, v)
            back = m.read(data, v)
            assert m.build(back, v) == data, (m.name, v)
            assert _subset(obj, back), (m.name, v)   # every field present at v comes back as it went in


def _subset(sent, got) -> bool:
    """Every value sent is read back (reading also fills the fields absent at that version)."""
    if isinstance(sent, dict):
        return isinstance(got, dict) and all(k in got and _subset(x, got[k]) for k, x in sent.items())
    if isinstance(sent, list):
        return isinstance(got, list) and len(sent) == len(got) and all(map(_subset, sent, got))
    return sent == got


@pytest.mark.parametrize("version", [3, 9, 12, 13])
def test_produce_by_name_and_by_topic_id(wb, version):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    recs = build_v2([Record(0, 1000, b"k", b"v", [])], base_offset=0)
    tid = wb.partitions[("t", 0)].topic_id
    topic = {"TopicId": tid} if version >= 13 else {"Name": "t"}
    r = roundtrip(wb, 0, version, {"Acks": 1, "TopicData": [
        dict(topic, PartitionData=[{"Index": 0, "Records": recs}]),
        dict({"TopicId": "AAAAAAAAAAAAAAAAAAAAAQ"} if version >= 13 else {"Name": "bad/name"},
             PartitionData=[{"Index": 0, "Records": recs}])]})
    ok, bad = r["Responses"]
    assert ok["PartitionResponses"][0]["ErrorCode"] == 0 and ok["PartitionResponses"][0]["BaseOffset"] == 0
    assert bad["PartitionResponses"][0]["ErrorCode"] == (E.UNKNOWN_TOPIC_ID if version >= 13 else
                                                         E.UNKNOWN_TOPIC_OR_PARTITION)
    assert wb.partitions[("t", 0)].log_end_offset == 1
