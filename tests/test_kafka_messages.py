"""Every schema of specs/kafka_messages.py, every version in Kafka's definitions: build(parse(x)) == x
for values drawn from the schema itself (hypothesis), and what is read is what was built."""
import base64

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specs import kafka_messages as K
from specs.message_schema import _in, _sub_fields

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _scalar(t):
    if t in _INTS:
        b = _INTS[t]
        return st.integers(-(1 << (b - 1)), (1 << (b - 1)) - 1)
    if t == "uint16":
        return st.integers(0, 0xFFFF)
    if t == "uint32":
        return st.integers(0, 0xFFFFFFFF)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="))
    if t == "string":
        return st.text(max_size=12)
    if t == "bytes":
        return st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
    if t == "records":
        return st.binary(max_size=12)
    return None


def _value(f, version, structs, t=None):
    t = t or f.type
    s = _scalar(t)
    if s is None and t.startswith("[]"):
        sub = _sub_fields(f, structs)
        elem = _struct(sub, version, structs) if sub is not None else _value(f, version, structs, t[2:])
        s = st.lists(elem, max_size=3)
    elif s is None:
        s = _struct(_sub_fields(f, structs), version, structs)
    if _in(f.nullable, version) and t == f.type:
        s = st.none() | s
    return s


def _struct(fields, version, structs):
    return st.fixed_dictionaries({f.name: _value(f, version, structs) for f in fields
                                  if _in(f.versions, version) or (f.tag is not None and _in(f.tagged, version))})


CASES = [(m, v) for m in K.ALL_MESSAGES for v in range(m.valid[0], m.valid[1] + 1)]


def test_every_registry_schema_is_listed():
    assert {m.name for m in K.METADATA_RECORDS.values()} <= {m.name for m in K.ALL_MESSAGES}
    assert K.METADATA_RECORDS[28].name == "ClearElrRecord"
    assert len(CASES) > 90


@pytest.mark.parametrize("msg,version", CASES, ids=[f"{m.name}-v{v}" for m, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_build_parse_round_trip(msg, version, data):
    obj = data.draw(_struct(msg.fields, version, msg.structs))
    x = msg.build(obj, version)
    parsed = msg.read(x, version)
    assert msg.build(parsed, version) == x
    _assert_holds(parsed, obj)


def _assert_holds(parsed, obj):
    """What was built is read back (fields absent from the version read as their defaults)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            _assert_holds(parsed[k], v)
    elif isinstance(obj, list):
        assert len(parsed) == len(obj)
        for p, o in zip(parsed, obj):
            _assert_holds(p, o)
    else:
        assert parsed == obj


def test_broker_registration_log_dirs_are_tagged_fields():
    """3.7+ brokers register their log dirs in tagged field 0 (RegisterBrokerRecord v3) and tag 2
    (BrokerRegistrationChangeRecord v2): built, they are on the wire and read back by name."""
    dirs = ["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"]
    reg = {"BrokerId": 1, "IncarnationId": "AAAAAAAAAAAAAAAAAAAAAw", "BrokerEpoch": 9, "EndPoints": [],
           "Features": [], "Rack": None, "LogDirs": dirs}
    raw = K.RegisterBrokerRecord.build(reg, 3)
    assert raw[-36:-32] == b"\x01\x00\x21\x03"   # one tagged field, tag 0, 33 bytes: 2 uuids
    assert K.RegisterBrokerRecord.read(raw, 3)["LogDirs"] == dirs
    ch = K.BrokerRegistrationChangeRecord.build({"BrokerId": 1, "BrokerEpoch": 9, "LogDirs": dirs}, 2)
    assert ch[12:15] == b"\x01\x02\x21"          # ... and tag 2 here
    assert K.BrokerRegistrationChangeRecord.read(ch, 2)["LogDirs"] == dirs


def test_current_kafka_records_are_listed():
    """The definitions follow Kafka 4.x: the streams group records (types 17, 19-23; 18 and 24 are
    none), UnregisterControllerRecord (apiKey 29), and every one of them in the round trips above."""
    names = {m.name for m in K.ALL_MESSAGES}
    for t, kind in ((17, "streams_group_metadata"), (19, "streams_group_member_metadata"),
                    (20, "streams_group_target_assignment_metadata"), (21, "streams_group_target_assignment_member"),
                    (22, "streams_group_current_member_assignment"), (23, "streams_group_topology")):
        k, ks, vs = K.OFFSETS_RECORDS[t]
        assert k == kind and ks.valid == (t, t) and {ks.name, vs.name} <= names
    assert 18 not in K.OFFSETS_RECORDS and 24 not in K.OFFSETS_RECORDS
    assert K.METADATA_RECORDS[29].name == "UnregisterControllerRecord"
    assert K.RegisterBrokerRecord.valid == (0, 4) and K.BrokerRegistrationChangeRecord.valid == (0, 3)
    assert {v[1].name for v in K.KAFKA_40_LAYOUTS.values()} <= names   # Kafka 4.0's share layouts round-trip too


def test_cordoned_log_dirs_are_tagged_fields():
    """KIP-1066: RegisterBrokerRecord v4 tag 1 and BrokerRegistrationChangeRecord v3 tag 3, null by
    default (then not on the wire)."""
    d = ["AAAAAAAAAAAAAAAAAAAAAQ"]
    reg = {"BrokerId": 1, "IncarnationId": "AAAAAAAAAAAAAAAAAAAAAw", "BrokerEpoch": 9, "EndPoints": [],
           "Features": [], "Rack": None, "LogDirs": d}
    without = K.RegisterBrokerRecord.build(reg, 4)
    assert K.RegisterBrokerRecord.read(without, 4)["CordonedLogDirs"] is None
    raw = K.RegisterBrokerRecord.build(dict(reg, CordonedLogDirs=d), 4)
    u = base64.urlsafe_b64decode(d[0] + "==")
    assert raw[-39:] == b"\x02" + b"\x00\x11\x02" + u + b"\x01\x11\x02" + u   # two tagged fields: tags 0 and 1
    assert K.RegisterBrokerRecord.read(raw, 4)["CordonedLogDirs"] == d
    ch = K.BrokerRegistrationChangeRecord.build({"BrokerId": 1, "BrokerEpoch": 9, "CordonedLogDirs": d}, 3)
    assert ch[12:15] == b"\x01\x03\x11"          # one tagged field, tag 3, 17 bytes: 1 uuid
    assert K.BrokerRegistrationChangeRecord.read(ch, 3)["CordonedLogDirs"] == d


# -- build accepts nothing unknown; defaults need not be written ---------------------------------
def test_a_misspelled_key_raises_naming_it_and_the_message():
    from specs import protocol_messages as P
    from specs.message_schema import UnknownField
    body = {"Brokers": [], "ClusterId": "c", "ControllerId": 0, "Topics": []}
    P.RESPONSES[3].build(body, 12)  # the well-spelled body builds
    with pytest.raises(UnknownField, match=r"MetadataResponse has no field 'ErrorCod'"):
        P.RESPONSES[3].build({**body, "ErrorCod": 5}, 12)
    topic = {"ErrorCode": 0, "Name": "t", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA", "IsInternal": False, "Partitions": []}
    with pytest.raises(UnknownField, match=r"MetadataResponse\.Topics\[\] has no field 'PartitionCount'"):
        P.RESPONSES[3].build({**body, "Topics": [{**topic, "PartitionCount": 1}]}, 12)
    # a field of another version is a field of the message: left out of this version's bytes, no error
    assert P.RESPONSES[3].build({**body, "ErrorCode": 0}, 12) == P.RESPONSES[3].build(body, 12)


def test_fields_left_out_take_their_defaults():
    from specs import protocol_messages as P
    m = P.RESPONSES[3]
    for version in (0, 1, 9, 12):
        spelled = {f.name: f.default for f in m.fields}
        assert m.build({}, version) == m.build(spelled, version)
        back = m.read(m.build({}, version), version)
        assert back["ThrottleTimeMs"] == 0 and back["Topics"] == []


def test_what_read_adds_is_accepted_back():
    """``read`` reports tags it does not know in ``_unknownTaggedFields``; build takes a read message back."""
    from specs import protocol_messages as P
    m = P.RESPONSES[3]
    read = m.read(m.build({"Topics": [], "ClusterId": "c"}, 12), 12)
    assert m.build({**read, "_unknownTaggedFields": {7: "AA=="}}, 12) == m.build(read, 12)
