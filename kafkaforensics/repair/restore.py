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
import tempfile
from collections.abc import Set
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


#: a run-level backup's list of the backup dirs of one run (a whole-log-dir ``kfx recover``)
RUN_FILE = "run.json"
_ABSENT = ()


class _Files:
    """The files a restore reads and changes. A real restore changes them; a dry run sees them
    through the changes it has undone so far (a file it would remove is absent, one it would put back
    holds the backup's copy), so that it counts what the real restore does."""

    def __init__(self, dry_run: bool):
        self.dry_run = dry_run
        self.over: dict[str, tuple] = {}  # a dry run's view: path -> the files whose bytes it holds, in order

    def _sources(self, path: str) -> tuple:
        return self.over.get(path, (path,) if os.path.exists(path) else _ABSENT)

    def exists(self, path: str) -> bool:
        return bool(self._sources(path))

    def size(self, path: str) -> int:
        return sum(os.path.getsize(src) for src in self._sources(path))

    def read(self, path: str) -> bytes:
        out = b""
        for src in self._sources(path):
            with open(src, "rb") as f:
                out += f.read()
        return out

    def same(self, path: str, copy: str) -> bool:
        """True when ``path`` holds exactly what the backup's ``copy`` holds."""
        try:
            with open(copy, "rb") as f:
                data = f.read()
            if path not in self.over:
                return fsutil.same_content(path, data)
            return self.exists(path) and self.size(path) == len(data) and self.read(path) == data
        except OSError:
            return False

    def offsets(self, path: str):
        """``path`` read as an offset checkpoint (as a dry run sees it)."""
        if path not in self.over:
            return read_offsets(path)
        if not self.exists(path):
            return None
        with tempfile.TemporaryDirectory() as d:
            tmp = os.path.join(d, os.path.basename(path))
            with open(tmp, "wb") as f:
                f.write(self.read(path))
            return read_offsets(tmp)

    def remove(self, path: str) -> None:
        if self.dry_run:
            self.over[path] = _ABSENT
        else:
            fsutil.remove_file(path)

    def put(self, path: str, copy: str) -> None:
        if self.dry_run:
            self.over[path] = (copy,)
            return
        with open(copy, "rb") as f:
            fsutil.atomic_write(path, f.read())

    def append(self, path: str, copy: str, tail: bytes) -> None:
        if self.dry_run:
            self.over[path] = self._sources(path) + (copy,)
            return
        fsutil._step("write")
        with open(path, "ab") as f:
            f.write(tail)
            f.flush()
            fsutil._step("fsync")
            os.fsync(f.fileno())

    def rename(self, path: str, src: str) -> None:
        if self.dry_run:
            self.over[src], self.over[path] = self._sources(path), _ABSENT
        else:
            fsutil.rename(path, src)

    def update_offsets(self, path: str, changes: dict) -> None:
        if not self.dry_run:
            update_offsets(path, changes)


def restore(backup_dir: str, *, dry_run: bool = False) -> RestoreReport:
    """Undo every change recorded in ``backup_dir``'s manifest, newest first; a run-level backup
    (:data:`RUN_FILE`, a whole-log-dir recover's) undoes its own changes, then each backup of the run."""
    bdir = os.path.abspath(backup_dir)
    runs = run_backups(bdir)
    if runs is None and not os.path.isfile(os.path.join(bdir, fsutil.MANIFEST)):
        raise FileNotFoundError(f"{backup_dir}: not a kfx backup (no {fsutil.MANIFEST} or {RUN_FILE})")
    rep = RestoreReport(bdir, dry_run=dry_run)
    files = _Files(dry_run)
    dirs = ([bdir] if os.path.isfile(os.path.join(bdir, fsutil.MANIFEST)) else []) + list(reversed(runs or []))
    docs = [_manifest(d, bdir) for d in dirs]  # every one read, and checked, before anything is undone
    if not dry_run:
        for live in {live_log_dir_of(os.path.dirname(c["file"])) for doc in docs for c in doc["changes"]} - {None}:
            raise ValueError(f"{live}: a running broker holds this log dir's lock; stop it before restoring")
    for d, doc in zip(dirs, docs):
        _restore_one(d, doc, files, rep)
    return rep


def _manifest(d: str, run: str) -> dict:
    """The manifest of the backup dir ``d`` (of the run-level backup ``run``)."""
    manifest = os.path.join(d, fsutil.MANIFEST)
    if not os.path.isfile(manifest):
        raise FileNotFoundError(f"{d}: a backup of the run {run} is missing (no {fsutil.MANIFEST})")
    try:
        with open(manifest) as f:
            doc = json.load(f)
        doc["changes"], doc["undone"] = list(doc["changes"]), int(doc.get("undone", 0))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{manifest}: unreadable manifest ({e})") from e
    return doc


def latest_run(log_dir: str) -> str | None:
    """The newest run-level backup a whole-log-dir ``kfx recover`` of ``log_dir`` made in its default
    place, ``<log dir>.kfx-backup/<UTC time>`` (None: there is none)."""
    base = os.path.abspath(log_dir).rstrip(os.sep) + fsutil.BACKUP_DIR_NAME
    try:
        names = sorted(n for n in os.listdir(base) if os.path.isfile(os.path.join(base, n, RUN_FILE)))
    except OSError:
        return None
    return os.path.join(base, names[-1]) if names else None


def run_backups(bdir: str) -> list[str] | None:
    """The backup dirs a run-level backup lists, in the order the run made them (None: not a run)."""
    path = os.path.join(bdir, RUN_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return [os.path.join(bdir, b) for b in json.load(f)["backups"]]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: unreadable run list ({e})") from e


def write_run(bdir: str, backups: list[str], what: str) -> None:
    """Make ``bdir`` the run-level backup of one run: ``kfx restore BDIR`` undoes every one of ``backups``."""
    fsutil.make_dirs(bdir)
    doc = {"version": 1, "run": what, "backups": [os.path.relpath(os.path.abspath(b), bdir) for b in backups]}
    fsutil.atomic_write(os.path.join(bdir, RUN_FILE), json.dumps(doc, indent=1).encode())


def _restore_one(bdir: str, doc: dict, files: _Files, rep: RestoreReport) -> None:
    """Undo the changes of one backup dir's manifest ``doc``, newest first, into ``rep``."""
    manifest = os.path.join(bdir, fsutil.MANIFEST)
    changes, undone = doc["changes"], doc["undone"]
    # the partitions the repair changed: a log dir's offset checkpoint gets back only their entries
    partitions = {tp for tp in (parse_partition_dir_name(os.path.dirname(c["file"])) for c in changes) if tp}
    for i in range(len(changes) - undone - 1, -1, -1):
        c = changes[i]
        what = _undo(c, bdir, files, partitions)
        if what and files.dry_run:
            what = _would(what)
        (rep.restored if what else rep.skipped).append(
            {"op": c["op"], "file": c["file"], "detail": what or "not made, or already undone"})
        if not files.dry_run:
            doc["undone"] = len(changes) - i
            fsutil.atomic_write(manifest, json.dumps(doc, indent=1).encode())


#: the past tense of what :func:`_undo` did -> what a dry run would do
_WOULD = (("removed ", "remove "), ("put back ", "put back "), ("appended ", "append "), ("renamed back ", "rename back "))


def _would(what: str) -> str:
    """What :func:`_undo` says it did, as a dry run says it would do it."""
    for done, would in _WOULD:
        if what.startswith(done):
            return "would " + would + what[len(done):]
    return "would: " + what


def _undo(c: dict, bdir: str, files: _Files, partitions: Set[tuple[str, int]] = frozenset()) -> str | None:
    """Undo one change (a dry run: in ``files``' view only); None when there is nothing to undo."""
    path, op = c["file"], c["op"]
    copy = os.path.join(bdir, c["copy"]) if c.get("copy") else None
    if op == "replace" and os.path.basename(path) in OFFSET_CHECKPOINT_FILES and partitions and copy:
        return _undo_entries(path, copy, partitions, files)
    if op == "create":
        if not files.exists(path):
            return None
        files.remove(path)
        return "removed the file the repair created"
    if op in ("replace", "delete"):
        if copy is None or not os.path.exists(copy) or files.same(path, copy):
            return None
        if op == "delete" and files.exists(path):
            return None  # recorded, then killed before the file moved: it is still there
        files.put(path, copy)
        return "put back the file as it was" if op == "delete" else "put back the old content"
    if op == "truncate":
        size, at = c["size"], c["at"]
        if copy is None or not files.exists(path) or files.size(path) != at or not os.path.exists(copy):
            return None  # never truncated (size as before), already put back, or no copy of the bytes cut
        with open(copy, "rb") as f:
            tail = f.read()
        if len(tail) != size - at:
            raise ValueError(f"{copy}: {len(tail)} bytes, the manifest says {size - at}")
        files.append(path, copy, tail)
        return f"appended the {size - at} bytes cut at byte {at}"
    if op == "rename":
        src = c["source"]
        if not files.exists(path) or files.exists(src):
            return None
        files.rename(path, src)
        return f"renamed back to {os.path.basename(src)}"
    raise ValueError(f"{bdir}: unknown change {op!r} in the manifest")


def _undo_entries(path: str, copy: str, partitions: Set[tuple[str, int]], files: _Files) -> str | None:
    """A log dir's offset checkpoint: the repaired partitions' entries as the copy has them, every
    other partition's entry as it is now (another partition may have been repaired since)."""
    try:
        old, now = read_offsets(copy) or {}, files.offsets(path) or {}
    except KafkaFormatError:  # not readable as a table: the whole file back
        if files.same(path, copy):
            return None
        files.put(path, copy)
        return "put back the old content"
    changes = {tp: old.get(tp) for tp in partitions if old.get(tp) != now.get(tp)}
    if not changes:
        return None
    files.update_offsets(path, changes)
    return "put back the entries of " + ", ".join(f"{t}-{p}" for t, p in sorted(changes))
