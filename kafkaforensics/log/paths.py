"""What a path a user gives is: a log dir, a partition dir, a file Kafka writes, or nothing Kafka wrote.

Every read command takes its paths with this one meaning (:func:`classify`):

* a **log dir** (one of a broker's ``log.dirs``): it holds ``meta.properties``, an offset checkpoint,
  the clean-shutdown marker, ``.lock``, ``bootstrap.checkpoint``, or a ``<topic>-<partition>``
  directory (``-delete``/``-future``/``-stray`` copies included) with a Kafka file in it;
* a **partition dir**: segment-family files (``<offset>.log/.index/.timeindex/.txnindex/.snapshot``,
  leftovers ``.swap/.cleaned/.deleted``), ``leader-epoch-checkpoint``, ``partition.metadata``, KRaft
  snapshots or ``quorum-state`` -- whatever its name (salvaged segments in any folder count);
* a **file** Kafka writes, of the kind :func:`file_kind` names.

Anything else -- a missing path, an empty dir, a dir or file with nothing Kafka wrote -- raises
:class:`PathUsageError` whose message is one line naming the path and what was expected (the CLI's
exit 2). :func:`classify_for` also refuses the kinds a command cannot act on, saying so.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from specs import checkpoints as C

from kafkaforensics.log.dir_lock import LOCK_FILE
from kafkaforensics.log.kraft import BOOTSTRAP_FILE, PARTIAL_SUFFIX as KRAFT_PARTIAL_SUFFIX, QUORUM_STATE_FILE
from kafkaforensics.log.segment import FAMILY_SUFFIXES, LEFTOVER_SUFFIXES, KRAFT_SNAPSHOT_RE, offset_from_name
from kafkaforensics.log.partition import CLEAN_SHUTDOWN_FILE, LogDir, parse_partition_dir_name, partition_dir_state

LOG_DIR, PARTITION_DIR, FILE = "log-dir", "partition-dir", "file"
#: the words a message uses for each kind
KIND_WORDS = {LOG_DIR: "a log dir", PARTITION_DIR: "a partition dir", FILE: "a file"}

#: files that sit at a log dir's root
LOG_DIR_FILES = LogDir.own_file_names() | {BOOTSTRAP_FILE}

EXPECTED = ("a log dir, a partition dir (<topic>-<partition>) or a file Kafka writes "
            f"({', '.join(FAMILY_SUFFIXES)}, a checkpoint)")


class PathUsageError(ValueError):
    """A path the command cannot use; ``str()`` is the one line to print."""


@dataclass(frozen=True)
class KafkaPath:
    path: str
    kind: str                    # LOG_DIR, PARTITION_DIR or FILE
    file_kind: str | None = None  # for a FILE: what file_kind() says

    @property
    def is_segment(self) -> bool:
        return self.kind == FILE and self.file_kind == "log"

    @property
    def log_dir(self) -> str | None:
        """The log dir this path lies in (itself for a log dir), when the layout says so."""
        p = os.path.abspath(self.path)
        if self.kind == LOG_DIR:
            return p
        if self.kind == FILE:
            if os.path.basename(p) in LOG_DIR_FILES:
                return os.path.dirname(p)
            p = os.path.dirname(p)
        parent = os.path.dirname(p)
        return parent if _has_log_dir_files(parent) else None

    @property
    def partition_dir(self) -> str | None:
        """The partition dir of a partition dir or of a file in one."""
        if self.kind == PARTITION_DIR:
            return self.path
        if self.kind == FILE and os.path.basename(self.path) not in LOG_DIR_FILES:
            return os.path.dirname(os.path.abspath(self.path))
        return None


def file_kind(path: str) -> str:
    """What a file is by its name, as Kafka names them (a leftover suffix looked through);
    ``unknown`` for a name Kafka never writes."""
    name = os.path.basename(path)
    for suf in LEFTOVER_SUFFIXES:
        if name.endswith(suf):
            name = name[: -len(suf)]
    if name in C.OFFSET_CHECKPOINT_FILES:
        return "offset-checkpoint"
    if name == C.LEADER_EPOCH_FILE:
        return "leader-epoch-checkpoint"
    if name == C.PARTITION_METADATA_FILE:
        return "partition-metadata"
    if name == C.META_PROPERTIES_FILE:
        return "meta-properties"
    if name == BOOTSTRAP_FILE or KRAFT_SNAPSHOT_RE.match(name) or name.endswith(KRAFT_PARTIAL_SUFFIX):
        return "kraft-snapshot"
    if name == QUORUM_STATE_FILE:
        return "quorum-state"
    if name == CLEAN_SHUTDOWN_FILE:
        return "clean-shutdown"
    if name == LOCK_FILE:
        return "lock"
    ext = os.path.splitext(name)[1]
    # by extension: a segment copied out under another name (evidence.log) is still read as one
    return ext[1:] if ext in FAMILY_SUFFIXES else "unknown"


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        raise PathUsageError(f"{path}: cannot read the directory ({e.strerror or e})") from None


def _is_partition_file(name: str) -> bool:
    """A name Kafka gives a file in a partition dir (segment files only with an offset name:
    a folder of app.log files is no partition)."""
    if offset_from_name(name) is not None:
        return True
    return name in (C.LEADER_EPOCH_FILE, C.PARTITION_METADATA_FILE, QUORUM_STATE_FILE) \
        or KRAFT_SNAPSHOT_RE.match(name) is not None or name.endswith(KRAFT_PARTIAL_SUFFIX)


def _has_partition_files(path: str) -> bool:
    try:
        return any(_is_partition_file(n) and os.path.isfile(os.path.join(path, n)) for n in os.listdir(path))
    except OSError:
        return False


def _has_log_dir_files(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(n in LOG_DIR_FILES for n in names) or any(_is_partition_subdir(path, n) for n in names)


def _is_partition_subdir(path: str, name: str) -> bool:
    full = os.path.join(path, name)
    return parse_partition_dir_name(name) is not None and os.path.isdir(full) and _has_partition_files(full)


def classify(path: str) -> KafkaPath:
    """What ``path`` is (see the module's docstring); :class:`PathUsageError` when nothing Kafka wrote."""
    if not os.path.exists(path):
        raise PathUsageError(f"{path}: no such file or directory (expected {EXPECTED})")
    if not os.path.isdir(path):
        kind = file_kind(path)
        if kind == "unknown":
            raise PathUsageError(f"{path}: not a file Kafka writes (expected {EXPECTED})")
        return KafkaPath(path, FILE, kind)
    names = _listdir(path)
    if any(n in LOG_DIR_FILES for n in names) or any(_is_partition_subdir(path, n) for n in names):
        return KafkaPath(path, LOG_DIR)
    if any(_is_partition_file(n) and os.path.isfile(os.path.join(path, n)) for n in names):
        return KafkaPath(path, PARTITION_DIR)
    inner = [n for n in names if os.path.isdir(os.path.join(path, n)) and _has_log_dir_files(os.path.join(path, n))]
    hint = f"; it holds the log dir {os.path.join(path, inner[0])}" if inner else ""
    what = "an empty directory" if not names else "nothing Kafka wrote in it"
    raise PathUsageError(f"{path}: {what} (expected {EXPECTED}){hint}")


def classify_for(paths, command: str, accept=(LOG_DIR, PARTITION_DIR, FILE), file_kinds=None,
                 what: str | None = None) -> list[KafkaPath]:
    """Classify every path for ``command``; a kind it cannot act on (or a file kind outside
    ``file_kinds``) raises :class:`PathUsageError` saying what ``command`` takes (``what``)."""
    out = []
    want = what or " or ".join(KIND_WORDS[k] for k in accept)
    for p in paths:
        kp = classify(p)
        if kp.kind not in accept or (kp.kind == FILE and file_kinds is not None and kp.file_kind not in file_kinds):
            got = KIND_WORDS[kp.kind] if kp.kind != FILE or not kp.file_kind else \
                f"{'an' if kp.file_kind[0] in 'aeiou' else 'a'} {kp.file_kind} file"
            raise PathUsageError(f"{p}: kfx {command} takes {want}, not {got}")
        out.append(kp)
    return out


def live_log_dirs(kpaths) -> dict[str, int]:
    """The log dirs among or around ``kpaths`` that a running broker holds (log dir -> its pid)."""
    out = {}
    for kp in kpaths:
        d = kp.log_dir
        if d is not None and d not in out:
            pid = LogDir(d).lock_holder()
            if pid is not None:
                out[d] = pid
    return out


#: how the end of a segment looks while a broker appends to it (a reader saw part of the write)
IN_FLIGHT_KINDS = frozenset({"truncated-batch", "trailing-bytes"})


def live_tail(stop, log: str) -> str | None:
    """Why the walk of a live partition's active segment ``log`` stopping at ``stop`` (a
    :class:`~kafkaforensics.errors.Problem`) is no damage, or None when it is: a partial batch at the
    very end (an append in flight), or zeros from there to the end of the file (space the broker
    preallocated: log.preallocate, trimmed at shutdown)."""
    if stop is None:
        return None
    if stop.kind in IN_FLIGHT_KINDS:
        return "the broker holding this log dir is still writing this batch (an append in flight, not damage)"
    if stop.kind == "zeroed-tail" and stop.position is not None and _zeros_to_end(log, stop.position):
        return ("zeros to the end of the active segment: space the broker preallocated (log.preallocate; "
                "trimmed when it shuts down), not damage")
    return None


def _zeros_to_end(path: str, position: int, chunk: int = 1 << 20) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(position)
            while True:
                b = f.read(chunk)
                if not b:
                    return True
                if b.count(0) != len(b):
                    return False
    except OSError:
        return False


def is_active_segment(log: str) -> bool:
    """Whether ``log`` is its partition dir's last (active) segment."""
    d, base = os.path.dirname(os.path.abspath(log)), offset_from_name(log)
    if base is None:
        return False
    others = (offset_from_name(n) for n in _listdir(d) if n.endswith(".log"))
    return all(o is None or o <= base for o in others)


def appending(log: str) -> bool:
    """Whether a running broker may be appending to ``log``: the active segment of a partition in a
    live log dir (what a reader finds at its very end may be a write in flight)."""
    kp = KafkaPath(log, FILE, "log")
    return kp.log_dir is not None and LogDir(kp.log_dir).lock_holder() is not None and is_active_segment(log)


def live_notes(paths) -> list[str]:
    """The note lines for the live log dirs among or around ``paths`` (unclassifiable paths skipped)."""
    kpaths = []
    for p in paths:
        try:
            kpaths.append(classify(p))
        except PathUsageError:
            pass
    return [live_note(d, pid) for d, pid in live_log_dirs(kpaths).items()]


def live_note(log_dir: str, pid: int) -> str:
    """The one line a read-only command prints about a log dir in use."""
    return (f"{log_dir} is live: process {pid} (a broker) holds its .lock; what is read here may change "
            "while it runs, and a partial batch at the end of an active segment is an append in flight")


#: within one offset, the order a partition's files are listed in (a segment, then its indexes, then
#: the producer snapshot taken at that offset)
_SUFFIX_ORDER = {suffix[1:]: i for i, suffix in enumerate(FAMILY_SUFFIXES)}


def partition_files(partition_dir: str) -> list[str]:
    """The Kafka files of a partition dir in offset order (each segment's .log, indexes and the
    producer snapshot at its offset, a KRaft snapshot at its end offset; a leftover right after the
    file it would become), then leader-epoch-checkpoint, partition.metadata and quorum-state."""
    seg, rest = [], []
    for n in _listdir(partition_dir):
        full = os.path.join(partition_dir, n)
        if not os.path.isfile(full) or not _is_partition_file(n):
            continue
        off = offset_from_name(n)
        kraft = KRAFT_SNAPSHOT_RE.match(n)
        if off is not None:
            leftover = any(n.endswith(s) for s in LEFTOVER_SUFFIXES)
            seg.append(((off, _SUFFIX_ORDER.get(file_kind(n), 9), leftover, n), full))
        elif kraft:  # a KRaft snapshot at its end offset
            seg.append(((int(kraft.group(1)), 5, False, n), full))
        else:
            order = 0 if n == C.LEADER_EPOCH_FILE else 1 if n == C.PARTITION_METADATA_FILE else 2
            rest.append(((order, n), full))
    return [f for _k, f in sorted(seg)] + [f for _k, f in sorted(rest)]


def log_dir_files(log_dir: str) -> list[str]:
    """A log dir's own Kafka files (meta.properties, the checkpoints, the clean-shutdown marker,
    bootstrap.checkpoint; not ``.lock``, whose lock and not its bytes matters)."""
    order = [C.META_PROPERTIES_FILE, CLEAN_SHUTDOWN_FILE, *C.OFFSET_CHECKPOINT_FILES, BOOTSTRAP_FILE]
    return [os.path.join(log_dir, n) for n in order if os.path.isfile(os.path.join(log_dir, n))]


def partition_dirs(log_dir: str) -> list[str]:
    """The partition dirs of a log dir (with a Kafka file in them), by topic, partition and state
    (the live dir first, then its -delete/-future/-stray copies)."""
    found = []
    for n in _listdir(log_dir):
        tp = parse_partition_dir_name(n)
        if tp is not None and _is_partition_subdir(log_dir, n):
            topic, part = tp
            state = partition_dir_state(n)
            found.append(((topic, part, state != "live", n), os.path.join(log_dir, n)))
    return [p for _k, p in sorted(found)]
