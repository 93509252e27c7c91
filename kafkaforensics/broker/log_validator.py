"""What a Kafka 4.x leader refuses of a client's Produce, checked before anything is appended.

The checks, in Kafka's order (ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords,
LogValidator.validateBatch / validateRecord, DefaultRecordBatch's and DefaultRecord's readers):

- exactly one v2 batch per partition (INVALID_RECORD); a zstd batch before Produce v7
  (UNSUPPORTED_COMPRESSION_TYPE); an unknown codec id (UNKNOWN_SERVER_ERROR, as Kafka's uncaught
  IllegalArgumentException answers); bytes after the batch too short to be one are dropped, a
  declared size below 14 bytes is CORRUPT_MESSAGE (ByteBufferLogInputStream);
- baseOffset 0 (INVALID_RECORD), the batch at most ``max.message.bytes`` (MESSAGE_TOO_LARGE), its
  CRC (CORRUPT_MESSAGE);
- lastOffsetDelta + 1 equal to a positive record count, no control batch from a client, a producer
  id with a sequence (INVALID_RECORD);
- every record parses as DefaultRecord.readFrom reads it -- varints of at most 5 bytes, varlongs of
  at most 10, the body exactly its declared size, header counts and key sizes in range, nothing
  left after the last record, no record missing (INVALID_RECORD); a payload its codec cannot
  decompress is UNKNOWN_SERVER_ERROR, as Kafka's KafkaException("Failed to decompress record
  stream") answers;
- per record (RecordErrors, with the batch index, where the Produce version carries them):
  CreateTime timestamps within ``message.timestamp.before.max.ms`` / ``after.max.ms`` of now and no
  LogAppendTime batch from a producer (INVALID_TIMESTAMP), a key on a compacted topic (INVALID_RECORD).

Decompression is bounded (:data:`MAX_DECOMPRESSED_BYTES`): a batch that inflates past it is refused
with INVALID_RECORD (Kafka streams it; this broker holds a batch in memory).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from specs import record_batch as R
from specs.codecs import ZSTD, decompress
from specs.kafka_errors import (CORRUPT_MESSAGE, INVALID_RECORD, INVALID_TIMESTAMP, MESSAGE_TOO_LARGE, NONE,
                                UNKNOWN_SERVER_ERROR, UNSUPPORTED_COMPRESSION_TYPE)
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.records.batch import read_varint
from kafkaforensics.records.checksums import crc32c

#: Kafka's defaults: message.max.bytes, message.timestamp.before.max.ms / after.max.ms (4.0: one hour)
MAX_MESSAGE_BYTES = 1048588
TIMESTAMP_BEFORE_MAX_MS = 2**63 - 1
TIMESTAMP_AFTER_MAX_MS = 3_600_000
#: the most a produced batch may inflate to here
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
_RECORD_OVERHEAD_V0 = 14


@dataclass(frozen=True)
class TopicRules:
    """The topic configs the validation reads."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    compacted: bool = False
    log_append_time: bool = False
    before_max_ms: int = TIMESTAMP_BEFORE_MAX_MS
    after_max_ms: int = TIMESTAMP_AFTER_MAX_MS


@dataclass(frozen=True)
class Verdict:
    """``error`` NONE: append ``batch`` (the one batch, trailing bytes dropped); else refuse it."""
    error: int
    reason: str = ""
    batch: bytes = b""
    record_errors: tuple = ()   # (batch index, message)


class _Invalid(Exception):
    def __init__(self, error: int, reason: str):
        super().__init__(reason)
        self.error, self.reason = error, reason


def validate(data: bytes, version: int, now_ms: int, rules: TopicRules = TopicRules()) -> Verdict:
    """The verdict on one partition's records of a Produce request of ``version``."""
    try:
        batch = _one_batch(bytes(data), version)
        _check_batch(batch, rules)
        errors = _check_records(batch, now_ms, rules)
    except _Invalid as e:
        return Verdict(e.error, e.reason)
    if errors:
        kind = INVALID_TIMESTAMP if any(k == INVALID_TIMESTAMP for k, _i, _m in errors) else INVALID_RECORD
        shown = [f"{i}: {m}" for _k, i, m in errors[:3]]
        what = ("invalid timestamp" if kind == INVALID_TIMESTAMP else
                f"{len(errors)} record errors in total, and only showing the first three errors at most: {shown}")
        return Verdict(kind, f"One or more records have been rejected due to {what}",
                       record_errors=tuple((i, m) for _k, i, m in errors))
    return Verdict(NONE, batch=batch)


def _one_batch(data: bytes, version: int) -> bytes:
    """The request's one batch, framed as MemoryRecords.batches() frames it."""
    n = len(data)
    if n < R.LOG_OVERHEAD:
        raise _Invalid(INVALID_RECORD, f"Produce requests with version {version} must have at least one record batch")
    size = struct.unpack_from(">i", data, R.BATCH_LENGTH_OFFSET)[0]
    if size < _RECORD_OVERHEAD_V0:
        raise _Invalid(CORRUPT_MESSAGE, f"Record size {size} is less than the minimum record overhead (14)")
    end = R.LOG_OVERHEAD + size
    if end > n:
        raise _Invalid(INVALID_RECORD, f"Produce requests with version {version} must have at least one record batch")
    if data[R.MAGIC_OFFSET] != R.MAGIC:
        raise _Invalid(INVALID_RECORD, f"Produce requests with version {version} are only allowed to contain "
                                       "record batches with magic version 2")
    if n - end >= R.LOG_OVERHEAD:
        nxt = struct.unpack_from(">i", data, end + R.BATCH_LENGTH_OFFSET)[0]
        if nxt < _RECORD_OVERHEAD_V0:
            raise _Invalid(CORRUPT_MESSAGE, f"Record size {nxt} is less than the minimum record overhead (14)")
        if end + R.LOG_OVERHEAD + nxt <= n:
            raise _Invalid(INVALID_RECORD, f"Produce requests with version {version} are only allowed to contain "
                                           "exactly one record batch per partition")
    if end < R.HEADER_SIZE:
        raise _Invalid(CORRUPT_MESSAGE, f"Record batch size {end} is below the {R.HEADER_SIZE}-byte v2 header")
    codec = struct.unpack_from(">h", data, R.ATTRIBUTES_OFFSET)[0] & R.COMPRESSION_MASK
    if codec > ZSTD:
        raise _Invalid(UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {codec}")
    if codec == ZSTD and version < 7:
        raise _Invalid(UNSUPPORTED_COMPRESSION_TYPE, "Produce requests with version before 7 cannot use zstd")
    return data[:end]


def _header(batch: bytes) -> dict:
    return dict(zip(R.HEADER_FIELDS, R.HEADER_STRUCT.unpack_from(batch, 0)))


def _check_batch(batch: bytes, rules: TopicRules) -> None:
    h = _header(batch)
    if h["baseOffset"] != 0:
        raise _Invalid(INVALID_RECORD, f"The baseOffset of the record batch should be 0, but it is {h['baseOffset']}")
    if len(batch) > rules.max_message_bytes:
        raise _Invalid(MESSAGE_TOO_LARGE, f"The record batch size is {len(batch)} bytes which exceeds the maximum "
                                          f"configured value of {rules.max_message_bytes}")
    if crc32c(batch[R.ATTRIBUTES_OFFSET:]) != h["crc"]:
        raise _Invalid(CORRUPT_MESSAGE, f"Record is corrupt (stored crc = {h['crc']})")
    from_offsets = h["lastOffsetDelta"] + 1
    if from_offsets <= 0:
        raise _Invalid(INVALID_RECORD, f"Batch has an invalid offset range: [0, {h['lastOffsetDelta']}]")
    if h["recordCount"] <= 0:
        raise _Invalid(INVALID_RECORD, f"Invalid reported count for record batch: {h['recordCount']}")
    if from_offsets != h["recordCount"]:
        raise _Invalid(INVALID_RECORD, f"Inconsistent batch offset range [0, {h['lastOffsetDelta']}] and count of "
                                       f"records {h['recordCount']}")
    if h["attributes"] & R.CONTROL_MASK:
        raise _Invalid(INVALID_RECORD, "Clients are not allowed to write control records")
    if h["producerId"] >= 0 and h["baseSequence"] < 0:
        raise _Invalid(INVALID_RECORD, f"Invalid sequence number {h['baseSequence']} in record batch with "
                                       f"producerId {h['producerId']}")


def _varint(data: bytes, pos: int, limit: int, max_bytes: int) -> tuple[int, int]:
    """:func:`~kafkaforensics.records.batch.read_varint` with Kafka's answer to a bad one."""
    try:
        return read_varint(data, pos, limit, max_bytes)
    except KafkaFormatError as e:
        raise _Invalid(INVALID_RECORD, f"Found invalid record structure: {e.problem.detail}") from None


def _check_records(batch: bytes, now_ms: int, rules: TopicRules) -> list:
    """Parse every record as DefaultRecord.readFrom does; the per-record errors (kind, index, message)."""
    h = _header(batch)
    codec = h["attributes"] & R.COMPRESSION_MASK
    body = batch[R.HEADER_SIZE:]
    if codec:
        try:
            body = decompress(codec, body, magic=2, bound=MAX_DECOMPRESSED_BYTES)
        except Exception as e:  # noqa: BLE001 -- any codec failure is Kafka's "Failed to decompress"
            if "-byte bound" in str(e):
                raise _Invalid(INVALID_RECORD, f"the batch inflates past {MAX_DECOMPRESSED_BYTES} bytes") from None
            raise _Invalid(UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {e}") from None
    n, pos, errors = len(body), 0, []
    log_append = bool(h["attributes"] & R.TIMESTAMP_TYPE_MASK)
    for index in range(h["recordCount"]):
        if pos >= n:
            raise _Invalid(INVALID_RECORD, "Incorrect declared batch size, premature EOF reached")
        size, pos = _varint(body, pos, n, 5)
        if size < 0 or n - pos < size:
            raise _Invalid(INVALID_RECORD, f"Invalid record size: expected {size} bytes in record payload, but the "
                                           f"batch has only {n - pos} remaining bytes")
        end = pos + size
        if pos >= end:
            raise _Invalid(INVALID_RECORD, "Found invalid record structure")
        pos += 1                                   # attributes
        ts_delta, pos = _varint(body, pos, end, 10)
        _off, pos = _varint(body, pos, end, 5)
        key_len, pos = _varint(body, pos, end, 5)
        if key_len > end - pos:
            raise _Invalid(INVALID_RECORD, "Found invalid record structure")
        pos += max(key_len, 0)
        value_len, pos = _varint(body, pos, end, 5)
        if value_len > end - pos:
            raise _Invalid(INVALID_RECORD, "Found invalid record structure")
        pos += max(value_len, 0)
        headers, pos = _varint(body, pos, end, 5)
        if headers < 0:
            raise _Invalid(INVALID_RECORD, f"Found invalid number of record headers {headers}")
        if headers > end - pos:
            raise _Invalid(INVALID_RECORD, f"Found invalid number of record headers. The number of record headers "
                                           f"{headers} is greater than the remaining bytes {end - pos}")
        for _h in range(headers):
            hk, pos = _varint(body, pos, end, 5)
            if hk < 0:
                raise _Invalid(INVALID_RECORD, "Invalid negative header key size")
            if hk > end - pos:
                raise _Invalid(INVALID_RECORD, "Found invalid record structure")
            pos += hk
            hv, pos = _varint(body, pos, end, 5)
            if hv > end - pos:
                raise _Invalid(INVALID_RECORD, "Found invalid record structure")
            pos += max(hv, 0)
        if pos != end:
            raise _Invalid(INVALID_RECORD, f"Invalid record size: expected to read {size} bytes in record payload, "
                                           f"but instead read {size - (end - pos)}")
        if rules.compacted and key_len < 0:
            errors.append((INVALID_RECORD, index, "Compacted topic cannot accept message without key"))
            continue
        # a LogAppendTime batch's records read the batch's max timestamp, as Kafka's reader gives them
        ts = h["maxTimestamp"] if log_append else h["baseTimestamp"] + ts_delta
        if not rules.log_append_time and ts != -1:
            if now_ms - ts > rules.before_max_ms or ts - now_ms > rules.after_max_ms:
                errors.append((INVALID_TIMESTAMP, index, f"Timestamp {ts} of message with offset {index} is out of "
                                                         f"range. The timestamp should be within "
                                                         f"[{now_ms - rules.before_max_ms}, {now_ms + rules.after_max_ms}]"))
        elif log_append:
            errors.append((INVALID_TIMESTAMP, index, "Producer should not set timestamp type to LogAppendTime"))
    if pos != n:
        raise _Invalid(INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
    return errors
