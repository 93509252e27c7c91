"""The request and response classes generated from the message schemas (specs.message_types): one a
message, snake_case attributes for every field, unknown fields refused as Message.build refuses them,
and the broker's handlers reading them (attributes, not dict keys)."""
import os
import pathlib
import subprocess
import sys

import pytest

from kafkaforensics.broker.dispatch import API_TABLE, Reply
from kafkaforensics.broker.group_coordinator import GroupCoordinator
from kafkaforensics.broker.protocol import encode_response_parts
from kafkaforensics.broker.replay import ReplayBroker
from specs import protocol_messages as P
from specs.message_schema import UnknownField
from specs.message_types import REQUEST_TYPES, RESPONSE_TYPES, Struct, snake, stub, typed
from specs.protocol_messages import ApiKey as K
from tests import broker_exchanges as X

ROOT = pathlib.Path(__file__).resolve().parent.parent

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
    (part,) = b.read_path.list_offsets(7, req).topics[0].partitions
    assert (part.error_code, part.offset) == (0, 0)
    with pytest.raises(UnknownField):
        b.read_path.list_offsets(7, {"Topics": [{"Name": "t", "Partitions": [{"Partition": 0, "Timestamp": -1}]}]})
    fetch = typed(K.FETCH, {"Topics": [{"Topic": "t", "Partitions": [{"Partition": 0, "PartitionMaxBytes": 100}]}]})
    assert b.read_path.fetch(12, fetch).responses[0].partitions[0].error_code == 0


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


# -- responses: the generated classes, encoded through Message.build as the dicts were ------------------

def _sparse(obj):
    """``obj`` as the handlers wrote their dicts: PascalCase keys, a field at its default left out."""
    out = {}
    for name, (attr, f) in obj.FIELDS.items():
        v = getattr(obj, attr)
        sub = obj.SUBS.get(name)
        if sub is not None and v is not None:
            v = [_sparse(x) for x in v] if f.type.startswith("[]") else _sparse(v)
        if v != f.default or type(v) is not type(f.default):
            out[name] = v
    return out


@pytest.mark.parametrize("key", sorted(API_TABLE), ids=[P.RESPONSES[k].name for k in sorted(API_TABLE)])
def test_every_answer_encodes_the_same_as_a_class_and_as_a_dict(tmp_path, key):
    """Each API the broker answers, each version it serves: the handler's answer is the response class
    and its bytes are those of the same answer as a PascalCase dict with the defaults left out (what the
    handlers returned before: a class's default is the schema's, as Message.build's)."""
    core = X.broker_with_data(str(tmp_path / "probe"))
    for k, version in X.versions(core.broker):
        if k != key:
            continue
        core = X.broker_with_data(str(tmp_path / f"v{version}"))
        body = X.answer(core, X.parsed(key, version, X.request(key, version, X.topic_id(core))))
        assert type(body) is RESPONSE_TYPES[key] and isinstance(body, Struct), (key, version, type(body))
        as_class = Reply(encode_response_parts(key, version, 7, body)).to_bytes()
        as_dict = Reply(encode_response_parts(key, version, 7, _sparse(body))).to_bytes()
        assert as_class == as_dict, (P.RESPONSES[key].name, version)
        m = P.RESPONSES[key]
        hv = 1 if m.is_flexible(version) and key != K.API_VERSIONS else 0
        _header, used = P.ResponseHeader.read_prefix(as_class[4:], hv)
        assert RESPONSE_TYPES[key].from_dict(m.read(as_class[4 + used:], version)).to_dict().keys() == \
            body.to_dict().keys()  # the bytes are a whole response of that version


def test_response_classes_are_named_with_their_structs_and_refuse_an_unknown_keyword():
    from specs import messages as M
    fr = M.FetchResponse
    assert fr is RESPONSE_TYPES[K.FETCH] and M.FetchRequest is REQUEST_TYPES[K.FETCH]
    assert fr.PartitionData is fr.SUBS["Responses"].SUBS["Partitions"]
    part = fr.PartitionData(partition_index=3, records=b"")
    assert (part.error_code, part.high_watermark, part.last_stable_offset, part.aborted_transactions) == (0, 0, -1, [])
    with pytest.raises(UnknownField, match=r"FetchResponse.Responses.Partitions has no field 'error' \(its fields: "
                                           r"partition_index, error_code"):
        fr.PartitionData(partition_index=3, error=1)
    with pytest.raises(TypeError, match="FetchResponse.Responses takes FetchableTopicResponse, not dict"):
        fr(responses=[{"Topic": "t"}]).to_dict()  # a dict inside a class is refused, never half converted
    # a struct two fields share is one class (ConsumerGroupDescribe's Assignment and TargetAssignment)
    cgd = M.ConsumerGroupDescribeResponse
    m = cgd.Member(assignment=cgd.Assignment(), target_assignment=cgd.Assignment())
    assert m.to_dict()["TargetAssignment"] == {"TopicPartitions": []}


def test_the_committed_stub_is_what_the_schemas_generate():
    """specs/messages.pyi (what the type checker reads for specs.messages) is regenerated from the schemas
    (``python -m specs.message_types``); a schema changed without it fails here."""
    committed = (ROOT / "specs" / "messages.pyi").read_text()
    assert committed == stub()
    assert "class PartitionData(Struct):" in committed and "error_code: int" in committed


def test_the_type_checker_refuses_a_misspelled_field_of_a_generated_class(tmp_path):
    """mypy reads the generated stub: a keyword or attribute that is no field, or a value of the wrong
    type, is an error (as the dict keys never were)."""
    pytest.importorskip("mypy", reason="mypy is in the test dependencies (pip install -e '.[test]')")
    code = ("from specs.messages import FetchResponse\n"
            "ok = FetchResponse.PartitionData(partition_index=1, error_code=0)\n"
            "ok.high_watermark = 5\n"
            "bad = FetchResponse.PartitionData(partition=1)\n"
            "ok.error = 3\n"
            "ok.error_code = 'none'\n")
    (tmp_path / "use_messages.py").write_text(code)
    got = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                          "--no-incremental", "--cache-dir", os.devnull, str(tmp_path / "use_messages.py")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line.split(": error: ")[0].rsplit(":", 1)[1] for line in got.stdout.splitlines() if ": error: " in line]
    assert errors == ["4", "5", "6"], got.stdout + got.stderr


def test_transaction_log_records_are_written_and_read_as_classes_with_the_same_bytes(tmp_path):
    """__transaction_state: the broker writes TransactionLogValue from its class and reads the log back
    through TransactionLogKey/Value; the record bytes are those of the PascalCase dict it wrote before."""
    from kafkaforensics.broker.read_path import valid_batches
    from kafkaforensics.broker.txn_coordinator import LogEntry
    from kafkaforensics.records.internal_topics import encode_transaction_log
    b = ReplayBroker(str(tmp_path), writable=True)
    entries = [LogEntry("a", 5, 1, 60000, 1, (("t", 0), ("t", 2), ("u", 1)), 10, 9, False),
               LogEntry("b", 6, 0, 1000, 4, (), 12, 11, True)]
    b.transactions.log_transactions(entries)
    assert b.transactions.logged_transactions() == {e.transactional_id: e for e in entries}
    got = sorted((r.key, r.value) for s in b.topics()["__transaction_state"] for bt in valid_batches(s)
                 for r in bt.records())
    want = sorted([
        encode_transaction_log("a", {"ProducerId": 5, "ProducerEpoch": 1, "TransactionTimeoutMs": 60000,
                                     "TransactionStatus": 1, "TransactionPartitions": [
                                         {"Topic": "t", "PartitionIds": [0, 2]}, {"Topic": "u", "PartitionIds": [1]}],
                                     "TransactionLastUpdateTimestampMs": 10, "TransactionStartTimestampMs": 9,
                                     "ClientTransactionVersion": 0}, value_version=0),
        encode_transaction_log("b", {"ProducerId": 6, "ProducerEpoch": 0, "TransactionTimeoutMs": 1000,
                                     "TransactionStatus": 4, "TransactionPartitions": [],
                                     "TransactionLastUpdateTimestampMs": 12, "TransactionStartTimestampMs": 11,
                                     "ClientTransactionVersion": 2}, value_version=1)])
    assert got == want
