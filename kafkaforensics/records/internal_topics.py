"""Decoders for Kafka's internal logs: __consumer_offsets, __transaction_state, __cluster_metadata.

Record keys and values are framed as Kafka's coordinators and metadata serde frame them:
* __consumer_offsets: key = int16 record type + its key (0-1 offset commit, 2 classic group, 3-8 KIP-848
  consumer group, 9-15 share group (9: Kafka 4.0 only), 16 consumer group regex, 17 and 19-23 streams
  group); value = int16 version + value, or null (a tombstone);
* __transaction_state: key = int16 version + TransactionLogKey; value = int16 version +
  TransactionLogValue, or null;
* __share_group_state: key = int16 record type + ShareSnapshotKey (0) / ShareUpdateKey (1), value =
  int16 version + value, or null;
* __remote_log_metadata: value framed as a metadata record (frame version, apiKey, version);
* __cluster_metadata: value = unsigned varints frame version (1), record type (apiKey) and version,
  then the record (flexible); control batches hold LeaderChange / SnapshotHeader / SnapshotFooter /
  KRaftVersion / Voters records.
Schemas: :mod:`specs.kafka_messages`.
"""
from __future__ import annotations

import base64
import struct

from specs import kafka_messages as K
from specs import record_batch as R
from specs.message_schema import _Ctx, _in, uvarint

from kafkaforensics.errors import KafkaFormatError

_I16 = struct.Struct(">h")
CONTROL_SCHEMAS = {R.LEADER_CHANGE: K.LeaderChangeMessage, R.SNAPSHOT_HEADER: K.SnapshotHeaderRecord,
                   R.SNAPSHOT_FOOTER: K.SnapshotFooterRecord, R.KRAFT_VERSION: K.KRaftVersionRecord,
                   R.KRAFT_VOTERS: K.VotersRecord}


def _versioned(data: bytes | None) -> tuple[int, bytes]:
    if data is None or len(data) < 2:
        raise KafkaFormatError("schema", "record too short for a version prefix")
    return _I16.unpack_from(data, 0)[0], bytes(data[2:])


def _undecoded(body: bytes) -> dict:
    return {"undecoded": base64.b64encode(bytes(body)).decode()}


def _expand(b64: str | None, schema, exact: bool = False):
    """int16 version + a consumer-protocol message, as {"version", "data"}; None when it does not parse."""
    raw = base64.b64decode(b64 or "")
    if len(raw) < 2:
        return None
    v = _I16.unpack_from(raw, 0)[0]
    try:
        # newer clients may send a higher version: read as the highest one known, prefix only
        return {"version": v, "data": schema.read_prefix(raw[2:], min(max(v, 0), schema.valid[1]),
                                                               exact=exact)[0]}
    except KafkaFormatError:
        return None


def _expand_consumer_protocol(kind: str, value: dict, exact: bool = False) -> None:
    """Consumer-protocol bytes expanded in place as kafka-dump-log's offsets decoder does (bytes that
    do not parse stay as they are): a classic ``consumer`` group's member subscriptions and assignments
    (ConsumerProtocolSubscription / ConsumerProtocolAssignment, each after an int16 version), and the
    protocols a classic member of a KIP-848 group supports."""
    if kind == "group_metadata" and value.get("protocolType") == "consumer":
        for m in value.get("members") or ():
            for name, schema in (("subscription", K.ConsumerProtocolSubscription),
                                 ("assignment", K.ConsumerProtocolAssignment)):
                m[name] = _expand(m.get(name), schema, exact) or m.get(name)
    elif kind == "consumer_group_member_metadata" and value.get("ClassicMemberMetadata"):
        for p in value["ClassicMemberMetadata"].get("SupportedProtocols") or ():
            p["Metadata"] = _expand(p.get("Metadata"), K.ConsumerProtocolSubscription, exact) or p.get("Metadata")


def _decode_keyed(key: bytes | None, value: bytes | None, registry: dict,
                  exact: bool = False) -> tuple[dict, dict | None]:
    """(key JSON, value JSON or None for a tombstone) of a coordinator record whose key's version
    names its record type in ``registry`` (type -> (kind, key schema, value schema)); a type or
    value version not in it is shown ``undecoded`` (base64); ``exact``: see :func:`decode_offsets`."""
    kv, kbody = _versioned(key)
    entry = registry.get(kv)
    if entry is None:
        k = {"type": str(kv), "unknown": True, **_undecoded(kbody)}
        return k, (None if value is None else _undecoded(value))
    kind, kschema, vschema = entry
    k = {"type": str(kv), "kind": kind, "data": kschema.read(kbody, kv, exact=exact)}
    if value is None:
        return k, None
    vv, vbody = _versioned(value)
    if not _in(vschema.valid, vv):
        return k, {"version": str(vv), **_undecoded(vbody)}
    return k, {"version": str(vv), **_read_value(vschema, vbody, vv, exact)}


def _read_value(schema, body: bytes, version: int, exact: bool = False) -> dict:
    """{"data": ...} of a coordinator value.  A share-group value that does not parse with the current
    layout is tried with Kafka 4.0's (early access; 4.1 changed version 0), and then comes back as
    {"layout": "4.0", "data": ...}; when neither parses, the current layout's error is raised."""
    try:
        return {"data": schema.read(body, version, exact=exact)}
    except KafkaFormatError:
        earlier = K.KAFKA_40_LAYOUTS.get(schema.name)
        if earlier is None:
            raise
        label, old = earlier
        try:
            return {"layout": label, "data": old.read(body, version, exact=exact)}
        except KafkaFormatError:
            pass
        raise


def decode_offsets(key: bytes | None, value: bytes | None, *, exact: bool = False) -> tuple[dict, dict | None]:
    """(key JSON, value JSON or None for a tombstone) of a __consumer_offsets record.

    ``exact``: exactly the fields of the version read, tagged fields only when the record carries them
    (what kafka-dump-log prints); otherwise every field, those the version lacks at their defaults.

    Every record type of every group protocol in :data:`specs.kafka_messages.OFFSETS_RECORDS` is
    decoded; a type this decoder does not know is shown ``undecoded`` (base64), so a value is only
    ever ``None`` when the record really is a tombstone."""
    k, v = _decode_keyed(key, value, K.OFFSETS_RECORDS, exact)
    if v is not None and "data" in v:
        _expand_consumer_protocol(k["kind"], v["data"], exact)
    return k, v


def decode_share_group_state(key: bytes | None, value: bytes | None, *,
                             exact: bool = False) -> tuple[dict, dict | None]:
    """(key JSON, value JSON or None) of a __share_group_state record (ShareSnapshot / ShareUpdate)."""
    return _decode_keyed(key, value, K.SHARE_STATE_RECORDS, exact)


def decode_remote_log_metadata(value: bytes | None, *, exact: bool = False) -> dict | None:
    """A __remote_log_metadata value: framed as metadata records are (frame version 1, apiKey and
    version as unsigned varints, then the record; Kafka's RemoteLogMetadataSerde)."""
    return None if value is None else _decode_framed(value, K.REMOTE_LOG_METADATA_RECORDS, exact)


def decode_transaction_log(key: bytes | None, value: bytes | None, *,
                           exact: bool = False) -> tuple[dict, dict | None]:
    """(key JSON, value JSON or None) of a __transaction_state record; ``exact``: see :func:`decode_offsets`."""
    kv, kbody = _versioned(key)
    k = {"type": str(kv), "data": K.TransactionLogKey.read(kbody, kv, exact=exact)}
    if value is None:
        return k, None
    vv, vbody = _versioned(value)
    return k, {"version": str(vv), "data": K.TransactionLogValue.read(vbody, vv, exact=exact)}


def encode_transaction_log(transactional_id: str, value: dict, *, value_version: int = 0) -> tuple[bytes, bytes]:
    """A __transaction_state record (key, value) as the transaction coordinator writes it: key v0,
    ``value`` TransactionLogValue's fields at ``value_version`` (1: flexible, with the KIP-890 tagged fields)."""
    key = _I16.pack(0) + K.TransactionLogKey.build({"TransactionalId": transactional_id}, 0)
    return key, _I16.pack(value_version) + K.TransactionLogValue.build(value, value_version)


def decode_metadata(value: bytes, *, exact: bool = False) -> dict:
    """A __cluster_metadata record value; ``exact``: see :func:`decode_offsets`."""
    return _decode_framed(value, K.METADATA_RECORDS, exact)


def _decode_framed(value: bytes, registry: dict, exact: bool = False) -> dict:
    ctx = _Ctx(bytes(value), 0, True, {})
    frame, api_key, version = ctx.uvarint(), ctx.uvarint(), ctx.uvarint()
    if frame != 1:
        raise KafkaFormatError("schema", f"record frame version {frame} (only 1 exists)")
    schema = registry.get(api_key)
    if schema is None or not _in(schema.valid, version):
        return {"type": f"UNKNOWN({api_key})", "version": version, **_undecoded(bytes(value)[ctx.pos:])}
    return {"type": schema.name, "version": version,
            "data": schema.read(bytes(value)[ctx.pos:], version, exact=exact)}


def encode_metadata(schema, version: int, obj: dict) -> bytes:
    """A __cluster_metadata record value: frame version 1, apiKey and version (unsigned varints), record."""
    return uvarint(1) + uvarint(schema.api_key) + uvarint(version) + schema.build(obj, version)


def decode_metadata_control(ctype: int, value: bytes, *, exact: bool = False) -> dict:
    """A control record of the metadata log (LeaderChange, snapshot header/footer, KRaft version, voters)."""
    schema = CONTROL_SCHEMAS.get(ctype)
    if schema is None:
        return {"type": f"UNKNOWN({ctype})"}
    return {"type": schema.name, "data": schema.read(value, schema.valid[0], whole=False, exact=exact)}


def encode_offset_commit(group: str, topic: str, partition: int, offset: int, *, metadata: str = "",
                         commit_ts: int = 0, leader_epoch: int = -1,
                         versions: tuple[int, int] = (1, 3)) -> tuple[bytes, bytes]:
    """A __consumer_offsets record (key, value) as the group coordinator writes it; ``versions``: the key's
    and the value's (a v1 value's expireTimestamp is -1: no explicit expiry)."""
    key_version, value_version = versions
    key = _I16.pack(key_version) + K.OffsetCommitKey.build({"group": group, "topic": topic, "partition": partition},
                                                           key_version)
    value = _I16.pack(value_version) + K.OffsetCommitValue.build(
        {"offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata, "commitTimestamp": commit_ts,
         "expireTimestamp": -1}, value_version)
    return key, value
