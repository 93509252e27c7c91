"""The files of a partition directory and a log dir: discovery, naming, checkpoint reading."""
from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field

from specs import checkpoints as C
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import (INDEX, LEFTOVER_SUFFIXES, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX,  # noqa: F401 (re-exported)
                      file_name, offset_from_name)

#: what reading a segment never needs: the writers, the checkpoint readers, name-based UUIDs
fsutil = lazy("kafkaforensics.fsutil", globals())
checkpoint_file = lazy("kafkaforensics.log.checkpoint_file", globals())
uuid = lazy("uuid", globals())

_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                     r"(?:\.[0-9a-f]+-(?P<state>delete|future|stray)|-(?P<bare>delete|future|stray))?$")


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    m = _DIR_RE.match(os.path.basename(os.path.normpath(name)))
    if not m:
        return None
    return m.group("topic"), int(m.group("partition"))


def partition_dir_state(name: str) -> str | None:
    """Kafka's name for what a partition directory is: ``live`` (``topic-N``), or ``delete``,
    ``future`` or ``stray`` (``topic-N.<id>-delete`` and the like: a deleted copy awaiting removal,
    a move between log dirs in progress, a partition the controller no longer assigns here);
    None for a name that is no partition directory."""
    m = _DIR_RE.match(os.path.basename(os.path.normpath(name)))
    if not m:
        return None
    return m.group("state") or m.group("bare") or "live"


def derived_topic_id(topic: str) -> str:
    """A stable topic id for a topic whose ``partition.metadata`` is missing: a name-based UUID
    (version 5, so never Kafka's all-zero or metadata-topic id) in Kafka's base64 form, re-derived
    while it would start with '-' (Kafka never hands out such ids)."""
    seed = topic
    while True:
        tid = base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_URL, "kafka-topic:" + seed).bytes).decode().rstrip("=")
        if not tid.startswith("-"):
            return tid
        seed += "'"


def write_partition_metadata(path: str, topic_id: str) -> None:
    """``partition.metadata`` (version 0, the topic id) as Kafka writes it in a partition dir."""
    fsutil.atomic_write(os.path.join(path, C.PARTITION_METADATA_FILE), C.build_partition_metadata(topic_id).encode())


@dataclass
class SegmentFiles:
    base_offset: int
    dir: str

    def path(self, suffix: str) -> str:
        return os.path.join(self.dir, file_name(self.base_offset, suffix))

    @property
    def log(self) -> str:
        return self.path(LOG)

    def existing(self, suffix: str) -> str | None:
        p = self.path(suffix)
        return p if os.path.exists(p) else None


@dataclass
class PartitionDir:
    path: str
    topic: str | None
    partition: int | None
    segments: list[SegmentFiles] = field(default_factory=list)
    snapshots: list[int] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    orphan_indexes: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.path))

    @property
    def state(self) -> str:
        """``live``, or ``delete``/``future``/``stray`` for the copies Kafka names so (never the partition)."""
        return partition_dir_state(self.path) or "live"

    @classmethod
    def scan(cls, path: str) -> "PartitionDir":
        tp = parse_partition_dir_name(path)
        pd = cls(path, tp[0] if tp else None, tp[1] if tp else None)
        names = sorted(os.listdir(path))
        logs = set()
        for n in names:
            full = os.path.join(path, n)
            if not os.path.isfile(full):
                continue
            if n.endswith(LEFTOVER_SUFFIXES):
                pd.leftovers.append(full)
                continue
            off = offset_from_name(n)
            if off is None:
                if n not in (C.LEADER_EPOCH_FILE, C.PARTITION_METADATA_FILE) and not n.endswith(".kfx-tmp"):
                    pd.unknown.append(full)
                continue
            if n.endswith(LOG):
                logs.add(off)
            elif n.endswith(SNAPSHOT):
                pd.snapshots.append(off)
        for n in names:
            off = offset_from_name(n)
            if off is not None and n.endswith((INDEX, TIMEINDEX, TXNINDEX)) and off not in logs:
                pd.orphan_indexes.append(os.path.join(path, n))
        pd.segments = [SegmentFiles(o, path) for o in sorted(logs)]
        pd.snapshots.sort()
        return pd

    def leader_epochs(self) -> list[dict] | None:
        """``leader-epoch-checkpoint``'s lines as written (None: no file); the rules over them are
        :class:`~.leader_epochs.LeaderEpochCache`'s."""
        return checkpoint_file.read_checkpoint(os.path.join(self.path, C.LEADER_EPOCH_FILE), C.LeaderEpochCheckpoint)

    def partition_metadata(self) -> dict | None:
        p = os.path.join(self.path, C.PARTITION_METADATA_FILE)
        if not os.path.exists(p):
            return None
        with open(p, encoding="utf-8", errors="replace") as f:
            return C.parse_partition_metadata(f.read(), file=p)


def is_partition_dir(path: str) -> bool:
    if not os.path.isdir(path):
        return False
    if parse_partition_dir_name(path) is not None:
        return True
    return any(offset_from_name(n) is not None for n in os.listdir(path))


def find_partitions(path: str) -> list[PartitionDir]:
    """A partition dir gives itself; a log dir gives every partition dir inside it."""
    if is_partition_dir(path) and any(n.endswith(LOG) or n.endswith(LEFTOVER_SUFFIXES) for n in os.listdir(path)):
        return [PartitionDir.scan(path)]
    out = []
    for n in sorted(os.listdir(path)):
        full = os.path.join(path, n)
        if os.path.isdir(full) and parse_partition_dir_name(n) is not None:
            out.append(PartitionDir.scan(full))
    if not out and is_partition_dir(path):
        out.append(PartitionDir.scan(path))
    return out


def read_offset_checkpoints(log_dir: str) -> dict[str, dict[tuple[str, int], int]]:
    """The log dir's offset checkpoint files: file name -> {(topic, partition): offset}."""
    out = {}
    for name in C.OFFSET_CHECKPOINT_FILES:
        table = checkpoint_file.read_offsets(os.path.join(log_dir, name))
        if table is not None:
            out[name] = table
    return out


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise KafkaFormatError("io", str(e), file=path) from None
