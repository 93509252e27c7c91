"""The walks over a segment's bytes: one ``Protocol`` per kind, and the one switch between each
kind's reference path and its fast path (as aiokafka keeps ``_protocols.py`` and ``NO_EXTENSIONS``).

- **batch headers** (:class:`BatchWalk`, ``log.segment.BatchScanner``): the reference is
  ``__iter__``, one :class:`Batch` at a time; the fast path is ``iter_runs``, stretches of v2
  batches as one :class:`HeaderRunLike` each, CRCs checked in one loop.  A run's columns are lists
  (``header_list.ListRun``: verify, which never imports numpy) or numpy arrays
  (``header_run.HeaderRun``: recovery and reindex, which vectorise over them): one walk loop, two
  containers, chosen by the consumer, not by a flag.
- **records of a run of batches** (:class:`RecordDecoder`, ``log.record_columns.decode_columns``):
  the reference is ``Batch.records()`` batch by batch (``_from_records``); the fast path decodes
  the whole run with numpy gathers (``_vectorised``).

Every consumer takes the fast path's items and the reference path's alike (a run is many batches
at once); :data:`SPEEDUPS` is read where a walk starts, so the fast paths fall back to their
reference in one place each: ``BatchScanner.iter_runs`` walks batch by batch, ``decode_columns``
decodes record by record, the cleaner judges record by record.  The property tests set it off and
on and compare (``tests/test_verify.py``, ``test_recovery.py``, ``test_cleaner.py``,
``test_record_columns.py``, ``test_walks.py``).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # annotations only: this module stays free of imports at run time
    from kafkaforensics.errors import Problem
    from kafkaforensics.records.batch import Batch

#: the one switch: True, each walk takes its fast path; False (``KFX_NO_SPEEDUPS=1`` in the
#: environment), its reference path -- slower, the same results
SPEEDUPS: bool = os.environ.get("KFX_NO_SPEEDUPS", "") in ("", "0")


@runtime_checkable
class HeaderRunLike(Protocol):
    """Consecutive whole v2 batches of one file, header fields by column (``base_offset``,
    ``last_offset``, ``size`` and ``position``, ``crc_ok`` per batch, in log order)."""

    position: Sequence[int]
    crc_ok: Sequence[bool]
    base_offset: Sequence[int]
    last_offset: Sequence[int]
    size: Sequence[int]

    def __len__(self) -> int: ...

    def head(self, k: int) -> "HeaderRunLike":
        """The first ``k`` batches."""

    def batch(self, i: int) -> "Batch":
        """The ``i``-th batch as a :class:`Batch` (for the few a consumer needs the records of)."""

    def accepted(self, segment_base: int | None) -> int:
        """How many leading batches need nothing the batch-by-batch step would judge."""


@runtime_checkable
class BatchWalk(Protocol):
    """One file's batches in log order, ending where framing breaks: ``stop`` says why (None: a
    clean end) and ``valid_bytes`` where the last sound batch ends."""

    stop: "Problem | None"
    valid_bytes: int

    def __iter__(self) -> Iterator["Batch"]:
        """The reference: every batch, one at a time."""

    def iter_runs(self, fd: int | None = None, window: int | None = None,
                  lists: bool = False) -> Iterator["Batch | HeaderRunLike"]:
        """The fast path: the same walk, v2 stretches as runs (``lists``: list columns, no numpy);
        with :data:`SPEEDUPS` off, the reference's batches."""


class RecordDecoder(Protocol):
    """Every record of a run of batches, column by column (``record_columns.RecordColumns``);
    a batch that does not decode raises its located ``KafkaFormatError``."""

    def __call__(self, batches: "list[Batch]"): ...
