"""A repair's plan: the file actions (delete, rename, truncate, write) recover and reindex plan first
and apply afterwards, in a crash-safe order, with backups."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TypeVar

from kafkaforensics import fsutil

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



def apply_actions(actions: list[Action], backup_dir: str | None) -> None:
    """Apply ``actions`` in their order (the caller sorts them by phase), backing up what they change
    (``backup_dir``'s manifest records each, so that ``kfx restore`` can undo them)."""
    journal = fsutil.journal(backup_dir)
    for a in actions:
        if a.action == "delete":
            if os.path.isdir(a.file):
                fsutil.remove_temp(a.file)  # only a killed run's temp dir is ever planned for deletion
            elif os.path.exists(a.file):
                fsutil.remove_file(a.file, backup_dir=journal)
        elif a.action == "rename":
            if os.path.exists(a.file):
                fsutil.rename(a.file, _needs(a, a.target, "target"), backup_dir=journal)
        elif a.action == "truncate":
            size = _needs(a, a.size, "size")
            if os.path.getsize(a.file) > size:
                fsutil.truncate_file(a.file, size, backup_dir=journal)
        elif a.action == "write":
            fsutil.atomic_write(a.file, _needs(a, a.data, "data"), backup_dir=journal)
        else:
            raise ValueError(a.action)


T = TypeVar("T")


def _needs(a: Action, value: T | None, name: str) -> T:
    """``value``, the field ``name`` that the action ``a`` cannot be applied without."""
    if value is None:
        raise ValueError(f"{a.action} {a.file}: the action has no {name}")
    return value
