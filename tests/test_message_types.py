"""The request and response classes generated from the message schemas (specs.message_types): one a
message, snake_case attributes for every field, unknown fields refused as Message.build refuses them,
and the broker's handlers reading them (attributes, not dict keys)."""
import pytest

from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.replay import ReplayBroker
from specs import protocol_messages as P
from specs.message_schema import UnknownField
from specs.message_types import REQUEST_TYPES, RESPONSE_TYPES, snake, typed
from specs.protocol_messages import ApiKey as K

MESSAGES = [(types, m) for types, by_key in ((REQUEST_TYPES, P.REQUESTS), (RESPONSE_TYPES, P.RESPONSES))
            for m in by_key.values()]


def _struct_fields(cls):
    yield cls
    for sub in cls.SUBS.values():
        yield from _struct_fields(sub)


@pytest.mark.parametrize("types, m", MESSAGES, ids=[m.name for _t, m in MESSAGES])
def test_every_message_has_a_generated_class_with_a_snake_case_attribute_a_field(types, m):
    cls = types[m.api_key]
    assert cls.__name__ == m.name
    assert [a for a, _f in cls.FIELDS.values()][:len(m.fields)] == [snake(f.name) for f in m.fields]
    for c in _struct_fields(cls):  # no two fields of a struct share an attribute
        assert len(c.ATTRS) == len(c.FIELDS), c.__name__


@pytest.mark.parametrize("types, m", MESSAGES, ids=[m.name for _t, m in MESSAGES])
def test_read_typed_and_back_builds_the_same_bytes_in_every_version(types, m):
    cls = types[m.api_key]
    for v in range(m.valid[0], m.valid[1] + 1):
        data = m.build({}, v)
        obj = cls.from_dict(m.read(data, v))
        assert m.build(obj.to_dict(), v) == data, (m.name, v)


def test_snake_case_names():
    assert [snake(n) for n in ("TopicId", "V3AndBelowTopics", "validateOnly", "MaxWaitMs", "ApiKey")] == \
        ["topic_id", "v3_and_below_topics", "validate_only", "max_wait_ms", "api_key"]


def test_attributes_nest_and_unknown_fields_are_refused():
    body = {"MaxWaitMs": 5, "Topics": [{"Topic": "t", "Partitions": [{"Partition": 2, "FetchOffset": 7}]}]}
    req = typed(K.FETCH, P.FetchRequest.read(P.FetchRequest.build(body, 12), 12))
    assert (req.max_wait_ms, req.topics[0].topic, req.topics[0].partitions[0].fetch_offset) == (5, "t", 7)
    assert req.max_bytes == 0x7FFFFFFF and req.topics[0].partitions[0].current_leader_epoch == -1  # defaults
    assert typed(K.FETCH, req) is req
    with pytest.raises(UnknownField, match="FetchRequest.Topics has no field 'Partition'"):
        typed(K.FETCH, {"Topics": [{"Partition": 1}]})
    with pytest.raises(UnknownField):
        REQUEST_TYPES[K.FETCH](max_wait=1)
    with pytest.raises(AttributeError):
        req.max_wait = 1  # __slots__: a misspelled attribute is no new field


def test_the_read_path_reads_typed_requests(tmp_path):
    """Fetch and ListOffsets take the generated class (a dict is typed first): a misspelled field is
    refused, never read as absent."""
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(5, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]})
    req = REQUEST_TYPES[K.LIST_OFFSETS](topics=[REQUEST_TYPES[K.LIST_OFFSETS].SUBS["Topics"](
        name="t", partitions=[REQUEST_TYPES[K.LIST_OFFSETS].SUBS["Topics"].SUBS["Partitions"](
            partition_index=0, timestamp=-1)])])
    (part,) = b.read_path.list_offsets(7, req)["Topics"][0]["Partitions"]
    assert (part["ErrorCode"], part["Offset"]) == (0, 0)
    with pytest.raises(UnknownField):
        b.read_path.list_offsets(7, {"Topics": [{"Name": "t", "Partitions": [{"Partition": 0, "Timestamp": -1}]}]})
    fetch = typed(K.FETCH, {"Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "PartitionMaxBytes": 100}]}]})
    assert b.read_path.fetch(12, fetch)["Responses"][0]["Partitions"][0]["ErrorCode"] == 0


def test_every_handler_family_refuses_a_misspelled_field(tmp_path):
    """Produce, the admin, transaction, topic-creation and group APIs read typed requests: a key that is no
    field of the request is refused (UnknownField), never taken as an absent field."""
    b = ReplayBroker(str(tmp_path), writable=True)
    b.topic_creation.create_topics(5, {"Topics": [{"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1}]})
    calls = [(b.write_admin.delete_records, 2, {"Topics": [{"Name": "t", "Partitions": [{"Partition": 0}]}]}),
             (b.admin.describe_configs, 4, {"Resources": [{"Type": 2, "ResourceName": "t"}]}),
             (b.transactions.end_txn, 3, {"TransactionId": "x", "Committed": True}),
             (b.topic_creation.create_topics, 5, {"Topics": [{"Name": "u", "Partitions": 1}]}),
             (b.produce, 9, {"Acks": 1, "TopicData": [{"Topic": "t", "PartitionData": []}]}),
             (GroupCoordinator(None).list_groups, 5, {"StatesFilters": ["Stable"]}),
             (GroupCoordinator(None).heartbeat, 4, {"GroupId": "g", "Generation": 1, "MemberId": "m"})]
    for handler, version, body in calls:
        with pytest.raises(UnknownField):
            handler(version, body)
    assert "u" not in b.topics()
