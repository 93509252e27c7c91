"""``kfx restore BACKUP``: undo a repair from its backup directory, byte for byte.

A backup (:class:`kafkaforensics.fsutil.Backup`) holds a manifest of every change the repair made,
recorded before it was made, and what each needs to be undone: the old bytes of a replaced file, a
deleted file itself, the bytes a truncation cut off.  Restoring undoes the changes in reverse order:
a created file is removed, a replaced or deleted one is written back (temp file, fsync, rename), a
truncated one gets its cut bytes appended again, a rename is renamed back.  A step the repair
recorded but never made (it was killed) is recognised and skipped.  The manifest counts the changes
undone (``undone``), so a restore that was killed resumes where it stopped and a second restore
changes nothing; the backup's files are left as they are.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from kafkaforensics import fsutil
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.checkpoint_file import read_offsets, update_offsets
from kafkaforensics.log.partition import parse_partition_dir_name
from specs.checkpoints import OFFSET_CHECKPOINT_FILES
from kafkaforensics.log.dir_lock import live_log_dir_of


@dataclass
class RestoreReport:
    backup: str
    restored: list[dict] = field(default_factory=list)   # {"op", "file", "detail"} per change undone
    skipped: list[dict] = field(default_factory=list)    # changes found not made, or already undone
    dry_run: bool = False

    def to_json(self) -> dict:
        return {"backup": self.backup, "restored": self.restored, "skipped": self.skipped, "dryRun": self.dry_run}


def _same(path: str, copy: str) -> bool:
    try:
        with open(copy, "rb") as f:
            return fsutil.same_content(path, f.read())
    except OSError:
        return False


def restore(backup_dir: str, *, dry_run: bool = False) -> RestoreReport:
    """Undo every change recorded in ``backup_dir``'s manifest, newest first."""
    bdir = os.path.abspath(backup_dir)
    manifest = os.path.join(bdir, fsutil.MANIFEST)
    if not os.path.isfile(manifest):
        raise FileNotFoundError(f"{backup_dir}: not a kfx backup (no {fsutil.MANIFEST})")
    try:
        with open(manifest) as f:
            doc = json.load(f)
        changes, undone = doc["changes"], int(doc.get("undone", 0))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{manifest}: unreadable manifest ({e})") from e
    if not dry_run:
        for live in {live_log_dir_of(os.path.dirname(c["file"])) for c in changes} - {None}:
            raise ValueError(f"{live}: a running broker holds this log dir's lock; stop it before restoring")
    rep = RestoreReport(bdir, dry_run=dry_run)
    # the partitions the repair changed: a log dir's offset checkpoint gets back only their entries
    partitions = {tp for tp in (parse_partition_dir_name(os.path.dirname(c["file"])) for c in changes) if tp}
    for i in range(len(changes) - undone - 1, -1, -1):
        c = changes[i]
        what = _undo(c, bdir, dry_run, partitions)
        (rep.restored if what else rep.skipped).append(
            {"op": c["op"], "file": c["file"], "detail": what or "not made, or already undone"})
        if not dry_run:
            doc["undone"] = len(changes) - i
            fsutil.atomic_write(manifest, json.dumps(doc, indent=1).encode())
    return rep


def _undo(c: dict, bdir: str, dry_run: bool, partitions: set = frozenset()) -> str | None:
    """Undo one change (or, ``dry_run``, say how); None when there is nothing to undo."""
    path, op = c["file"], c["op"]
    copy = os.path.join(bdir, c["copy"]) if c.get("copy") else None
    if op == "replace" and os.path.basename(path) in OFFSET_CHECKPOINT_FILES and partitions and copy:
        return _undo_entries(path, copy, partitions, dry_run)
    if op == "create":
        if not os.path.exists(path):
            return None
        if not dry_run:
            fsutil.remove_file(path)
        return "removed the file the repair created"
    if op in ("replace", "delete"):
        if copy is None or not os.path.exists(copy) or _same(path, copy):
            return None
        if op == "delete" and os.path.exists(path):
            return None  # recorded, then killed before the file moved: it is still there
        if not dry_run:
            with open(copy, "rb") as f:
                fsutil.atomic_write(path, f.read())
        return "put back the file as it was" if op == "delete" else "put back the old content"
    if op == "truncate":
        size, at = c["size"], c["at"]
        if not os.path.exists(path) or os.path.getsize(path) != at or not os.path.exists(copy):
            return None  # never truncated (size as before), or already put back
        with open(copy, "rb") as f:
            tail = f.read()
        if len(tail) != size - at:
            raise ValueError(f"{copy}: {len(tail)} bytes, the manifest says {size - at}")
        if not dry_run:
            fsutil._step("write")
            with open(path, "ab") as f:
                f.write(tail)
                f.flush()
                fsutil._step("fsync")
                os.fsync(f.fileno())
        return f"appended the {size - at} bytes cut at byte {at}"
    if op == "rename":
        src = c["source"]
        if not os.path.exists(path) or os.path.exists(src):
            return None
        if not dry_run:
            fsutil.rename(path, src)
        return f"renamed back to {os.path.basename(src)}"
    raise ValueError(f"{bdir}: unknown change {op!r} in the manifest")


def _undo_entries(path: str, copy: str, partitions: set, dry_run: bool) -> str | None:
    """A log dir's offset checkpoint: the repaired partitions' entries as the copy has them, every
    other partition's entry as it is now (another partition may have been repaired since)."""
    try:
        old, now = read_offsets(copy) or {}, read_offsets(path) or {}
    except KafkaFormatError:  # not readable as a table: the whole file back
        if _same(path, copy):
            return None
        if not dry_run:
            with open(copy, "rb") as f:
                fsutil.atomic_write(path, f.read())
        return "put back the old content"
    changes = {tp: old.get(tp) for tp in partitions if old.get(tp) != now.get(tp)}
    if not changes:
        return None
    if not dry_run:
        update_offsets(path, changes)
    return "put back the entries of " + ", ".join(f"{t}-{p}" for t, p in sorted(changes))
