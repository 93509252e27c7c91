"""Record batch v2 (magic 2): header, attributes, records, headers, control records.

Facts from Kafka's DefaultRecordBatch / DefaultRecord / ControlRecordType / EndTransactionMarker:
the 61-byte header is big-endian; the CRC-32C covers attributes..end; the record count stays
outside the compressed block; record fields are zigzag varints; partitionLeaderEpoch is not
covered by the CRC.
"""
from __future__ import annotations

import construct as c
from crc32c import crc32c

from .codecs import CODEC_NAMES
from .primitives import (CrcSealed, KafkaCompressed, NullableBytes, NullableString, Varint, bit_mask, enum_names,
                         field_offset, struct_of)

MAGIC = 2

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

#: The whole 61-byte header as fixed-width fields (the fast path derives its struct from this).
BatchHeader = c.Struct(
    "baseOffset" / c.Int64sb,
    "batchLength" / c.Int32sb,
    "partitionLeaderEpoch" / c.Int32sb,
    "magic" / c.Int8sb,
    "crc" / c.Int32ub,
    "attributes" / c.Int16sb,
    "lastOffsetDelta" / c.Int32sb,
    "baseTimestamp" / c.Int64sb,
    "maxTimestamp" / c.Int64sb,
    "producerId" / c.Int64sb,
    "producerEpoch" / c.Int16sb,
    "baseSequence" / c.Int32sb,
    "recordCount" / c.Int32sb,
)
HEADER_STRUCT, HEADER_FIELDS = struct_of(BatchHeader)
HEADER_SIZE = BatchHeader.sizeof()                                          # RECORD_BATCH_OVERHEAD, 61
BATCH_LENGTH_OFFSET = field_offset(BatchHeader, "batchLength")
PARTITION_LEADER_EPOCH_OFFSET = field_offset(BatchHeader, "partitionLeaderEpoch")  # outside the CRC
LOG_OVERHEAD = PARTITION_LEADER_EPOCH_OFFSET                                # baseOffset + batchLength, 12
MAGIC_OFFSET = field_offset(BatchHeader, "magic")                           # the same byte in every magic, 16
CRC_OFFSET = field_offset(BatchHeader, "crc")
HEADER_SIZE_UP_TO_MAGIC = CRC_OFFSET                                        # what a walk needs to read, 17
ATTRIBUTES_OFFSET = field_offset(BatchHeader, "attributes")  # the CRC covers from here to the end
#: baseOffset and batchLength: the framing every magic shares (a legacy entry's offset and size)
LOG_PREFIX_STRUCT, LOG_PREFIX_FIELDS = struct_of(c.Struct(*BatchHeader.subcons[:2]))

#: The attributes int16, bit by bit (bit 0 is the least significant).
BatchAttributes = c.BitStruct(
    "unused" / c.BitsInteger(9),
    "hasDeleteHorizon" / c.Flag,
    "isControl" / c.Flag,
    "isTransactional" / c.Flag,
    "timestampType" / c.Enum(c.Bit, CreateTime=0, LogAppendTime=1),
    "compression" / c.Enum(c.BitsInteger(3), **{name: i for i, name in enumerate(CODEC_NAMES)}),
)
#: codec names by id (Kafka's CompressionType) and the attribute masks, read off BatchAttributes
CODECS = enum_names(BatchAttributes, "compression")
COMPRESSION_MASK = bit_mask(BatchAttributes, "compression")
TIMESTAMP_TYPE_MASK = bit_mask(BatchAttributes, "timestampType")
TRANSACTIONAL_MASK = bit_mask(BatchAttributes, "isTransactional")
CONTROL_MASK = bit_mask(BatchAttributes, "isControl")
DELETE_HORIZON_MASK = bit_mask(BatchAttributes, "hasDeleteHorizon")

RecordHeader = c.Struct(
    "key" / NullableString(NullableBytes(Varint)),
    "value" / NullableBytes(Varint),
)

#: One record; the length prefix is a zigzag varint of the bytes that follow it.
Record = c.Prefixed(
    Varint,
    c.Struct(
        "attributes" / c.Int8sb,
        "timestampDelta" / Varint,
        "offsetDelta" / Varint,
        "key" / NullableBytes(Varint),
        "value" / NullableBytes(Varint),
        "headers" / c.PrefixedArray(Varint, RecordHeader),
    ),
)

#: Everything the CRC covers: attributes to the end of the records (the header fields from
#: ``attributes`` to ``baseSequence`` are BatchHeader's own, not restated).
_COVERED = [sc for sc in BatchHeader.subcons if sc.name not in
            ("baseOffset", "batchLength", "partitionLeaderEpoch", "magic", "crc", "recordCount")]
_Sealed = c.Struct(
    *_COVERED,
    "recordCount" / c.Rebuild(c.Int32sb, c.len_(c.this.records)),
    "records" / KafkaCompressed(
        c.Array(c.this.recordCount, Record),
        codec=lambda ctx: ctx.attributes & COMPRESSION_MASK,
        magic=lambda ctx: MAGIC,
    ),
)

#: A complete v2 batch: parse gives every field (``crcValid`` included); build seals length and CRC.
RecordBatch = c.Struct(
    "baseOffset" / c.Int64sb,
    "body" / c.Prefixed(
        c.Int32sb,
        c.Struct(
            "partitionLeaderEpoch" / c.Int32sb,
            "magic" / c.Const(MAGIC, c.Int8sb),
            "sealed" / CrcSealed(c.Int32ub, crc32c, _Sealed),
        ),
    ),
)

#: Control records (transaction markers and KRaft control records): key and value layouts.
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
(ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION,
 KRAFT_VOTERS) = (next(k for k, v in CONTROL_TYPES.items() if v == name) for name in (
    "ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"))
ControlRecordKey = c.Struct("version" / c.Int16sb, "type" / c.Int16sb)
EndTransactionMarker = c.Struct("version" / c.Int16sb, "coordinatorEpoch" / c.Int32sb)
CONTROL_KEY_STRUCT, CONTROL_KEY_FIELDS = struct_of(ControlRecordKey)
END_TXN_MARKER_STRUCT, END_TXN_MARKER_FIELDS = struct_of(EndTransactionMarker)
