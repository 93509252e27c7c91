"""Message sets of magic 0 and 1 (Kafka's LegacyRecord / AbstractLegacyRecordBatch).

A log entry is ``offset int64, size int32, message``; the message is ``crc uint32`` (plain CRC32
over magic..end), magic, attributes, a timestamp for magic 1, then int32-length key and value.
A compressed entry is a wrapper whose value is a compressed message set: inner offsets are
absolute for magic 0 and relative for magic 1, where the wrapper carries the LAST inner offset.
"""
from __future__ import annotations

import zlib

import construct as c

from .codecs import CODEC_NAMES
from .primitives import CrcSealed, KafkaCompressed, NullableBytes, bit_mask, field_offset, struct_of

#: The fixed prefix of an entry up to the attributes (what a shallow walk reads).
EntryPrefix = c.Struct(
    "offset" / c.Int64sb,
    "size" / c.Int32sb,
    "crc" / c.Int32ub,
    "magic" / c.Int8sb,
    "attributes" / c.Int8sb,
)
PREFIX_STRUCT, PREFIX_FIELDS = struct_of(EntryPrefix)
TIMESTAMP = c.Int64sb     # magic 1 only, right after the attributes
LENGTH = c.Int32sb        # the key's and the value's length prefix (-1: null)

#: The attributes int8 (bits 0-2 the codec, bit 3 the timestamp type in magic 1).
MessageAttributes = c.BitStruct(
    "unused" / c.BitsInteger(4),
    "timestampType" / c.Enum(c.Bit, CreateTime=0, LogAppendTime=1),
    "compression" / c.Enum(c.BitsInteger(3), **{name: i for i, name in enumerate(CODEC_NAMES)}),
)
COMPRESSION_MASK = bit_mask(MessageAttributes, "compression")
TIMESTAMP_TYPE_MASK = bit_mask(MessageAttributes, "timestampType")

#: Byte offsets within a log entry, from the fields above (Kafka's LegacyRecord / Records constants).
LOG_OVERHEAD = field_offset(EntryPrefix, "crc")                # offset + size, 12
SIZE_OFFSET = field_offset(EntryPrefix, "size")                # 8
CRC_OFFSET = LOG_OVERHEAD                                      # the CRC covers magic..end
MAGIC_OFFSET = field_offset(EntryPrefix, "magic")              # 16
ATTRIBUTES_OFFSET = field_offset(EntryPrefix, "attributes")    # 17
TIMESTAMP_OFFSET = EntryPrefix.sizeof()                        # 18 (magic 1)
KEY_LENGTH_OFFSET = (TIMESTAMP_OFFSET, TIMESTAMP_OFFSET + TIMESTAMP.sizeof())   # by magic: 18, 26
RECORD_OVERHEAD_V0 = KEY_LENGTH_OFFSET[0] - LOG_OVERHEAD + 2 * LENGTH.sizeof()  # crc..value length, 14
RECORD_OVERHEAD_V1 = KEY_LENGTH_OFFSET[1] - LOG_OVERHEAD + 2 * LENGTH.sizeof()  # + timestamp, 22


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


_MessageBody = c.Struct(
    "magic" / c.Int8sb,
    "attributes" / c.Int8sb,
    "timestamp" / c.If(c.this.magic >= 1, TIMESTAMP),
    "key" / NullableBytes(LENGTH),
    # a wrapper's value is a compressed inner message set; anything else is plain bytes
    "value" / c.IfThenElse(
        c.this.attributes & COMPRESSION_MASK != 0,
        c.Prefixed(LENGTH, KafkaCompressed(
            c.GreedyRange(c.LazyBound(lambda: LogEntry)),
            codec=lambda ctx: ctx.attributes & COMPRESSION_MASK,
            magic=lambda ctx: ctx.magic,
        )),
        NullableBytes(LENGTH),
    ),
)

Message = CrcSealed(c.Int32ub, _crc32, _MessageBody)

#: One log entry of a legacy message set.
LogEntry = c.Struct(
    "offset" / c.Int64sb,
    "message" / c.Prefixed(c.Int32sb, Message),
)

MessageSet = c.GreedyRange(LogEntry)
