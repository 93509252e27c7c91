"""Entries of the three per-segment index files.

* ``.index``     -- relativeOffset int32, position int32 (8 bytes), preallocated, zero tail after a crash.
* ``.timeindex`` -- timestamp int64, relativeOffset int32 (12 bytes), likewise.
* ``.txnindex``  -- version int16 (0), producerId, firstOffset, lastOffset, lastStableOffset int64
                    (34 bytes): one per aborted transaction whose marker lies in the segment.

The entry layouts of the fast paths (no construct here); the construct schemas
(``OffsetIndexFile``, ...) are declared in :mod:`specs.schemas.indexes`.
"""
from __future__ import annotations

from .layout import Layout

OFFSET_ENTRY_LAYOUT = Layout(("relativeOffset", "l"), ("position", "l"))
TIME_ENTRY_LAYOUT = Layout(("timestamp", "q"), ("relativeOffset", "l"))
TXN_ENTRY_LAYOUT = Layout(
    ("version", "h"),
    ("producerId", "q"),
    ("firstOffset", "q"),
    ("lastOffset", "q"),
    ("lastStableOffset", "q"),
)
TXN_INDEX_VERSION = 0

OFFSET_ENTRY, OFFSET_FIELDS = OFFSET_ENTRY_LAYOUT.struct, OFFSET_ENTRY_LAYOUT.names
TIME_ENTRY, TIME_FIELDS = TIME_ENTRY_LAYOUT.struct, TIME_ENTRY_LAYOUT.names
TXN_ENTRY, TXN_FIELDS = TXN_ENTRY_LAYOUT.struct, TXN_ENTRY_LAYOUT.names
