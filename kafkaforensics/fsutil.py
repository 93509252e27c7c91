"""Crash-safe file changes: temp file, fsync, atomic rename, backups, directory fsync.

Every change to a file system that a repair makes goes through :func:`_step` first, between each
write, fsync and rename. Two fault-injection hooks sit there: :data:`FAULT_HOOK` (in-process tests
raise from it) and the environment variable ``KFX_CRASH_AT=N``, which kills the process with SIGKILL
at the N-th step (no cleanup, no flush: what a power cut or ``kill -9`` leaves), counted per process.
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import signal
import tempfile

#: Called with the operation's name before every change this module makes to a file system.
#: Tests set it to a function that raises after N calls, to prove each step is crash-safe.
FAULT_HOOK = None
CRASH_ENV = "KFX_CRASH_AT"
_steps = [0]


def _step(name: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(name)
    at = os.environ.get(CRASH_ENV)
    if at:
        _steps[0] += 1
        if _steps[0] >= int(at):
            os.kill(os.getpid(), signal.SIGKILL)


def reset_crash_counter() -> None:
    """Count ``KFX_CRASH_AT`` steps from zero again (a forked child starting its own run)."""
    _steps[0] = 0


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, *, backup_dir: str | None = None) -> None:
    """Replace ``path`` with ``data``: written to a temp file, fsynced, renamed over, dir fsynced.

    With ``backup_dir`` the old file (if any) is copied there first (and fsynced).
    """
    d = os.path.dirname(os.path.abspath(path))
    if backup_dir and os.path.exists(path):
        backup_file(path, backup_dir)
    _step("write")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".kfx-tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            _step("fsync")
            os.fsync(f.fileno())
        _step("rename")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _step("fsync-dir")
    fsync_dir(d)


def backup_file(path: str, backup_dir: str) -> str:
    """Copy ``path`` into ``backup_dir`` (created if needed), fsynced; returns the copy's path."""
    _step("backup")
    os.makedirs(backup_dir, exist_ok=True)
    dest = os.path.join(backup_dir, os.path.basename(path))
    if os.path.exists(dest):  # never overwrite an earlier backup: the first one is the original
        return dest
    shutil.copy2(path, dest + ".kfx-tmp")
    _step("fsync")
    with open(dest + ".kfx-tmp", "rb+") as f:
        os.fsync(f.fileno())
    _step("rename")
    os.replace(dest + ".kfx-tmp", dest)
    fsync_dir(backup_dir)
    return dest


def truncate_file(path: str, size: int, *, backup_dir: str | None = None) -> None:
    """Shrink ``path`` to ``size`` bytes durably (a backup of the full file first, if asked)."""
    if backup_dir:
        backup_file(path, backup_dir)
    _step("truncate")
    with open(path, "rb+") as f:
        f.truncate(size)
        f.flush()
        _step("fsync")
        os.fsync(f.fileno())


def remove_file(path: str, *, backup_dir: str | None = None) -> None:
    """Delete ``path`` (moving it into ``backup_dir`` instead when one is given)."""
    if backup_dir:
        backup_file(path, backup_dir)
    _step("delete")
    os.unlink(path)
    _step("fsync-dir")
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def rename(src: str, dst: str) -> None:
    _step("rename")
    os.replace(src, dst)
    _step("fsync-dir")
    fsync_dir(os.path.dirname(os.path.abspath(dst)))


BACKUP_DIR_NAME = ".kfx-backup"


def default_backup_dir(partition_dir: str) -> str:
    """``<partition>/.kfx-backup/<UTC time>``: Kafka's log loading skips directories inside a
    partition directory, so backups there are invisible to the broker."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return os.path.join(os.path.abspath(partition_dir), BACKUP_DIR_NAME, stamp)


def same_content(path: str, data: bytes) -> bool:
    """True when ``path`` exists and holds exactly ``data`` (so rewriting it would change nothing)."""
    try:
        if os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False
