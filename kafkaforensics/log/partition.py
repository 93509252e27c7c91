"""Kafka's storage objects above the segment: a partition (:class:`Partition`: its
:class:`~.segment.Segment` s, producer snapshots and state, leader epochs, ``partition.metadata``, and
what a walk of its batches loads) and a log dir (:class:`LogDir`, the one reader of a log dir's own
files: ``meta.properties``, the four offset checkpoints, the clean-shutdown marker, ``.lock``, its
partitions by Kafka's naming rules); discovery and naming.

Facts carried over from Kafka (metadata.properties.MetaProperties / MetaPropertiesEnsemble,
DirectoryId, storage CleanShutdownFileHandler):
* meta.properties: ``version`` (0 when missing); v0 names the node ``broker.id`` and may lack
  ``cluster.id``; v1 requires ``node.id`` and ``cluster.id``; ``directory.id`` (optional, both versions)
  is a Kafka Uuid (base64url, 16 bytes) and must not be one of the 100 reserved ids (0..99);
* across one broker's log dirs the cluster id and node id agree and no two dirs share a directory id;
* ``.kafka_cleanshutdown``: present (whatever it holds), the broker shut down cleanly and its logs
  load without recovery; absent, recovery runs from the recovery point. Empty up to Kafka 3.6, then
  holding the broker epoch (JSON ``{"version": 0, "brokerEpoch": N}``), see :func:`read_clean_shutdown`.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable

from specs import checkpoints as C
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.segment import (INDEX, INDEX_SUFFIXES, LEFTOVER_SUFFIXES, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX,  # noqa: F401 (re-exported)
                                        Segment, file_name, offset_from_name)
from kafkaforensics.log import producer_state
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.dir_lock import LOCK_FILE, lock_holder  # noqa: F401 (LOCK_FILE re-exported)
from kafkaforensics.log.kafka_rules import refused_dir
from kafkaforensics import fsutil
from kafkaforensics.log import checkpoint_file, leader_epochs, load_walk

#: name-based UUIDs only (uuid's import brings platform's)
uuid = lazy("uuid", globals())

_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                     r"(?:\.[0-9a-f]+-(?P<state>delete|future|stray)|-(?P<bare>delete|future|stray))?$")


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition dir's path, or None for a dir that is none."""
    return partition_of_dir_name(os.path.basename(os.path.normpath(name)))


#: a partition number is a Java int
MAX_PARTITION = (1 << 31) - 1

#: LocalLog's -delete/-future/-stray name patterns (java.util.regex ``\\S``: ASCII whitespace only)
_SUFFIXED = {suffix: re.compile(r"[^ \t\n\x0b\f\r]+-[^ \t\n\x0b\f\r]+\.[^ \t\n\x0b\f\r]+" + re.escape(suffix))
             for suffix in ("-delete", "-future", "-stray")}


def _java_int(s: str) -> int | None:
    """``s`` as Java's Integer.parseInt reads it (a sign, then decimal digits, in int range), else None."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not all(c.isdecimal() for c in body):
        return None
    n = -int(body) if s[0] == "-" else int(body)  # int() reads Unicode decimal digits, as Character.digit
    return n if -(1 << 31) <= n <= MAX_PARTITION else None


def kafka_refuses_dir_name(name: str) -> bool:
    """Whether Kafka's log loading throws on a dir of this name in a log dir, as
    LocalLog.parseTopicPartitionName does (Kafka 2.x to 4.x; 0.10-1.x had no -delete/-future patterns and
    -stray dirs exist since 3.7): no '-'; a -delete/-future/-stray suffix without ``x-y.z`` before it;
    no topic or partition around the last '-'; a partition that is no Java int.  A broker that meets such a
    dir in a log dir fails to start (LogManager.loadLogs lists every dir but ``remote-log-index-cache``)."""
    if "-" not in name:
        return True
    suffix = next((x for x in _SUFFIXED if name.endswith(x)), None)
    if suffix is not None:
        if not _SUFFIXED[suffix].fullmatch(name):
            return True
        name = name[:name.rindex(".")]
    topic, _, part = name.rpartition("-")
    return not topic or not part or _java_int(part) is None


#: the kinds of :func:`broker_refusal`: a name no Kafka parses, a suffix the log dir's Kafka does not know
NOT_A_PARTITION_DIR, UNKNOWN_DIR_SUFFIX = "not-a-partition-dir", "unknown-dir-suffix"


def broker_refusal(name: str, rules=None) -> tuple[str, str] | None:
    """Why a broker refuses to start on a log dir holding a dir named ``name``, as (kind, one line), or
    None: the one judge ``kfx verify`` and ``kfx recover`` ask. A name LocalLog.parseTopicPartitionName
    throws on (:func:`kafka_refuses_dir_name`; ``remote-log-index-cache`` excepted, as LogManager.loadLogs)
    is :data:`NOT_A_PARTITION_DIR`; a ``-future``/``-stray`` suffix no Kafka of ``rules``' range parses
    (:func:`~kafkaforensics.log.kafka_rules.refused_dir`; ``rules`` None: not judged) :data:`UNKNOWN_DIR_SUFFIX`."""
    if name == REMOTE_INDEX_CACHE_DIR:
        return None
    if kafka_refuses_dir_name(name):
        return NOT_A_PARTITION_DIR, (f"{name}: no partition dir by Kafka's naming (topic-partition); a broker "
                                     "refuses to start on this log dir (its log loading takes every dir there for a "
                                     "partition)")
    suffix = next((x for x in ("future", "stray") if name.endswith("-" + x)), None)
    why = refused_dir(name, suffix, rules) if rules is not None and suffix else None
    return (UNKNOWN_DIR_SUFFIX, why) if why else None


def refused_dirs(log_dir: str, rules=None) -> list[tuple[str, str, str]]:
    """The dirs of ``log_dir`` that make the broker of ``rules`` refuse to start on it, sorted, each as
    (path, kind, why) by :func:`broker_refusal`."""
    try:
        names = sorted(os.listdir(log_dir))
    except OSError:
        return []
    out = []
    for n in names:
        refusal = broker_refusal(n, rules)
        if refusal is not None and os.path.isdir(os.path.join(log_dir, n)):
            out.append((os.path.join(log_dir, n), *refusal))
    return out


def partition_of_dir_name(name: str) -> tuple[str, int] | None:
    """:func:`parse_partition_dir_name` of a bare dir name (no parent, no trailing slash)."""
    m = _DIR_RE.match(name)
    if not m or int(m.group("partition")) > MAX_PARTITION:  # Kafka parses it as an int: no partition dir
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
class Partition:
    """One partition dir as Kafka's UnifiedLog holds it: its files (the :class:`~.segment.Segment` s
    in base-offset order, producer snapshots, ``leader-epoch-checkpoint``, ``partition.metadata``,
    leftovers of an interrupted operation, orphan indexes, unknown files), and once walked
    (:meth:`walk`, :meth:`batches`, :meth:`load`) what LogLoader and LocalLog learn from the batches:
    each segment's load facts (:attr:`loaded`, :class:`~.load_walk.LoadFacts`), the log start,
    end and last stable offsets, the producer state and the leader epochs.

    What a damaged batch (a CRC mismatch; with ``strict_legacy`` also a legacy wrapper that does not
    resolve) does is the walk's choice, ``damage``: ``keep`` it (no CRC is checked), ``skip`` it,
    ``stop-segment`` (the rest of its segment is not walked) or ``stop`` (nothing after it is)."""
    path: str
    topic: str | None
    partition: int | None
    segments: list[Segment] = field(default_factory=list)
    snapshots: list[int] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    orphan_indexes: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    #: each walked segment's load facts, in order (filled by the walk)
    loaded: list = field(default_factory=list, repr=False)
    #: the producer state the walked batches build (None: a walk that keeps none)
    state: producer_state.ProducerState | None = field(default=None, repr=False)
    #: the leader epochs the walked batches carry (LogSegment.recover's rule)
    batch_epochs: leader_epochs.LeaderEpochCache | None = field(default=None, repr=False)
    #: a ``stop`` walk ended at a damaged batch
    stopped: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.path))

    @property
    def dir_state(self) -> str:
        """``live``, or ``delete``/``future``/``stray`` for the copies Kafka names so (never the partition)."""
        return partition_dir_state(self.path) or "live"

    @classmethod
    def scan(cls, path: str) -> "Partition":
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
            if off is not None and n.endswith(INDEX_SUFFIXES) and off not in logs:
                pd.orphan_indexes.append(os.path.join(path, n))
        pd.segments = [Segment(o, path) for o in sorted(logs)]
        pd.snapshots.sort()
        return pd

    @classmethod
    def of(cls, partition: "Partition | str") -> "Partition":
        """A partition as given, or the partition dir at a path scanned."""
        return partition if isinstance(partition, Partition) else cls.scan(partition)

    @property
    def log_dir(self) -> str:
        """The log dir holding this partition dir (its parent)."""
        return os.path.dirname(os.path.abspath(self.path))

    @property
    def topic_partition(self) -> tuple[str, int] | None:
        return None if self.topic is None or self.partition is None else (self.topic, self.partition)

    def segment_for(self, offset: int) -> Segment | None:
        """The segment holding ``offset`` (the last one starting at or below it; LogSegments.floorSegment)."""
        found = None
        for seg in self.segments:
            if seg.base_offset > offset:
                break
            found = seg
        return found

    # -- producer snapshots, leader epochs, topic id ----------------------------------------------
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
        """``leader-epoch-checkpoint`` as a :class:`~.leader_epochs.LeaderEpochCache` (None: no file;
        a malformed one raises)."""
        return leader_epochs.LeaderEpochCache.read(self.path)

    def leader_epoch_lines(self) -> list[dict] | None:
        """``leader-epoch-checkpoint``'s lines as written (None: no file); the rules over them are
        :class:`~.leader_epochs.LeaderEpochCache`'s."""
        return checkpoint_file.read_checkpoint(os.path.join(self.path, C.LEADER_EPOCH_FILE), C.LeaderEpochCheckpoint)

    def leader_epochs(self):
        """The partition's leader-epoch cache: the checkpoint when it is readable and has entries,
        else the epochs the walked batches carry."""
        try:
            cache = self.leader_epoch_cache()
        except KafkaFormatError:
            cache = None
        if cache:
            return cache
        if self.batch_epochs is None:
            self.batch_epochs = leader_epochs.LeaderEpochCache()
        return self.batch_epochs

    def partition_metadata(self) -> dict | None:
        p = os.path.join(self.path, C.PARTITION_METADATA_FILE)
        if not os.path.exists(p):
            return None
        with open(p, encoding="utf-8", errors="replace") as f:
            return C.parse_partition_metadata(f.read(), file=p)

    # -- the walk (LogLoader) -----------------------------------------------------------------------
    def walk(self, *, damage: str = "keep", strict_legacy: bool = False, producers: bool = True,
             before_apply=None, state=None):
        """Yield (load facts of a segment, its batches) for each segment in order; the batches come
        as (batch, transaction its marker completes or None).  Facts of a segment are final once its
        batches are exhausted (batches a caller leaves are still walked).  ``before_apply`` is called
        with each batch kept before the producer state takes it (a producer snapshot check).  Each
        walk starts afresh: :attr:`loaded`, :attr:`state` (``state`` when given, a caller's
        :class:`~.producer_state.ProducerState` to build) and :attr:`batch_epochs` are its own."""
        if damage not in load_walk.DAMAGE:
            raise ValueError(f"damage must be one of {load_walk.DAMAGE}, not {damage!r}")
        self.loaded = []
        self.state = (state if state is not None else producer_state.ProducerState()) if producers else None
        self.batch_epochs = leader_epochs.LeaderEpochCache()
        self.stopped = False
        for sf in self.segments:
            if self.stopped:
                return
            seg = load_walk.LoadFacts(sf, next_offset=sf.base_offset)
            self.loaded.append(seg)
            with sf.source.mapped(sf.log) as buf:  # a remote tier's segment reads through its source
                seg.size = len(buf)
                inner = load_walk.segment_batches(seg, buf, state=self.state, epochs=self.batch_epochs,
                                                   damage=damage, strict_legacy=strict_legacy,
                                                   before_apply=before_apply)
                yield seg, inner
                for _ in inner:  # what the caller left
                    pass
            if seg.damaged is not None and damage == "stop":
                self.stopped = True

    def batches(self, **walk):
        """Every batch walked (:meth:`walk`'s options), in log order: (segment's load facts, batch,
        completed transaction or None)."""
        for seg, inner in self.walk(**walk):
            for b, done in inner:
                yield seg, b, done

    def load(self, **walk) -> "Partition":
        """Walk the whole partition (:meth:`walk`'s options) and return self."""
        for _seg, inner in self.walk(**walk):
            for _ in inner:
                pass
        return self

    # -- what the walk gives ------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        """The log end the walked segments give (:func:`~.load_walk.log_end`, the load's rule; 0
        without segments)."""
        return load_walk.log_end(((f.base_offset, f.next_offset if f.batches else None) for f in self.loaded), 0)

    @property
    def last_stable_offset(self) -> int:
        first = self.state.first_unstable_offset() if self.state is not None else None
        return self.log_end_offset if first is None else first

    @property
    def leader_epoch(self) -> int:
        """The newest leader epoch the walked batches carry (0 when none does)."""
        return max(0, (self.batch_epochs.latest_epoch if self.batch_epochs is not None else None) or 0)

    def checkpointed_log_start(self) -> int | None:
        """This partition's entry in the log dir's ``log-start-offset-checkpoint`` (None: no file,
        no entry, a partition dir not named ``topic-N``)."""
        return LogDir(self.log_dir).partition_offset(checkpoint_file.LOG_START_OFFSET, self.topic_partition)

    @property
    def log_start_offset(self) -> int:
        """The first segment's base, or the checkpointed log start when it lies above it and within
        the log (DeleteRecords moves it without removing a segment); a damaged checkpoint is ignored."""
        start = self.segments[0].base_offset if self.segments else 0
        try:
            ck = self.checkpointed_log_start()
        except KafkaFormatError:
            ck = None
        if ck is not None and start < ck <= self.log_end_offset:
            return ck
        return start


class LogDir:
    """A broker's log dir as LogManager.loadLogs sees it, and the one reader of its own files:
    ``meta.properties``, the four offset checkpoints (a missing file: no entries; Kafka reads an empty
    file as none too), the clean-shutdown marker (Kafka goes by its existence: empty from
    ZooKeeper-era brokers, JSON ``{"version":0,"brokerEpoch":N}`` later), the ``.lock`` a running
    broker holds, and its partition dirs by Kafka's naming rules (``topic-N``;
    ``topic-N.<id>-delete|-future|-stray``)."""

    #: the offset checkpoints, by what each holds (the names a caller gives :meth:`checkpoint` and the
    #: writers): LogManager's recovery points and log starts, ReplicaManager's high watermarks, the
    #: cleaner's first dirty offsets
    RECOVERY_POINT, REPLICATION_OFFSET, LOG_START_OFFSET, CLEANER_OFFSET = C.OFFSET_CHECKPOINT_FILES
    #: the clean-shutdown marker's name (for a message; :attr:`clean_shutdown_file` is its path)
    CLEAN_SHUTDOWN = ".kafka_cleanshutdown"

    def __init__(self, path: str, read_file: Callable[[str], bytes | str | None] | None = None):
        self.path = os.path.abspath(path) if read_file is None else path
        #: None: the files are local; else what reads one through a byte store (:meth:`over`)
        self._read_file = read_file

    @classmethod
    def over(cls, read_file: Callable[[str], bytes | str | None], path: str) -> LogDir:
        """The log dir at ``path`` in a byte store (the object storage the Spark planner lists): its
        files are read through ``read_file(uri)`` (the file's bytes or text, None when there is none)
        and named by ``/``-joined URIs; every method that reads a file reads it that way."""
        return cls(path, read_file)

    def __repr__(self) -> str:
        return f"LogDir({self.path!r})"

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def file(self, name: str) -> str:
        """The path of one of the log dir's own files (``meta.properties``, a checkpoint, ...)."""
        return os.path.join(self.path, name) if self._read_file is None else posixpath.join(self.path, name)

    def text(self, name: str, errors: str = "replace") -> str | None:
        """One of the log dir's own files as text, None when there is none; a local one that cannot be
        read raises its OSError, one that does not decode (``errors="strict"``) :class:`KafkaFormatError`
        naming it."""
        path = self.file(name)
        try:
            if self._read_file is None:
                return _read(path, errors=errors)
            data = self._read_file(path)
            return data.decode("utf-8", errors) if isinstance(data, bytes) else data
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as e:
            raise KafkaFormatError("io", str(e), file=path) from None

    # -- the files' names: what a listing of a log dir is sorted by ---------------------------------
    @property
    def meta_properties_file(self) -> str:
        """The path (a URI over a byte store) of the log dir's ``meta.properties``."""
        return self.file(C.META_PROPERTIES_FILE)

    @staticmethod
    def is_meta_properties(name: str) -> bool:
        """Whether a file name is a log dir's ``meta.properties`` (what makes a dir a log dir)."""
        return name == C.META_PROPERTIES_FILE

    @staticmethod
    def own_file_names() -> frozenset[str]:
        """The names of the files a log dir holds itself: ``meta.properties``, the clean-shutdown marker,
        ``.lock`` and the offset checkpoints (not the KRaft bootstrap snapshot, :mod:`.kraft`'s)."""
        return LOG_DIR_OWN_FILES

    # -- identity and state ----------------------------------------------------------------------
    def meta_properties(self) -> dict | None:
        """``meta.properties`` as :func:`read_meta_properties` reads it (None: no file; one Kafka
        refuses raises :class:`KafkaFormatError`)."""
        text = self.text(C.META_PROPERTIES_FILE)
        return None if text is None else meta_properties_of(text, self.meta_properties_file)

    def meta_properties_raw(self) -> dict[str, str]:
        """``meta.properties`` as its key/value pairs, unvalidated ({} when there is none or it does not
        read): what a broker serving the dir takes its cluster and node id from."""
        try:
            return C.parse_properties(self.text(C.META_PROPERTIES_FILE, errors="strict") or "")
        except (OSError, KafkaFormatError, ValueError):
            return {}

    def identity(self) -> tuple[int | None, str | None]:
        """(broker id, cluster id) as ``meta.properties`` gives them, unvalidated: ``node.id`` (KRaft,
        version 1) or ``broker.id`` (ZooKeeper, version 0), and ``cluster.id``; (None, None) without the
        file, None for a value it lacks.  Raises ValueError for a file that does not read as text or a
        node id that is not an integer (what the Spark planner reports as a ``bad-meta`` piece)."""
        try:
            text = self.text(C.META_PROPERTIES_FILE, errors="strict")
        except KafkaFormatError as e:
            raise ValueError(e.problem.detail) from None
        except OSError as e:
            raise ValueError(str(e)) from None
        if text is None:
            return None, None
        props = C.parse_properties(text)
        node = props.get("node.id", props.get("broker.id"))
        return (None if node is None else int(node)), props.get("cluster.id") or None

    @property
    def clean_shutdown(self) -> bool:
        """Whether the broker shut down cleanly: the marker exists (CleanShutdownFileHandler.exists)."""
        return os.path.isfile(self.file(CLEAN_SHUTDOWN_FILE))

    def clean_shutdown_marker(self, strict: bool = False) -> dict | None:
        """What the marker holds (:func:`read_clean_shutdown`): None without one; ``{"format": "empty"}``
        for the empty file brokers up to 3.6 leave; the broker epoch of the JSON form;
        ``{"format": "unknown"}`` for anything else, an unreadable file too (still a clean shutdown to
        Kafka), which ``strict`` raises as :class:`KafkaFormatError` instead."""
        p = self.file(CLEAN_SHUTDOWN_FILE)
        if not os.path.isfile(p):
            return None
        try:
            return read_clean_shutdown(p)
        except KafkaFormatError:
            if strict:
                raise
            return {"version": None, "brokerEpoch": None, "format": "unknown"}

    @property
    def clean_shutdown_file(self) -> str:
        """The path of the clean-shutdown marker (whether or not there is one)."""
        return self.file(CLEAN_SHUTDOWN_FILE)

    def remove_clean_shutdown(self) -> None:
        """Take the marker away (what a broker's log loading does before it changes the dir), the
        removal made durable; nothing when there is none."""
        try:
            os.unlink(self.clean_shutdown_file)
        except FileNotFoundError:
            return
        fsutil.fsync_dir(self.path)

    def write_clean_shutdown(self, broker_epoch: int) -> None:
        """Write the marker as brokers from 3.7 do (``{"version":0,"brokerEpoch":N}``, temp file,
        fsync, rename)."""
        body = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
        fsutil.atomic_write(self.clean_shutdown_file, body.encode())

    @staticmethod
    def clean_shutdown_at(path: str) -> dict:
        """A clean-shutdown marker read wherever it lies (a file dumped by its path, a leftover copy):
        :func:`read_clean_shutdown`."""
        return read_clean_shutdown(path)

    @staticmethod
    def properties_at(path: str) -> dict[str, str]:
        """A ``meta.properties`` file's key/value pairs, unvalidated, wherever it lies; one that cannot be
        read raises :class:`KafkaFormatError`."""
        return C.parse_properties(read_text(path))

    @staticmethod
    def checkpoint_entries_at(path: str) -> list[dict]:
        """An offset checkpoint's entries ({topic, partition, offset}, in file order) wherever it lies; one
        that cannot be read or is malformed raises :class:`KafkaFormatError` naming the file and line."""
        return C.OffsetCheckpoint.parse(read_text(path), file=path)

    def lock_holder(self) -> int | None:
        """The pid of the running broker holding this log dir's ``.lock``, if any (:mod:`.dir_lock`)."""
        return lock_holder(self.path)

    # -- the offset checkpoints ------------------------------------------------------------------
    def stored_checkpoint(self, name: str) -> dict[tuple[str, int], int] | None:
        """One of the four offset checkpoints as {(topic, partition): offset}, None when there is no
        file (a malformed one raises :class:`KafkaFormatError`)."""
        if self._read_file is None:
            return checkpoint_file.read_offsets(checkpoint_file.checkpoint_path(self.path, name))
        text = self.text(name)
        return None if text is None else checkpoint_file.offsets_of(text, self.file(name))

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        """:meth:`stored_checkpoint`, {} when there is no file."""
        return self.stored_checkpoint(name) or {}

    def checkpoints(self) -> tuple[dict[str, dict[tuple[str, int], int]], list[Problem]]:
        """The offset checkpoint files the log dir has, {file name: {(topic, partition): offset}}, read
        one at a time (a malformed one is a problem and hides none of the others), and those problems."""
        tables, problems = {}, []
        for name in C.OFFSET_CHECKPOINT_FILES:
            try:
                table = self.stored_checkpoint(name)
            except KafkaFormatError as e:
                problems.append(e.problem)
                continue
            if table is not None:
                tables[name] = table
        return tables, problems

    def partition_offset(self, name: str, tp: tuple[str, int] | None) -> int | None:
        """The offset the checkpoint ``name`` holds for ``tp`` (None: no file, no entry, no ``tp``)."""
        return None if tp is None else self.checkpoint(name).get((tp[0], tp[1]))

    def update_checkpoint(self, name: str, changes: dict, **kw) -> bool:
        """Change entries of the checkpoint ``name`` ({(topic, partition): offset, None removes}), every
        other entry kept (:func:`~.checkpoint_file.update_offsets`, its keywords); True when written."""
        return checkpoint_file.update_offsets(checkpoint_file.checkpoint_path(self.path, name), changes, **kw)

    def set_partition_offset(self, name: str, tp: tuple[str, int] | None, offset: int | None, **kw) -> bool:
        """Set (None: remove) ``tp``'s entry of the checkpoint ``name`` (no ``tp``: nothing)."""
        return checkpoint_file.set_partition_offset(self.path, name, tp, offset, **kw)

    @staticmethod
    def checkpoint_bytes(table: dict) -> bytes:
        """An offset checkpoint's bytes holding exactly ``table``'s entries, in its order (a planned write)."""
        return checkpoint_file.build_offsets(table)

    # -- partitions --------------------------------------------------------------------------------
    def partition_dirs(self) -> list[str]:
        """The dirs of this log dir named as Kafka names partitions, by topic then partition number
        (``t-2`` before ``t-10``), a topic's live dir before its ``-delete``/``-future`` copies."""
        named = [(parse_partition_dir_name(n), n) for n in os.listdir(self.path)]
        return [os.path.join(self.path, n) for tp, n in sorted((tp, n) for tp, n in named if tp is not None)
                if os.path.isdir(os.path.join(self.path, n))]

    def partitions(self) -> list[Partition]:
        return [Partition.scan(p) for p in self.partition_dirs()]

    def refused_dirs(self, rules=None) -> list[tuple[str, str, str]]:
        """Dirs the broker of ``rules`` refuses to start on, as (path, kind, why): :func:`refused_dirs`."""
        return refused_dirs(self.path, rules)


#: the clean-shutdown marker (CleanShutdownFileHandler)
CLEAN_SHUTDOWN_FILE = LogDir.CLEAN_SHUTDOWN
#: the files a log dir holds itself (:meth:`LogDir.own_file_names`)
LOG_DIR_OWN_FILES = frozenset((C.META_PROPERTIES_FILE, CLEAN_SHUTDOWN_FILE, LOCK_FILE, *C.OFFSET_CHECKPOINT_FILES))
#: the tiered-storage index cache a log dir may hold (RemoteIndexCache.DIR_NAME): not a partition
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"
#: the KRaft metadata topic (Topic.CLUSTER_METADATA_TOPIC_NAME, never a topic a client sees) and its one
#: partition: loaded by the raft layer (KafkaMetadataLog), always from offset 0 as after an unclean
#: shutdown, and never in the log dir's checkpoints
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = f"{METADATA_TOPIC}-0"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"   # Kafka's Uuid.METADATA_TOPIC_ID (0, 1)


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


def find_partitions(path: str) -> list[Partition]:
    """A partition dir gives itself; a log dir gives every partition dir inside it."""
    if is_partition_dir(path) and any(n.endswith(LOG) or n.endswith(LEFTOVER_SUFFIXES) for n in os.listdir(path)):
        return [Partition.scan(path)]
    out = LogDir(path).partitions()
    if not out and is_partition_dir(path):
        out.append(Partition.scan(path))
    return out


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise KafkaFormatError("io", str(e), file=path) from None


def _read(path: str, errors: str = "replace") -> str:
    with open(path, encoding="utf-8", errors=errors) as f:
        return f.read()


def _uuid_bytes(s: str) -> bytes | None:
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 and len(s) == 22 else None


def read_meta_properties(path: str) -> dict:
    """{version, clusterId, nodeId, directoryId} of a meta.properties file, validated as Kafka does."""
    return meta_properties_of(_read(path), path)


def meta_properties_of(text: str, path: str) -> dict:
    """:func:`read_meta_properties` of the text of the file ``path``."""
    props = C.parse_properties(text)
    version = props.get("version", "0")
    if version not in ("0", "1"):
        raise KafkaFormatError("meta.properties", f"version {version!r} (only 0 and 1 exist)", file=path)
    v = int(version)
    node_key = "broker.id" if v == 0 else "node.id"
    node = props.get(node_key)
    if node is None and v == 1:
        raise KafkaFormatError("meta.properties", "node.id was not specified (required in version 1)", file=path)
    if v == 1 and not props.get("cluster.id"):
        raise KafkaFormatError("meta.properties", "cluster.id was not specified (required in version 1)", file=path)
    try:
        node_id = None if node is None else int(node)
    except ValueError:
        raise KafkaFormatError("meta.properties", f"{node_key} {node!r} is not an integer", file=path) from None
    did = props.get("directory.id")
    if did is not None:
        raw = _uuid_bytes(did)
        if raw is None:
            raise KafkaFormatError("meta.properties", f"directory.id {did!r} is not a Kafka Uuid", file=path)
        if raw[:8] == bytes(8) and int.from_bytes(raw[8:], "big") < 100:
            raise KafkaFormatError("meta.properties", f"directory.id {did} is a reserved directory id", file=path)
    return {"version": v, "clusterId": props.get("cluster.id"), "nodeId": node_id, "directoryId": did}


def read_clean_shutdown(path: str) -> dict:
    """{version, brokerEpoch, format} of a ``.kafka_cleanshutdown`` marker, in every form brokers wrote.

    Kafka decides a clean shutdown by the file's existence alone (CleanShutdownFileHandler.exists);
    what it holds is the broker epoch (KIP-966), read where it can be and otherwise taken as unknown.
    Up to 3.6 LogManager created the marker empty (``format`` "empty"); later brokers write JSON,
    ``{"version":0,"brokerEpoch":N}`` (numbers, or strings from the handler that wrote a string map);
    one handler wrote ``version: 0`` and ``brokerEpoch: N`` lines ("text"). Anything else is "unknown"
    (version and epoch None): still a clean shutdown to Kafka. Only an unreadable file raises."""
    try:
        text = _read(path)
    except OSError as e:
        raise KafkaFormatError("io", str(e), file=path) from None
    if not text.strip():
        return {"version": None, "brokerEpoch": None, "format": "empty"}
    fields = None
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            fields, fmt = obj, "json"
    except json.JSONDecodeError:
        pairs = [ln.split(":", 1) for ln in text.splitlines() if ":" in ln]
        if pairs:
            fields, fmt = {k.strip(): v.strip() for k, v in pairs}, "text"
    if fields is not None:
        version, epoch = _as_int(fields.get("version")), _as_int(fields.get("brokerEpoch"))
        if epoch is not None:
            return {"version": version, "brokerEpoch": epoch, "format": fmt}
    return {"version": None, "brokerEpoch": None, "format": "unknown"}


def _as_int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def clean_shutdown_note(path: str, cs: dict) -> str:
    """One line on what a clean-shutdown marker says (verify's and analyze's note)."""
    what = {"empty": "an empty marker, as brokers up to 3.6 write it",
            "unknown": "a marker in no format Kafka writes; Kafka goes by its existence"}.get(
        cs["format"], f"at broker epoch {cs['brokerEpoch']}")
    return f"clean shutdown ({what}): Kafka loads these logs without recovery"


def check_log_dirs(log_dirs) -> tuple[list[Problem], list[dict]]:
    """Validate each log dir's meta.properties and cross-check them as one broker's dirs (Kafka's
    MetaPropertiesEnsemble.verify): problems and, per dir, its identity and clean-shutdown state."""
    problems, rows = [], []
    cluster = node = None
    seen: dict[str, str] = {}
    for d in log_dirs:
        row = {"logDir": d, "metaProperties": None, "cleanShutdown": None}
        rows.append(row)
        ld = LogDir(d)
        mp, cs = ld.file(C.META_PROPERTIES_FILE), ld.file(CLEAN_SHUTDOWN_FILE)
        if os.path.exists(cs):
            try:
                row["cleanShutdown"] = read_clean_shutdown(cs)
            except KafkaFormatError as e:
                problems.append(e.problem)
        try:
            m = row["metaProperties"] = ld.meta_properties()
        except KafkaFormatError as e:
            problems.append(e.problem)
            continue
        if m is None:
            continue
        if m["clusterId"]:
            if cluster is None:
                cluster = (m["clusterId"], mp)
            elif m["clusterId"] != cluster[0]:
                problems.append(Problem(mp, None, None, "cluster-id-mismatch",
                                        f"cluster.id {m['clusterId']} but {cluster[1]} has {cluster[0]}"))
        if m["nodeId"] is not None:
            if node is None:
                node = (m["nodeId"], mp)
            elif m["nodeId"] != node[0]:
                problems.append(Problem(mp, None, None, "node-id-mismatch",
                                        f"node id {m['nodeId']} but {node[1]} has {node[0]}"))
        if m["directoryId"]:
            prev = seen.setdefault(m["directoryId"], d)
            if prev != d:
                problems.append(Problem(mp, None, None, "duplicate-directory-id",
                                        f"directory.id {m['directoryId']} is also the id of {prev}"))
    return problems, rows


def check_topic_ids(log_dir: str, topic_ids: dict[str, str]) -> list[Problem]:
    """Each ``<topic>-<n>/partition.metadata`` of ``log_dir`` against the metadata log's topic ids: a
    different id means the directory belongs to a deleted/recreated topic (Kafka refuses to load it)."""
    problems = []
    for pd in find_partitions(log_dir):
        pm = os.path.join(pd.path, C.PARTITION_METADATA_FILE)
        if pd.topic is None or not os.path.exists(pm):
            continue
        try:
            tid = C.parse_partition_metadata(_read(pm), file=pm)["topicId"]
        except KafkaFormatError as e:
            problems.append(e.problem)
            continue
        want = METADATA_TOPIC_ID if pd.name == METADATA_PARTITION else topic_ids.get(pd.topic)
        if want is None:
            problems.append(Problem(pm, None, None, "topic-not-in-metadata",
                                    f"topic {pd.topic} (id {tid}) is not in the metadata log"))
        elif want != tid:
            problems.append(Problem(pm, None, None, "topic-id-mismatch",
                                    f"topic id {tid}, but the metadata log names {pd.topic} {want}"))
    return problems
