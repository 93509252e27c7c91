"""Entries of the three per-segment index files.

* ``.index``     -- relativeOffset int32, position int32 (8 bytes), preallocated, zero tail after a crash.
* ``.timeindex`` -- timestamp int64, relativeOffset int32 (12 bytes), likewise.
* ``.txnindex``  -- version int16 (0), producerId, firstOffset, lastOffset, lastStableOffset int64
                    (34 bytes): one per aborted transaction whose marker lies in the segment.
"""
from __future__ import annotations

import construct as c

from .primitives import struct_of

OffsetIndexEntry = c.Struct("relativeOffset" / c.Int32sb, "position" / c.Int32sb)
TimeIndexEntry = c.Struct("timestamp" / c.Int64sb, "relativeOffset" / c.Int32sb)
AbortedTxnEntry = c.Struct(
    "version" / c.Int16sb,
    "producerId" / c.Int64sb,
    "firstOffset" / c.Int64sb,
    "lastOffset" / c.Int64sb,
    "lastStableOffset" / c.Int64sb,
)
TXN_INDEX_VERSION = 0

OffsetIndexFile = c.GreedyRange(OffsetIndexEntry)
TimeIndexFile = c.GreedyRange(TimeIndexEntry)
TxnIndexFile = c.GreedyRange(AbortedTxnEntry)

OFFSET_ENTRY, OFFSET_FIELDS = struct_of(OffsetIndexEntry)
TIME_ENTRY, TIME_FIELDS = struct_of(TimeIndexEntry)
TXN_ENTRY, TXN_FIELDS = struct_of(AbortedTxnEntry)
