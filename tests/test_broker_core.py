"""The broker's sans-IO core driven with bytes, no sockets: the protocol's decisions (unsupported APIs
and versions, malformed frames, acks=0, long polls and their wake-ups and deadlines) and the error
paths a client rarely reaches (fenced producers, group generations, transactions)."""
import asyncio
import struct

import pytest

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.broker.dispatch import API_TABLE, BrokerCore, Close, Deferred, NoReply, Reply, WaitForData
from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.protocol import Connection, request_header_version
from kafkaforensics.broker.replay import ReplayBroker
from specs import kafka_errors as E
from specs import protocol_messages as P
from specs.protocol_messages import ApiKey as K
from tests.batch_args import v2_kwargs


def frame(api_key, version, body, corr=7, client="t") -> bytes:
    head = P.RequestHeader.build({"RequestApiKey": api_key, "RequestApiVersion": version, "CorrelationId": corr,
                                  "ClientId": client}, request_header_version(api_key, version))
    payload = head + (P.REQUESTS[api_key].build(body, version) if api_key in P.REQUESTS else b"")
    return struct.pack(">i", len(payload)) + payload


def outcome(core, data: bytes):
    """The core's one outcome for one framed request."""
    (ev,) = Connection(max_frame=1 << 20).receive_data(data)
    return core.handle(ev)


def decoded(reply, api_key, version, corr=7) -> dict:
    assert isinstance(reply, Reply), reply
    out = reply.to_bytes()
    assert struct.unpack(">i", out[:4])[0] == len(out) - 4
    m = P.RESPONSES[api_key]
    hv = 1 if m.is_flexible(version) and api_key != K.API_VERSIONS else 0
    header, used = P.ResponseHeader.read_prefix(out[4:], hv)
    assert header["CorrelationId"] == corr
    return m.read(out[4 + used:], version)


def ask(core, api_key, version, body, corr=7) -> dict:
    return decoded(outcome(core, frame(api_key, version, body, corr)), api_key, version, corr)


def records(*values, base=0, **kw) -> bytes:
    return build_v2([Record(base + i, 1000 + i, b"k", v, []) for i, v in enumerate(values)], base_offset=base, **v2_kwargs(**kw))


def produce_body(data, acks=1, topic="t", tid=None):
    return {"Acks": acks, "TimeoutMs": 1000, "TransactionalId": tid,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": data}]}]}


def fetch_body(offset, wait_ms=500, min_bytes=1, isolation=0, topic="t"):
    return {"ReplicaId": -1, "MaxWaitMs": wait_ms, "MinBytes": min_bytes, "MaxBytes": 1 << 20,
            "IsolationLevel": isolation,
            "Topics": [{"Topic": topic, "Partitions": [{"Partition": 0, "FetchOffset": offset,
                                                         "PartitionMaxBytes": 1 << 20}]}]}


@pytest.fixture
def core(tmp_path):
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(2, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]})
    return BrokerCore(b, GroupCoordinator(None, initial_delay_ms=0))


@pytest.fixture
def read_only(tmp_path):
    from tests.conftest import SAMPLE
    return BrokerCore(ReplayBroker(SAMPLE), GroupCoordinator(None))


# -- one dispatch ----------------------------------------------------------------------------------
def test_the_api_table_covers_every_api_that_api_versions_advertises(core, read_only):
    """One handler an ApiKey, for every key ApiVersions advertises (writable or not), and each answers."""
    for c in (core, read_only):
        advertised = ask(c, K.API_VERSIONS, 3, {"ClientSoftwareName": "t", "ClientSoftwareVersion": "1"})["ApiKeys"]
        assert {k["ApiKey"] for k in advertised} <= set(API_TABLE)
    assert sorted(API_TABLE) == sorted(P.ADVERTISED)
    assert API_TABLE[K.JOIN_GROUP] is BrokerCore.join_group  # the group APIs: the core's adapters
    assert not hasattr(core.broker, "handle") and not hasattr(core.broker, "handler")  # no second table


def test_a_handler_cannot_be_reached_by_its_name(core):
    """Routing is the table's alone: a method named after an API, on the core or on the broker,
    answers nothing (the read path answers ListOffsets; the admin object DescribeCluster)."""
    called = []

    class Named(BrokerCore):
        def list_offsets(self, r):
            called.append(r)

        def describe_cluster(self, r):
            called.append(r)

    named = Named(core.broker, GroupCoordinator(None, initial_delay_ms=0))
    named.broker.describe_cluster = lambda *a: called.append(a)
    body = {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [{"Name": "t", "Partitions": [
        {"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -1}]}]}
    assert ask(named, K.LIST_OFFSETS, 7, body)["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE
    assert ask(named, K.DESCRIBE_CLUSTER, 0, {})["Brokers"][0]["BrokerId"] == core.broker.node_id
    assert not called


# -- unsupported APIs and versions, malformed frames -------------------------------------------------
@pytest.mark.parametrize("key, version", [(999, 0), (-1, 0), (17, 1), (K.METADATA, 99), (K.FETCH, 3),
                                          (K.PRODUCE, 2)])
def test_an_api_or_version_not_served_closes_the_connection(read_only, key, version):
    head = P.RequestHeader.build({"RequestApiKey": key, "RequestApiVersion": version, "CorrelationId": 3,
                                  "ClientId": "t"}, request_header_version(key, version))
    out = outcome(read_only, struct.pack(">i", len(head)) + head)
    assert isinstance(out, Close) and f"v{version}" in out.reason


@pytest.mark.parametrize("key", [K.CREATE_TOPICS, K.INIT_PRODUCER_ID, K.END_TXN, K.DELETE_RECORDS])
def test_write_apis_are_not_served_read_only(read_only, key):
    lo = P.ADVERTISED[key][0]
    assert isinstance(outcome(read_only, frame(key, lo, {})), Close)


@pytest.mark.parametrize("version", [5, 99])
def test_api_versions_beyond_ours_are_answered_at_v0_with_unsupported_version(read_only, version):
    head = P.RequestHeader.build({"RequestApiKey": K.API_VERSIONS, "RequestApiVersion": version,
                                  "CorrelationId": 11, "ClientId": "t"}, 2)
    r = decoded(outcome(read_only, struct.pack(">i", len(head) + 2) + head + b"\x00\x00"), K.API_VERSIONS, 0, 11)
    assert r["ErrorCode"] == E.UNSUPPORTED_VERSION
    assert {a["ApiKey"] for a in r["ApiKeys"]} == set(P.ADVERTISED) - {K.CREATE_TOPICS, K.INIT_PRODUCER_ID,
                                                                       K.ADD_PARTITIONS_TO_TXN, K.END_TXN,
                                                                       K.ADD_OFFSETS_TO_TXN, K.TXN_OFFSET_COMMIT,
                                                                       K.DELETE_RECORDS, K.DELETE_TOPICS,
                                                                       K.CREATE_PARTITIONS}


@pytest.mark.parametrize("data, why", [
    (struct.pack(">i", 4) + b"\x00" * 4, "frame size 4"),                 # smaller than any header
    (struct.pack(">i", (1 << 20) + 1) + b"x" * 10, "frame size"),          # over max_frame
    (struct.pack(">i", -1), "frame size -1"),
    (struct.pack(">ihhih", 10, K.METADATA, 4, 1, 50), "bad request header"),  # client id longer than the frame
    (struct.pack(">ihhih", 11, K.METADATA, 4, 1, -1) + b"\x05", "malformed MetadataRequest v4"),
])
def test_a_bad_size_or_header_closes_the_connection(read_only, data, why):
    out = outcome(read_only, data)
    assert isinstance(out, Close) and why in out.reason


def test_a_closed_connection_reads_no_more(read_only):
    conn = Connection()
    (bad,) = conn.receive_data(struct.pack(">i", 2))
    assert isinstance(read_only.handle(bad), Close)
    assert conn.receive_data(frame(K.API_VERSIONS, 3, {})) == []


# -- acks=0 ----------------------------------------------------------------------------------------
def test_acks_0_produce_gets_no_reply_but_is_appended(core):
    out = outcome(core, frame(K.PRODUCE, 9, produce_body(records(b"a", b"b"), acks=0)))
    assert isinstance(out, NoReply)
    assert core.broker.partitions[("t", 0)].log_end_offset == 2
    r = ask(core, K.PRODUCE, 9, produce_body(records(b"c"), acks=1))
    assert r["Responses"][0]["PartitionResponses"][0]["BaseOffset"] == 2


# -- long polls ------------------------------------------------------------------------------------
def test_a_fetch_at_the_end_waits_and_a_produce_wakes_it(core):
    w = outcome(core, frame(K.FETCH, 12, fetch_body(0, wait_ms=60_000)))
    assert isinstance(w, WaitForData) and w.ends == {("t", 0): 0} and w.timeout_ms == 30_000  # capped
    assert core.wakeups() == []
    ask(core, K.METADATA, 12, {"Topics": None})  # other requests wake nothing
    assert core.wakeups() == []
    ask(core, K.PRODUCE, 9, produce_body(records(b"new")))
    assert core.wakeups() == [w]
    body = decoded(core.retry(w), K.FETCH, 12)
    (p,) = body["Responses"][0]["Partitions"]
    assert p["HighWatermark"] == 1 and p["Records"]
    assert core.waiting == {} and core.wakeups() == []


def test_a_deadline_answers_with_what_there_is(core):
    ask(core, K.PRODUCE, 9, produce_body(records(b"x")))
    w = outcome(core, frame(K.FETCH, 12, fetch_body(1, wait_ms=100)))
    assert isinstance(w, WaitForData) and w.timeout_ms == 100 and w.ends == {("t", 0): 1}
    (p,) = decoded(core.expire(w), K.FETCH, 12)["Responses"][0]["Partitions"]
    assert (p["ErrorCode"], p["HighWatermark"], p["Records"]) == (E.NONE, 1, b"")
    assert core.waiting == {}


def test_min_bytes_decides_the_wait(core):
    ask(core, K.PRODUCE, 9, produce_body(records(b"x")))
    # fewer bytes than MinBytes: wait; woken by a produce that still leaves it short: wait again
    w = outcome(core, frame(K.FETCH, 12, fetch_body(0, min_bytes=1 << 16)))
    assert isinstance(w, WaitForData)
    ask(core, K.PRODUCE, 9, produce_body(records(b"y")))
    again = core.retry(w)
    assert isinstance(again, WaitForData) and again.id == w.id and again.ends == {("t", 0): 2}
    core.forget(again)
    assert core.waiting == {}
    # enough bytes, MinBytes 0 or MaxWaitMs 0: answered at once
    assert isinstance(outcome(core, frame(K.FETCH, 12, fetch_body(0, min_bytes=1))), Reply)
    assert isinstance(outcome(core, frame(K.FETCH, 12, fetch_body(2, min_bytes=0))), Reply)
    assert isinstance(outcome(core, frame(K.FETCH, 12, fetch_body(2, wait_ms=0))), Reply)
    assert isinstance(outcome(core, frame(K.FETCH, 12, dict(fetch_body(2), Topics=[]))), Reply)  # no partition


def test_a_partition_error_is_answered_at_once(core):
    r = decoded(outcome(core, frame(K.FETCH, 12, fetch_body(5))), K.FETCH, 12)   # past the end
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == E.OFFSET_OUT_OF_RANGE
    r = decoded(outcome(core, frame(K.FETCH, 12, fetch_body(0, topic="nope"))), K.FETCH, 12)
    assert r["Responses"][0]["Partitions"][0]["ErrorCode"] == E.UNKNOWN_TOPIC_OR_PARTITION


def test_read_committed_waits_for_the_last_stable_offset(core):
    pid, epoch = _begin(core, "tx")
    ask(core, K.PRODUCE, 9, dict(produce_body(records(b"open", producer_id=pid, producer_epoch=epoch,
                                                      base_sequence=0, transactional=True)),
                                 TransactionalId="tx"))
    w = outcome(core, frame(K.FETCH, 12, fetch_body(0, isolation=1)))
    assert isinstance(w, WaitForData) and w.ends == {("t", 0): 0}
    ask(core, K.PRODUCE, 9, produce_body(records(b"plain")))   # past the open transaction: LSO stays
    assert core.wakeups() == []
    assert ask(core, K.END_TXN, 3, {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": epoch,
                                    "Committed": True})["ErrorCode"] == E.NONE
    assert core.wakeups() == [w]
    (p,) = decoded(core.retry(w), K.FETCH, 12)["Responses"][0]["Partitions"]
    assert p["LastStableOffset"] == 3 and p["AbortedTransactions"] == []


def test_a_deleted_topic_wakes_its_waiting_fetches(core):
    w = outcome(core, frame(K.FETCH, 12, fetch_body(0)))
    assert isinstance(w, WaitForData)
    ask(core, K.DELETE_TOPICS, 5, {"TopicNames": ["t"], "TimeoutMs": 1000})
    assert core.wakeups() == [w]
    (p,) = decoded(core.retry(w), K.FETCH, 12)["Responses"][0]["Partitions"]
    assert p["ErrorCode"] == E.UNKNOWN_TOPIC_OR_PARTITION


# -- producers and transactions --------------------------------------------------------------------
def _begin(core, tid):
    r = ask(core, K.INIT_PRODUCER_ID, 4, {"TransactionalId": tid, "TransactionTimeoutMs": 60000})
    pid, epoch = r["ProducerId"], r["ProducerEpoch"]
    r = ask(core, K.ADD_PARTITIONS_TO_TXN, 3, {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid,
                                               "V3AndBelowProducerEpoch": epoch,
                                               "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]})
    assert r["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == E.NONE
    return pid, epoch


def test_a_fenced_producer_epoch_is_refused_everywhere(core):
    pid, old = _begin(core, "tx")
    data = records(b"a", producer_id=pid, producer_epoch=old, base_sequence=0, transactional=True)
    assert ask(core, K.PRODUCE, 9, produce_body(data, tid="tx"))["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0
    new = ask(core, K.INIT_PRODUCER_ID, 4, {"TransactionalId": "tx", "TransactionTimeoutMs": 60000})
    # fenced (old + 1, the epoch the abort marker carries), then bumped for the new session, as
    # Kafka's CONCURRENT_TRANSACTIONS answer and the client's retry end
    assert (new["ProducerId"], new["ProducerEpoch"]) == (pid, old + 2)
    s = core.broker.partitions[("t", 0)]
    assert s.log_end_offset == 2 and s.last_stable_offset == 2  # the open transaction was aborted by the new session
    late = records(b"b", producer_id=pid, producer_epoch=old, base_sequence=1, transactional=True)
    r = ask(core, K.PRODUCE, 9, produce_body(late, tid="tx"))["Responses"][0]["PartitionResponses"][0]
    assert (r["ErrorCode"], r["BaseOffset"]) == (E.INVALID_PRODUCER_EPOCH, -1)
    fenced = {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": old}
    # PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before (KafkaApis maps it for older clients)
    assert ask(core, K.END_TXN, 3, dict(fenced, Committed=True))["ErrorCode"] == E.PRODUCER_FENCED
    assert ask(core, K.END_TXN, 1, dict(fenced, Committed=True))["ErrorCode"] == E.INVALID_PRODUCER_EPOCH
    assert ask(core, K.ADD_OFFSETS_TO_TXN, 3, dict(fenced, GroupId="g"))["ErrorCode"] == E.PRODUCER_FENCED
    assert ask(core, K.ADD_OFFSETS_TO_TXN, 1, dict(fenced, GroupId="g"))["ErrorCode"] == E.INVALID_PRODUCER_EPOCH
    r = ask(core, K.TXN_OFFSET_COMMIT, 3, dict(fenced, GroupId="g", Topics=[
        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}]))
    assert r["Topics"][0]["Partitions"][0]["ErrorCode"] == E.INVALID_PRODUCER_EPOCH
    wrong = dict(fenced, ProducerId=pid + 1, ProducerEpoch=old + 1)
    assert ask(core, K.END_TXN, 3, dict(wrong, Committed=False))["ErrorCode"] == E.INVALID_PRODUCER_ID_MAPPING
    assert s.log_end_offset == 2


def test_txn_offset_commit_needs_add_offsets_first_and_lands_on_commit(core):
    pid, epoch = _begin(core, "tx")
    ids = {"TransactionalId": "tx", "ProducerId": pid, "ProducerEpoch": epoch}
    commit = dict(ids, GroupId="g", Topics=[{"Name": "t", "Partitions": [{"PartitionIndex": 0,
                                                                          "CommittedOffset": 5}]}])
    r = ask(core, K.TXN_OFFSET_COMMIT, 3, commit)
    assert r["Topics"][0]["Partitions"][0]["ErrorCode"] == E.INVALID_TXN_STATE
    assert ask(core, K.ADD_OFFSETS_TO_TXN, 3, dict(ids, GroupId="g"))["ErrorCode"] == E.NONE
    assert ask(core, K.TXN_OFFSET_COMMIT, 3, commit)["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE
    fetched = {"GroupId": "g", "Topics": [{"Name": "t", "PartitionIndexes": [0]}]}
    assert ask(core, K.OFFSET_FETCH, 7, fetched)["Topics"][0]["Partitions"][0]["CommittedOffset"] == -1
    assert ask(core, K.END_TXN, 3, dict(ids, Committed=True))["ErrorCode"] == E.NONE
    assert ask(core, K.OFFSET_FETCH, 7, fetched)["Topics"][0]["Partitions"][0]["CommittedOffset"] == 5


# -- the group coordinator through the core ---------------------------------------------------------
def test_join_and_sync_are_deferred_until_the_group_settles(core):
    def run(version, api, body):
        out = outcome(core, frame(api, version, body))
        assert isinstance(out, Deferred)
        return decoded(core.finish(out.request, asyncio.run(_settled(out.awaitable))), api, version)

    join = {"GroupId": "g", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 1000, "MemberId": "",
            "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": "AA=="}]}
    first = run(5, K.JOIN_GROUP, join)
    assert first["ErrorCode"] == E.MEMBER_ID_REQUIRED and first["MemberId"]
    mid = first["MemberId"]
    joined = run(5, K.JOIN_GROUP, dict(join, MemberId=mid))
    assert (joined["ErrorCode"], joined["Leader"], joined["GenerationId"]) == (E.NONE, mid, 1)
    synced = run(3, K.SYNC_GROUP, {"GroupId": "g", "GenerationId": 1, "MemberId": mid,
                                   "Assignments": [{"MemberId": mid, "Assignment": "AQ=="}]})  # bytes fields: base64
    assert (synced["ErrorCode"], synced["Assignment"]) == (E.NONE, "AQ==")
    beat = {"GroupId": "g", "GenerationId": 1, "MemberId": mid}
    assert ask(core, K.HEARTBEAT, 4, beat)["ErrorCode"] == E.NONE
    assert ask(core, K.HEARTBEAT, 4, dict(beat, GenerationId=0))["ErrorCode"] == E.ILLEGAL_GENERATION
    assert ask(core, K.HEARTBEAT, 4, dict(beat, MemberId="x"))["ErrorCode"] == E.UNKNOWN_MEMBER_ID
    stale = run(3, K.SYNC_GROUP, {"GroupId": "g", "GenerationId": 0, "MemberId": mid, "Assignments": []})
    assert stale["ErrorCode"] == E.ILLEGAL_GENERATION
    left = ask(core, K.LEAVE_GROUP, 4, {"GroupId": "g", "Members": [{"MemberId": mid}, {"MemberId": "x"}]})
    assert [m["ErrorCode"] for m in left["Members"]] == [E.NONE, E.UNKNOWN_MEMBER_ID]


async def _settled(awaitable):
    return await awaitable


def test_offset_commit_and_fetch_v10_name_topics_by_id(core):
    tid = core.broker.partitions[("t", 0)].topic_id
    r = ask(core, K.OFFSET_COMMIT, 10, {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "",
                                        "Topics": [{"TopicId": tid, "Partitions": [
                                            {"PartitionIndex": 0, "CommittedOffset": 9}]}]})
    assert r["Topics"][0]["TopicId"] == tid and r["Topics"][0]["Partitions"][0]["ErrorCode"] == E.NONE
    r = ask(core, K.OFFSET_FETCH, 10, {"Groups": [{"GroupId": "g", "Topics": [{"TopicId": tid,
                                                                                "PartitionIndexes": [0]}]}]})
    (t,) = r["Groups"][0]["Topics"]
    assert t["TopicId"] == tid and t["Partitions"][0]["CommittedOffset"] == 9
    # the writable broker also wrote the commit to __consumer_offsets (one state: its log end moved)
    from kafkaforensics.broker.group_coordinator import offsets_partition_for
    assert core.broker.partitions[("__consumer_offsets", offsets_partition_for("g"))].log_end_offset == 1


def test_consumer_group_heartbeat_errors(core):
    beat = {"GroupId": "g", "MemberId": "m1", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000,
            "SubscribedTopicNames": ["t"], "TopicPartitions": []}
    r = ask(core, K.CONSUMER_GROUP_HEARTBEAT, 0, beat)
    assert r["ErrorCode"] == E.NONE and r["Assignment"]["TopicPartitions"][0]["Partitions"] == [0]
    ahead = ask(core, K.CONSUMER_GROUP_HEARTBEAT, 0, dict(beat, MemberEpoch=r["MemberEpoch"] + 5))
    assert ahead["ErrorCode"] == E.FENCED_MEMBER_EPOCH
    assert ask(core, K.CONSUMER_GROUP_HEARTBEAT, 0, dict(beat, MemberId="zz", MemberEpoch=3))["ErrorCode"] == \
        E.UNKNOWN_MEMBER_ID
    assert ask(core, K.CONSUMER_GROUP_HEARTBEAT, 0, dict(beat, GroupId=""))["ErrorCode"] == E.INVALID_GROUP_ID
    (g,) = ask(core, K.CONSUMER_GROUP_DESCRIBE, 0, {"GroupIds": ["g"]})["Groups"]
    assert [m["MemberId"] for m in g["Members"]] == ["m1"]


# -- one state per partition -----------------------------------------------------------------------
def test_the_partition_that_appends_is_the_one_served_and_reloads_the_same(core, tmp_path):
    s = core.broker.partitions[("t", 0)]
    pid, epoch = _begin(core, "tx")
    ask(core, K.PRODUCE, 9, produce_body(records(b"a", b"b")))
    ask(core, K.PRODUCE, 9, produce_body(records(b"c", producer_id=pid, producer_epoch=epoch,
                                                 base_sequence=0, transactional=True), tid="tx"))
    assert core.broker.partitions[("t", 0)] is s and (s.log_end_offset, s.last_stable_offset) == (3, 2)
    r = ask(core, K.LIST_OFFSETS, 7, {"ReplicaId": -1, "IsolationLevel": 1, "Topics": [
        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}]})
    assert r["Topics"][0]["Partitions"][0]["Offset"] == 2
    again = ReplayBroker(str(tmp_path)).partitions[("t", 0)]
    assert (again.log_end_offset, again.last_stable_offset, again.segments, again.topic_id, again.leader_epoch) == \
        (s.log_end_offset, s.last_stable_offset, s.segments, s.topic_id, s.leader_epoch)
    assert sorted(again.state.producers) == sorted(s.state.producers) == [pid]


def test_delete_records_moves_the_log_start_as_kafka_and_keeps_other_checkpoint_entries(tmp_path):
    """DeleteRecords (UnifiedLog.maybeIncrementLogStartOffset): the log start moves, the leader-epoch
    cache is truncated from the start and saved, log-start-offset-checkpoint keeps the entries of
    partitions this broker does not serve; DeleteTopics drops the deleted partition's entry only."""
    from kafkaforensics.log.checkpoint_file import LOG_START_OFFSET, read_offsets, update_offsets
    from kafkaforensics.log.leader_epochs import LeaderEpochCache
    from kafkaforensics.log.writer import write_partition
    write_partition(str(tmp_path / "t-0"), [records(b"a", b"b", partition_leader_epoch=0),
                                            records(b"c", b"d", b"e", base=2, partition_leader_epoch=1)])
    ck = str(tmp_path / LOG_START_OFFSET)
    update_offsets(ck, {("elsewhere", 3): 7})
    b = ReplayBroker(str(tmp_path), writable=True)
    s = b.partitions[("t", 0)]
    assert (s.log_start_offset, s.log_end_offset, s.epochs) == (0, 5, LeaderEpochCache([(0, 0), (1, 2)]))
    r = b.write_admin.delete_records(2, {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Offset": 3}]}]})
    assert r.topics[0].partitions[0].to_dict() == {"PartitionIndex": 0, "LowWatermark": 3, "ErrorCode": E.NONE}
    assert read_offsets(ck) == {("elsewhere", 3): 7, ("t", 0): 3}
    assert s.epochs == LeaderEpochCache.read(str(tmp_path / "t-0")) == LeaderEpochCache([(1, 3)])
    assert b.admin.end_offset_for_epoch(s, 0) == (0, 3) and b.admin.end_offset_for_epoch(s, 1) == (1, 5)
    again = ReplayBroker(str(tmp_path)).partitions[("t", 0)]  # a restart loads the same
    assert (again.log_start_offset, again.log_end_offset, again.epochs, again.epoch_at(3)) == (3, 5, s.epochs, 1)
    b.write_admin.delete_topics(5, {"TopicNames": ["t"], "TimeoutMs": 1000})
    assert read_offsets(ck) == {("elsewhere", 3): 7}


def test_a_live_log_loads_as_kafkas_log_loader(tmp_path):
    """LiveLog's one walk (Partition.walk): a batch failing its CRC stays in the log (the log end is
    after it: LogSegment.readNextOffset checks no CRC) but feeds neither the producer state nor the
    newest epoch, and is listed as damage; the epoch cache loses entries from the log end on."""
    from kafkaforensics.log.leader_epochs import LeaderEpochCache
    from kafkaforensics.log.live_log import LiveLog
    from kafkaforensics.log.segment import LOG, file_name
    from kafkaforensics.log.writer import write_partition
    d = tmp_path / "t-0"
    write_partition(str(d), [records(b"a", b"b", partition_leader_epoch=0),
                             records(b"c", base=2, partition_leader_epoch=1)])
    raw = bytearray((d / file_name(0, LOG)).read_bytes())
    raw[-1] ^= 0xFF  # the second batch's last byte: its CRC fails
    (d / file_name(0, LOG)).write_bytes(bytes(raw))
    LeaderEpochCache([(0, 0), (1, 2), (4, 9)]).write(str(d))
    s = LiveLog(str(d))
    assert (s.log_start_offset, s.log_end_offset, s.leader_epoch, s.epochs) == (0, 3, 0, LeaderEpochCache([(0, 0), (1, 2)]))
    assert [(p.kind, p.offset) for p in s.damage] == [("crc-mismatch", 2)]
    (d / file_name(6, LOG)).write_bytes(b"")  # an empty newest segment: the log ends at its base
    s = LiveLog(str(d))
    assert ([seg.base_offset for seg in s.segments], s.log_end_offset, s.active, s.epoch_at(1)) == ([0, 6], 6, 6, 0)
