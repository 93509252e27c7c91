"""__consumer_offsets of every group protocol: each record type decoded, unknown types shown undecoded
(never as a tombstone), the classic consumer protocol's bytes expanded, the 4.1+ topic-id tag named;
`kfx groups` skips aborted transactional commits and lists the members of classic, KIP-848 consumer,
share and streams groups."""
import base64
import json
import struct

import pytest

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect.groups import committed_offsets, group_members
from kafkaforensics.records.internal_topics import decode_offsets, encode_offset_commit
from kafkaforensics.log.writer import write_partition
from specs import kafka_messages as K

T0 = 1_700_000_000_000
I16 = struct.Struct(">h")
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAABw"


def rec(rtype, key, value=None, vversion=0):
    """(key bytes, value bytes or None) of coordinator record type ``rtype``."""
    kind, ks, vs = K.OFFSETS_RECORDS[rtype]
    kb = I16.pack(rtype) + ks.build(key, rtype)
    return kb, None if value is None else I16.pack(vversion) + vs.build(value, vversion)


@pytest.mark.parametrize("rtype", sorted(K.OFFSETS_RECORDS))
def test_every_record_type_decodes(rtype):
    kind, ks, vs = K.OFFSETS_RECORDS[rtype]
    keyobj = {f.name: "g" if f.type == "string" else 3 for f in ks.fields}
    k, v = decode_offsets(*rec(rtype, keyobj, {}, vs.valid[0]))
    assert k["kind"] == kind and k["type"] == str(rtype)
    assert v is not None and "data" in v
    k, v = decode_offsets(*rec(rtype, keyobj, None))
    assert v is None and k["kind"] == kind   # a real tombstone


def test_unknown_record_type_is_undecoded_not_a_tombstone():
    key = I16.pack(99) + b"\x00\x01g"
    k, v = decode_offsets(key, b"\x00\x00payload")
    assert k["unknown"] and v is not None
    assert base64.b64decode(v["undecoded"]) == b"\x00\x00payload"
    # a known type with a value version this decoder does not know: undecoded too
    kb, _ = rec(3, {"GroupId": "g"})
    k, v = decode_offsets(kb, I16.pack(77) + b"xyz")
    assert v == {"version": "77", "undecoded": base64.b64encode(b"xyz").decode()}


def test_offset_commit_topic_id_tag_is_named():
    key, value = rec(1, {"group": "g", "topic": "t", "partition": 0},
                     {"offset": 5, "metadata": "", "commitTimestamp": T0, "topicId": TOPIC_ID}, vversion=4)
    assert value.endswith(b"\x01\x00\x10" + base64.urlsafe_b64decode(TOPIC_ID + "=="))  # tag 0, 16 bytes
    _, v = decode_offsets(key, value)
    assert v["data"]["topicId"] == TOPIC_ID and "_unknownTaggedFields" not in v["data"]


def _subscription(topics):
    return base64.b64encode(I16.pack(1) + K.ConsumerProtocolSubscription.build(
        {"Topics": topics, "UserData": None, "OwnedPartitions": []}, 1)).decode()


def _assignment(tps):
    return base64.b64encode(I16.pack(1) + K.ConsumerProtocolAssignment.build(
        {"AssignedPartitions": [{"Topic": t, "Partitions": p} for t, p in tps], "UserData": None}, 1)).decode()


def _classic_group():
    return rec(2, {"group": "classic-g"}, {
        "protocolType": "consumer", "generation": 4, "protocol": "range", "leader": "m1",
        "currentStateTimestamp": T0, "members": [{
            "memberId": "m1", "groupInstanceId": None, "clientId": "c1", "clientHost": "/10.0.0.1",
            "rebalanceTimeout": 300000, "sessionTimeout": 45000,
            "subscription": _subscription(["orders"]), "assignment": _assignment([("orders", [0, 1])])}]},
        vversion=3)


def test_classic_subscription_and_assignment_are_expanded():
    _, v = decode_offsets(*_classic_group())
    m = v["data"]["members"][0]
    assert m["subscription"] == {"version": 1, "data": {"Topics": ["orders"], "UserData": None,
                                                        "OwnedPartitions": [], "GenerationId": -1,
                                                        "RackId": None}}
    assert m["assignment"]["data"]["AssignedPartitions"] == [{"Topic": "orders", "Partitions": [0, 1]}]


def test_classic_member_of_a_consumer_group_has_its_protocols_expanded():
    _, v = decode_offsets(*rec(5, {"GroupId": "g", "MemberId": "m"}, {
        "ClientId": "c", "SubscribedTopicNames": ["orders"], "ClassicMemberMetadata": {
            "SessionTimeoutMs": 45000, "SupportedProtocols": [{"Name": "range", "Metadata": _subscription(["orders"])}]}}))
    proto = v["data"]["ClassicMemberMetadata"]["SupportedProtocols"][0]
    assert proto["Metadata"]["data"]["Topics"] == ["orders"] and proto["Metadata"]["version"] == 1


def _txn(pid, records, base):
    return build_v2([Record(base + i, T0, k, v, []) for i, (k, v) in enumerate(records)], base_offset=base,
                    transactional=True, producer=BatchProducer(producer_id=pid, producer_epoch=0, base_sequence=0))


def _marker(pid, commit, base):
    return build_v2([Record(base, T0, control_record_key(1 if commit else 0), end_txn_marker_value(3), [])],
                    base_offset=base, transactional=True, control=True,
                    producer=BatchProducer(producer_id=pid, producer_epoch=0))


def test_groups_skip_aborted_and_open_transactional_commits(tmp_path, kfx):
    c = lambda p, o: encode_offset_commit("eos", "orders", p, o, commit_ts=T0)  # noqa: E731
    batches = [
        build_v2([Record(0, T0, *c(0, 5), [])], base_offset=0),   # plain commit
        _txn(7, [c(0, 8), c(1, 8)], 1),                            # aborted below
        _txn(9, [c(0, 10)], 3),                                    # committed below, interleaved with 7
        _marker(7, False, 4),
        _marker(9, True, 5),
        _txn(11, [c(0, 99)], 6),                                   # still open at the end
    ]
    logdir = tmp_path / "logs"
    write_partition(str(logdir / "__consumer_offsets-0"), batches)
    write_partition(str(logdir / "orders-0"), [build_v2([Record(i, T0, b"k", b"v", []) for i in range(12)],
                                                        base_offset=0)])
    rows = committed_offsets(str(logdir))
    assert [(r["partition"], r["offset"], r["lag"]) for r in rows] == [(0, 10, 2)]
    r = kfx("groups", logdir, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["offsets"][0]["offset"] == 10


def test_members_of_classic_consumer_and_share_groups(tmp_path, kfx):
    recs = [
        _classic_group(),
        rec(5, {"GroupId": "kip848", "MemberId": "a"}, {"InstanceId": None, "RackId": None, "ClientId": "ca",
                                                         "ClientHost": "/h", "SubscribedTopicNames": ["orders"],
                                                         "SubscribedTopicRegex": None, "ServerAssignor": "uniform"}),
        rec(8, {"GroupId": "kip848", "MemberId": "a"}, {"MemberEpoch": 12, "AssignedPartitions": [
            {"TopicId": TOPIC_ID, "Partitions": [2]}]}),
        rec(5, {"GroupId": "kip848", "MemberId": "b"}, {"ClientId": "cb", "SubscribedTopicNames": ["orders"]}),
        rec(5, {"GroupId": "kip848", "MemberId": "b"}),          # member b left: tombstone
        rec(10, {"GroupId": "sg", "MemberId": "s"}, {"ClientId": "cs", "ClientHost": "/s",
                                                      "SubscribedTopicNames": ["q"]}),
    ]
    logdir = tmp_path / "logs"
    write_partition(str(logdir / "__consumer_offsets-3"),
                    [build_v2([Record(i, T0, k, v, []) for i, (k, v) in enumerate(recs)], base_offset=0)])
    rows = group_members(str(logdir))
    got = [(m["group"], m["protocol"], m["memberId"], m["subscribedTopics"], m["assignment"]) for m in rows]
    assert got == [("classic-g", "classic", "m1", ["orders"], ["orders:0,1"]),
                   ("kip848", "consumer", "a", ["orders"], [f"{TOPIC_ID}:2"]),
                   ("sg", "share", "s", ["q"], None)]
    r = kfx("groups", logdir, "--members", "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)["members"]) == 3
    r = kfx("groups", logdir, "--members")
    assert r.exit_code == 0 and "kip848" in r.stdout and "classic-g" in r.stdout
    seg = str(logdir / "__consumer_offsets-3" / "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder")
    assert r.exit_code == 0 and "consumer_group_member_metadata" in r.stdout and "payload: null" in r.stdout
    assert r.stdout.count("payload: null") == 1


def test_transaction_log_4x_tags_are_named():
    """TransactionLogValue v1: PreviousProducerId (0), NextProducerId (1), ClientTransactionVersion (2)
    and NextProducerEpoch (3) tagged fields, read by name."""
    from kafkaforensics.records.internal_topics import decode_transaction_log
    v = {"ProducerId": 4000, "PreviousProducerId": 3999, "NextProducerId": 4001, "ProducerEpoch": 32766,
         "TransactionTimeoutMs": 60000, "TransactionStatus": 2, "TransactionPartitions": [],
         "TransactionLastUpdateTimestampMs": T0, "TransactionStartTimestampMs": T0,
         "ClientTransactionVersion": 2, "NextProducerEpoch": 0}
    raw = K.TransactionLogValue.build(v, 1)
    assert raw.endswith(b"\x02\x02\x00\x02" + b"\x03\x02\x00\x00")   # tag 2 = 2, tag 3 = 0 (epoch overflowed)
    k, got = decode_transaction_log(I16.pack(0) + K.TransactionLogKey.build({"TransactionalId": "tx"}, 0),
                                    I16.pack(1) + raw)
    assert got["data"] == v and k["data"]["TransactionalId"] == "tx"


def _streams_group(group="ledger", member="s-1"):
    """A streams group's records (types 17, 23, 19, 20, 21, 22) as Kafka 4.x writes them."""
    return [
        rec(17, {"GroupId": group}, {"Epoch": 5, "MetadataHash": -3, "LastAssignmentConfigs": [
            {"Key": "num.standby.replicas", "Value": "1"}]}),
        rec(23, {"GroupId": group}, {"Epoch": 2, "Subtopologies": [
            {"SubtopologyId": "0", "SourceTopics": ["orders"], "RepartitionSourceTopics": [],
             "CopartitionGroups": [{"SourceTopics": [0], "SourceTopicRegex": [], "RepartitionSourceTopics": []}]},
            {"SubtopologyId": "1", "SourceTopics": [], "RepartitionSourceTopics": [
                {"Name": f"{group}-by-user-repartition", "Partitions": 4, "ReplicationFactor": 3,
                 "TopicConfigs": [{"key": "retention.ms", "value": "-1"}]}]}]}),
        rec(19, {"GroupId": group, "MemberId": member}, {
            "InstanceId": "i-1", "RackId": "r1", "ClientId": "app-StreamThread-1", "ClientHost": "/10.0.0.9",
            "TopologyEpoch": 2, "ProcessId": "p-9", "UserEndpoint": {"Host": "h", "Port": 65000},
            "ClientTags": [{"Key": "zone", "Value": "b"}]}),
        rec(20, {"GroupId": group}, {"AssignmentEpoch": 5, "AssignmentTimestamp": T0}),
        rec(21, {"GroupId": group, "MemberId": member}, {"ActiveTasks": [{"SubtopologyId": "0", "Partitions": [0, 1]}],
                                                         "StandbyTasks": [{"SubtopologyId": "1", "Partitions": [2]}]}),
        rec(22, {"GroupId": group, "MemberId": member}, {
            "MemberEpoch": 5, "PreviousMemberEpoch": 4, "State": 0,
            "ActiveTasks": [{"SubtopologyId": "0", "Partitions": [0, 1], "AssignmentEpochs": [5, 5]}],
            "StandbyTasks": [{"SubtopologyId": "1", "Partitions": [2]}],
            "WarmupTasks": [{"SubtopologyId": "1", "Partitions": [3]}],
            "ActiveTasksPendingRevocation": [{"SubtopologyId": "0", "Partitions": [7]}]}),
    ]


def test_streams_group_records_decode_with_their_field_names():
    """Types 17 and 19-23 (KIP-1071) are decoded field by field; 18 and 24 are no record types and stay
    undecoded."""
    got = {k["type"]: (k, v) for k, v in (decode_offsets(*r) for r in _streams_group())}
    assert sorted(got, key=int) == ["17", "19", "20", "21", "22", "23"]
    k, v = got["17"]
    assert k["kind"] == "streams_group_metadata" and k["data"] == {"GroupId": "ledger"}
    assert v["data"] == {"Epoch": 5, "MetadataHash": -3, "ValidatedTopologyEpoch": -1,
                         "LastAssignmentConfigs": [{"Key": "num.standby.replicas", "Value": "1"}],
                         "StoredDescriptionTopologyEpoch": -1, "FailedDescriptionTopologyEpoch": -1}
    k, v = got["19"]
    assert k["data"] == {"GroupId": "ledger", "MemberId": "s-1"}
    assert (v["data"]["ProcessId"], v["data"]["UserEndpoint"], v["data"]["RebalanceTimeoutMs"]) == \
        ("p-9", {"Host": "h", "Port": 65000}, -1)
    assert got["20"][1]["data"] == {"AssignmentEpoch": 5, "AssignmentTimestamp": T0}
    assert got["21"][1]["data"]["StandbyTasks"] == [{"SubtopologyId": "1", "Partitions": [2]}]
    cur = got["22"][1]["data"]
    assert cur["ActiveTasks"] == [{"SubtopologyId": "0", "Partitions": [0, 1], "AssignmentEpochs": [5, 5]}]
    assert cur["StandbyTasks"][0]["AssignmentEpochs"] == [] and cur["ActiveTasksPendingRevocation"][0]["Partitions"] == [7]
    topo = got["23"][1]["data"]["Subtopologies"]
    assert topo[0]["CopartitionGroups"] == [{"SourceTopics": [0], "SourceTopicRegex": [], "RepartitionSourceTopics": []}]
    assert topo[1]["RepartitionSourceTopics"][0]["TopicConfigs"] == [{"key": "retention.ms", "value": "-1"}]
    for t in (18, 24):
        k, v = decode_offsets(I16.pack(t) + b"\x00\x01g", b"\x00\x00\x00")
        assert k["unknown"] and "undecoded" in v


def test_members_of_a_streams_group(tmp_path, kfx):
    """A streams member subscribes to its topology's source topics and holds tasks; a tombstone of its
    member metadata removes it."""
    recs = _streams_group() + _streams_group("gone", "x")[2:3] + [rec(19, {"GroupId": "gone", "MemberId": "x"})]
    logdir = tmp_path / "logs"
    write_partition(str(logdir / "__consumer_offsets-5"),
                    [build_v2([Record(i, T0, k, v, []) for i, (k, v) in enumerate(recs)], base_offset=0)])
    rows = group_members(str(logdir))
    assert [(m["group"], m["protocol"], m["memberId"], m["instanceId"], m["subscribedTopics"], m["assignment"],
             m["generation"]) for m in rows] == [
        ("ledger", "streams", "s-1", "i-1", ["ledger-by-user-repartition", "orders"],
         ["0:0,1", "1:2(standby)", "1:3(warmup)"], 5)]
    r = kfx("groups", logdir, "--members", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["members"][0]["protocol"] == "streams"
    seg = str(logdir / "__consumer_offsets-5" / "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder")
    assert r.exit_code == 0 and "undecoded" not in r.stdout and r.stdout.count("payload: null") == 1
    for name in ("streams_group_topology", "SubtopologyId", "ProcessId", "AssignmentEpochs", "AssignmentTimestamp"):
        assert name in r.stdout


@pytest.mark.parametrize("rtype,current,old", [
    (11, {"Epoch": 4, "MetadataHash": 9}, {"Epoch": 4}),
    (15, {"InitializingTopics": [], "InitializedTopics": [], "DeletingTopics": []},
     {"InitializedTopics": [{"TopicId": TOPIC_ID, "TopicName": "q", "Partitions": [0]}], "DeletingTopics": []}),
])
def test_share_group_records_of_kafka_40_still_decode(rtype, current, old):
    """Share groups were early access in Kafka 4.0; 4.1 changed the layout of ShareGroupMetadataValue
    and ShareGroupStatePartitionMetadataValue within version 0. A 4.0 value is read with 4.0's layout
    and says so; a current one is read with the current layout; type 9 (4.0 only) still decodes."""
    kind, ks, vs = K.OFFSETS_RECORDS[rtype]
    key = I16.pack(rtype) + ks.build({"GroupId": "sg"}, rtype)
    _, v = decode_offsets(key, I16.pack(0) + vs.build(current, 0))
    assert "layout" not in v and all(v["data"][f] == x for f, x in current.items())
    label, layout = K.KAFKA_40_LAYOUTS[vs.name]
    _, v = decode_offsets(key, I16.pack(0) + layout.build(old, 0))
    assert label == "4.0" and v["layout"] == "4.0" and v["data"] == old
    with pytest.raises(KafkaFormatError):   # neither layout: the schema error, as before
        decode_offsets(key, I16.pack(0) + b"\xff")
    k, v = decode_offsets(*rec(9, {"GroupId": "sg"}, {"Topics": [{"TopicId": TOPIC_ID, "TopicName": "q",
                                                                  "NumPartitions": 1, "PartitionMetadata": []}]}))
    assert k["kind"] == "share_group_partition_metadata" and v["data"]["Topics"][0]["NumPartitions"] == 1
