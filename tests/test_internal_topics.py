"""Internal-topic decoders against hand-packed bytes for every key/value version; `kfx groups`."""
import json
import os
import struct

import pytest

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import decode_metadata, decode_offsets, decode_transaction_log
from kafkaforensics.log.writer import write_partition
from specs import kafka_messages as K
from specs.message_schema import uvarint

T0 = 1_700_000_000_000


def s16(x: str) -> bytes:          # classic string: int16 length
    b = x.encode()
    return struct.pack(">h", len(b)) + b


def cstr(x: str | None) -> bytes:  # compact string: unsigned varint length + 1
    if x is None:
        return b"\x00"
    b = x.encode()
    return uvarint(len(b) + 1) + b


def cbytes(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


KEY = lambda v: struct.pack(">h", v) + s16("grp") + s16("orders") + struct.pack(">i", 7)  # noqa: E731


@pytest.mark.parametrize("version,body,expect", [
    (0, struct.pack(">q", 42) + s16("m") + struct.pack(">q", T0), {"leaderEpoch": -1, "expireTimestamp": -1}),
    (1, struct.pack(">q", 42) + s16("m") + struct.pack(">qq", T0, T0 + 5), {"expireTimestamp": T0 + 5}),
    (2, struct.pack(">q", 42) + s16("m") + struct.pack(">q", T0), {"leaderEpoch": -1}),
    (3, struct.pack(">qi", 42, 9) + s16("m") + struct.pack(">q", T0), {"leaderEpoch": 9}),
    (4, struct.pack(">qi", 42, 9) + cstr("m") + struct.pack(">q", T0) + b"\x00", {"leaderEpoch": 9}),
])
def test_offset_commit_every_version(version, body, expect):
    for kv in (0, 1):
        k, v = decode_offsets(KEY(kv), struct.pack(">h", version) + body)
        assert k == {"type": str(kv), "kind": "offset_commit", "data": {"group": "grp", "topic": "orders", "partition": 7}}
        assert v["version"] == str(version)
        d = v["data"]
        assert (d["offset"], d["metadata"], d["commitTimestamp"]) == (42, "m", T0)
        for key, val in expect.items():
            assert d[key] == val
        # and our builder writes exactly those bytes back
        assert K.OffsetCommitValue.build(d, version) == body
    assert decode_offsets(KEY(1), None)[1] is None  # tombstone


def _member(version):
    b = s16("m-1") if version < 4 else cstr("m-1")
    if version >= 3:
        b += s16("inst") if version < 4 else cstr("inst")
    b += (s16("client") + s16("/10.0.0.1")) if version < 4 else (cstr("client") + cstr("/10.0.0.1"))
    if version >= 1:
        b += struct.pack(">i", 300000)
    b += struct.pack(">i", 45000)
    b += (struct.pack(">i", 3) + b"sub" + struct.pack(">i", 2) + b"as") if version < 4 else (cbytes(b"sub") + cbytes(b"as"))
    return b + (b"\x00" if version >= 4 else b"")


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_every_version(version):
    flex = version >= 4
    body = (cstr("consumer") if flex else s16("consumer")) + struct.pack(">i", 5)
    body += (cstr("range") + cstr("m-1")) if flex else (s16("range") + s16("m-1"))
    if version >= 2:
        body += struct.pack(">q", T0)
    body += (uvarint(2) if flex else struct.pack(">i", 1)) + _member(version)
    body += b"\x00" if flex else b""
    key = struct.pack(">h", 2) + s16("grp")
    k, v = decode_offsets(key, struct.pack(">h", version) + body)
    assert k["kind"] == "group_metadata" and k["data"] == {"group": "grp"}
    d = v["data"]
    assert (d["protocolType"], d["generation"], d["protocol"], d["leader"]) == ("consumer", 5, "range", "m-1")
    (m,) = d["members"]
    assert (m["memberId"], m["clientId"], m["sessionTimeout"]) == ("m-1", "client", 45000)
    assert m["groupInstanceId"] == ("inst" if version >= 3 else None)
    assert m["rebalanceTimeout"] == (300000 if version >= 1 else -1)
    assert K.GroupMetadataValue.build(d, version) == body


@pytest.mark.parametrize("version", [0, 1])
def test_transaction_log_every_version(version):
    flex = version >= 1
    body = struct.pack(">qhib", 4000, 2, 60000, 3)
    parts = [("t", [0, 2])]
    if flex:
        body += uvarint(len(parts) + 1)
        for t, ids in parts:
            body += cstr(t) + uvarint(len(ids) + 1) + b"".join(struct.pack(">i", i) for i in ids) + b"\x00"
    else:
        body += struct.pack(">i", len(parts))
        for t, ids in parts:
            body += s16(t) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    body += struct.pack(">qq", T0 + 1, T0)
    if flex:  # tagged fields: NextProducerId (tag 1) = 4001
        tagged = uvarint(1) + uvarint(8) + struct.pack(">q", 4001)
        body += uvarint(1) + tagged
    k, v = decode_transaction_log(struct.pack(">h", 0) + s16("txn-1"), struct.pack(">h", version) + body)
    assert k["data"] == {"TransactionalId": "txn-1"}
    d = v["data"]
    assert (d["ProducerId"], d["ProducerEpoch"], d["TransactionTimeoutMs"], d["TransactionStatus"]) == (4000, 2, 60000, 3)
    assert d["TransactionPartitions"] == [{"Topic": "t", "PartitionIds": [0, 2]}]
    assert d["NextProducerId"] == (4001 if flex else -1) and d["PreviousProducerId"] == -1
    assert K.TransactionLogValue.build(d, version) == body


def test_cluster_metadata_records():
    body = cstr("orders") + bytes(range(16)) + b"\x00"   # TopicRecord v0: Name, TopicId, no tagged fields
    d = decode_metadata(uvarint(1) + uvarint(K.TopicRecord.api_key) + uvarint(0) + body)
    assert d["type"] == "TopicRecord" and d["data"]["Name"] == "orders"
    import base64
    assert base64.urlsafe_b64decode(d["data"]["TopicId"] + "==") == bytes(range(16))
    assert len(K.METADATA_RECORDS) >= 20
    for api_key, m in K.METADATA_RECORDS.items():  # every record type, every version, round trips
        for v in range(m.valid[0], min(m.valid[1], 20) + 1):
            empty = m.read(m.build({}, v), v)
            assert m.build(empty, v) == m.build({}, v)


def _offsets_partition(tmp_path):
    from kafkaforensics.records.internal_topics import encode_offset_commit
    batches, off = [], 0
    for topic, part, o in (("orders", 0, 5), ("orders", 0, 9), ("orders", 1, 3), ("gone", 0, 1)):
        k, v = encode_offset_commit("g1", topic, part, o, commit_ts=T0 + off)
        batches.append(build_v2([Record(off, T0 + off, k, v, [])], base_offset=off))
        off += 1
    k, _ = encode_offset_commit("g1", "gone", 0, 0)
    batches.append(build_v2([Record(off, T0 + off, k, None, [])], base_offset=off))  # tombstone
    logdir = tmp_path / "logs"
    write_partition(str(logdir / "__consumer_offsets-13"), batches)
    write_partition(str(logdir / "orders-0"), [build_v2([Record(i, T0, b"k", b"v", []) for i in range(12)], base_offset=0)])
    return logdir


def test_groups_and_the_offsets_decoder(tmp_path, kfx):
    logdir = _offsets_partition(tmp_path)
    r = kfx("groups", logdir, "--json")
    assert r.exit_code == 0
    rows = json.loads(r.stdout)["offsets"]
    assert [(x["topic"], x["partition"], x["offset"], x["logEndOffset"], x["lag"]) for x in rows] == \
        [("orders", 0, 9, 12, 3), ("orders", 1, 3, None, None)]
    seg = os.path.join(logdir, "__consumer_offsets-13", "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder")
    assert r.exit_code == 0
    assert '"kind": "offset_commit"' in r.stdout and '"offset": 9' in r.stdout
    r = kfx("dump", seg, "--offsets-decoder", "--format", "json")
    recs = [rec for line in r.stdout.splitlines() for rec in json.loads(line)["records"]]
    assert recs[-1]["decoded"]["value"] is None and recs[0]["decoded"]["key"]["data"]["topic"] == "orders"


def test_cluster_metadata_log_with_snapshot_header_footer(tmp_path, kfx):
    """A KRaft metadata log: control batches (snapshot header/footer) and records, decoded by dump."""
    from kafkaforensics.records.builder import control_record_key
    header = K.SnapshotHeaderRecord.build({"Version": 0, "LastContainedLogTimestamp": T0}, 0)
    footer = K.SnapshotFooterRecord.build({"Version": 0}, 0)
    topic = uvarint(1) + uvarint(K.TopicRecord.api_key) + uvarint(0) + K.TopicRecord.build(
        {"Name": "orders", "TopicId": "q3Bq1nEAR5uD4qPQ0Kh0bw"}, 0)
    part = uvarint(1) + uvarint(K.PartitionRecord.api_key) + uvarint(0) + K.PartitionRecord.build(
        {"PartitionId": 0, "TopicId": "q3Bq1nEAR5uD4qPQ0Kh0bw", "Replicas": [1], "Isr": [1], "Leader": 1,
         "LeaderEpoch": 3, "PartitionEpoch": 0}, 0)
    batches = [build_v2([Record(0, T0, control_record_key(3), header, [])], base_offset=0, control=True),
               build_v2([Record(1, T0, None, topic, []), Record(2, T0, None, part, [])], base_offset=1),
               build_v2([Record(3, T0, control_record_key(4), footer, [])], base_offset=3, control=True)]
    p = write_partition(str(tmp_path / "__cluster_metadata-0"), batches)
    seg = os.path.join(p, "00000000000000000000.log")
    r = kfx("dump", seg, "--cluster-metadata-decoder", "--format", "json")
    assert r.exit_code == 0
    dec = [rec["decoded"] for line in r.stdout.splitlines() for rec in json.loads(line)["records"]]
    assert dec[0]["control"]["type"] == "SnapshotHeaderRecord"
    assert dec[0]["control"]["data"]["LastContainedLogTimestamp"] == T0
    assert dec[1]["value"]["type"] == "TopicRecord" and dec[1]["value"]["data"]["Name"] == "orders"
    assert dec[2]["value"]["data"]["Leader"] == 1 and dec[2]["value"]["data"]["LeaderEpoch"] == 3
    assert dec[3]["control"]["type"] == "SnapshotFooterRecord"
    r = kfx("dump", seg, "--cluster-metadata-decoder")
    assert "SnapshotHeaderRecord" in r.stdout and '"Name": "orders"' in r.stdout


# --- printed fields: exactly the version's (issue 50) -------------------------------------------

def _fields_of(fields, version, flexible, structs):
    """The field names a version's bytes carry (no tagged field): Kafka's message JSON, read off the schema."""
    return {f.name for f in fields
            if not (flexible and f.tag is not None and from_range(f.tagged, version)) and from_range(f.versions, version)}


def from_range(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


def _internal_values():
    """(decoder, schema, version) of every value an internal topic holds, every version."""
    for _, (_, _, vs) in sorted(K.OFFSETS_RECORDS.items()):
        for v in range(vs.valid[0], vs.valid[1] + 1):
            yield "offsets", vs, v
    for v in range(K.TransactionLogValue.valid[0], K.TransactionLogValue.valid[1] + 1):
        yield "transaction-log", K.TransactionLogValue, v
    for _, (_, _, vs) in sorted(K.SHARE_STATE_RECORDS.items()):
        for v in range(vs.valid[0], min(vs.valid[1], 20) + 1):
            yield "share-group-state", vs, v
    for reg in (K.METADATA_RECORDS, K.REMOTE_LOG_METADATA_RECORDS):
        for _, vs in sorted(reg.items()):
            for v in range(vs.valid[0], min(vs.valid[1], 20) + 1):
                yield "metadata", vs, v


@pytest.mark.parametrize("decoder,schema,version", list(_internal_values()),
                         ids=lambda x: getattr(x, "name", str(x)))
def test_printed_fields_are_exactly_the_versions(decoder, schema, version):
    """A value built at its defaults prints exactly the fields its version has (no field of another
    version, no tagged field the bytes do not carry): Kafka's message JSON through our schema."""
    body = schema.build({}, version)
    flexible = schema.is_flexible(version)
    d = schema.read(body, version, exact=True)
    assert set(d) == _fields_of(schema.fields, version, flexible, schema.structs)
    values = {"int64": 7, "int32": 7, "int16": 7, "uuid": "q3Bq1nEAR5uD4qPQ0Kh0bw"}
    tagged = [f for f in schema.fields if flexible and f.tag is not None and from_range(f.tagged, version)
              and f.type in values]
    for f in tagged:  # a tagged field the record carries is printed (an offset commit v4's topicId too)
        d2 = schema.read(schema.build({f.name: values[f.type]}, version), version, exact=True)
        assert d2[f.name] == values[f.type] and set(d2) == set(d) | {f.name}


def _dumped_value(tmp_path, kfx, topic, key, value, flag):
    p = write_partition(str(tmp_path / topic), [build_v2([Record(0, T0, key, value, [])], base_offset=0)])
    r = kfx("dump", os.path.join(p, "00000000000000000000.log"), flag, "--format", "json")
    assert r.exit_code == 0, r.output
    (rec,) = [rec for line in r.stdout.splitlines() for rec in json.loads(line)["records"]]
    return rec["decoded"]["value"]["data"]


def test_dump_prints_only_the_fields_of_the_version_read(tmp_path, kfx):
    """kfx dump of an offset commit v3: no expireTimestamp (v1 only), no topicId (tagged, absent); a v0
    transaction state: none of the tagged fields of v1; group metadata v1: no currentStateTimestamp (v2+)."""
    d = _dumped_value(tmp_path, kfx, "__consumer_offsets-0", KEY(1), struct.pack(">h", 3) + struct.pack(">qi", 42, 9)
                      + s16("m") + struct.pack(">q", T0), "--offsets-decoder")
    assert d == {"offset": 42, "leaderEpoch": 9, "metadata": "m", "commitTimestamp": T0}
    txn = struct.pack(">qhib", 4000, 2, 60000, 0) + struct.pack(">i", 0) + struct.pack(">qq", T0, -1)
    d = _dumped_value(tmp_path, kfx, "__transaction_state-0", struct.pack(">h", 0) + s16("txn-1"),
                      struct.pack(">h", 0) + txn, "--transaction-log-decoder")
    assert set(d) == {"ProducerId", "ProducerEpoch", "TransactionTimeoutMs", "TransactionStatus",
                      "TransactionPartitions", "TransactionLastUpdateTimestampMs", "TransactionStartTimestampMs"}
    body = s16("consumer") + struct.pack(">i", 5) + s16("range") + s16("m-1") + struct.pack(">i", 1) + _member(1)
    d = _dumped_value(tmp_path, kfx, "__consumer_offsets-1", struct.pack(">h", 2) + s16("grp"),
                      struct.pack(">h", 1) + body, "--offsets-decoder")
    assert set(d) == {"protocolType", "generation", "protocol", "leader", "members"}
    assert set(d["members"][0]) == {"memberId", "clientId", "clientHost", "rebalanceTimeout", "sessionTimeout",
                                    "subscription", "assignment"}
