"""``<offset>.snapshot``: producer state (Kafka's ProducerSnapshot message, version 1).

Version int16, then a CRC-32C of everything after the CRC field, then an int32-counted array of
entries.
"""
from __future__ import annotations

import construct as c
from crc32c import crc32c

from .primitives import CrcSealed, struct_of

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

ProducerSnapshot = c.Struct(
    "version" / c.Const(VERSION, c.Int16sb),
    "sealed" / CrcSealed(c.Int32ub, crc32c, c.PrefixedArray(c.Int32sb, ProducerEntry)),
)
