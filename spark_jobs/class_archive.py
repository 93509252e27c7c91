"""The driver JVM's class archive (Java's AppCDS): where it lives, what it was recorded for, its
recording in a process of its own and the pruning of stale ones."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from specs.lazy import lazy

#: imported on first use (specs/lazy.py)
pyspark = lazy("pyspark", globals())


def class_archive_path() -> str | None:
    """Where the driver JVM's class-data archive (Java's AppCDS) for this Java and this PySpark
    lives: ``$KFX_CACHE_DIR`` or ``~/.cache/kafkaforensics``; None when no ``java`` is found."""
    inputs = _current_archive_inputs()
    return None if inputs is None else _archive_path(inputs)


def _current_archive_inputs() -> dict | None:
    """:func:`_archive_inputs` of the java PySpark runs (``$JAVA_HOME/bin/java``, else ``java`` on
    ``PATH``) and of this PySpark; None when no ``java`` is found. Both by their real paths: what the
    archive depends on is the JVM and the jar files of the driver's classpath, not the path a
    checkout reaches them by, so checkouts sharing one virtualenv (a symlinked ``.venv``) share one
    archive (the JVM maps it through any path to the same files)."""
    java = (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME")
            else shutil.which("java"))
    if not java or not os.path.exists(java):
        return None
    return _archive_inputs(os.path.realpath(java), os.path.realpath(os.path.dirname(pyspark.__file__)),
                           pyspark.__version__)


def _archive_path(inputs: dict) -> str:
    digest = hashlib.sha1(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(_cache_dir(), f"spark-driver-{digest}.jsa")


def _archive_inputs(java: str, pyspark_dir: str, pyspark_version: str) -> dict:
    """What an archive is good for, and named after: a JVM, a PySpark install, and the JDK's own
    base archives (ours is recorded on top of them; the JVM ignores ours, silently, once one is
    dumped anew: a package upgrade or ``java -Xshare:dump`` does)."""
    bases = []
    for base in _jdk_base_archives(java):
        with contextlib.suppress(OSError):
            st = os.stat(base)
            bases.append([base, st.st_mtime_ns, st.st_size])
    return {"java": java, "javaMtime": os.stat(java).st_mtime_ns, "pyspark": pyspark_dir,
            "pysparkVersion": pyspark_version, "bases": bases}


def _jdk_base_archives(java: str) -> list[str]:
    """The JDK's own class-data archives beside ``java`` (``lib/server/classes*.jsa``)."""
    server = os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "server")
    return [os.path.join(server, n) for n in ("classes.jsa", "classes_nocoops.jsa")]


def _pyspark_version_at(pyspark_dir: str) -> str | None:
    """The version of the PySpark installed at ``pyspark_dir`` (its ``version.py``), or None."""
    try:
        with open(os.path.join(pyspark_dir, "version.py")) as f:
            m = re.search(r"__version__[^=]*=\s*['\"]([^'\"]+)", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _archive_is_stale(inputs: dict) -> bool:
    """Whether an archive recorded for ``inputs`` (its ``.inputs.json``) can no longer be mapped by
    any JVM: its java, its PySpark or the JDK's base archives are gone or changed since."""
    try:
        version = _pyspark_version_at(inputs["pyspark"])
        return version is None or _archive_inputs(inputs["java"], inputs["pyspark"], version) != inputs
    except (OSError, KeyError, TypeError):
        return True


def prune_class_archives(keep: str) -> list[str]:
    """Remove the class archives in ``keep``'s directory (about 190 MB each) that no JVM can map any
    more (:func:`_archive_is_stale`), ``keep`` aside; those with no ``.inputs.json`` (recorded by an
    older kafkaforensics) are left. Returns the archives removed."""
    removed = []
    folder = os.path.dirname(keep)
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not (name.startswith("spark-driver-") and name.endswith(".jsa")) or path == keep:
            continue
        try:
            with open(f"{path[:-4]}.inputs.json") as f:
                inputs = json.load(f)
        except (OSError, ValueError):
            continue
        if _archive_is_stale(inputs):
            for p in (path, f"{path[:-4]}.inputs.json"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
            removed.append(path)
    return removed


def _keep_archive(recording: str, archive: str) -> None:
    """Put a recorded archive in place whole (a concurrent run never maps half of one), with what
    it was recorded for beside it, and remove the archives no JVM can map any more."""
    inputs = _current_archive_inputs()
    tmp = f"{archive[:-4]}.inputs.json.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(inputs, f, sort_keys=True)
    os.replace(tmp, f"{archive[:-4]}.inputs.json")
    os.replace(recording, archive)
    prune_class_archives(archive)


def _cache_dir() -> str:
    return os.environ.get("KFX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kafkaforensics")


#: how ``kfx scan`` gets the class archive when there is none: ``background`` (the default: a
#: process of its own records it after the scan, as ``git gc --auto`` packs a repository), ``now``
#: (the scan records it itself and ends some 15 s later) or ``no`` (never; an archive already
#: recorded is still mapped)
CLASS_ARCHIVE_RECORDING = "KFX_CLASS_ARCHIVE_RECORDING"
_RECORDING_MODES = ("background", "now", "no")


def class_archive_recording() -> str:
    """The :data:`CLASS_ARCHIVE_RECORDING` mode in force (an unknown value reads as the default)."""
    mode = os.environ.get(CLASS_ARCHIVE_RECORDING, "background")
    return mode if mode in _RECORDING_MODES else "background"


def class_archive_missing() -> bool:
    """Whether a driver JVM started here could map a class archive, but none is recorded yet."""
    archive = class_archive_path()
    return archive is not None and not os.path.exists(archive)


def recording_pid() -> int | None:
    """The pid of the process recording the class archive in the background now, or None."""
    archive = class_archive_path()
    try:
        with open(f"{archive}.recording") as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (TypeError, OSError, ValueError):  # no archive path, no marker, or its process is gone
        return None
    return pid


def start_class_archive_recording() -> int | None:
    """Start a detached process that records the driver JVM's class archive (a small scan of a
    partition it writes, :func:`record_class_archive`) unless an archive or a recording exists
    already; its pid, or None.  Its output goes nowhere: the scan that started it has ended."""
    archive = class_archive_path()
    if archive is None or os.path.exists(archive) or recording_pid() is not None:
        return None
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    marker = f"{archive}.recording"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(marker)  # a recording process that died left it
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None  # another scan started one a moment ago
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    with os.fdopen(fd, "w") as f:
        proc = subprocess.Popen([sys.executable, "-c", "from spark_jobs.archive_recording import record_class_archive as r; r()"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=tempfile.gettempdir())
        f.write(str(proc.pid))
    return proc.pid
