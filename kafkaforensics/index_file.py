"""What the fixed-width index files (``.index``, ``.timeindex``) share: entries read as columns.

A preallocated index that was not trimmed (the active segment's, or any after a crash) ends in
zero slots; as kafka-dump-log.sh does, the first all-zero entry after the first entry starts
that tail.
"""
from __future__ import annotations

from specs.layout import numpy_dtype


def entry_columns(data: bytes, entry, names) -> tuple[list, int]:
    """The entries of ``data`` (``entry``: the spec's struct, ``names`` its fields) as int64
    columns up to the zero tail, and how many zero-tail slots follow."""
    import numpy as np  # here: `kfx dump` of a segment alone never loads numpy
    n = len(data) // entry.size
    rows = np.frombuffer(data, dtype=numpy_dtype(entry, names), count=n)
    zero = np.ones(n, dtype=bool)
    for name in names:
        zero &= rows[name] == 0
    zero[:1] = False
    tail = np.flatnonzero(zero)
    kept = int(tail[0]) if len(tail) else n
    return [rows[name][:kept].astype(np.int64) for name in names], n - kept
