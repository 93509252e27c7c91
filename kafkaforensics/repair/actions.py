"""A repair's plan applied: the file actions (delete, rename, truncate, write; :mod:`kafkaforensics.log.load_plan`)
recover and reindex plan first and apply afterwards, in a crash-safe order, with backups."""
from __future__ import annotations

import os
from typing import TypeVar

from kafkaforensics import fsutil
from kafkaforensics.log.load_plan import Action


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
