"""Decoders for Kafka's internal logs: __consumer_offsets, __transaction_state, __cluster_metadata.

Record keys and values are framed as Kafka's coordinators and metadata serde frame them:
* __consumer_offsets: key = int16 version + OffsetCommitKey (v0, v1) or GroupMetadataKey (v2);
  value = int16 version + OffsetCommitValue / GroupMetadataValue, or null (a tombstone);
* __transaction_state: key = int16 version + TransactionLogKey; value = int16 version +
  TransactionLogValue, or null;
* __cluster_metadata: value = unsigned varints frame version (1), record type (apiKey) and version,
  then the record (flexible); control batches hold LeaderChange / SnapshotHeader / SnapshotFooter /
  KRaftVersion / Voters records.
Schemas: :mod:`specs.kafka_messages`.
"""
from __future__ import annotations

import struct

from specs import kafka_messages as K
from specs.message_schema import _Ctx

from .errors import KafkaFormatError

_I16 = struct.Struct(">h")
CONTROL_SCHEMAS = {2: K.LeaderChangeMessage, 3: K.SnapshotHeaderRecord, 4: K.SnapshotFooterRecord,
                   5: K.KRaftVersionRecord, 6: K.VotersRecord}


def _versioned(data: bytes):
    if data is None or len(data) < 2:
        raise KafkaFormatError("schema", "record too short for a version prefix")
    return _I16.unpack_from(data, 0)[0], bytes(data[2:])


def decode_offsets(key: bytes | None, value: bytes | None) -> tuple[dict, dict | None]:
    """(key JSON, value JSON or None for a tombstone) of a __consumer_offsets record."""
    kv, kbody = _versioned(key)
    if kv in (0, 1):
        kdata, kind, schema = K.OffsetCommitKey.read(kbody, kv), "offset_commit", K.OffsetCommitValue
    elif kv == 2:
        kdata, kind, schema = K.GroupMetadataKey.read(kbody, kv), "group_metadata", K.GroupMetadataValue
    else:
        return {"type": str(kv), "unknown": True}, None
    k = {"type": str(kv), "kind": kind, "data": kdata}
    if value is None:
        return k, None
    vv, vbody = _versioned(value)
    return k, {"version": str(vv), "data": schema.read(vbody, vv)}


def decode_transaction_log(key: bytes | None, value: bytes | None) -> tuple[dict, dict | None]:
    kv, kbody = _versioned(key)
    k = {"type": str(kv), "data": K.TransactionLogKey.read(kbody, kv)}
    if value is None:
        return k, None
    vv, vbody = _versioned(value)
    return k, {"version": str(vv), "data": K.TransactionLogValue.read(vbody, vv)}


def decode_metadata(value: bytes) -> dict:
    ctx = _Ctx(bytes(value), 0, True, {})
    frame, api_key, version = ctx.uvarint(), ctx.uvarint(), ctx.uvarint()
    if frame != 1:
        raise KafkaFormatError("schema", f"metadata record frame version {frame} (only 1 exists)")
    schema = K.METADATA_RECORDS.get(api_key)
    if schema is None:
        return {"type": f"UNKNOWN({api_key})", "version": version}
    return {"type": schema.name, "version": version, "data": schema.read(bytes(value)[ctx.pos:], version)}


def decode_metadata_control(ctype: int, value: bytes) -> dict:
    schema = CONTROL_SCHEMAS.get(ctype)
    if schema is None:
        return {"type": f"UNKNOWN({ctype})"}
    return {"type": schema.name, "data": schema.read(value, schema.valid[0], whole=False)}


def encode_offset_commit(group: str, topic: str, partition: int, offset: int, *, key_version: int = 1,
                         value_version: int = 3, metadata: str = "", commit_ts: int = 0, leader_epoch: int = -1,
                         expire_ts: int = -1) -> tuple[bytes, bytes]:
    """A __consumer_offsets record (key, value) as the group coordinator writes it."""
    key = _I16.pack(key_version) + K.OffsetCommitKey.build({"group": group, "topic": topic, "partition": partition},
                                                           key_version)
    value = _I16.pack(value_version) + K.OffsetCommitValue.build(
        {"offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata, "commitTimestamp": commit_ts,
         "expireTimestamp": expire_ts}, value_version)
    return key, value
