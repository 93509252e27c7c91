"""Record batch v2 as construct schemas: ``RecordBatch`` parses every field (``crcValid`` included) and
builds a batch with its length and CRC sealed. The layouts, offsets and masks are :mod:`specs.record_batch`."""
from __future__ import annotations

import construct as c
from crc32c import crc32c

from ..primitives import CrcSealed, KafkaCompressed, NullableBytes, NullableString, Varint, bit_fields, fixed
from ..record_batch import BATCH_ATTRIBUTES, BATCH_HEADER, COMPRESSION_MASK, CONTROL_KEY, END_TXN_MARKER, MAGIC

__all__ = ["Varint", "BatchHeader", "BatchAttributes", "RecordHeader", "Record", "RecordBatch", "ControlRecordKey",
           "EndTransactionMarker"]

#: the 61-byte header, field by field (the fast path's struct is made from the same table)
BatchHeader = fixed(BATCH_HEADER)

#: the attributes int16 as bits
BatchAttributes = bit_fields(BATCH_ATTRIBUTES)

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

#: a control record's key and an end-transaction marker's value
ControlRecordKey = fixed(CONTROL_KEY)
EndTransactionMarker = fixed(END_TXN_MARKER)
