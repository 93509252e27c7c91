"""Record batch v2 (magic 2): header, attributes, records, headers, control records.

Facts from Kafka's DefaultRecordBatch / DefaultRecord / ControlRecordType / EndTransactionMarker:
the 61-byte header is big-endian; the CRC-32C covers attributes..end; the record count stays
outside the compressed block; record fields are zigzag varints; partitionLeaderEpoch is not
covered by the CRC.
"""
from __future__ import annotations

from .layout import Layout, lazy_specs

MAGIC = 2
HEADER_SIZE = 61          # RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12         # baseOffset + batchLength
HEADER_SIZE_UP_TO_MAGIC = 17

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

#: The whole 61-byte header as fixed-width fields (``BatchHeader`` is its construct spec, the fast
#: path's struct is made from it too).
BATCH_HEADER = Layout(
    ("baseOffset", "q"),
    ("batchLength", "l"),
    ("partitionLeaderEpoch", "l"),
    ("magic", "b"),
    ("crc", "L"),
    ("attributes", "h"),
    ("lastOffsetDelta", "l"),
    ("baseTimestamp", "q"),
    ("maxTimestamp", "q"),
    ("producerId", "q"),
    ("producerEpoch", "h"),
    ("baseSequence", "l"),
    ("recordCount", "l"),
)
HEADER_STRUCT, HEADER_FIELDS = BATCH_HEADER.struct, BATCH_HEADER.names
PARTITION_LEADER_EPOCH_OFFSET = BATCH_HEADER.offset("partitionLeaderEpoch")  # outside the CRC
CRC_OFFSET = BATCH_HEADER.offset("crc")
ATTRIBUTES_OFFSET = BATCH_HEADER.offset("attributes")  # the CRC covers from here to the end

#: Control records (transaction markers and KRaft control records): key and value layouts.
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


def _specs() -> dict:
    """The construct specs, made on first use (``R.RecordBatch`` ...): see :func:`.layout.lazy_specs`."""
    import construct as c

    from kafkaforensics.checksums import crc32c

    from .primitives import CrcSealed, KafkaCompressed, NullableBytes, NullableString, Varint

    BatchHeader = BATCH_HEADER.spec()

    #: The attributes int16, bit by bit (bit 0 is the least significant).
    BatchAttributes = c.BitStruct(
        "unused" / c.BitsInteger(9),
        "hasDeleteHorizon" / c.Flag,
        "isControl" / c.Flag,
        "isTransactional" / c.Flag,
        "timestampType" / c.Enum(c.Bit, CreateTime=0, LogAppendTime=1),
        "compression" / c.Enum(c.BitsInteger(3), none=0, gzip=1, snappy=2, lz4=3, zstd=4),
    )

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

    ControlRecordKey = c.Struct("version" / c.Int16sb, "type" / c.Int16sb)
    EndTransactionMarker = c.Struct("version" / c.Int16sb, "coordinatorEpoch" / c.Int32sb)
    return {"Varint": Varint, "BatchHeader": BatchHeader, "BatchAttributes": BatchAttributes,
            "RecordHeader": RecordHeader, "Record": Record, "_COVERED": _COVERED, "_Sealed": _Sealed,
            "RecordBatch": RecordBatch, "ControlRecordKey": ControlRecordKey,
            "EndTransactionMarker": EndTransactionMarker}


__getattr__ = lazy_specs(globals(), _specs)
