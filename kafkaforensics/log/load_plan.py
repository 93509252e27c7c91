"""The plan a load makes (Kafka's LogLoader.load(), offline: :mod:`.log_loader`): the file actions
(delete, rename, truncate, write) with the phase each is applied in, what they drop, what the load
found (:class:`RecoveryReport`), what it is told (:class:`LoadOptions`), and the partition dir's
files as the plan has them (:class:`PlanFiles`).  Applying a plan is a repair's
(:mod:`kafkaforensics.repair.actions`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from kafkaforensics import fsutil
from kafkaforensics.log.batch_search import scan_file
from kafkaforensics.log.kafka_version import KafkaVersion
from kafkaforensics.log.segment import (CLEANED, DELETED, INDEX_SUFFIXES, LOG, SEGMENT_SUFFIXES, SNAPSHOT, SWAP, Segment,
                                        file_name, offset_from_name, without_leftover_suffix)

#: Crash-safe order of application: leftovers in Kafka's order, then segments after the truncation
#: point are moved aside *before* the truncation, then indexes, snapshots and checkpoints.
PHASES = {"leftover-delete": 0, "leftover-rename": 1, "orphan": 2, "remove-segment": 3, "truncate": 4,
          "index": 5, "snapshot": 6, "epochs": 7}


@dataclass
class Dropped:
    """What a repair drops or deletes from a partition: its bytes, and the batches in them that still
    pass their CRC (their records, their offsets) -- after a truncation, what ``kfx salvage`` can
    still copy out; ``damaged_bytes`` are those in no valid batch."""
    bytes: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    damaged_bytes: int = 0
    files: list[str] = field(default_factory=list)

    def add_batch(self, b) -> None:
        self.batches += 1
        self.records += max(0, min(b.count or 0, b.last_offset - b.base_offset + 1))
        self.first_offset = b.base_offset if self.first_offset is None else min(self.first_offset, b.base_offset)
        self.last_offset = b.last_offset if self.last_offset is None else max(self.last_offset, b.last_offset)

    def __bool__(self) -> bool:
        return self.bytes > 0

    def text(self) -> str:
        offsets = f"offsets {self.first_offset}..{self.last_offset}" if self.first_offset is not None else "no offsets"
        return (f"{self.bytes} bytes in {len(self.files)} file(s): {self.batches} valid batches, {self.records} "
                f"records, {offsets}" + (f"; {self.damaged_bytes} damaged bytes" if self.damaged_bytes else ""))

    def to_json(self) -> dict:
        return {"bytes": self.bytes, "batches": self.batches, "records": self.records,
                "firstOffset": self.first_offset, "lastOffset": self.last_offset,
                "damagedBytes": self.damaged_bytes, "files": self.files}


@dataclass
class Action:
    action: str                 # delete | rename | truncate | write
    file: str
    detail: str
    target: str | None = None   # rename destination
    size: int | None = None     # truncate: new size
    data: bytes | None = field(default=None, repr=False)  # write: new content
    phase: int = field(default=9, repr=False)  # the order they are applied in (see PHASES)

    def to_json(self) -> dict:
        out: dict[str, str | int] = {"action": self.action, "file": self.file, "detail": self.detail}
        if self.target is not None:
            out["target"] = self.target
        if self.size is not None:
            out["size"] = self.size
        if self.data is not None:
            out["bytes"] = len(self.data)
        return out


#: each phrase of :attr:`RecoveryReport.done` as a dry run says it
WOULD = {"truncated": "would truncate", "segment removed": "would remove segment",
         "leftover completed": "would complete leftover", "orphan index deleted": "would delete orphan index",
         "index rebuilt": "would rebuild index", "time index created": "would create time index",
         "snapshot written": "would write snapshot", "snapshot deleted": "would delete snapshot",
         "leader epochs": "would rewrite leader epochs"}


@dataclass
class RecoveryReport:
    partition: str
    recovery_point: int
    truncated_at: dict | None = None
    removed_segments: list[str] = field(default_factory=list)
    rebuilt_indexes: list[str] = field(default_factory=list)
    backup: str | None = None
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log_end_offset: int = 0
    dry_run: bool = False
    path: str | None = None
    clean_shutdown: bool = False
    log_start_offset: int = 0
    #: what the truncation and the removed segments drop: bytes, and the batches in them that still
    #: pass their CRC (what ``kfx salvage`` can copy out)
    dropped: Dropped = field(default_factory=Dropped)
    recovered_segments: list[str] = field(default_factory=list)
    first_segment: int | None = None  # the base offset of the first segment kept
    active_segment: int | None = None  # the base offset of the last segment kept (Kafka's active segment)
    kafka: KafkaVersion | None = None  # the KafkaVersion whose rules applied

    @property
    def done(self) -> list[str]:
        """What was done, in words: one short phrase an action kind (the summary table's column)."""
        kinds = []
        for a in self.actions:
            n = os.path.basename(a.file)
            what = ("truncated" if a.action == "truncate" else "segment removed" if a.phase == PHASES["remove-segment"]
                    else "leftover completed" if a.phase in (PHASES["leftover-delete"], PHASES["leftover-rename"])
                    else "orphan index deleted" if a.phase == PHASES["orphan"]
                    else "index rebuilt" if a.phase == PHASES["index"] and a.detail.startswith("rebuild")
                    else "time index created" if a.phase == PHASES["index"]
                    else "snapshot " + ("written" if a.action == "write" else "deleted") if n.endswith(SNAPSHOT)
                    else "leader epochs" if a.phase == PHASES["epochs"] else a.action)
            if what not in kinds:
                kinds.append(what)
        return kinds

    @property
    def would_do(self) -> list[str]:
        """:attr:`done` as a dry run says it: what it would do (``would rebuild index``)."""
        return [WOULD.get(d, f"would {d}") for d in self.done]

    def to_json(self) -> dict:
        return {"partition": self.partition, "path": self.path, "truncatedAt": self.truncated_at,
                "removedSegments": self.removed_segments, "rebuiltIndexes": self.rebuilt_indexes,
                "recoveredSegments": self.recovered_segments,
                "backup": self.backup, "actions": [a.to_json() for a in self.actions],
                "recoveryPoint": self.recovery_point, "logStartOffset": self.log_start_offset,
                "logEndOffset": self.log_end_offset, "cleanShutdown": self.clean_shutdown,
                "dropped": self.dropped.to_json(), "done": self.done,
                "notes": self.notes, "dryRun": self.dry_run,
                "kafkaVersion": self.kafka.to_json() if self.kafka is not None else None}


@dataclass(frozen=True)
class LoadOptions:
    """What a load is told (``kfx recover``'s knobs), one partition or a whole log dir:

    * ``index_interval_bytes``: not given, the topic's ``index.interval.bytes`` where the log dir holds
      the metadata (a note says so), else Kafka's default;
    * ``max_message_bytes``: larger batches are corrupt too;
    * ``full``: every segment is recovered whatever the marker and the recovery point say;
    * ``kafka_version`` (``X.Y`` or a KafkaVersion; default: inferred from the log dir): the rules of
      :mod:`~kafkaforensics.log.kafka_rules` that differ between Kafka generations;
    * ``now`` (epoch ms): the clock producer expiry is judged by (2.4+: producers below the log start
      are dropped from the snapshots written once expired); None: no producer expires;
    * ``clean`` (the clean-shutdown marker), ``recovery_point`` and ``log_start_offset`` (the
      checkpoints): what the log dir says of the partition, read from it when None.
    """
    index_interval_bytes: int | None = None
    max_message_bytes: int | None = None
    full: bool = False
    kafka_version: Any = None   # "X.Y", a KafkaVersion or None (inferred)
    now: int | None = None
    clean: bool | None = None
    recovery_point: int | None = None
    log_start_offset: int | None = None

    def told(self, **given) -> "LoadOptions":
        """These options with the fields given (not None, ``full`` when true) replaced."""
        return replace(self, **{k: v for k, v in given.items() if v is not None and v is not False})


class PlanFiles:
    """A partition dir's files as the plan sees them (one listing of the dir): each final name to the
    file that holds its bytes (a ``.swap`` being completed reads as its final name; a file the plan
    writes or deletes is added or dropped).  :meth:`segment` is a :class:`Segment` whose files are
    the plan's."""

    def __init__(self, path: str):
        self.path = path
        self.files = {n: os.path.join(path, n) for n in sorted(os.listdir(path))
                      if os.path.isfile(os.path.join(path, n))}

    def full(self, name: str) -> str:
        """The path of ``name`` in the dir (where the plan writes it)."""
        return os.path.join(self.path, name)

    def with_offset(self, suffixes=None):
        """(name, offset) of each file named after an offset (of ``suffixes`` only when given), in name order."""
        for n in sorted(self.files):
            off = offset_from_name(n)
            if off is not None and (suffixes is None or n.endswith(suffixes)):
                yield n, off

    def segment(self, base: int) -> Segment:
        """The segment at ``base`` as the plan has it now: each of its files the one holding its bytes
        (a ``.swap`` being completed reads as its final name), a file the plan has none of a path
        that does not exist."""
        named = {suf: self.files.get(file_name(base, suf), self.full(file_name(base, suf) + ".absent"))
                 for suf in SEGMENT_SUFFIXES}
        return Segment(base, self.path, planned=named)


def count_dropped(out: Dropped, path: str, start: int) -> None:
    """Add the bytes of ``path`` from ``start`` on to ``out``: the batches in them that pass their CRC
    and decode, found the way ``kfx salvage`` finds them (past damage too)."""
    out.files.append(os.path.basename(path))
    with Segment.of_file(path).buffer() as buf:
        tail = memoryview(buf)[start:] if start else buf
        out.bytes += len(tail)
        try:
            for b, gap in scan_file(tail, path):
                if gap is not None:
                    out.damaged_bytes += gap[1] - gap[0]
                if b is not None:
                    out.add_batch(b)
        finally:
            if start:
                tail.release()


def plan_leftovers(d: PlanFiles, plan: list[Action], rules) -> None:
    """LogLoader.removeTempFilesAndCollectSwapFiles and the swap completion after it, planned into ``plan``
    (``d``: a completed swap reads as its final name from then on), by ``rules`` (the generation's): temp
    files of killed kfx runs, ``.deleted`` and ``.cleaned`` files go, a ``.swap`` at or above the lowest
    ``.cleaned`` offset goes (an incomplete split), the others replace the segments they cover.  ``kfx
    verify`` asks it what the load does with each leftover it reports."""
    swaps, cleaned = [], []
    min_cleaned = None
    # temp files and dirs of killed kfx runs, here and in the log dir (where a dir stops the broker:
    # Kafka's log loading takes every dir of a log dir for a partition)
    for t in fsutil.temp_artefacts(os.path.dirname(d.path), live=False) + [
            p for p in fsutil.temp_artefacts(d.path, live=False) if os.path.isdir(p)]:
        plan.append(Action("delete", t, "temp " + ("dir" if os.path.isdir(t) else "file")
                           + " of an interrupted kfx run", phase=PHASES["leftover-delete"]))
    for n in list(d.files):
        if fsutil.is_temp(n):  # a temp file of a kfx repair killed before its rename
            plan.append(Action("delete", d.full(n), "temp file of an interrupted kfx write",
                               phase=PHASES["leftover-delete"]))
            del d.files[n]
        elif n.endswith(DELETED) and not n.endswith(".checkpoint" + DELETED):
            plan.append(Action("delete", d.full(n), "stray file marked for deletion", phase=PHASES["leftover-delete"]))
            del d.files[n]
        elif n.endswith(CLEANED):
            off = offset_from_name(n)
            if off is not None:
                min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
            cleaned.append(n)
        elif n.endswith(SWAP):
            swaps.append(n)
    valid = []
    for n in swaps:
        off = offset_from_name(n)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            plan.append(Action("delete", d.full(n), f"swap file of an incomplete split (at or above the lowest "
                                                    f".cleaned offset {min_cleaned})", phase=PHASES["leftover-delete"]))
            del d.files[n]
        else:
            valid.append(n)
    for n in cleaned:
        plan.append(Action("delete", d.full(n), "stray .cleaned file of an interrupted cleaning",
                           phase=PHASES["leftover-delete"]))
        del d.files[n]
    lo, hi = None, None
    for n in valid:
        if not n.endswith(LOG + SWAP):
            continue
        base = nxt = _offset_of(n)
        for b in Segment.of_file(d.files[n], None).batches():  # a .swap: its name's base is not checked
            nxt = b.next_offset
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None:
        for n, off in list(d.with_offset()):
            if not n.endswith(SWAP) and lo <= off < hi:
                plan.append(Action("delete", d.full(n), f"replaced by the swap segment(s) covering [{lo}, {hi})",
                                   phase=PHASES["leftover-delete"]))
                del d.files[n]
    recover_swaps = rules.write("leftover-swap") == "recover"
    for n in valid:
        final = without_leftover_suffix(n)
        if recover_swaps and not n.endswith(LOG + SWAP):
            # up to 2.8 a swap's index files are deleted: recovery rebuilds them from the swapped
            # segment (its .log has no index now, so the walk below recovers it)
            plan.append(Action("delete", d.full(n), "index of an interrupted swap (Kafka <3.0 rebuilds it)",
                               phase=PHASES["leftover-delete"]))
            del d.files[n]
            continue
        plan.append(Action("rename", d.full(n), "complete the interrupted swap", target=d.full(final),
                           phase=PHASES["leftover-rename"]))
        d.files[final] = d.files.pop(n)
    if recover_swaps:
        for n in valid:
            if n.endswith(LOG + SWAP):
                for suf in INDEX_SUFFIXES:
                    idx = file_name(_offset_of(n), suf)
                    if idx in d.files:  # an index of the segment replaced: rebuilt with the swap
                        plan.append(Action("delete", d.full(idx), "index replaced with the swapped segment "
                                           "(Kafka <3.0 rebuilds it)", phase=PHASES["leftover-delete"]))
                        del d.files[idx]


def _offset_of(name: str) -> int:
    """The offset a leftover's name says (a ``.swap`` listed as a segment's has one)."""
    off = offset_from_name(name)
    if off is None:
        raise ValueError(f"{name}: no offset in the name")
    return off
