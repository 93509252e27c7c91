"""``<offset>.snapshot``: producer state (Kafka's ProducerSnapshot message, version 1).

Version int16, then a CRC-32C of everything after the CRC field, then an int32-counted array of
entries.

The layouts of the fast path (no construct here); the construct schema ``ProducerSnapshot`` is
declared in :mod:`specs.schemas.producer_snapshot`.
"""
from __future__ import annotations

from .layout import Layout

VERSION = 1

PRODUCER_ENTRY = Layout(
    ("producerId", "q"),
    ("epoch", "h"),
    ("lastSequence", "l"),
    ("lastOffset", "q"),
    ("offsetDelta", "l"),
    ("timestamp", "q"),
    ("coordinatorEpoch", "l"),
    ("currentTxnFirstOffset", "q"),
)
ENTRY_STRUCT, ENTRY_FIELDS = PRODUCER_ENTRY.struct, PRODUCER_ENTRY.names

#: The fixed part before the entries: version, the CRC-32C of what follows it, the entry count.
SNAPSHOT_HEADER = Layout(("version", "h"), ("crc", "L"), ("count", "l"))     # ``SnapshotHeader``
HEADER_STRUCT, HEADER_FIELDS = SNAPSHOT_HEADER.struct, SNAPSHOT_HEADER.names
CRC_OFFSET = SNAPSHOT_HEADER.offset("crc")
COUNT_OFFSET = SNAPSHOT_HEADER.offset("count")   # the CRC covers from here to the end
ENTRIES_OFFSET = SNAPSHOT_HEADER.struct.size
