"""Record batch v2 (magic 2): header, attributes, records, headers, control records.

Facts from Kafka's DefaultRecordBatch / DefaultRecord / ControlRecordType / EndTransactionMarker:
the 61-byte header is big-endian; the CRC-32C covers attributes..end; the record count stays
outside the compressed block; record fields are zigzag varints; partitionLeaderEpoch is not
covered by the CRC.

The layouts, offsets and masks of the fast paths (no construct here); the construct schemas
(``RecordBatch``, ``Record``, ...) are declared in :mod:`specs.schemas.record_batch`.
"""
from __future__ import annotations

from .codecs import CODEC_NAMES
from .layout import Bits, Layout

MAGIC = 2

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
HEADER_SIZE = BATCH_HEADER.struct.size                                     # RECORD_BATCH_OVERHEAD, 61
BATCH_LENGTH_OFFSET = BATCH_HEADER.offset("batchLength")
PARTITION_LEADER_EPOCH_OFFSET = BATCH_HEADER.offset("partitionLeaderEpoch")  # outside the CRC
LOG_OVERHEAD = PARTITION_LEADER_EPOCH_OFFSET                                # baseOffset + batchLength, 12
MAGIC_OFFSET = BATCH_HEADER.offset("magic")                                 # the same byte in every magic, 16
CRC_OFFSET = BATCH_HEADER.offset("crc")
HEADER_SIZE_UP_TO_MAGIC = CRC_OFFSET                                        # what a walk needs to read, 17
ATTRIBUTES_OFFSET = BATCH_HEADER.offset("attributes")  # the CRC covers from here to the end
#: baseOffset and batchLength: the framing every magic shares (a legacy entry's offset and size)
LOG_PREFIX = Layout(*BATCH_HEADER.fields[:2])
LOG_PREFIX_STRUCT, LOG_PREFIX_FIELDS = LOG_PREFIX.struct, LOG_PREFIX.names

#: The attributes int16, bit by bit from the least significant (``BatchAttributes`` is its spec).
BATCH_ATTRIBUTES = Bits(16, ("compression", 3, CODEC_NAMES), ("timestampType", 1, ("CreateTime", "LogAppendTime")),
                        ("isTransactional", 1), ("isControl", 1), ("hasDeleteHorizon", 1))
#: codec names by id (Kafka's CompressionType) and the attribute masks, read off BATCH_ATTRIBUTES
CODECS = BATCH_ATTRIBUTES.names_of("compression")
COMPRESSION_MASK = BATCH_ATTRIBUTES.mask("compression")
TIMESTAMP_TYPE_MASK = BATCH_ATTRIBUTES.mask("timestampType")
TRANSACTIONAL_MASK = BATCH_ATTRIBUTES.mask("isTransactional")
CONTROL_MASK = BATCH_ATTRIBUTES.mask("isControl")
DELETE_HORIZON_MASK = BATCH_ATTRIBUTES.mask("hasDeleteHorizon")

#: Control records (transaction markers and KRaft control records): key and value layouts.
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
(ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION,
 KRAFT_VOTERS) = (next(k for k, v in CONTROL_TYPES.items() if v == name) for name in (
    "ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"))
CONTROL_KEY = Layout(("version", "h"), ("type", "h"))                     # ``ControlRecordKey``
END_TXN_MARKER = Layout(("version", "h"), ("coordinatorEpoch", "l"))      # ``EndTransactionMarker``
CONTROL_KEY_STRUCT, CONTROL_KEY_FIELDS = CONTROL_KEY.struct, CONTROL_KEY.names
END_TXN_MARKER_STRUCT, END_TXN_MARKER_FIELDS = END_TXN_MARKER.struct, END_TXN_MARKER.names
