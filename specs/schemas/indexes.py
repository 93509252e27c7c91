"""The three index files as construct schemas: each a run of fixed-width entries. The layouts are
:mod:`specs.indexes`."""
from __future__ import annotations

import construct as c

from ..indexes import OFFSET_ENTRY_LAYOUT, TIME_ENTRY_LAYOUT, TXN_ENTRY_LAYOUT
from ..primitives import fixed

__all__ = ["OffsetIndexEntry", "TimeIndexEntry", "AbortedTxnEntry", "OffsetIndexFile", "TimeIndexFile",
           "TxnIndexFile"]

OffsetIndexEntry = fixed(OFFSET_ENTRY_LAYOUT)
TimeIndexEntry = fixed(TIME_ENTRY_LAYOUT)
AbortedTxnEntry = fixed(TXN_ENTRY_LAYOUT)

OffsetIndexFile = c.GreedyRange(OffsetIndexEntry)
TimeIndexFile = c.GreedyRange(TimeIndexEntry)
TxnIndexFile = c.GreedyRange(AbortedTxnEntry)
