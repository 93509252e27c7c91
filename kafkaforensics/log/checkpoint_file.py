"""Reading and editing checkpoint files (Kafka's CheckpointFile / OffsetCheckpointFile).

A log dir's offset checkpoints (``recovery-point-offset-checkpoint``, ``replication-offset-
checkpoint``, ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``) map each
(topic, partition) to an offset; Kafka rewrites the whole file through a temp file, fsync and
rename.  :func:`read_offsets` reads one (the codec :class:`~.partition.LogDir` reads a log dir's
checkpoints through: commands ask the LogDir) and :func:`update_offsets` / :func:`set_partition_offset`
change entries while keeping every other entry and its order.  The formats are ``specs.checkpoints``'s.
"""
from __future__ import annotations

import os

from specs import checkpoints as C

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.fsutil import atomic_write

#: the file names, as ``specs.checkpoints.OFFSET_CHECKPOINT_FILES`` lists them
RECOVERY_POINT, REPLICATION_OFFSET, LOG_START_OFFSET, CLEANER_OFFSET = C.OFFSET_CHECKPOINT_FILES


#: the checkpoints that, past the log end, mean "records this copy does not hold" (what Kafka does):
#: a warning, never a problem
BEHIND_CHECKPOINTS = {
    REPLICATION_OFFSET: "the high watermark saw records this copy does not hold; "
                        "Kafka caps it at the log end when it loads the log",
    CLEANER_OFFSET: "the cleaner had cleaned past what this copy holds; Kafka starts cleaning again from the log start",
}
#: what Kafka's LogLoader does at start-up with the other checkpoints past the log end (a problem)
BEYOND_CONSEQUENCE = {
    LOG_START_OFFSET: ": Kafka deletes every segment of this partition when it loads it (its log end is below the log start)",
    RECOVERY_POINT: ": records the broker had flushed are not in this log (Kafka recovers from the log end)",
}
#: the kinds :func:`past_log_end` gives: a warning (the copy lags), a problem (the log lost records)
LOG_BEHIND_CHECKPOINT, CHECKPOINT_BEYOND_LOG_END = "log-behind-checkpoint", "checkpoint-beyond-log-end"


def past_log_end(name: str, partition: str, offset: int | None, log_end: int) -> tuple[str, str] | None:
    """(kind, detail) of checkpoint ``name``'s ``offset`` for ``partition`` (its dir name) when it is past
    the partition's ``log_end`` (None when it is not, or there is no entry): ``log-behind-checkpoint``
    for the high watermark and the cleaner's checkpoint (a warning), else ``checkpoint-beyond-log-end``
    (a problem).  The one rule ``kfx verify`` and ``kfx scan`` apply."""
    if offset is None or offset <= log_end:
        return None
    if name in BEHIND_CHECKPOINTS:
        return LOG_BEHIND_CHECKPOINT, (f"{partition}: {name} says {offset} but this copy of the log ends at {log_end}: "
                                       f"{BEHIND_CHECKPOINTS[name]}")
    return CHECKPOINT_BEYOND_LOG_END, (f"{partition}: {name} says {offset} but the log ends at {log_end}"
                                       + BEYOND_CONSEQUENCE.get(name, ""))


def read_checkpoint(path: str, spec: C.TextCheckpoint) -> list[dict] | None:
    """The entries of a checkpoint file, None when there is no such file; a malformed file raises
    :class:`KafkaFormatError` naming the file and line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise KafkaFormatError("io", str(e), file=path) from None
    return spec.parse(text, file=path)


def read_offsets(path: str) -> dict[tuple[str, int], int] | None:
    """An offset checkpoint as {(topic, partition): offset}, None when the file is missing."""
    entries = read_checkpoint(path, C.OffsetCheckpoint)
    return None if entries is None else _table(entries)


def offsets_of(text: str, path: str) -> dict[tuple[str, int], int]:
    """:func:`read_offsets` of the text of the checkpoint ``path`` (read through a byte store)."""
    return _table(C.OffsetCheckpoint.parse(text, file=path))


def _table(entries: list[dict]) -> dict[tuple[str, int], int]:
    return {(e["topic"], e["partition"]): e["offset"] for e in entries}


def checkpoint_path(log_dir: str, name: str) -> str:
    if name not in C.OFFSET_CHECKPOINT_FILES:
        raise ValueError(f"{name!r} is not one of Kafka's offset checkpoint files {C.OFFSET_CHECKPOINT_FILES}")
    return os.path.join(log_dir, name)


def build_offsets(table: dict[tuple[str, int], int]) -> bytes:
    return C.OffsetCheckpoint.build([{"topic": t, "partition": p, "offset": o}
                                     for (t, p), o in table.items()]).encode()


def update_offsets(path: str, changes: dict[tuple[str, int], int | None], *, create: bool = True,
                   unreadable: str = "raise", backup_dir: str | None = None) -> bool:
    """Apply ``changes`` ({(topic, partition): offset, or None to remove the entry}) to an offset
    checkpoint: other entries keep their values and order, a changed entry keeps its place, a new
    one goes at the end; the file is replaced through temp file, fsync and rename.

    ``create``: write the file when it does not exist (else leave it missing and return False).
    ``unreadable``: ``raise`` a malformed file's :class:`KafkaFormatError`, or ``replace`` it with
    the changes alone (the cleaner's choice: Kafka starts over from the log start).
    Returns True when the file was written (an edit that changes nothing writes nothing)."""
    try:
        table = read_offsets(path)
    except KafkaFormatError:
        if unreadable != "replace":
            raise
        table = {}
    if table is None:
        if not create:
            return False
        table, existed = {}, False
    else:
        existed = True
    new = dict(table)
    for (topic, partition), off in changes.items():
        tp = (topic, partition)  # a plain tuple, whatever pair the caller keyed by
        if off is None:
            new.pop(tp, None)
        else:
            new[tp] = off
    if existed and new == table and list(new) == list(table):
        return False
    atomic_write(path, build_offsets(new), backup_dir=backup_dir)
    return True


def set_partition_offset(log_dir: str, name: str, tp: tuple[str, int] | None, offset: int | None, **kw) -> bool:
    """Set (or with None remove) one partition's entry of the log dir's checkpoint ``name``."""
    if tp is None:
        return False
    return update_offsets(checkpoint_path(log_dir, name), {(tp[0], tp[1]): offset}, **kw)


def write_offsets(path: str, table: dict[tuple[str, int], int], *, backup_dir: str | None = None) -> None:
    """Replace an offset checkpoint with exactly ``table``'s entries (a broker writing its state)."""
    atomic_write(path, build_offsets(table), backup_dir=backup_dir)
