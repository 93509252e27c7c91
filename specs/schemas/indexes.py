"""The three index files as construct schemas: each a run of fixed-width entries. The layouts are
:mod:`specs.indexes`."""
from __future__ import annotations

import construct as c

from ..indexes import OFFSET_ENTRY_LAYOUT, TIME_ENTRY_LAYOUT, TXN_ENTRY_LAYOUT

__all__ = ["OffsetIndexEntry", "TimeIndexEntry", "AbortedTxnEntry", "OffsetIndexFile", "TimeIndexFile",
           "TxnIndexFile"]

OffsetIndexEntry = OFFSET_ENTRY_LAYOUT.spec()
TimeIndexEntry = TIME_ENTRY_LAYOUT.spec()
AbortedTxnEntry = TXN_ENTRY_LAYOUT.spec()

OffsetIndexFile = c.GreedyRange(OffsetIndexEntry)
TimeIndexFile = c.GreedyRange(TimeIndexEntry)
TxnIndexFile = c.GreedyRange(AbortedTxnEntry)
