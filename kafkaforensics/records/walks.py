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
at once).  :data:`SPEEDUPS` is read once, at import, by :func:`bind` (as aiokafka binds
``_protocols``' implementations): each fast path is defined beside its reference and the name
the callers use is bound to one of the two -- ``BatchScanner.iter_runs`` (or the batch-by-batch
walk), ``decode_columns`` (or record by record), the cleaner's offset map and verdicts (or record
by record), the Spark records level's header runs (or batch by batch).  No function tests the
switch per call.  :func:`use_speedups` rebinds every pair for a while: the property tests run
each pass both ways with it and compare (``tests/test_verify.py``, ``test_recovery.py``,
``test_cleaner.py``, ``test_record_columns.py``, ``test_record_runs.py``, ``test_walks.py``).
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Protocol, Sequence, TypeVar, runtime_checkable

if TYPE_CHECKING:  # annotations only: this module stays free of imports at run time
    from kafkaforensics.errors import Problem
    from kafkaforensics.records.batch import Batch

#: the one switch: True, each walk takes its fast path; False (``KFX_NO_SPEEDUPS=1`` in the
#: environment), its reference path -- slower, the same results
SPEEDUPS: bool = os.environ.get("KFX_NO_SPEEDUPS", "") in ("", "0")

F = TypeVar("F", bound=Callable[..., Any])


class Bound(NamedTuple):
    """One name bound by :func:`bind`: ``owner`` is the dotted path of the module (and class)
    that holds ``name``; ``fast`` and ``reference`` the two functions it may be bound to."""

    owner: str
    name: str
    fast: Callable[..., Any]
    reference: Callable[..., Any]


#: every name :func:`bind` chose for, in import order (what :func:`use_speedups` rebinds)
BOUND: list[Bound] = []


def bind(name: str, fast: F, reference: F) -> F:
    """``fast`` when :data:`SPEEDUPS` is on, else ``reference``: the choice made once, where
    ``name`` is assigned (``name = walks.bind("name", _fast, _ref)`` in a module or class body).
    ``fast`` is defined in that module (or class): its ``__qualname__`` says where ``name`` lives,
    so that :func:`use_speedups` can rebind it."""
    owner = fast.__module__ + "".join("." + part for part in fast.__qualname__.split(".")[:-1])
    BOUND.append(Bound(owner, name, fast, reference))
    return fast if SPEEDUPS else reference


def _owner(path: str) -> Any:
    """The module or class a :class:`Bound`'s dotted ``owner`` names (its module is loaded)."""
    parts = path.split(".")
    cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in sys.modules)
    target: Any = sys.modules[".".join(parts[:cut])]
    for part in parts[cut:]:
        target = getattr(target, part)
    return target


def _rebind(flag: bool) -> None:
    """Bind every :data:`BOUND` name to its fast function (``flag``) or its reference, where it
    is defined and in each loaded module that imported it by that name."""
    global SPEEDUPS
    for b in BOUND:
        chosen = b.fast if flag else b.reference
        setattr(_owner(b.owner), b.name, chosen)
        if b.owner == b.fast.__module__:  # a module-level name: also where it was imported
            for module in list(sys.modules.values()):
                held = getattr(module, "__dict__", {}).get(b.name)
                if held is b.fast or held is b.reference:
                    setattr(module, b.name, chosen)
    SPEEDUPS = flag


@contextmanager
def use_speedups(flag: bool) -> Iterator[None]:
    """Every fast path on (``flag``) or every reference, inside the ``with``; then back as it was.
    The tests' seam for running a pass both ways (bound names rebound, :data:`SPEEDUPS` set)."""
    before = SPEEDUPS
    _rebind(flag)
    try:
        yield
    finally:
        _rebind(before)


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
        with :data:`SPEEDUPS` off, the reference's batches (``_iter_runs_reference``)."""


class RecordDecoder(Protocol):
    """Every record of a run of batches, column by column (``record_columns.RecordColumns``);
    a batch that does not decode raises its located ``KafkaFormatError``."""

    def __call__(self, batches: "list[Batch]"): ...
