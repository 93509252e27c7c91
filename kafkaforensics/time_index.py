"""``.timeindex`` files: sparse (timestamp, relative offset) entries, Kafka's TimeIndex."""
from __future__ import annotations

import bisect

from specs.indexes import TIME_ENTRY

ENTRY_SIZE = TIME_ENTRY.size


def read_entries(data: bytes, base_offset: int) -> tuple[list[tuple[int, int]], int]:
    """Parse entries as (timestamp, absolute offset) and count the zero-tail slots."""
    n = len(data) // ENTRY_SIZE
    out = []
    for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(data[:n * ENTRY_SIZE])):
        if i > 0 and ts == 0 and rel == 0:
            return out, n - i
        out.append((ts, base_offset + rel))
    return out, 0


def to_bytes(entries, base_offset: int) -> bytes:
    return b"".join(TIME_ENTRY.pack(ts, off - base_offset) for ts, off in entries)


def lookup(entries: list[tuple[int, int]], target_ts: int, base_offset: int) -> tuple[int, int]:
    """Largest entry with timestamp <= target; (-1, base_offset) when there is none."""
    i = bisect.bisect_right([e[0] for e in entries], target_ts) - 1
    return entries[i] if i >= 0 else (-1, base_offset)
