"""The real brokers' log dirs of ``../shared/real-logdirs`` (PROVENANCE.md there): each tarball
unpacked to a temp dir (never used in place), its log-dir root found, and its ``.missing.txt`` read as
the files git did not keep (paths relative to the log dir)."""
from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: where the tarballs are: $KFX_REAL_LOGDIRS, else ../shared/real-logdirs beside the repository (as the
#: issue names it), else the machine's shared copy
REAL = next((d for d in (os.environ.get("KFX_REAL_LOGDIRS"), os.path.join(_ROOT, "..", "shared", "real-logdirs"),
                         "/work/shared/real-logdirs") if d and os.path.isdir(d)), "")


def tarballs() -> list[str]:
    """The names of the tarballs (without ``.tar.gz``), sorted."""
    if not os.path.isdir(REAL):
        return []
    return sorted(n[: -len(".tar.gz")] for n in os.listdir(REAL) if n.endswith(".tar.gz"))


@dataclass
class RealDir:
    name: str
    log_dir: str           # the unpacked log-dir root
    missing: set           # files git did not keep, relative to log_dir

    @property
    def clean_shutdown(self) -> bool:
        return os.path.exists(os.path.join(self.log_dir, ".kafka_cleanshutdown"))

    def path(self, *parts) -> str:
        return os.path.join(self.log_dir, *parts)


def _log_dir_root(top: str) -> str:
    """The folder holding meta.properties (or partition dirs) under an unpacked tarball's top folder."""
    for root, dirs, files in os.walk(top):
        dirs.sort()
        if "meta.properties" in files or any(d.startswith("__consumer_offsets-") for d in dirs):
            return root
    raise AssertionError(f"no log dir in {top}")


def unpack(name: str, into: str) -> RealDir:
    """Unpack ``name``.tar.gz under ``into`` and read its missing-file list."""
    dest = os.path.join(into, name)
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(os.path.join(REAL, name + ".tar.gz")) as t:
        t.extractall(dest, filter="data")
    tops = os.listdir(dest)
    assert len(tops) == 1, tops
    log_dir = _log_dir_root(os.path.join(dest, tops[0]))
    rel_root = os.path.relpath(log_dir, dest)   # e.g. "kafka_data" or "tmp/kafka-logs"
    missing = set()
    with open(os.path.join(REAL, name + ".missing.txt")) as f:
        for line in f:
            first = line.split(" ")[0].strip()
            if "/" not in first:
                continue  # "(none: ...)"
            if first.startswith(rel_root + "/"):  # some lists name files from the tarball's top folder
                first = first[len(rel_root) + 1:]
            missing.add(first)
    return RealDir(name, log_dir, missing)
