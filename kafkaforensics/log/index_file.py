"""What the fixed-width index files (``.index``, ``.timeindex``) share: entries read as columns.

A preallocated index that was not trimmed (the active segment's, or any after a crash) ends in
zero slots; as kafka-dump-log.sh does, the first all-zero entry after the first entry starts
that tail.
"""
from __future__ import annotations

from specs.layout import numpy_dtype
from specs.lazy import lazy

#: `kfx dump` of a segment alone never loads numpy
np = lazy("numpy", globals())

#: up to this many entries, ``read_entries`` reads an index without numpy (beyond, numpy is faster
#: than the lists even with its import)
LIST_ENTRIES = 1 << 16


def entry_columns(data: bytes, entry, names) -> tuple[list, int]:
    """The entries of ``data`` (``entry``: the spec's struct, ``names`` its fields) as int64
    columns up to the zero tail, and how many zero-tail slots follow."""
    n = len(data) // entry.size
    rows = np.frombuffer(data, dtype=numpy_dtype(entry, names), count=n)
    zero = np.ones(n, dtype=bool)
    for name in names:
        zero &= rows[name] == 0
    zero[:1] = False
    tail = np.flatnonzero(zero)
    kept = int(tail[0]) if len(tail) else n
    return [rows[name][:kept].astype(np.int64) for name in names], n - kept


def entry_lists(data: bytes, entry, names, limit: int) -> tuple[list, int] | None:
    """What :func:`entry_columns` gives, as lists of ints read without numpy, or None when more than
    ``limit`` entries precede the zero tail (numpy reads those faster than its import costs).
    ``tests/test_verify.py`` proves the two equal."""
    n = len(data) // entry.size
    columns: list[list[int]] = [[] for _ in names]
    kept = n
    for i, row in enumerate(entry.iter_unpack(memoryview(data)[:n * entry.size])):
        if i and not any(row):
            kept = i
            break
        if i >= limit:
            return None
        for column, value in zip(columns, row):
            column.append(value)
    return columns, n - kept


def entry_pairs(read_lists, read_columns, data: bytes, base_offset: int) -> tuple[list[tuple[int, int]], int]:
    """An index's entries as pairs and its zero-tail count: read as lists when it is small (no numpy to
    import), else as numpy columns (``read_lists``/``read_columns``: the index kind's readers)."""
    got = read_lists(data, base_offset, LIST_ENTRIES)
    if got is not None:
        return list(zip(got[0], got[1])), got[2]
    first, second, zero_tail = read_columns(data, base_offset)
    return list(zip(first.tolist(), second.tolist())), zero_tail
