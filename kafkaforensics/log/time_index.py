"""``.timeindex`` files: sparse (timestamp, relative offset) entries, Kafka's TimeIndex."""
from __future__ import annotations

import bisect

from specs.indexes import TIME_ENTRY, TIME_FIELDS

from kafkaforensics.log.index_file import entry_columns, entry_lists, entry_pairs

ENTRY_SIZE = TIME_ENTRY.size


def read_columns(data: bytes, base_offset: int):
    """Entries as numpy columns (timestamps, absolute offsets) and the count of zero-tail slots."""
    (ts, rel), zero_tail = entry_columns(data, TIME_ENTRY, TIME_FIELDS)
    return ts, rel + base_offset, zero_tail


def read_lists(data: bytes, base_offset: int, limit: int):
    """:func:`read_columns` as lists, without numpy; None when more than ``limit`` entries are kept."""
    got = entry_lists(data, TIME_ENTRY, TIME_FIELDS, limit)
    if got is None:
        return None
    (ts, rel), zero_tail = got
    return ts, [r + base_offset for r in rel], zero_tail


def read_entries(data: bytes, base_offset: int) -> tuple[list[tuple[int, int]], int]:
    """Parse entries as (timestamp, absolute offset) and count the zero-tail slots."""
    return entry_pairs(read_lists, read_columns, data, base_offset)


def to_bytes(entries, base_offset: int) -> bytes:
    return b"".join(TIME_ENTRY.pack(ts, off - base_offset) for ts, off in entries)


def lookup(entries: list[tuple[int, int]], target_ts: int, base_offset: int) -> tuple[int, int]:
    """Largest entry with timestamp <= target; (-1, base_offset) when there is none."""
    i = bisect.bisect_right([e[0] for e in entries], target_ts) - 1
    return entries[i] if i >= 0 else (-1, base_offset)
