"""__consumer_offsets of every group protocol: each record type decoded, unknown types shown undecoded
(never as a tombstone), the classic consumer protocol's bytes expanded, the 4.1+ topic-id tag named;
`kfx groups` skips aborted transactional commits and lists the members of classic and KIP-848 groups."""
import base64
import json
import struct

import pytest

from kafkaforensics.batch import Record
from kafkaforensics.builder import build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.groups import committed_offsets, group_members
from kafkaforensics.internal_topics import decode_offsets, encode_offset_commit
from kafkaforensics.writer import write_partition
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
                    transactional=True, producer_id=pid, producer_epoch=0, base_sequence=0)


def _marker(pid, commit, base):
    return build_v2([Record(base, T0, control_record_key(1 if commit else 0), end_txn_marker_value(3), [])],
                    base_offset=base, transactional=True, control=True, producer_id=pid, producer_epoch=0)


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
    from kafkaforensics.internal_topics import decode_transaction_log
    v = {"ProducerId": 4000, "PreviousProducerId": 3999, "NextProducerId": 4001, "ProducerEpoch": 32766,
         "TransactionTimeoutMs": 60000, "TransactionStatus": 2, "TransactionPartitions": [],
         "TransactionLastUpdateTimestampMs": T0, "TransactionStartTimestampMs": T0,
         "ClientTransactionVersion": 2, "NextProducerEpoch": 0}
    raw = K.TransactionLogValue.build(v, 1)
    assert raw.endswith(b"\x02\x02\x00\x02" + b"\x03\x02\x00\x00")   # tag 2 = 2, tag 3 = 0 (epoch overflowed)
    k, got = decode_transaction_log(I16.pack(0) + K.TransactionLogKey.build({"TransactionalId": "tx"}, 0),
                                    I16.pack(1) + raw)
    assert got["data"] == v and k["data"]["TransactionalId"] == "tx"
