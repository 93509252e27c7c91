"""Kafka's storage objects above the segment: a partition directory (:class:`PartitionDir`: its
:class:`~.segment.Segment` s, producer snapshots, leader epochs, ``partition.metadata``) and a log dir
(:class:`LogDir`: identity, the four offset checkpoints, the clean-shutdown marker, its partitions by
Kafka's naming rules); discovery and naming."""
from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field

from specs import checkpoints as C
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.segment import (INDEX, LEFTOVER_SUFFIXES, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX,  # noqa: F401 (re-exported)
                                        Segment, file_name, offset_from_name)
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.dir_lock import lock_holder

#: what reading a segment never needs: the writers, the checkpoint readers, name-based UUIDs
fsutil = lazy("kafkaforensics.fsutil", globals())
checkpoint_file = lazy("kafkaforensics.log.checkpoint_file", globals())
leader_epochs = lazy("kafkaforensics.log.leader_epochs", globals())
uuid = lazy("uuid", globals())
#: the log dir's files (logdir imports this module)
logdir = lazy("kafkaforensics.log.logdir", globals())

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


#: the segment of a partition dir (its files and reads): :class:`~.segment.Segment`, by its old name too
SegmentFiles = Segment


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

    @property
    def log_dir(self) -> str:
        """The log dir holding this partition dir (its parent)."""
        return os.path.dirname(os.path.abspath(self.path))

    @property
    def topic_partition(self) -> tuple[str, int] | None:
        return None if self.topic is None else (self.topic, self.partition)

    def segment_for(self, offset: int) -> Segment | None:
        """The segment holding ``offset`` (the last one starting at or below it; LogSegments.floorSegment)."""
        found = None
        for seg in self.segments:
            if seg.base_offset > offset:
                break
            found = seg
        return found

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.path, file_name(offset, SNAPSHOT))

    def producer_snapshot(self, offset: int) -> list:
        """The entries of the producer snapshot at ``offset`` (:func:`~.producer_state.read_snapshot`:
        a damaged file raises :class:`KafkaFormatError`)."""
        p = self.snapshot_path(offset)
        with open(p, "rb") as f:
            return read_snapshot(f.read(), file=p)

    def latest_producer_snapshot(self) -> tuple[int, list] | None:
        """(offset, entries) of the newest readable producer snapshot, as ProducerStateManager loads
        it (a damaged newer one is passed over); None when there is none."""
        for off in sorted(self.snapshots, reverse=True):
            try:
                return off, self.producer_snapshot(off)
            except (KafkaFormatError, OSError):
                continue
        return None

    def leader_epoch_cache(self):
        """``leader-epoch-checkpoint`` as a :class:`~.leader_epochs.LeaderEpochCache` (None: no file)."""
        return leader_epochs.LeaderEpochCache.read(self.path)

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


class LogDir:
    """A broker's log dir as LogManager.loadLogs sees it: ``meta.properties``, the four offset
    checkpoints (a missing file: no entries; Kafka reads an empty file as none too), the
    clean-shutdown marker (Kafka goes by its existence: empty from ZooKeeper-era brokers, JSON
    ``{"version":0,"brokerEpoch":N}`` later), the ``.lock`` a running broker holds, and its
    partition dirs by Kafka's naming rules (``topic-N``; ``topic-N.<id>-delete|-future|-stray``)."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)

    def __repr__(self) -> str:
        return f"LogDir({self.path!r})"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    # -- identity and state ----------------------------------------------------------------------
    def meta_properties(self) -> dict | None:
        """``meta.properties`` as :func:`~.logdir.read_meta_properties` reads it (None: no file)."""
        p = os.path.join(self.path, C.META_PROPERTIES_FILE)
        return logdir.read_meta_properties(p) if os.path.exists(p) else None

    @property
    def clean_shutdown(self) -> bool:
        """Whether the broker shut down cleanly: the marker exists (CleanShutdownFileHandler.exists)."""
        return os.path.isfile(os.path.join(self.path, logdir.CLEAN_SHUTDOWN_FILE))

    def clean_shutdown_marker(self) -> dict | None:
        """What the marker holds: None without one; ``{"format": "empty"}`` for the empty file brokers
        up to 3.6 leave; the broker epoch of the JSON form; ``{"format": "unknown"}`` for anything else
        (still a clean shutdown to Kafka)."""
        p = os.path.join(self.path, logdir.CLEAN_SHUTDOWN_FILE)
        if not os.path.isfile(p):
            return None
        if os.path.getsize(p) == 0 or not read_text(p).strip():
            return {"version": None, "brokerEpoch": None, "format": "empty"}
        try:
            return {"format": "json"} | logdir.read_clean_shutdown(p)
        except KafkaFormatError:
            return {"version": None, "brokerEpoch": None, "format": "unknown"}

    def lock_holder(self) -> int | None:
        """The pid of the running broker holding this log dir's ``.lock``, if any (:mod:`.dir_lock`)."""
        return lock_holder(self.path)

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        """One of the four offset checkpoints as {(topic, partition): offset}; {} when there is no
        file (a malformed one raises :class:`KafkaFormatError`)."""
        return checkpoint_file.read_offsets(checkpoint_file.checkpoint_path(self.path, name)) or {}

    def recovery_points(self) -> dict[tuple[str, int], int]:
        return self.checkpoint(C.OFFSET_CHECKPOINT_FILES[0])

    def log_start_offsets(self) -> dict[tuple[str, int], int]:
        return self.checkpoint(C.OFFSET_CHECKPOINT_FILES[2])

    def replication_offsets(self) -> dict[tuple[str, int], int]:
        return self.checkpoint(C.OFFSET_CHECKPOINT_FILES[1])

    def cleaner_offsets(self) -> dict[tuple[str, int], int]:
        return self.checkpoint(C.OFFSET_CHECKPOINT_FILES[3])

    # -- partitions --------------------------------------------------------------------------------
    def partition_dirs(self) -> list[str]:
        """The dirs of this log dir named as Kafka names partitions, by topic then partition number
        (``t-2`` before ``t-10``), a topic's live dir before its ``-delete``/``-future`` copies."""
        named = [(parse_partition_dir_name(n), n) for n in os.listdir(self.path)]
        return [os.path.join(self.path, n) for tp, n in sorted((tp, n) for tp, n in named if tp is not None)
                if os.path.isdir(os.path.join(self.path, n))]

    def partitions(self) -> list[PartitionDir]:
        return [PartitionDir.scan(p) for p in self.partition_dirs()]

    def other_dirs(self) -> list[str]:
        """Dirs that are no partition by Kafka's naming (a broker refuses to start on them, but for
        ``remote-log-index-cache``, the tiered-storage index cache)."""
        return [os.path.join(self.path, n) for n in sorted(os.listdir(self.path))
                if os.path.isdir(os.path.join(self.path, n)) and parse_partition_dir_name(n) is None
                and n != REMOTE_INDEX_CACHE_DIR]


#: the tiered-storage index cache a log dir may hold (RemoteIndexCache.DIR_NAME): not a partition
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"
#: the KRaft metadata partition: loaded by the raft layer (KafkaMetadataLog), always from offset 0 as
#: after an unclean shutdown, and never in the log dir's checkpoints
METADATA_PARTITION = "__cluster_metadata-0"


def is_log_dir(path: str) -> bool:
    """A dir holding a partition dir, ``meta.properties`` or one of the offset checkpoints."""
    if not os.path.isdir(path):
        return False
    names = os.listdir(path)
    if any(n in names for n in (C.META_PROPERTIES_FILE,) + tuple(C.OFFSET_CHECKPOINT_FILES)):
        return True
    return any(parse_partition_dir_name(n) is not None and os.path.isdir(os.path.join(path, n)) for n in names)


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
    out = LogDir(path).partitions()
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
