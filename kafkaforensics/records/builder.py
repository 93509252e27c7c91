"""Build batch bytes: record batches v2 and legacy message sets (the writer's fast path).

The output is byte-identical to building ``specs.schemas.record_batch.RecordBatch`` /
``specs.schemas.legacy.LogEntry`` with construct (``tests/test_specs.py``), and to Kafka's own
MemoryRecordsBuilder for uncompressed batches.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

from kafkaforensics.records.checksums import crc32c

from specs import legacy as L
from specs import record_batch as R

from kafkaforensics.records import compression

_HDR = R.HEADER_STRUCT
_TIMESTAMP = L.TIMESTAMP.struct
_LENGTH = L.LENGTH.struct
_VARINT_CACHE: dict[int, bytes] = {}  # zigzag(n) for -4096 <= n <= 4096, as first asked


def zigzag(n: int) -> bytes:
    """Kafka's zigzag varint/varlong encoding of ``n``."""
    hit = _VARINT_CACHE.get(n)
    if hit is not None:
        return hit
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    res = bytes(out)
    if -4096 <= n <= 4096:
        _VARINT_CACHE[n] = res
    return res


def _nullable(b) -> bytes:
    if b is None:
        return b"\x01"  # zigzag(-1)
    return zigzag(len(b)) + bytes(b)


def encode_record(offset_delta: int, timestamp_delta: int, key, value,
                  headers: Sequence = (), attributes: int = 0) -> bytes:
    """One v2 record, length prefix included."""
    parts = [struct.pack(">B", attributes & 0xFF), zigzag(timestamp_delta), zigzag(offset_delta),  # an int8, any bits
             _nullable(key), _nullable(value), zigzag(len(headers))]
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
        parts.append(zigzag(len(hkb)))
        parts.append(hkb)
        parts.append(_nullable(hv))
    body = b"".join(parts)
    return zigzag(len(body)) + body


class BatchProducer(NamedTuple):
    """A v2 batch's producer fields: producerId, producerEpoch, baseSequence (-1 each: no
    idempotent producer)."""
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1


#: the producer fields of a batch no idempotent producer wrote
NO_PRODUCER = BatchProducer()


@dataclass(frozen=True)
class HeaderOverrides:
    """The v2 header fields :func:`build_v2` derives from the records unless given here:
    ``last_offset_delta`` (default: the last record's), ``log_append_time`` (the timestamp-type bit),
    ``delete_horizon_ms`` (the delete-horizon bit; the base timestamp then defaults to it, as Kafka's
    cleaner sets it), ``base_timestamp`` (default: the first record's), ``max_timestamp`` (default:
    the largest record timestamp), ``create_times`` (the per-record timestamps the deltas are taken
    from: a LogAppendTime batch keeps its producers' create times in the deltas)."""
    last_offset_delta: int | None = None
    log_append_time: bool = False
    delete_horizon_ms: int | None = None
    base_timestamp: int | None = None
    max_timestamp: int | None = None
    create_times: Sequence[int] | None = None


_NO_OVERRIDES = HeaderOverrides()


def build_v2(records: Iterable, *, base_offset: int, partition_leader_epoch: int = -1, codec: int = 0,
             transactional: bool = False, control: bool = False, producer: BatchProducer = NO_PRODUCER,
             header: HeaderOverrides | None = None) -> bytes:
    """Build a v2 record batch from records carrying absolute ``offset`` and ``timestamp``;
    ``producer``: its producer fields; ``header``: the header fields otherwise derived from the
    records (:class:`HeaderOverrides`)."""
    h = header or _NO_OVERRIDES
    last_offset_delta, base_timestamp, max_timestamp = h.last_offset_delta, h.base_timestamp, h.max_timestamp
    delete_horizon_ms, log_append_time, create_times = h.delete_horizon_ms, h.log_append_time, h.create_times
    producer_id, producer_epoch, base_sequence = producer
    records = list(records)
    stamps = list(create_times) if create_times is not None else [r.timestamp for r in records]
    if base_timestamp is None:
        if delete_horizon_ms is not None:
            base_timestamp = delete_horizon_ms
        else:
            base_timestamp = stamps[0] if stamps else R.NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max(stamps) if stamps else R.NO_TIMESTAMP
    if last_offset_delta is None:
        last_offset_delta = (records[-1].offset - base_offset) if records else 0
    body = b"".join(encode_record(r.offset - base_offset, ts - base_timestamp, r.key, r.value,
                                  r.headers, getattr(r, "attributes", 0) or 0)
                    for r, ts in zip(records, stamps))
    if codec:
        body = compression.compress(codec, body, magic=2)
    attrs = (codec & R.COMPRESSION_MASK
             | (R.TIMESTAMP_TYPE_MASK if log_append_time else 0)
             | (R.TRANSACTIONAL_MASK if transactional else 0)
             | (R.CONTROL_MASK if control else 0)
             | (R.DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0))
    length = R.HEADER_SIZE - R.LOG_OVERHEAD + len(body)
    raw = bytearray(_HDR.pack(base_offset, length, partition_leader_epoch, R.MAGIC, 0, attrs,
                                 last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                 producer_epoch, base_sequence, len(records)))
    crc = crc32c(body, crc32c(memoryview(raw)[R.ATTRIBUTES_OFFSET:]))
    struct.pack_into(">I", raw, R.CRC_OFFSET, crc)
    return bytes(raw) + body


def control_record_key(ctype: int, version: int = 0) -> bytes:
    """A control record's key (``specs.schemas.record_batch.ControlRecordKey``)."""
    return R.CONTROL_KEY_STRUCT.pack(version, ctype)


def end_txn_marker_value(coordinator_epoch: int, version: int = 0) -> bytes:
    """An end-transaction marker's value (``specs.schemas.record_batch.EndTransactionMarker``)."""
    return R.END_TXN_MARKER_STRUCT.pack(version, coordinator_epoch)


# --- legacy (magic 0 and 1) ----------------------------------------------------------------

def _legacy_message(magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    """One legacy message (crc, magic, attributes, [timestamp], key, value)."""
    parts = [struct.pack(">bb", magic, attributes)]
    if magic >= 1:
        parts.append(_TIMESTAMP.pack(timestamp))
    parts.append(_LENGTH.pack(-1) if key is None else _LENGTH.pack(len(key)) + bytes(key))
    parts.append(_LENGTH.pack(-1) if value is None else _LENGTH.pack(len(value)) + bytes(value))
    body = b"".join(parts)
    return struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body


def legacy_entry(offset: int, magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    msg = _legacy_message(magic, attributes, timestamp, key, value)
    return R.LOG_PREFIX_STRUCT.pack(offset, len(msg)) + msg


def build_legacy(records: Sequence, *, magic: int, codec: int = 0, log_append_time: bool = False,
                 wrapper_timestamp: int | None = None) -> bytes:
    """Build legacy log entries: one entry per record, or one compressed wrapper for all of them.

    Inner offsets of a compressed wrapper are absolute for magic 0, relative (0..n-1 from the first
    record) for magic 1 where the wrapper carries the last offset, as Kafka writes them.
    """
    ts_attr = L.TIMESTAMP_TYPE_MASK if (log_append_time and magic >= 1) else 0
    if not codec:
        return b"".join(legacy_entry(r.offset, magic, ts_attr, r.timestamp if magic else -1, r.key, r.value)
                        for r in records)
    if not records:
        raise ValueError("a compressed legacy wrapper needs at least one record")
    base = records[0].offset
    inner = b"".join(legacy_entry(r.offset - base if magic >= 1 else r.offset, magic, 0,
                                  r.timestamp if magic else -1, r.key, r.value) for r in records)
    value = compression.compress(codec, inner, magic=magic)
    if wrapper_timestamp is None:
        wrapper_timestamp = max(r.timestamp for r in records) if magic else -1
    return legacy_entry(records[-1].offset, magic, codec | ts_attr, wrapper_timestamp, None, value)
