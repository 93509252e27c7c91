"""The row model of batches, records and anomalies, derived from the specs.

One table of columns drives ``kfx dump --format json`` (key names and order), the Spark data
source's schema (types from the spec field of each column) and the Parquet outputs.  A column
either mirrors a spec field (its type comes from that field) or is derived (its type is stated once
here, next to how it is derived).
"""
from __future__ import annotations

from specs import record_batch as R

#: the batch header's fields and their struct codes (R.BATCH_HEADER, the table the schema BatchHeader
#: is made from too)
_SPEC = dict(R.BATCH_HEADER.fields)

#: fixed-width struct codes -> Spark SQL types (unsigned 32-bit needs bigint)
_SPARK = {"q": "bigint", "l": "int", "i": "int", "h": "smallint", "b": "tinyint", "L": "bigint", "I": "bigint"}


def _spark_type(code: str) -> str:
    return _SPARK[code]


# (column, spec field name or Spark type of a derived column)
BATCH_COLUMNS = (
    ("baseOffset", "baseOffset"),
    ("lastOffset", "baseOffset"),             # baseOffset + lastOffsetDelta
    ("count", "recordCount"),
    ("position", "bigint"),
    ("size", "batchLength"),                  # batchLength + 12
    ("magic", "magic"),
    ("crc", "crc"),
    ("crcValid", "boolean"),
    ("compression", "string"),
    ("timestampType", "string"),
    ("isTransactional", "boolean"),
    ("isControl", "boolean"),
    ("producerId", "producerId"),
    ("producerEpoch", "producerEpoch"),
    ("baseSequence", "baseSequence"),
    ("lastSequence", "baseSequence"),
    ("partitionLeaderEpoch", "partitionLeaderEpoch"),
    ("firstTimestamp", "baseTimestamp"),
    ("maxTimestamp", "maxTimestamp"),
    ("deleteHorizonMs", "baseTimestamp"),     # null unless the delete-horizon attribute bit is set
)
BATCH_KEYS = tuple(name for name, _ in BATCH_COLUMNS)

#: the Spark batches level adds the two timestamps as Spark TIMESTAMPs (null where -1)
SPARK_BATCH_COLUMNS = BATCH_COLUMNS + (
    ("firstTimestampUtc", "timestamp"),
    ("maxTimestampUtc", "timestamp"),
)

RECORD_COLUMNS = (
    ("offset", "baseOffset"),
    ("timestamp", "baseTimestamp"),
    ("timestampUtc", "timestamp"),            # the same instant as a Spark TIMESTAMP (null where -1)
    ("timestampType", "string"),
    ("key", "binary"),
    ("value", "binary"),
    ("headers", "array<struct<key:string,value:binary>>"),
    ("batchBaseOffset", "baseOffset"),
    ("batchPosition", "bigint"),              # the record's batch's byte position in the file
    ("producerId", "producerId"),
    ("isTransactional", "boolean"),
    ("isControl", "boolean"),
    ("crcValid", "boolean"),                  # its batch's CRC (false rows only with includeCorrupt)
)

ANOMALY_COLUMNS = (
    ("position", "bigint"),
    ("offset", "baseOffset"),                 # the first offset not read (null: not knowable)
    ("kind", "string"),
    ("detail", "string"),                     # what is wrong, and why no record came back
    ("bytesNotRead", "bigint"),               # what the damage kept from being read or exported
    ("batchesNotRead", "bigint"),             # (null: not knowable)
    ("recordsNotRead", "bigint"),
)

#: every row names where it came from: the log dir, its broker (node) id and cluster id from its
#: meta.properties (null where it has none), the partition dir's topic and partition, the partition
#: dir's own name (``topic-N``; a copy Kafka set aside keeps its own: ``topic-N.<id>-delete``,
#: ``-future``, ``-stray``), the file, and the tier it was read from (``local``: a log dir;
#: ``remote``: a tiered-storage bucket, ``kafkaforensics/spark/remote_inputs.py``)
SOURCE_COLUMNS = (("logDir", "string"), ("brokerId", "int"), ("clusterId", "string"),
                  ("topic", "string"), ("partition", "int"), ("partitionDir", "string"), ("file", "string"),
                  ("tier", "string"))

#: the ``scan`` level: batches, records and anomalies in one read (what ``kfx scan`` decodes once),
#: ``rowKind`` saying which; a column two levels share has one meaning and type in both
#: (``offset``: a record's or an anomaly's; ``position``: a batch's or an anomaly's)
#: (``nextOffset``: the offset after the batches a walk kept, LogSegment.readNextOffset's; on a partition
#: row, the end of the empty segment Kafka's load gives a partition dir without segments)
ROW_KINDS = {"batch": SPARK_BATCH_COLUMNS, "record": RECORD_COLUMNS, "anomaly": ANOMALY_COLUMNS,
             # a partition dir's own row (``file``: the dir), so empty ones are seen; ``nextOffset``: its
             # log end when it has no segment (load_walk.empty_log_end), else null
             "partition": (("nextOffset", "baseOffset"),),
             "segment": (),     # a segment file's own row (``file``), so empty ones are counted
             # a piece of a segment walked (the whole segment, or a byte range of a large one): ``position``
             # where it starts, ``baseOffset`` its segment's, ``nextOffset`` the offset after the last
             # batch its walk kept (null: none), ``kind`` the damage that stopped the walk (null: none)
             "piece": (("position", "bigint"), ("baseOffset", "baseOffset"), ("nextOffset", "baseOffset"),
                       ("kind", "string"))}
SCAN_COLUMNS = (("rowKind", "string"),) + tuple(
    {name: src for cols in ROW_KINDS.values() for name, src in cols}.items())


#: each level of the ``kafka_segments`` source and its columns (after :data:`SOURCE_COLUMNS`)
SOURCE_LEVELS = {"batches": SPARK_BATCH_COLUMNS, "records": RECORD_COLUMNS, "anomalies": ANOMALY_COLUMNS,
                 "scan": SCAN_COLUMNS}

#: what the records level adds with ``decode`` (issue 56): a Confluent-framed key's and value's
#: decoded value as a JSON string, its schema id and subject, and why it did not decode (all null
#: for bytes without framing); the binary ``key``/``value`` stay as they are
DECODE_COLUMNS = tuple((f"{side}{name}", typ) for side in ("key", "value")
                       for name, typ in (("Decoded", "string"), ("SchemaId", "int"), ("Subject", "string"),
                                         ("DecodeError", "string")))


def level_columns(level: str, decode: bool = False) -> tuple:
    """A level's columns (after :data:`SOURCE_COLUMNS`): the records level's with ``decode`` adds
    :data:`DECODE_COLUMNS`."""
    return SOURCE_LEVELS[level] + (DECODE_COLUMNS if decode and level == "records" else ())


def spark_columns(columns) -> list[tuple[str, str]]:
    """A level's columns (:data:`SOURCE_COLUMNS` first) and the Spark SQL type of each."""
    return [(name, _spark_type(_SPEC[src]) if src in _SPEC else src) for name, src in SOURCE_COLUMNS + tuple(columns)]


def spark_ddl(columns) -> str:
    """A level's schema as Spark DDL."""
    return ", ".join(f"`{name}` {t}" for name, t in spark_columns(columns))
