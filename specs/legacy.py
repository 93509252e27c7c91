"""Message sets of magic 0 and 1 (Kafka's LegacyRecord / AbstractLegacyRecordBatch).

A log entry is ``offset int64, size int32, message``; the message is ``crc uint32`` (plain CRC32
over magic..end), magic, attributes, a timestamp for magic 1, then int32-length key and value.
A compressed entry is a wrapper whose value is a compressed message set: inner offsets are
absolute for magic 0 and relative for magic 1, where the wrapper carries the LAST inner offset.

The layouts and offsets of the fast paths (no construct here); the construct schemas
(``MessageSet``, ``LogEntry``, ...) are declared in :mod:`specs.schemas.legacy`.
"""
from __future__ import annotations

from .codecs import CODEC_NAMES
from .layout import Bits, Layout

#: The fixed prefix of an entry up to the attributes (what a shallow walk reads; ``EntryPrefix``).
ENTRY_PREFIX = Layout(
    ("offset", "q"),
    ("size", "l"),
    ("crc", "L"),
    ("magic", "b"),
    ("attributes", "b"),
)
PREFIX_STRUCT, PREFIX_FIELDS = ENTRY_PREFIX.struct, ENTRY_PREFIX.names
TIMESTAMP = Layout(("timestamp", "q"))     # magic 1 only, right after the attributes
LENGTH = Layout(("length", "l"))           # the key's and the value's length prefix (-1: null)

#: The attributes int8 (bits 0-2 the codec, bit 3 the timestamp type in magic 1; ``MessageAttributes``).
MESSAGE_ATTRIBUTES = Bits(8, ("compression", 3, CODEC_NAMES), ("timestampType", 1, ("CreateTime", "LogAppendTime")))
COMPRESSION_MASK = MESSAGE_ATTRIBUTES.mask("compression")
TIMESTAMP_TYPE_MASK = MESSAGE_ATTRIBUTES.mask("timestampType")

#: Byte offsets within a log entry, from the fields above (Kafka's LegacyRecord / Records constants).
LOG_OVERHEAD = ENTRY_PREFIX.offset("crc")                  # offset + size, 12
SIZE_OFFSET = ENTRY_PREFIX.offset("size")                  # 8
CRC_OFFSET = LOG_OVERHEAD                                  # the CRC covers magic..end
MAGIC_OFFSET = ENTRY_PREFIX.offset("magic")                # 16
ATTRIBUTES_OFFSET = ENTRY_PREFIX.offset("attributes")      # 17
TIMESTAMP_OFFSET = ENTRY_PREFIX.struct.size                # 18 (magic 1)
KEY_LENGTH_OFFSET = (TIMESTAMP_OFFSET, TIMESTAMP_OFFSET + TIMESTAMP.struct.size)      # by magic: 18, 26
RECORD_OVERHEAD_V0 = KEY_LENGTH_OFFSET[0] - LOG_OVERHEAD + 2 * LENGTH.struct.size    # crc..value length, 14
RECORD_OVERHEAD_V1 = KEY_LENGTH_OFFSET[1] - LOG_OVERHEAD + 2 * LENGTH.struct.size    # + timestamp, 22

