"""Crash-safe file changes: temp file, fsync, atomic rename, backups, directory fsync.

Also what every repair shares about the files it makes: temp files and dirs all end in
``.kfx-tmp`` (:func:`is_temp`; a killed run's are found by :func:`temp_artefacts` and removed by
:func:`clean_temps`); new files take Kafka's modes and the partition's owner (:func:`fit_new`); a
failed change is one :class:`WriteFailed` line (:class:`doing`); and :class:`Backup` records each
change in a manifest before it is made, keeping what ``kfx restore`` needs to undo it.

Every change to a file system that a repair makes goes through :func:`_step` first, between each
write, fsync and rename. Two fault-injection hooks sit there: :data:`FAULT_HOOK` (in-process tests
raise from it) and the environment variable ``KFX_CRASH_AT=N``, which kills the process with SIGKILL
at the N-th step (no cleanup, no flush: what a power cut or ``kill -9`` leaves), counted per process.
"""
from __future__ import annotations

import json
import errno
import os
import time

from specs.lazy import lazy

#: for writes only (shutil's import brings bz2 and lzma, tempfile's shutil and random, signal is for
#: KFX_CRASH_AT: a read-only command's start-up need not pay for them, and log/partition.py imports
#: this module plainly)
shutil = lazy("shutil", globals())
tempfile = lazy("tempfile", globals())
signal = lazy("signal", globals())

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


#: Every temp file or dir a kfx command makes ends with this (``.<name>.<random>.kfx-tmp``); a killed
#: run's are removed by ``kfx recover`` and by every writing command, and ``kfx verify`` reports them.
TEMP_SUFFIX = ".kfx-tmp"
#: what ``kfx compact --dry-run`` named its work dir before the one pattern above (still cleaned up)
_OLD_TEMP_PREFIX = ".kfx-compact-"


def is_temp(name: str) -> bool:
    """True for the name of a temp file or dir a kfx command left behind."""
    name = os.path.basename(name.rstrip("/"))
    return name.endswith(TEMP_SUFFIX) or name.startswith(_OLD_TEMP_PREFIX)


def temp_artefacts(directory: str, *, live: bool = True) -> list[str]:
    """The temp files and dirs of kfx commands directly in ``directory`` (sorted full paths);
    ``live=False`` leaves out the work dirs of kfx processes still running (their name says whose)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names if is_temp(n) and (live or not _running(n)))


def _running(name: str) -> bool:
    """True for a temp dir name ``.<purpose>.<pid>.<random>.kfx-tmp`` whose process is alive."""
    bits = name.split(".")
    return len(bits) > 4 and bits[2].isdigit() and _alive(int(bits[2]))


def remove_temp(path: str) -> None:
    """Remove a temp file or dir of a killed kfx run (no backup: it never held anything but a copy)."""
    with doing("removing", path):
        _step("delete")
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def clean_temps(partition_dir: str) -> list[str]:
    """Remove what killed kfx runs left in ``partition_dir`` and in its log dir (a temp dir there
    stops a broker: Kafka's log loading takes every dir of a log dir for a partition); the paths
    removed.  Every writing command calls it first."""
    part = os.path.abspath(partition_dir)
    return clear_dead_temps(part) + clear_dead_temps(os.path.dirname(part))


def clear_dead_temps(directory: str) -> list[str]:
    """Remove what killed kfx runs left directly in ``directory`` (the temp files and dirs of no
    live process: a scan's output being written, an old one set aside); the paths removed."""
    gone = temp_artefacts(directory, live=False)
    for p in gone:
        remove_temp(p)
    return gone


def temp_path(parent: str, purpose: str) -> str:
    """A new temp name ``<parent>/.<purpose>.<pid>.<random>.kfx-tmp`` (nothing made there): whose it
    is, for :func:`temp_artefacts` to tell a live run's from a dead one's."""
    return os.path.join(parent, f".{purpose}.{os.getpid()}.{os.urandom(16).hex()}{TEMP_SUFFIX}")


def temp_dir(parent: str, purpose: str) -> str:
    """A new temp dir ``<parent>/.<purpose>.<pid>.<random>.kfx-tmp``; those of dead processes
    there are removed first (a killed dry run's work dir in the system temp dir)."""
    for p in temp_artefacts(parent, live=False):
        bits = os.path.basename(p).split(".")
        if len(bits) > 4 and bits[1] == purpose and bits[2].isdigit():
            shutil.rmtree(p, ignore_errors=True)
    path = temp_path(parent, purpose)
    os.mkdir(path, 0o700)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ------------------------------------------------------------------ modes and owners ----
def umask() -> int:
    """The process's umask, read without changing it where /proc tells it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    m = os.umask(0o022)
    os.umask(m)
    return m


def fit_new(path: str, *, fd: int | None = None, like: str | None = None) -> None:
    """Give a file or dir a repair created Kafka's mode (0666, dirs 0777, less the umask) and, when
    running as root, the owner and group of ``like`` (default: the directory it is in), so that a
    broker running as another user can open, rename and delete it."""
    is_dir = os.path.isdir(path) if fd is None else False
    mode = (0o777 if is_dir else 0o666) & ~umask()
    try:
        if fd is not None:
            os.fchmod(fd, mode)
        else:
            os.chmod(path, mode)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            st = os.stat(like or os.path.dirname(os.path.abspath(path)))
            if fd is not None:
                os.fchown(fd, st.st_uid, st.st_gid)
            else:
                os.chown(path, st.st_uid, st.st_gid)
    except OSError as e:  # a file system without modes or owners (NFS root squash, FAT...): as it comes
        if e.errno not in (errno.EPERM, errno.EINVAL, errno.ENOTSUP, errno.EROFS):
            raise


def make_dirs(path: str) -> None:
    """``os.makedirs`` whose new dirs each take :func:`fit_new`'s mode and owner, each made durable
    in its parent (fsynced, where the parent can be opened) before anything is made in it."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return
    make_dirs(os.path.dirname(path))
    try:
        os.mkdir(path)
    except FileExistsError:
        return
    fit_new(path)
    try:
        fsync_dir(os.path.dirname(path))
    except OSError as e:  # a parent one may write but not read (-wx) cannot be opened to fsync
        if e.errno not in (errno.EACCES, errno.EINVAL):
            raise


# ---------------------------------------------------------------------------- errors ----
class WriteFailed(OSError):
    """A write a repair could not make (no space, no permission...): one line saying what, where,
    and how many bytes it needed."""


def _failed(e: OSError, what: str, path: str, needed: int | None) -> WriteFailed:
    msg = f"{what} {path}: {e.strerror or e}"
    if needed is not None:
        msg += f" ({needed} bytes needed"
        try:
            st = os.statvfs(os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else path)
            msg += f", {st.f_bavail * st.f_frsize} free"
        except OSError:
            pass
        msg += ")"
    return WriteFailed(e.errno, msg)


class doing:
    """``with doing("renaming", path):`` -- an OSError inside becomes one :class:`WriteFailed` line
    saying what was being done, where (and, given ``needed``, how many bytes it needed)."""

    def __init__(self, what: str, path: str, needed: int | None = None):
        self.what, self.path, self.needed = what, path, needed

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if e is not None and isinstance(e, OSError) and not isinstance(e, WriteFailed):
            raise _failed(e, self.what, self.path, self.needed) from e
        return False


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: str, data, what: str) -> None:
    """``data`` (bytes, or a file to copy) into a temp file beside ``path``, fsynced, renamed to
    ``path``, dir fsynced; nothing left behind when it fails."""
    d = os.path.dirname(os.path.abspath(path))
    needed = len(data) if isinstance(data, (bytes, bytearray, memoryview)) else os.path.getsize(data)
    tmp = None
    try:
        _step("write")
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=TEMP_SUFFIX, dir=d)
        with os.fdopen(fd, "wb") as f:
            fit_new(tmp, fd=f.fileno(), like=d)
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                with open(data, "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 20)
            f.flush()
            _step("fsync")
            os.fsync(f.fileno())
        _step("rename")
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise _failed(e, what, path, needed) from e
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    with doing(what, path):
        _step("fsync-dir")
        fsync_dir(d)


def atomic_write(path: str, data: bytes, *, backup_dir=None) -> None:
    """Replace ``path`` with ``data``: written to a temp file, fsynced, renamed over, dir fsynced.

    With ``backup_dir`` (a path or a :class:`Backup`) the old file is kept there first (a new file
    is noted as created, so that ``kfx restore`` removes it).
    """
    j = journal(backup_dir)
    if j is not None:
        if os.path.exists(path):
            j.record("replace", path, copy=j.keep_copy(path))
        else:
            j.record("create", path)
    _write_new(path, data, "writing")


def created(path: str, backup_dir=None) -> None:
    """Note in ``backup_dir``'s manifest that the repair is about to create ``path`` (restore removes it)."""
    j = journal(backup_dir)
    if j is not None:
        j.record("create", path)


def truncate_file(path: str, size: int, *, backup_dir=None) -> None:
    """Shrink ``path`` to ``size`` bytes durably (the bytes cut off kept first, if asked)."""
    j = journal(backup_dir)
    if j is not None:
        j.record("truncate", path, copy=j.keep_tail(path, size), at=size, size=os.path.getsize(path))
    with doing("truncating", path):
        _step("truncate")
        with open(path, "rb+") as f:
            f.truncate(size)
            f.flush()
            _step("fsync")
            os.fsync(f.fileno())


def remove_file(path: str, *, backup_dir=None) -> None:
    """Delete ``path`` (moved into ``backup_dir`` instead when one is given)."""
    j = journal(backup_dir)
    if j is not None:
        name = j.free_name(os.path.basename(path))
        j.record("delete", path, copy=name)
        j.take(path, name)
        return
    with doing("removing", path):
        _step("delete")
        os.unlink(path)
        _step("fsync-dir")
        fsync_dir(os.path.dirname(os.path.abspath(path)))


def rename(src: str, dst: str, *, backup_dir=None) -> None:
    j = journal(backup_dir)
    if j is not None:
        if os.path.exists(dst):
            remove_file(dst, backup_dir=j)
        j.record("rename", dst, source=src)
    with doing("renaming", f"{src} to {os.path.basename(dst)}"):
        _step("rename")
        os.replace(src, dst)
        _step("fsync-dir")
        fsync_dir(os.path.dirname(os.path.abspath(dst)))


# ---------------------------------------------------------------------------- backups ----
MANIFEST = "manifest.json"


class Backup:
    """A backup directory and its manifest: every change a repair makes, in order, with what it
    needs to be undone (the old bytes of a replaced file, a deleted file itself -- moved, not
    copied, when it can be --, the bytes a truncation cut off and where they came from).  Each step
    is recorded (manifest written atomically) before it is made; ``kfx restore`` undoes them in
    reverse order (:mod:`kafkaforensics.repair.restore`)."""

    def __init__(self, directory: str):
        self.dir = os.path.abspath(directory)
        self.entries: list[dict] = []
        self.undone = 0
        p = os.path.join(self.dir, MANIFEST)
        if os.path.exists(p):
            with open(p) as f:
                doc = json.load(f)
            self.entries, self.undone = doc["changes"], doc.get("undone", 0)

    def _ensure(self) -> None:
        if not os.path.isdir(self.dir):
            try:
                _step("backup")
                make_dirs(self.dir)
            except OSError as e:
                raise _failed(e, "creating backup dir", self.dir, None) from e

    def record(self, op: str, path: str, **fields) -> None:
        self._ensure()
        if self.undone:
            raise ValueError(f"{self.dir} was restored: a new repair takes a new backup dir")
        self.entries.append({"op": op, "file": os.path.abspath(path), **fields})
        _write_new(os.path.join(self.dir, MANIFEST),
                   json.dumps({"version": 1, "changes": self.entries}, indent=1).encode(), "writing backup manifest")

    def free_name(self, name: str) -> str:
        """``name``, or ``name.N``, whichever is not yet used in the backup."""
        if is_temp(name):  # a killed run's temp file, kept: not to be taken for one in the backup
            name += ".kept"
        taken = {e.get("copy") for e in self.entries} | (set(os.listdir(self.dir)) if os.path.isdir(self.dir) else set())
        out, n = name, 1
        while out in taken or out == MANIFEST:
            out, n = f"{name}.{n}", n + 1
        return out

    def keep_copy(self, path: str) -> str:
        """A copy of ``path`` in the backup (fsynced); its name there."""
        self._ensure()
        with doing("backing up", path):
            _step("backup")
        name = self.free_name(os.path.basename(path))
        _write_new(os.path.join(self.dir, name), path, "backing up")
        return name

    def keep_tail(self, path: str, at: int) -> str:
        """The bytes of ``path`` from ``at`` to its end, in the backup; its name there."""
        self._ensure()
        with doing("backing up", path):
            _step("backup")
            with open(path, "rb") as f:
                f.seek(at)
                tail = f.read()
        name = self.free_name(f"{os.path.basename(path)}.from-byte-{at}")
        _write_new(os.path.join(self.dir, name), tail, "backing up")
        return name

    def take(self, path: str, name: str) -> None:
        """Move ``path`` into the backup as ``name`` (a rename on the same file system, else copy and delete)."""
        self._ensure()
        dest = os.path.join(self.dir, name)
        try:
            _step("delete")
            os.rename(path, dest)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise _failed(e, "moving into the backup", path, None) from e
            _write_new(dest, path, "backing up")
            os.unlink(path)
        with doing("moving into the backup", path):
            _step("fsync-dir")
            fsync_dir(os.path.dirname(os.path.abspath(path)))
            fsync_dir(self.dir)


def journal(backup_dir) -> Backup | None:
    """The :class:`Backup` for ``backup_dir`` (a path, a Backup, or None for no backup)."""
    if backup_dir is None or isinstance(backup_dir, Backup):
        return backup_dir
    return Backup(backup_dir)


BACKUP_DIR_NAME = ".kfx-backup"


def default_backup_dir(partition_dir: str) -> str:
    """``<partition>/.kfx-backup/<UTC time>``: Kafka's log loading skips directories inside a
    partition directory, so backups there are invisible to the broker."""
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{micros:06d}Z"
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
