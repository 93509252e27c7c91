"""The JSON form of batches and records (``kfx dump --format json``) and its way back to bytes.

Batch objects carry exactly the contract's keys; ``--deep`` adds ``records``.  Keys, values and
header values are strings in the chosen encoding (utf8, hex or base64) or null.  Control records
add ``control``; records of a LogAppendTime batch add ``createTime`` (the producer's timestamp the
batch still stores) so that ``kfx write`` can rebuild the batch byte for byte.
"""
from __future__ import annotations

import base64
import binascii
import json

from specs import record_batch as R

from kafkaforensics.records import builder, compression
from kafkaforensics.records.batch import Batch, Record
from kafkaforensics.errors import KafkaFormatError


def encode(data, encoding: str):
    if data is None:
        return None
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii")
    if encoding == "hex":
        return bytes(data).hex()
    return bytes(data).decode("utf-8", "replace")


def decode(text, encoding: str):
    if text is None:
        return None
    try:
        if encoding == "base64":
            return base64.b64decode(text, validate=True)
        if encoding == "hex":
            return bytes.fromhex(text)
    except (binascii.Error, ValueError) as e:
        raise KafkaFormatError("json", f"not valid {encoding}: {e}") from None
    return text.encode("utf-8")


def record_to_json(r: Record, batch: Batch, encoding: str) -> dict:
    out = {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": encode(r.key, encoding),
        "value": encode(r.value, encoding),
        "headers": [{"key": k, "value": encode(v, encoding)} for k, v in r.headers],
    }
    if batch.is_control:
        ctl = r.control()
        if ctl is not None:
            out["control"] = ctl
    if batch.magic >= 2 and batch.attributes & R.TIMESTAMP_TYPE_MASK:
        out["createTime"] = r.create_time
    return out


def batch_to_json(b: Batch, *, deep: bool = False, encoding: str = "base64") -> dict:
    out = b.to_json()
    if deep:
        out["records"] = [record_to_json(r, b, encoding) for r in b.records()]
    return out


def batch_from_json(obj: dict, *, encoding: str = "base64") -> bytes:
    """Rebuild batch bytes from one ``kfx dump --deep --format json`` object."""
    try:
        recs_json = obj["records"]
    except KeyError:
        raise KafkaFormatError("json", "batch object has no 'records': dump with --deep",
                               offset=obj.get("baseOffset")) from None
    if obj.get("crcValid") is False:  # rebuilding it would give corrupt records a valid CRC
        raise KafkaFormatError("json", "the batch's CRC failed when dumped (crcValid false): its records are "
                               "not trusted; drop the batch, or set crcValid to true to write it anyway",
                               offset=obj.get("baseOffset"))
    try:
        recs = [Record(int(r["offset"]), int(r["timestamp"]), decode(r.get("key"), encoding),
                       decode(r.get("value"), encoding),
                       [(h["key"], decode(h.get("value"), encoding)) for h in r.get("headers") or []])
                for r in recs_json]
        magic = int(obj.get("magic", 2))
        codec = compression.codec_id(obj.get("compression", "none"))
        log_append = obj.get("timestampType") == "LogAppendTime"
        if magic >= 2:
            create = None
            if log_append:
                create = [r.get("createTime") if r.get("createTime") is not None else obj["maxTimestamp"]
                          for r in recs_json]
            base = int(obj["baseOffset"])
            header = builder.HeaderOverrides(
                last_offset_delta=int(obj["lastOffset"]) - base, log_append_time=log_append,
                delete_horizon_ms=obj.get("deleteHorizonMs"), base_timestamp=obj.get("firstTimestamp"),
                max_timestamp=obj.get("maxTimestamp"), create_times=create)
            producer = builder.BatchProducer(int(obj.get("producerId", -1)), int(obj.get("producerEpoch", -1)),
                                             int(obj.get("baseSequence", -1)))
            return builder.build_v2(recs, base_offset=base, partition_leader_epoch=int(obj.get("partitionLeaderEpoch", -1)),
                                    codec=codec, transactional=bool(obj.get("isTransactional")),
                                    control=bool(obj.get("isControl")), producer=producer, header=header)
        if magic in (0, 1):
            return builder.build_legacy(recs, magic=magic, codec=codec, log_append_time=log_append,
                                        wrapper_timestamp=obj.get("maxTimestamp") if codec else None)
        raise KafkaFormatError("json", f"unsupported magic {magic}", offset=obj.get("baseOffset"))
    except (KeyError, TypeError, ValueError) as e:
        raise KafkaFormatError("json", f"malformed batch object: {e!r}", offset=obj.get("baseOffset")) from None


def batches_from_json_lines(lines, *, encoding: str = "base64", carried: dict | None = None):
    """The batches of ``kfx dump --deep --format json`` lines (an iterable of text lines), built;
    lines that are not batches (index entries and the like) and blank lines are skipped.  A line
    that is not JSON or not a valid batch raises :class:`KafkaFormatError` naming its line number.
    ``carried`` receives the ``topicId`` of a dumped ``partition.metadata`` line (two different ones
    raise)."""
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise KafkaFormatError("json", f"line {lineno}: {e}") from None
        if isinstance(obj, dict) and carried is not None and "topicId" in obj and "baseOffset" not in obj:
            if carried.setdefault("topicId", obj["topicId"]) != obj["topicId"]:
                raise KafkaFormatError("json", f"line {lineno}: topic id {obj['topicId']} differs from the "
                                               f"input's earlier {carried['topicId']}")
            continue
        if not isinstance(obj, dict) or "baseOffset" not in obj:
            continue
        try:
            yield batch_from_json(obj, encoding=encoding)
        except KafkaFormatError as e:
            raise KafkaFormatError(e.kind, f"line {lineno}: {e.problem.detail}", offset=e.problem.offset) from None
