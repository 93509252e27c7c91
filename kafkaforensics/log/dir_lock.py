"""A log dir in use: whether a running broker holds the lock on its ``.lock`` file.

Facts carried over from Kafka (LogManager.lockLogDirs, utils FileLock): at start a broker creates
``.lock`` in every log dir and takes ``FileChannel.tryLock()`` on it, held until shutdown. On Linux
the JVM takes that lock with ``fcntl(F_SETLK)``, a POSIX record lock over the whole file, so another
process sees it through ``fcntl(F_GETLK)``. A ``.lock`` file alone means nothing: every broker leaves
one behind when it stops (a stale 0-byte ``.lock`` is on every real log dir).

The check only asks (``F_GETLK`` on a read-only descriptor): it takes no lock, creates nothing and
changes no byte, so it may run on evidence.
"""
from __future__ import annotations

import fcntl
import os
import struct

LOCK_FILE = ".lock"


#: ``struct flock`` as Linux lays it out, native alignment (off_t is a C long on every 64-bit Linux):
#: l_type, l_whence, l_start, l_len, l_pid, the end aligned as C pads it ("0l": 32 bytes on x86-64);
#: struct, not ctypes, whose import costs every command line's start-up a millisecond
_FLOCK = struct.Struct("@hhlli0l")


def lock_holder(log_dir: str) -> int | None:
    """The pid of the process holding a lock on ``log_dir/.lock``, or None when nobody does (no
    ``.lock``, an unreadable one, or a platform without POSIX record locks)."""
    path = os.path.join(log_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        raw = fcntl.fcntl(fd, fcntl.F_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        l_type, _whence, _start, _len, l_pid = _FLOCK.unpack(raw)
        return None if l_type == fcntl.F_UNLCK else int(l_pid)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def is_live(log_dir: str) -> bool:
    """True when a running process (a broker) holds the log dir's lock."""
    return lock_holder(log_dir) is not None


def live_log_dir_of(path: str) -> str | None:
    """The log dir holding ``path`` (the path itself, its parent or its grandparent: a log dir, a
    partition dir or a file in one) when a running broker holds that dir's lock, else None."""
    p = os.path.abspath(path)
    for _ in range(3):
        if os.path.isdir(p) and is_live(p):
            return p
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return None


class LogDirInUse(OSError):
    """A writing command pointed at a log dir a running broker holds (or at something inside one)."""

    def __init__(self, log_dir: str, pid: int | None):
        self.log_dir, self.pid = log_dir, pid
        super().__init__(f"a broker is running on {log_dir} (pid {pid}): stop it first")


def refuse_live(*paths) -> None:
    """The one check every writing command makes before it writes: raise :class:`LogDirInUse` when
    a path is a log dir a running broker holds, a partition dir in one or a file in one. A path that
    does not exist yet (an output dir to create) is judged by the dir it would be made in."""
    for path in paths:
        if path is None:
            continue
        p = os.path.abspath(path)
        while not os.path.exists(p) and os.path.dirname(p) != p:
            p = os.path.dirname(p)
        live = live_log_dir_of(p)
        if live is not None:
            raise LogDirInUse(live, lock_holder(live))
