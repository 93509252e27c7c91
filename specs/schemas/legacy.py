"""Message sets of magic 0 and 1 as construct schemas: ``MessageSet`` is a run of ``LogEntry``; a
compressed wrapper's value is parsed as the inner message set. The layouts are :mod:`specs.legacy`."""
from __future__ import annotations

import zlib

import construct as c

from ..legacy import COMPRESSION_MASK, ENTRY_PREFIX, MESSAGE_ATTRIBUTES
from ..primitives import CrcSealed, KafkaCompressed, NullableBytes, bit_fields, fixed

__all__ = ["EntryPrefix", "MessageAttributes", "Message", "LogEntry", "MessageSet"]


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


#: the fixed prefix of an entry up to the attributes (what a shallow walk reads)
EntryPrefix = fixed(ENTRY_PREFIX)

#: the attributes int8 as bits
MessageAttributes = bit_fields(MESSAGE_ATTRIBUTES)

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

#: a message: the CRC32 over magic..end, then the body
Message = CrcSealed(c.Int32ub, _crc32, _MessageBody)

#: One log entry of a legacy message set.
LogEntry: c.Construct = c.Struct(  # annotated: its value refers to itself (LazyBound)
    "offset" / c.Int64sb,
    "message" / c.Prefixed(c.Int32sb, Message),
)

MessageSet = c.GreedyRange(LogEntry)
