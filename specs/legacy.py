"""Message sets of magic 0 and 1 (Kafka's LegacyRecord / AbstractLegacyRecordBatch).

A log entry is ``offset int64, size int32, message``; the message is ``crc uint32`` (plain CRC32
over magic..end), magic, attributes, a timestamp for magic 1, then int32-length key and value.
A compressed entry is a wrapper whose value is a compressed message set: inner offsets are
absolute for magic 0 and relative for magic 1, where the wrapper carries the LAST inner offset.
"""
from __future__ import annotations

import zlib

from .layout import Layout, lazy_specs

LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14   # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22   # + timestamp
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

#: The fixed prefix of an entry up to the attributes (what a shallow walk reads; ``EntryPrefix``).
ENTRY_PREFIX = Layout(
    ("offset", "q"),
    ("size", "l"),
    ("crc", "L"),
    ("magic", "b"),
    ("attributes", "b"),
)
PREFIX_STRUCT, PREFIX_FIELDS = ENTRY_PREFIX.struct, ENTRY_PREFIX.names


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _specs() -> dict:
    """The construct specs, made on first use (``L.MessageSet`` ...): see :func:`.layout.lazy_specs`."""
    import construct as c

    from .primitives import CrcSealed, KafkaCompressed, NullableBytes

    _MessageBody = c.Struct(
        "magic" / c.Int8sb,
        "attributes" / c.Int8sb,
        "timestamp" / c.If(c.this.magic >= 1, c.Int64sb),
        "key" / NullableBytes(c.Int32sb),
        # a wrapper's value is a compressed inner message set; anything else is plain bytes
        "value" / c.IfThenElse(
            c.this.attributes & COMPRESSION_MASK != 0,
            c.Prefixed(c.Int32sb, KafkaCompressed(
                c.GreedyRange(c.LazyBound(lambda: LogEntry)),
                codec=lambda ctx: ctx.attributes & COMPRESSION_MASK,
                magic=lambda ctx: ctx.magic,
            )),
            NullableBytes(c.Int32sb),
        ),
    )

    Message = CrcSealed(c.Int32ub, _crc32, _MessageBody)

    #: One log entry of a legacy message set.
    LogEntry = c.Struct(
        "offset" / c.Int64sb,
        "message" / c.Prefixed(c.Int32sb, Message),
    )

    MessageSet = c.GreedyRange(LogEntry)
    return {"EntryPrefix": ENTRY_PREFIX.spec(), "_MessageBody": _MessageBody, "Message": Message,
            "LogEntry": LogEntry, "MessageSet": MessageSet}


__getattr__ = lazy_specs(globals(), _specs)
