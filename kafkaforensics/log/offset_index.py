"""``.index`` files: sparse (relative offset, position) entries, Kafka's OffsetIndex."""
from __future__ import annotations

import bisect

from specs.indexes import OFFSET_ENTRY, OFFSET_FIELDS

from kafkaforensics.log.index_file import entry_columns, entry_lists, entry_pairs

ENTRY_SIZE = OFFSET_ENTRY.size


def read_columns(data: bytes, base_offset: int):
    """Entries as numpy columns (absolute offsets, positions) and the count of zero-tail slots.

    Like kafka-dump-log.sh, an entry whose offset equals the base offset after the first one marks
    the start of the preallocated zero tail a crash leaves behind.
    """
    (rel, pos), zero_tail = entry_columns(data, OFFSET_ENTRY, OFFSET_FIELDS)
    return rel + base_offset, pos, zero_tail


def read_lists(data: bytes, base_offset: int, limit: int):
    """:func:`read_columns` as lists, without numpy; None when more than ``limit`` entries are kept."""
    got = entry_lists(data, OFFSET_ENTRY, OFFSET_FIELDS, limit)
    if got is None:
        return None
    (rel, pos), zero_tail = got
    return [r + base_offset for r in rel], pos, zero_tail


def read_entries(data: bytes, base_offset: int) -> tuple[list[tuple[int, int]], int]:
    """Parse entries as (absolute offset, position); returns them and the count of zero-tail slots."""
    return entry_pairs(read_lists, read_columns, data, base_offset)


def to_bytes(entries, base_offset: int) -> bytes:
    return b"".join(OFFSET_ENTRY.pack(off - base_offset, pos) for off, pos in entries)


def lookup(entries: list[tuple[int, int]], target: int, base_offset: int) -> tuple[int, int]:
    """Largest entry with offset <= target; (base_offset, 0) when there is none."""
    i = bisect.bisect_right(entries, (target, float("inf"))) - 1
    return entries[i] if i >= 0 else (base_offset, 0)
