"""``<offset>.snapshot``: producer state (Kafka's ProducerSnapshot message, version 1).

Version int16, then a CRC-32C of everything after the CRC field, then an int32-counted array of
entries.
"""
from __future__ import annotations

import construct as c
from crc32c import crc32c

from .primitives import CrcSealed, field_offset, struct_of

VERSION = 1

ProducerEntry = c.Struct(
    "producerId" / c.Int64sb,
    "epoch" / c.Int16sb,
    "lastSequence" / c.Int32sb,
    "lastOffset" / c.Int64sb,
    "offsetDelta" / c.Int32sb,
    "timestamp" / c.Int64sb,
    "coordinatorEpoch" / c.Int32sb,
    "currentTxnFirstOffset" / c.Int64sb,
)
ENTRY_STRUCT, ENTRY_FIELDS = struct_of(ProducerEntry)

#: The fixed part before the entries: version, the CRC-32C of what follows it, the entry count.
SnapshotHeader = c.Struct(
    "version" / c.Int16sb,
    "crc" / c.Int32ub,
    "count" / c.Int32sb,
)
HEADER_STRUCT, HEADER_FIELDS = struct_of(SnapshotHeader)
CRC_OFFSET = field_offset(SnapshotHeader, "crc")
COUNT_OFFSET = field_offset(SnapshotHeader, "count")   # the CRC covers from here to the end
ENTRIES_OFFSET = SnapshotHeader.sizeof()

_FIELD = {sc.name: sc.subcon for sc in SnapshotHeader.subcons}
ProducerSnapshot = c.Struct(
    "version" / c.Const(VERSION, _FIELD["version"]),
    "sealed" / CrcSealed(_FIELD["crc"], crc32c, c.PrefixedArray(_FIELD["count"], ProducerEntry)),
)
