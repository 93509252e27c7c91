"""One request of every API the replay broker answers, in every version it advertises and parses, with
fields that make the answer carry something (a topic with records, a group with commits, unknown names
for the error paths): the exchanges ``tests/test_message_types.py`` encodes both ways (the response class
and the PascalCase dict ``Message.build`` takes)."""
import asyncio
import inspect
import os
import struct

from kafkaforensics.broker.dispatch import API_TABLE, BrokerCore
from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.protocol import Connection, Request, request_header_version
from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from specs import protocol_messages as P
from specs.protocol_messages import ApiKey as K

TOPIC_ID_FROM = {K.PRODUCE: 13, K.FETCH: 13, K.OFFSET_COMMIT: 10, K.OFFSET_FETCH: 10}


def _topic(key: int, version: int, name: str, tid: str, **rest) -> dict:
    """A request's topic, by name or (from the API's version that has it) by id."""
    by_id = version >= TOPIC_ID_FROM.get(key, 99)
    name_key = "Topic" if key in (K.FETCH, K.OFFSET_FOR_LEADER_EPOCH) else "Name"
    return dict({"TopicId": tid} if by_id else {name_key: name}, **rest)


def request(key: int, version: int, tid: str) -> dict:
    """The request body of ``key`` at ``version`` (topic ``t``, id ``tid``)."""
    t = lambda **rest: _topic(key, version, "t", tid, **rest)  # noqa: E731
    batch = build_v2([Record(0, 1_700_000_000_000, b"k", b"v", [])], base_offset=0)
    bodies = {
        K.PRODUCE: {"Acks": 1, "TimeoutMs": 1000, "TopicData": [t(PartitionData=[{"Index": 0, "Records": batch}])]},
        K.FETCH: {"MaxBytes": 1 << 20, "IsolationLevel": 1, "Topics": [
            t(Partitions=[{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}]),
            _topic(key, version, "nope", "AAAAAAAAAAAAAAAAAAAAAQ", Partitions=[{"Partition": 0}])]},
        K.LIST_OFFSETS: {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Timestamp": ts}
                                                                 for ts in (-2, -1, 0)]},
                                    {"Name": "nope", "Partitions": [{"PartitionIndex": 0}]}]},
        K.METADATA: {"Topics": [{"Name": "t"}, {"Name": "nope"}, {"Name": "../x"}]},
        K.OFFSET_COMMIT: {"GroupId": "g", "GenerationIdOrMemberEpoch": -1,
                          "Topics": [t(Partitions=[{"PartitionIndex": 0, "CommittedOffset": 1}])]},
        K.OFFSET_FETCH: ({"Groups": [{"GroupId": "g", "Topics": None}, {"GroupId": "h", "Topics": [
            t(PartitionIndexes=[0])]}]} if version >= 8 else
                          {"GroupId": "g", "Topics": None if version >= 2 else [t(PartitionIndexes=[0, 1])]}),
        K.FIND_COORDINATOR: {"Key": "g", "CoordinatorKeys": ["g", "x"]} if version >= 4 else {"Key": "g"},
        K.JOIN_GROUP: {"GroupId": "j", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000, "MemberId": "",
                       "ProtocolType": "consumer", "Protocols": [{"Name": "range", "Metadata": "AAE="}]},
        K.HEARTBEAT: {"GroupId": "j", "GenerationId": 1, "MemberId": "m"},
        K.LEAVE_GROUP: ({"GroupId": "j", "Members": [{"MemberId": "m"}]} if version >= 3
                        else {"GroupId": "j", "MemberId": "m"}),
        K.SYNC_GROUP: {"GroupId": "j", "GenerationId": 1, "MemberId": "m"},
        K.DESCRIBE_GROUPS: {"Groups": ["g", "nope"]},
        K.LIST_GROUPS: {},
        K.API_VERSIONS: {"ClientSoftwareName": "c", "ClientSoftwareVersion": "1"},
        K.CREATE_TOPICS: {"Topics": [{"Name": "u", "NumPartitions": 2, "ReplicationFactor": 1,
                                      "Configs": [{"Name": "retention.ms", "Value": "1000"}]},
                                     {"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1},
                                     {"Name": "bad/", "NumPartitions": 1, "ReplicationFactor": 1}]},
        K.DELETE_TOPICS: ({"Topics": [{"Name": "nope"}, {"TopicId": "AAAAAAAAAAAAAAAAAAAAAQ"}]} if version >= 6
                          else {"TopicNames": ["nope", "__consumer_offsets"]}),
        K.DELETE_RECORDS: {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "Offset": 0},
                                                                   {"PartitionIndex": 9, "Offset": 0}]}]},
        K.INIT_PRODUCER_ID: {"TransactionalId": None, "TransactionTimeoutMs": 60000},
        K.OFFSET_FOR_LEADER_EPOCH: {"Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "LeaderEpoch": 0},
                                                                             {"Partition": 3, "LeaderEpoch": 0}]}]},
        K.ADD_PARTITIONS_TO_TXN: ({"Transactions": [{"TransactionalId": "x", "ProducerId": 1, "ProducerEpoch": 0,
                                                     "Topics": [{"Name": "t", "Partitions": [0]}]}]}
                                  if version >= 4 else
                                  {"V3AndBelowTransactionalId": "x", "V3AndBelowProducerId": 1,
                                   "V3AndBelowTopics": [{"Name": "t", "Partitions": [0]}]}),
        K.ADD_OFFSETS_TO_TXN: {"TransactionalId": "x", "ProducerId": 1, "GroupId": "g"},
        K.END_TXN: {"TransactionalId": "x", "ProducerId": 1, "Committed": True},
        K.TXN_OFFSET_COMMIT: {"TransactionalId": "x", "GroupId": "g", "ProducerId": 1, "Topics": [
            {"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}]},
        K.DESCRIBE_CONFIGS: {"Resources": [{"ResourceType": 2, "ResourceName": "t", "ConfigurationKeys": None},
                                           {"ResourceType": 4, "ResourceName": "", "ConfigurationKeys": None},
                                           {"ResourceType": 2, "ResourceName": "nope"}],
                             "IncludeSynonyms": True},
        K.DESCRIBE_LOG_DIRS: {"Topics": None},
        K.CREATE_PARTITIONS: {"Topics": [{"Name": "t", "Count": 3}, {"Name": "nope", "Count": 2}]},
        K.DESCRIBE_CLUSTER: {},
        K.DESCRIBE_PRODUCERS: {"Topics": [{"Name": "t", "PartitionIndexes": [0, 5]}]},
        K.DESCRIBE_TRANSACTIONS: {"TransactionalIds": ["x"]},
        K.LIST_TRANSACTIONS: {},
        K.CONSUMER_GROUP_HEARTBEAT: {"GroupId": "c", "MemberId": "m", "MemberEpoch": 0, "RebalanceTimeoutMs": 1000,
                                     "SubscribedTopicNames": ["t"], "TopicPartitions": []},
        K.CONSUMER_GROUP_DESCRIBE: {"GroupIds": ["c", "nope"]},
    }
    return bodies[key]


def versions(broker: ReplayBroker) -> list[tuple[int, int]]:
    """(api key, version) of every API the broker answers, in every version it advertises and parses."""
    return [(k, v) for k in sorted(API_TABLE) for v in range(*_span(broker, k)) if broker.supports(k, v)]


def _span(broker: ReplayBroker, key: int) -> tuple[int, int]:
    lo, hi = broker.advertised()[key]
    return lo, hi + 1


def frame(key: int, version: int, body: dict, corr: int = 7) -> bytes:
    head = P.RequestHeader.build({"RequestApiKey": key, "RequestApiVersion": version, "CorrelationId": corr,
                                  "ClientId": "x"}, request_header_version(key, version))
    payload = head + P.REQUESTS[key].build(body, version)
    return struct.pack(">i", len(payload)) + payload


def parsed(key: int, version: int, body: dict) -> Request:
    (ev,) = Connection(max_frame=1 << 24).receive_data(frame(key, version, body))
    assert isinstance(ev, Request), ev
    return ev


def broker_with_data(log_dir: str) -> BrokerCore:
    """A writable broker over a new ``log_dir``: topic ``t`` with one batch, group ``g`` with a commit,
    a KIP-848 group ``c``."""
    os.makedirs(log_dir, exist_ok=True)
    core = BrokerCore(ReplayBroker(log_dir, writable=True), GroupCoordinator(None, initial_delay_ms=0))
    tid = "AAAAAAAAAAAAAAAAAAAAAA"
    for key, version in ((K.CREATE_TOPICS, 5), (K.PRODUCE, 9), (K.OFFSET_COMMIT, 8), (K.CONSUMER_GROUP_HEARTBEAT, 0)):
        answer(core, parsed(key, version, request(key, version, tid)))
    return core


def answer(core: BrokerCore, ev: Request):
    """The handler's response (a Deferred's awaited) for one parsed request."""
    body = API_TABLE[ev.api_key](core, ev)
    if inspect.isawaitable(body):
        async def wait(aw):
            return await asyncio.wait_for(aw, 10)
        body = asyncio.run(wait(body))
    return body


def topic_id(core: BrokerCore) -> str:
    return core.broker.partitions[("t", 0)].topic_id
