"""A repair's plan: the file actions (delete, rename, truncate, write) recover and reindex plan first
and apply afterwards, in a crash-safe order, with backups."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkaforensics import fsutil

#: Crash-safe order of application: leftovers in Kafka's order, then segments after the truncation
#: point are moved aside *before* the truncation, then indexes, snapshots and checkpoints.
PHASES = {"leftover-delete": 0, "leftover-rename": 1, "orphan": 2, "remove-segment": 3, "truncate": 4,
          "index": 5, "snapshot": 6, "epochs": 7}


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
        out = {"action": self.action, "file": self.file, "detail": self.detail}
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
    backup_dir = fsutil.journal(backup_dir)
    for a in actions:
        if a.action == "delete":
            if os.path.isdir(a.file):
                fsutil.remove_temp(a.file)  # only a killed run's temp dir is ever planned for deletion
            elif os.path.exists(a.file):
                fsutil.remove_file(a.file, backup_dir=backup_dir)
        elif a.action == "rename":
            if os.path.exists(a.file):
                fsutil.rename(a.file, a.target, backup_dir=backup_dir)
        elif a.action == "truncate":
            if os.path.getsize(a.file) > a.size:
                fsutil.truncate_file(a.file, a.size, backup_dir=backup_dir)
        elif a.action == "write":
            fsutil.atomic_write(a.file, a.data, backup_dir=backup_dir)
        else:
            raise ValueError(a.action)
