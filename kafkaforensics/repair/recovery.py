"""``kfx recover``: what Kafka's log loading does to a partition at start, offline (a whole log dir:
:mod:`.load_logs`).

Rule for rule after LogLoader, LogSegment and ProducerStateManager. Where Kafka generations differ
(:mod:`kafkaforensics.log.kafka_rules`: leftover swaps, corrupt indexes below the recovery point,
producers below the log start, stray snapshots, offset-index entries, the old message format), the
rules of the generation that wrote the log dir apply (where the range it is inferred as spans a
change, the rule that changes less, said in a note); a snapshot that generation would have written is
kept (:mod:`kafkaforensics.log.kafka_files`), an index of a segment not recovered too, while a
recovered segment's indexes are rebuilt as that version's recovery writes them (LogSegment.recover
resets both):

1. leftovers -- ``.deleted`` files are removed; ``.cleaned`` files are removed, and with them every
   ``.swap`` file at or above the lowest cleaned offset (an interrupted split); the remaining
   ``.swap`` log files replace the segments whose base offsets fall in [swap base, swap next
   offset), and every ``.swap`` file is renamed to its final name;
2. index files without a ``.log`` are removed;
3. at load, whatever the shutdown was, a segment whose offset index is missing or whose indexes
   fail the sanity check is recovered (its indexes rebuilt; a truncation there removes no later
   segment); a missing time index next to a present offset index is created empty;
4. from the first unflushed segment (the recovery point, unless the clean-shutdown marker says
   there is nothing to recover; ``full`` validates every segment) each segment is walked batch by
   batch: framing (size bounds, magic), CRC, offsets increasing and, if asked, the max message
   size; it is truncated at the end of the last valid batch and every later segment is removed;
5. the offset, time and transaction indexes of every recovered segment are rebuilt;
6. producer snapshots are deleted and taken as ProducerStateManager does at load (see
   :class:`_SnapshotPlan`): none past the log end or at or below the log start, none corrupt, no
   stray one but the latest, and one taken only past the last one (none in an empty partition);
   the leader-epoch cache is truncated at the log end (every entry starting at or past it goes) and
   from the log start, and extended by the recovered batches (its file written only when its entries
   change).

The metadata partition (``__cluster_metadata-0``) loads from offset 0 as after an unclean shutdown,
as the raft layer loads it; a ``-delete`` dir is left as it is.

Everything is planned first (``dry_run`` returns the plan) and then applied in a crash-safe order:
later segments are moved aside before a segment is truncated, files are replaced through a temp
file, fsync and rename, and every changed or removed file is backed up unless ``backup=False``.
Running it twice changes nothing the second time.
"""
from __future__ import annotations

import os
from typing import Any
from dataclasses import dataclass, field, replace

from specs import checkpoints as C

from kafkaforensics import fsutil

from kafkaforensics.log import kafka_files
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.repair.actions import PHASES, Action, Dropped, apply_actions
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES, SegmentIndexes, SegmentRebuild
from kafkaforensics.log.kafka_rules import EXPIRY_DEFAULT_MS
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version as resolve_kafka_version
from kafkaforensics.log.checkpoint_file import LOG_START_OFFSET, RECOVERY_POINT, read_checkpoint
from kafkaforensics.log.dir_lock import refuse_live
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.log_loader import replay_segment
from kafkaforensics.log.partition import (METADATA_PARTITION, UNKNOWN_DIR_SUFFIX, LogDir, Partition, broker_refusal,
                                         parse_partition_dir_name, partition_dir_state)
from kafkaforensics.log.producer_state import ProducerState, read_snapshot, snapshot_bytes
from kafkaforensics.log.segment import (CLEANED, DELETED, INDEX_BY_SUFFIX, INDEX_SUFFIXES, KRAFT_SNAPSHOT_FILE_RE, LOG,
                                        NEW_SEGMENT_SUFFIXES, SEGMENT_SUFFIXES, SNAPSHOT, SWAP, TIMEINDEX, Segment, file_name,
                                        index_bytes, offset_from_name, without_leftover_suffix)
from kafkaforensics.log.batch_search import scan_file



#: each phrase of :attr:`RecoveryReport.done` as a dry run says it
WOULD = {"truncated": "would truncate", "segment removed": "would remove segment",
         "leftover completed": "would complete leftover", "orphan index deleted": "would delete orphan index",
         "index rebuilt": "would rebuild index", "time index created": "would create time index",
         "snapshot written": "would write snapshot", "snapshot deleted": "would delete snapshot",
         "leader epochs": "would rewrite leader epochs"}


@dataclass
class RecoveryReport:
    partition: str
    recovery_point: int
    truncated_at: dict | None = None
    removed_segments: list[str] = field(default_factory=list)
    rebuilt_indexes: list[str] = field(default_factory=list)
    backup: str | None = None
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log_end_offset: int = 0
    dry_run: bool = False
    path: str | None = None
    clean_shutdown: bool = False
    log_start_offset: int = 0
    #: what the truncation and the removed segments drop: bytes, and the batches in them that still
    #: pass their CRC (what ``kfx salvage`` can copy out)
    dropped: Dropped = field(default_factory=Dropped)
    recovered_segments: list[str] = field(default_factory=list)
    first_segment: int | None = None  # the base offset of the first segment kept
    active_segment: int | None = None  # the base offset of the last segment kept (Kafka's active segment)
    kafka: KafkaVersion | None = None  # the KafkaVersion whose rules applied

    @property
    def done(self) -> list[str]:
        """What was done, in words: one short phrase an action kind (the summary table's column)."""
        kinds = []
        for a in self.actions:
            n = os.path.basename(a.file)
            what = ("truncated" if a.action == "truncate" else "segment removed" if a.phase == PHASES["remove-segment"]
                    else "leftover completed" if a.phase in (PHASES["leftover-delete"], PHASES["leftover-rename"])
                    else "orphan index deleted" if a.phase == PHASES["orphan"]
                    else "index rebuilt" if a.phase == PHASES["index"] and a.detail.startswith("rebuild")
                    else "time index created" if a.phase == PHASES["index"]
                    else "snapshot " + ("written" if a.action == "write" else "deleted") if n.endswith(SNAPSHOT)
                    else "leader epochs" if a.phase == PHASES["epochs"] else a.action)
            if what not in kinds:
                kinds.append(what)
        return kinds

    @property
    def would_do(self) -> list[str]:
        """:attr:`done` as a dry run says it: what it would do (``would rebuild index``)."""
        return [WOULD.get(d, f"would {d}") for d in self.done]

    def to_json(self) -> dict:
        return {"partition": self.partition, "path": self.path, "truncatedAt": self.truncated_at,
                "removedSegments": self.removed_segments, "rebuiltIndexes": self.rebuilt_indexes,
                "recoveredSegments": self.recovered_segments,
                "backup": self.backup, "actions": [a.to_json() for a in self.actions],
                "recoveryPoint": self.recovery_point, "logStartOffset": self.log_start_offset,
                "logEndOffset": self.log_end_offset, "cleanShutdown": self.clean_shutdown,
                "dropped": self.dropped.to_json(), "done": self.done,
                "notes": self.notes, "dryRun": self.dry_run,
                "kafkaVersion": self.kafka.to_json() if self.kafka is not None else None}


class _PlannedPartition(Partition):
    """The partition as the plan sees it: a :class:`Partition` whose ``files`` (one listing of the
    dir) map each final name to the file that holds its bytes (a ``.swap`` being completed reads as
    its final name; a file the plan writes or deletes is added or dropped), and whose segments, set
    once the leftovers are planned, read through that map.  The scan's other lists are not kept:
    the plan would make them stale."""

    def __init__(self, path: str):
        tp = parse_partition_dir_name(path)
        super().__init__(path, *(tp or (None, None)))
        self.files = {n: os.path.join(path, n) for n in sorted(os.listdir(path))
                      if os.path.isfile(os.path.join(path, n))}

    def full(self, name: str) -> str:
        return os.path.join(self.path, name)

    def with_offset(self, suffixes=None):
        for n in sorted(self.files):
            off = offset_from_name(n)
            if off is not None and (suffixes is None or n.endswith(suffixes)):
                yield n, off

    def segment(self, base: int) -> Segment:
        """The segment at ``base`` as the plan has it (a ``.swap`` being completed reads as its final name)."""
        return _PlannedSegment(base, self)


class _PlannedSegment(Segment):
    """A :class:`Segment` whose files are the plan's (what a swap rename will make them)."""

    def __init__(self, base: int, d: "_PlannedPartition"):
        super().__init__(base, d.path)
        self._d = d

    def path(self, suffix: str) -> str:
        n = file_name(self.base_offset, suffix)
        return self._d.files.get(n, os.path.join(self.dir, n + ".absent"))


@dataclass(frozen=True)
class LoadOptions:
    """What a load is told (``kfx recover``'s knobs), one partition or a whole log dir:

    * ``index_interval_bytes``: not given, the topic's ``index.interval.bytes`` where the log dir holds
      the metadata (a note says so), else Kafka's default;
    * ``max_message_bytes``: larger batches are corrupt too;
    * ``full``: every segment is recovered whatever the marker and the recovery point say;
    * ``kafka_version`` (``X.Y`` or a KafkaVersion; default: inferred from the log dir): the rules of
      :mod:`~kafkaforensics.log.kafka_rules` that differ between Kafka generations;
    * ``now`` (epoch ms): the clock producer expiry is judged by (2.4+: producers below the log start
      are dropped from the snapshots written once expired); None: no producer expires;
    * ``clean`` (the clean-shutdown marker), ``recovery_point`` and ``log_start_offset`` (the
      checkpoints): what the log dir says of the partition, read from it when None.
    """
    index_interval_bytes: int | None = None
    max_message_bytes: int | None = None
    full: bool = False
    kafka_version: Any = None   # "X.Y", a KafkaVersion or None (inferred)
    now: int | None = None
    clean: bool | None = None
    recovery_point: int | None = None
    log_start_offset: int | None = None

    def told(self, **given) -> "LoadOptions":
        """These options with the fields given (not None, ``full`` when true) replaced."""
        return replace(self, **{k: v for k, v in given.items() if v is not None and v is not False})


def _checkpointed(log_dir: str, name: str, tp, notes: list[str]) -> int | None:
    try:
        return LogDir(log_dir).partition_offset(name, tp)
    except KafkaFormatError as e:
        notes.append(f"{name} unreadable ({e.problem.detail}): taken as having no entry, as Kafka does")
        return None


def recover(partition_dir: str, load: LoadOptions | None = None, *, dry_run: bool = False, backup: bool = True,
            backup_dir: str | None = None, index_interval_bytes: int | None = None, kafka_version=None,
            full: bool = False) -> RecoveryReport:
    """Load one partition dir as Kafka's LogLoader does (see the module's doc and :class:`LogLoader`)
    and plan, then apply, what that changes (nothing with ``dry_run``; every changed file backed up
    to ``backup_dir`` unless ``backup=False``). ``load``: what the load is told (:class:`LoadOptions`);
    ``index_interval_bytes``, ``kafka_version`` and ``full`` given here replace its fields."""
    path = os.path.abspath(partition_dir)
    if not os.path.isdir(path):
        raise FileNotFoundError(partition_dir)
    refuse_live(path)
    load = (load or LoadOptions()).told(index_interval_bytes=index_interval_bytes, kafka_version=kafka_version,
                                        full=full)
    loader = LogLoader(path, load, dry_run=dry_run)
    rep = loader.load()
    if rep.actions and not dry_run:  # a dry run names no backup: it makes none
        if backup:
            rep.backup = os.path.abspath(backup_dir) if backup_dir else fsutil.default_backup_dir(path)
        apply_actions(rep.actions, rep.backup)
    return rep


class LogLoader:
    """Kafka's ``LogLoader.load()`` over one partition dir, offline: :meth:`load` runs its passes, each a
    method named after Kafka's, each by the rules of the generation that wrote the log dir
    (:mod:`~kafkaforensics.log.kafka_rules`), and plans the file actions they make (``plan``) in a
    :class:`RecoveryReport`:

    1. :meth:`remove_temp_files_and_collect_swap_files` (leftovers: temp, ``.deleted``, ``.cleaned``,
       ``.swap``; completed swaps read as their final names from then on);
    2. :meth:`load_segment_files`: orphan indexes go, each segment's indexes get the sanity check
       (:meth:`~kafkaforensics.log.segment.Segment.index_problem`) and the unflushed segments are
       recovered (recoverLog's walk, :meth:`recover_segment`), the others replayed into the state;
    3. :meth:`recover_log`: the segments past a truncation go, the metadata log is truncated to its
       latest snapshot, a log without segments gets an empty one;
    4. :meth:`rebuild_producer_state` (with removeStraySnapshots);
    5. :meth:`truncate_leader_epochs`.

    The per-segment plan is the loader's ``d`` (:class:`_PlannedPartition`: each final name to the file
    that holds its bytes) and each segment's :class:`~kafkaforensics.log.indexing.SegmentRebuild`."""

    def __init__(self, path: str, load: LoadOptions, *, dry_run: bool = False):
        self.path, self.opts = path, load
        self.plan: list[Action] = []
        self.rep = RecoveryReport(os.path.basename(path), 0, dry_run=dry_run, path=path,
                                  kafka=resolve_kafka_version(path, load.kafka_version))
        self.rules = self.rep.kafka.rules()
        self.metadata = os.path.basename(path) == METADATA_PARTITION
        self.d: _PlannedPartition | None = None
        self.state = ProducerState()
        self.epochs = LeaderEpochCache()
        self.segments: list[int] = []
        self.leo = 0
        self.truncated = False
        self.removed: list[int] = []
        self.kept: list[int] = []
        self.walked: list[tuple[int, int, bytes]] = []  # (segment base, its next offset, producer state after it)
        self.load_phase: list[int] = []                 # segments recovered at load for a missing or corrupt index
        self.log_phase: list[int] = []                  # segments recovered as unflushed (recoverLog)
        self.v2_end: dict[int, int | None] = {}         # recovered segment -> the offset after its last v2 batch

    # -- what the log dir says --------------------------------------------------------------------
    def read_log_dir(self) -> list[str]:
        """The index interval, the clean-shutdown marker, the recovery point and the log start, as the
        log dir (or the caller) says them; the notes reading them made."""
        notes: list[str] = []
        o, log_dir = self.opts, os.path.dirname(self.path)
        tp = parse_partition_dir_name(self.path)
        self.interval = o.index_interval_bytes
        if self.interval is None:
            got, config_notes = LogConfig.of(self.path).settle({"index.interval.bytes": None})
            self.interval = got["index.interval.bytes"] or DEFAULT_INDEX_INTERVAL_BYTES
            notes += config_notes
        clean = o.clean if o.clean is not None else not self.metadata and LogDir(log_dir).clean_shutdown
        # the raft layer loads the metadata log as after an unclean shutdown, from 0
        self.clean = clean and not (o.full or self.metadata)
        rp, lso = o.recovery_point, o.log_start_offset
        if rp is None:
            rp = 0 if self.metadata else (_checkpointed(log_dir, RECOVERY_POINT, tp, notes) or 0)
        if lso is None:
            lso = 0 if self.metadata else (_checkpointed(log_dir, LOG_START_OFFSET, tp, notes) or 0)
        self.recovery_point, self.log_start_offset = (0 if o.full else rp), lso
        self.rep.recovery_point, self.rep.clean_shutdown = self.recovery_point, self.clean
        return notes

    def refused(self) -> bool:
        """Whether Kafka would not load the dir (a suffix it does not know, a ``-delete`` dir): said in a note."""
        told = isinstance(self.opts.kafka_version, KafkaVersion)  # a log dir's run says it once, of the log dir
        refused = broker_refusal(os.path.basename(self.path), self.rules)   # the judge verify asks too
        if refused and refused[0] == UNKNOWN_DIR_SUFFIX:   # any name is a partition dir's given alone (kfx write --out)
            if not told:
                self.rep.notes.append(refused[1] + "; left as it is")
            return True
        if partition_dir_state(self.path) == "delete":
            # Kafka loads it without recovery only to delete it (file.delete.delay.ms later): kfx keeps it
            self.rep.notes.append("a partition dir marked for deletion: Kafka deletes it after loading; left as it is")
            return True
        return False

    def load(self) -> RecoveryReport:
        """LogLoader.load: every pass, in Kafka's order; the report holds the plan (not applied)."""
        notes = self.read_log_dir()
        if not isinstance(self.opts.kafka_version, KafkaVersion) and self.rules.note():  # a log dir's run says it once
            notes.append(self.rules.note())
        self.rep.notes += notes
        if self.refused():
            return self.rep
        self.d = _PlannedPartition(self.path)
        self.remove_temp_files_and_collect_swap_files()
        self.load_segment_files()
        self.recover_log()
        if self.rules.write("files-since-0.11") == "write":   # 0.10 has no producer state: snapshots left as they are
            self.rebuild_producer_state()
        self.truncate_leader_epochs()
        self.rep.actions = sorted(self.plan, key=lambda a: a.phase)  # stable: Kafka's order within a phase
        return self.rep

    # -- the passes -------------------------------------------------------------------------------
    def remove_temp_files_and_collect_swap_files(self) -> None:
        """LogLoader.removeTempFilesAndCollectSwapFiles and the swap completion after it (see :func:`_plan_leftovers`)."""
        _plan_leftovers(self.d, self.plan, self.rules)

    def load_segment_files(self) -> None:
        """LogLoader.loadSegmentFiles (orphan indexes, the index sanity check) with recoverLog's walk of
        the unflushed segments: each segment recovered or replayed into the producer state, in order."""
        _plan_orphans(self.d, self.plan)
        self.epochs = _load_epochs(self.d, self.rep)
        self.d.segments = [self.d.segment(off) for _n, off in self.d.with_offset((LOG,))]  # leftovers completed
        self.segments = [seg.base_offset for seg in self.d.segments]
        if self.clean:
            self.rep.notes.append("clean-shutdown marker present: Kafka skips segment recovery (use --full to validate)")
        self.leo = self.segments[0] if self.segments else 0
        for i, base in enumerate(self.segments):
            if self.truncated:
                self.removed.append(base)
                continue
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            self.load_segment(base, unflushed=not self.clean and (nxt is None or nxt > self.recovery_point))

    def load_segment(self, base: int, unflushed: bool) -> None:
        """One segment at load: recovered when its indexes fail the sanity check (up to 2.2 below the
        recovery point too; from 2.3, KAFKA-7283, not) or it is unflushed, else replayed."""
        seg = self.d.segment(base)
        problem = seg.index_problem(self.rules.write("corrupt-index-below-recovery-point") == "rebuild")
        if problem is None and not unflushed:
            self.leo = _replay(self.d.files[file_name(base, LOG)], base, self.state, self.leo)
            self.walked.append((base, self.leo, self.state.to_snapshot()))
            if not os.path.exists(seg.path(TIMEINDEX)) and self.rules.write("missing-timeindex") == "create-empty":
                # LogSegment.sanityCheck: a time index that did not exist is created empty at load
                _plan_write(self.d, file_name(base, TIMEINDEX), b"", "time index created empty, as Kafka does at "
                            "load (LogSegment.sanityCheck)", self.plan)
            return
        if problem is not None:
            self.load_phase.append(base)
            self.rep.notes.append(f"{file_name(base, LOG)}: {problem}; Kafka recovers the segment and rebuilds its "
                                  "indexes at load")
        if unflushed:
            self.log_phase.append(base)
        self.recover_segment(base, truncates=unflushed and problem is None)

    def recover_segment(self, base: int, truncates: bool) -> None:
        """LogSegment.recover: the segment walked batch by batch into fresh indexes, the producer state
        and the leader epochs, truncated at the end of its last valid batch; ``truncates``: a
        truncation removes every later segment (recoverLog's; one at load for an index does not)."""
        name = file_name(base, LOG)
        src = self.d.files[name]
        self.rep.recovered_segments.append(name)
        res = SegmentRebuild(src, base, self.state, interval=self.interval, epochs=self.epochs,
                             max_batch_bytes=self.opts.max_message_bytes,
                             entry=self.rules.write("offset-index-entry")).walk()
        self.leo = res.next_offset if res.next_offset is not None else max(self.leo, base)
        self.v2_end[base] = res.v2_next_offset
        self.walked.append((base, self.leo, self.state.to_snapshot()))
        _plan_index_writes(self.d, base, res, self.plan, self.rep, self.rules)
        if res.valid_bytes < res.size:
            self.truncated = truncates
            self.rep.truncated_at = {"segment": name, "position": res.valid_bytes, "offset": self.leo,
                                     "reason": res.reason}
            count_dropped(self.rep.dropped, src, res.valid_bytes)
            self.plan.append(Action("truncate", self.d.full(name), f"truncate at byte {res.valid_bytes} "
                                    f"(end of the last valid batch): {res.reason}", size=res.valid_bytes,
                                    phase=PHASES["truncate"]))

    def recover_log(self) -> None:
        """The end of LogLoader.recoverLog: the segments after a truncation go (before the truncation when
        applied, see PHASES), the metadata log starts at its latest snapshot's end when past the log
        (truncateToLatestSnapshot), a log without segments gets an empty active one."""
        d, rep = self.d, self.rep
        for base in self.removed:
            rep.removed_segments.append(file_name(base, LOG))
            count_dropped(rep.dropped, d.files[file_name(base, LOG)], 0)
            _plan_delete_segment(d, self.plan, base, "segment after the truncation point")
        kept = [b for b in self.segments if b not in self.removed]
        if self.metadata:
            kept = self.truncate_to_latest_snapshot(kept)
        if not kept:
            # LogLoader.recoverLog: a log without segments gets an empty one at the checkpointed log start
            # (the active segment; a clean shutdown trims its indexes to nothing); a metadata log truncated
            # to its latest snapshot, at that snapshot's end offset
            self.leo = self.log_start_offset
            for suf in NEW_SEGMENT_SUFFIXES:
                _plan_write(d, file_name(self.leo, suf), b"", "empty active segment, as Kafka creates one for a log "
                            "without segments (LogLoader.recoverLog)", self.plan)
            kept = [self.leo]
        self.kept = kept
        rep.log_end_offset = self.leo
        rep.log_start_offset = max(self.log_start_offset, kept[0])
        rep.first_segment, rep.active_segment = kept[0], kept[-1]
        if self.leo < self.log_start_offset:
            rep.notes.append(f"the log end offset {self.leo} is below the checkpointed log start "
                             f"{self.log_start_offset}: Kafka would delete every segment (segment files deleted "
                             "behind its back); left as it is")

    def truncate_to_latest_snapshot(self, kept: list[int]) -> list[int]:
        """KafkaMetadataLog.recoverSnapshots, then truncateToLatestSnapshot: the segments left."""
        latest = _plan_kraft_snapshots(self.d, self.plan, kept[0] if kept else 0)
        already = kept == [latest and latest[0]] and self.leo == kept[0]   # an empty log at the snapshot's end
        if latest is None or already or not _snapshot_past_log(latest, self.epochs, self.leo):
            return kept
        # log.truncateFullyAndStartAt(snapshot end offset): the empty segment there is made by recover_log
        _plan_truncate_fully(self.d, self.plan, kept, latest[0], self.rep)
        self.epochs.entries.clear()
        self.log_start_offset = latest[0]
        return []

    def rebuild_producer_state(self) -> None:
        """UnifiedLog.rebuildProducerState at each recovery and at the end of the load, with
        ProducerStateManager.removeStraySnapshots (see :class:`_SnapshotPlan`)."""
        # the segments Kafka's LogSegments holds when it recovers each: the ones loaded before it at load
        # time, all of them in recoverLog
        recoveries = ([(b, [s for s in self.segments if s < b]) for b in self.load_phase]
                      + [(b, self.segments) for b in self.log_phase])
        _SnapshotPlan(self, recoveries).run()

    def truncate_leader_epochs(self) -> None:
        """LogLoader.load's leader-epoch truncation (see :func:`_plan_epochs`)."""
        _plan_epochs(self.d, self.epochs, self.leo, self.log_start_offset, self.plan)


def _plan_delete_segment(d: "_PlannedPartition", plan: list[Action], base: int, why: str) -> None:
    """Every file of the segment at ``base`` (its log and indexes) deleted as a removed segment."""
    for suf in SEGMENT_SUFFIXES:
        n = file_name(base, suf)
        if n in d.files:
            plan.append(Action("delete", d.full(n), why, phase=PHASES["remove-segment"]))
            del d.files[n]


def count_dropped(out: Dropped, path: str, start: int) -> None:
    """Add the bytes of ``path`` from ``start`` on to ``out``: the batches in them that pass their CRC
    and decode, found the way ``kfx salvage`` finds them (past damage too)."""
    out.files.append(os.path.basename(path))
    with Segment.of_file(path).buffer() as buf:
        tail = memoryview(buf)[start:] if start else buf
        out.bytes += len(tail)
        try:
            for b, gap in scan_file(tail, path):
                if gap is not None:
                    out.damaged_bytes += gap[1] - gap[0]
                if b is not None:
                    out.add_batch(b)
        finally:
            if start:
                tail.release()


def _plan_write(d: _PlannedPartition, name: str, data: bytes, why: str, plan: list[Action]) -> None:
    plan.append(Action("write", d.full(name), why, data=data, phase=PHASES["index"]))
    d.files[name] = d.full(name)


def _plan_leftovers(d: _PlannedPartition, plan: list[Action], rules) -> None:
    swaps, cleaned = [], []
    min_cleaned = None
    # temp files and dirs of killed kfx runs, here and in the log dir (where a dir stops the broker:
    # Kafka's log loading takes every dir of a log dir for a partition)
    for t in fsutil.temp_artefacts(os.path.dirname(d.path), live=False) + [
            p for p in fsutil.temp_artefacts(d.path, live=False) if os.path.isdir(p)]:
        plan.append(Action("delete", t, "temp " + ("dir" if os.path.isdir(t) else "file")
                           + " of an interrupted kfx run", phase=PHASES["leftover-delete"]))
    for n in list(d.files):
        if fsutil.is_temp(n):  # a temp file of a kfx repair killed before its rename
            plan.append(Action("delete", d.full(n), "temp file of an interrupted kfx write",
                               phase=PHASES["leftover-delete"]))
            del d.files[n]
        elif n.endswith(DELETED) and not n.endswith(".checkpoint" + DELETED):
            plan.append(Action("delete", d.full(n), "stray file marked for deletion", phase=PHASES["leftover-delete"]))
            del d.files[n]
        elif n.endswith(CLEANED):
            off = offset_from_name(n)
            if off is not None:
                min_cleaned = off if min_cleaned is None else min(min_cleaned, off)
            cleaned.append(n)
        elif n.endswith(SWAP):
            swaps.append(n)
    valid = []
    for n in swaps:
        off = offset_from_name(n)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            plan.append(Action("delete", d.full(n), f"swap file of an incomplete split (at or above the lowest "
                                                    f".cleaned offset {min_cleaned})", phase=PHASES["leftover-delete"]))
            del d.files[n]
        else:
            valid.append(n)
    for n in cleaned:
        plan.append(Action("delete", d.full(n), "stray .cleaned file of an interrupted cleaning",
                           phase=PHASES["leftover-delete"]))
        del d.files[n]
    lo, hi = None, None
    for n in valid:
        if not n.endswith(LOG + SWAP):
            continue
        base = offset_from_name(n)
        nxt = base
        for b in Segment.of_file(d.files[n], None).batches():  # a .swap: its name's base is not checked
            nxt = b.next_offset
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None:
        for n, off in list(d.with_offset()):
            if not n.endswith(SWAP) and lo <= off < hi:
                plan.append(Action("delete", d.full(n), f"replaced by the swap segment(s) covering [{lo}, {hi})",
                                   phase=PHASES["leftover-delete"]))
                del d.files[n]
    recover_swaps = rules.write("leftover-swap") == "recover"
    for n in valid:
        final = without_leftover_suffix(n)
        if recover_swaps and not n.endswith(LOG + SWAP):
            # up to 2.8 a swap's index files are deleted: recovery rebuilds them from the swapped
            # segment (its .log has no index now, so the walk below recovers it)
            plan.append(Action("delete", d.full(n), "index of an interrupted swap (Kafka <3.0 rebuilds it)",
                               phase=PHASES["leftover-delete"]))
            del d.files[n]
            continue
        plan.append(Action("rename", d.full(n), "complete the interrupted swap", target=d.full(final),
                           phase=PHASES["leftover-rename"]))
        d.files[final] = d.files.pop(n)
    if recover_swaps:
        for n in valid:
            if n.endswith(LOG + SWAP):
                for suf in INDEX_SUFFIXES:
                    idx = file_name(offset_from_name(n), suf)
                    if idx in d.files:  # an index of the segment replaced: rebuilt with the swap
                        plan.append(Action("delete", d.full(idx), "index replaced with the swapped segment "
                                           "(Kafka <3.0 rebuilds it)", phase=PHASES["leftover-delete"]))
                        del d.files[idx]


def _plan_kraft_snapshots(d: _PlannedPartition, plan: list[Action], log_start: int) -> tuple[int, int] | None:
    """KafkaMetadataLog.recoverSnapshots: partial (``.checkpoint.part``) and deleted
    (``.checkpoint.deleted``) snapshots and those ending below the log start are deleted
    (Files.deleteIfExists); the latest one kept, (end offset, epoch), comes back."""
    kept = []
    for n in sorted(d.files):
        m = KRAFT_SNAPSHOT_FILE_RE.match(n)
        if not m:
            continue
        sid = (int(m.group(1)), int(m.group(2)))
        if m.group(3) or sid[0] < log_start:
            why = ("partial" if m.group(3) == ".part" else "deleted" if m.group(3) else "below the log start")
            plan.append(Action("delete", d.full(n), f"{why} metadata snapshot (KafkaMetadataLog.recoverSnapshots "
                               "deletes it at start)", phase=PHASES["leftover-delete"]))
            del d.files[n]
        else:
            kept.append(sid)
    return max(kept, default=None)


def _snapshot_past_log(snap: tuple[int, int], epochs: LeaderEpochCache, leo: int) -> bool:
    """truncateToLatestSnapshot's test: the snapshot's epoch above the log's latest (0 without one), or
    the same epoch and its end offset past the log end."""
    latest = max([e for e, o in epochs.entries if o < leo], default=0)
    return snap[1] > latest or (snap[1] == latest and snap[0] > leo)


def _plan_truncate_fully(d: _PlannedPartition, plan: list[Action], kept: list[int], start: int, rep) -> None:
    """UnifiedLog.truncateFullyAndStartAt(start): every segment goes, an empty one starts at ``start``."""
    for base in kept:
        _plan_delete_segment(d, plan, base, f"metadata log segment below the latest snapshot's end offset {start} "
                             "(truncateToLatestSnapshot)")
    rep.notes.append(f"the latest metadata snapshot ends at {start}, past the log: Kafka starts the metadata log "
                     "there (KafkaMetadataLog.truncateToLatestSnapshot)")


def _plan_orphans(d: _PlannedPartition, plan: list[Action]) -> None:
    for n, off in list(d.with_offset(INDEX_SUFFIXES)):
        if file_name(off, LOG) not in d.files:
            plan.append(Action("delete", d.full(n), "index file without a .log", phase=PHASES["orphan"]))
            del d.files[n]


def _replay(src: str, base: int, state: ProducerState, leo: int) -> int:
    """A flushed segment into the producer state; the log end offset after it."""
    seg = replay_segment(src, base, state)
    return max(leo, base) if seg.batches == 0 else seg.next_offset


def _plan_index_writes(d: _PlannedPartition, base: int, res: SegmentRebuild, plan, rep: RecoveryReport, rules) -> None:
    """The indexes of a segment Kafka recovers, as its recovery writes them (byte for byte)."""
    idx: SegmentIndexes = res.indexes
    for suf, data in index_bytes(idx, base):
        n = file_name(base, suf)
        current = d.files.get(n)
        if INDEX_BY_SUFFIX[suf].created_lazily and not data and current is None:
            continue
        if suf == TIMEINDEX and current is None and rules.write("missing-timeindex") == "none":
            continue   # 0.10.0: no time index
        # LogSegment.recover resets both indexes and rebuilds them from the batches: whatever form the
        # broker's appends gave them (a leader's time index up to 3.6, a follower's sparse offset index
        # up to 4.0), a recovered segment's indexes are recovery's, for the version's entry rules
        if current is not None and fsutil.same_content(current, data):
            continue
        plan.append(Action("write", d.full(n), "rebuild index from the segment's valid batches", data=data,
                           phase=PHASES["index"]))
        rep.rebuilt_indexes.append(n)
        d.files[n] = d.full(n)


def _load_epochs(d: _PlannedPartition, rep: RecoveryReport) -> LeaderEpochCache:
    p = d.files.get(C.LEADER_EPOCH_FILE)
    if p is None:
        return LeaderEpochCache()
    try:
        return LeaderEpochCache.load(read_checkpoint(p, C.LeaderEpochCheckpoint) or [])
    except KafkaFormatError as e:
        rep.notes.append(f"leader-epoch-checkpoint unreadable ({e.problem.detail}): its entries are taken from the batches")
        return LeaderEpochCache()


def _plan_epochs(d: _PlannedPartition, epochs: LeaderEpochCache, leo: int, log_start: int, plan) -> None:
    """LogLoader.load: the cache is truncated at the log end (``truncateFromEnd(logEndOffset)``, in
    0.11-2.2 ``clearAndFlushLatest``: every entry starting at or past the log end goes, an entry a
    leader assigned at the log end when elected too), then from the checkpointed log start.  The file
    is written only when its entries change (an empty file is no entries: left as it is)."""
    name = C.LEADER_EPOCH_FILE
    if name not in d.files and not epochs:
        return
    past_end = epochs.truncate_from_end(leo)
    if log_start > 0 and epochs and epochs.entries[0][1] < log_start:
        epochs.truncate_from_start(log_start)
    if name in d.files and _epoch_entries(d.files[name]) == epochs.entries:
        return
    why = "truncate the leader epochs at the log end and extend them by the recovered batches"
    if past_end:
        why += (f"; drops {', '.join(f'epoch {e} at {o}' for e, o in past_end)} (at or past the log end {leo}: "
                "LeaderEpochFileCache.truncateFromEnd at load)")
    plan.append(Action("write", d.full(name), why, data=epochs.to_bytes(), phase=PHASES["epochs"]))


def _epoch_entries(path: str) -> list[tuple[int, int]] | None:
    """The (epoch, start) entries a leader-epoch-checkpoint holds as written (an empty file: none, as
    Kafka reads it); None when unreadable."""
    try:
        return [(e["epoch"], e["startOffset"]) for e in read_checkpoint(path, C.LeaderEpochCheckpoint) or []]
    except KafkaFormatError:
        return None


_EMPTY = None  # a snapshot Kafka writes without producer state (see _SnapshotPlan)


class _SnapshotPlan:
    """The producer snapshots Kafka's loading leaves, by its rules (ProducerStateManager with
    UnifiedLog.rebuildProducerState), played over the snapshot offsets on disk:

    * each segment recovered (at load for its index, then the unflushed ones) gets a fresh state
      manager: snapshots above its base or at or below the checkpointed log start go, the latest
      one left is loaded, the state is rebuilt up to the base (a snapshot at the last two segments'
      bases and at the base itself, each only past the last snapshot), the segment is recovered and
      a snapshot taken at the end of its last v2 batch, only past the last snapshot
      (:meth:`recoveries`);
    * snapshots of removed segments go; then removeStraySnapshots (segment bases and only the
      latest stray one past the last base stay) (:meth:`remove_stray_snapshots`);
    * the log's own manager (:meth:`log_manager`): after a clean shutdown with no snapshot left it
      writes empty ones at the last two segment bases and the log end (past 0); otherwise snapshots
      past the log end or at or below the log start go and the state is rebuilt from the latest one to
      the log end, with a snapshot at the last two segment bases met and at the log end, each only past
      the last one.

    Snapshots are taken only past the last one (takeSnapshot), so an empty partition gets none.
    A snapshot is written only when no file at its offset holds the same entries (Kafka writes its
    entries in hash-map order, so the order of entries is not compared); a corrupt one is deleted.
    Producer expiry: with ``now`` given, from 2.4 producers last seen below the log start are left out of
    the snapshots written once expired at ``now`` (ProducerStateManager.isProducerExpired, by the
    version's default expiry: the producer-expiry rule); producers at or above the log start are not
    expired (their state is rebuilt from the batches, which Kafka's load does not expire).

    Where generations differ (``rules``): strays are removed from 2.8 on only; up to 2.3 producers last
    seen below the log start are evicted from the state written; a snapshot holding what that
    generation keeps (:func:`~kafkaforensics.log.kafka_files.snapshot_kept`) is not rewritten; a log on
    the old message format (magic 0/1) gets empty snapshots at the last two segment bases and the log
    end and is not truncated and reloaded (UnifiedLog.rebuildProducerState)."""

    def __init__(self, loader: "LogLoader", recoveries: list[tuple[int, list[int]]]):
        self.ld, self.d, self.plan, self.rules = loader, loader.d, loader.plan, loader.rules
        self.recovered = recoveries
        self.segments, self.leo, self.lso_ck = loader.kept, loader.leo, loader.log_start_offset
        self.snaps: set[int] = set()
        self.written: dict[int, object] = {}
        self.why: dict[int, str] = {}
        self.legacy = False
        self.log_start = max(self.lso_ck, self.segments[0]) if self.segments else self.lso_ck

    def run(self) -> None:
        """Every step, in the order Kafka's load makes them."""
        self.on_disk = self.delete_corrupt()
        self.legacy = _legacy_format(self.d, self.segments)
        if not self.legacy:
            self.recoveries()
        self.drop(set(self.snaps) & set(self.ld.removed), "producer snapshot of a removed segment")
        self.remove_stray_snapshots()
        if self.segments:
            self.log_manager()
        self.apply()

    def delete_corrupt(self) -> set[int]:
        """The snapshot offsets on disk; a corrupt snapshot is deleted."""
        for n, off in list(self.d.with_offset((SNAPSHOT,))):
            try:
                with open(self.d.files[n], "rb") as f:
                    read_snapshot(f.read(), file=self.d.files[n])
                self.snaps.add(off)
            except KafkaFormatError as e:
                self.plan.append(Action("delete", self.d.full(n), f"corrupt producer snapshot: {e.problem.detail}",
                                        phase=PHASES["snapshot"]))
                del self.d.files[n]
        return set(self.snaps)

    def drop(self, offs, reason: str) -> None:
        for s in sorted(offs):
            self.snaps.discard(s)
            self.written.pop(s, None)
            self.why.setdefault(s, reason)

    def take(self, o: int, content, last: int) -> int:
        """takeSnapshot: at ``o`` only past the ``last`` one; the last one after it."""
        if o > last:
            self.snaps.add(o)
            self.written[o] = content
            return o
        return last

    def state_at(self, o: int):
        out = _EMPTY
        for base, _nxt, st in self.ld.walked:
            if base >= o:
                break
            out = st
        return out

    def rebuild(self, bases: list[int], upto: int, log_start: int, last: int) -> int:
        """Replay from the latest snapshot ``last`` to ``upto``: snapshots at the last two bases met."""
        marks = set(bases[-2:])
        map_end = last
        floor = max([b for b in bases if b <= last], default=None)
        for b in bases:
            if b >= upto or (floor is not None and b < floor):
                continue
            start = max(b, map_end, log_start)
            map_end = start
            if b in marks:
                last = self.take(start, self.state_at(start), last)
        return self.take(upto, self.state_at(upto), last)

    def recoveries(self) -> None:
        """A fresh state manager for each segment recovered, rebuilt up to its base."""
        for base, phase_segments in self.recovered:
            self.drop({s for s in self.snaps if s > base or s <= self.lso_ck}, "producer snapshot past the segment "
                      "being recovered or at or below the log start (removed when Kafka rebuilds the state to "
                      "recover it)")
            last = max([s for s in self.snaps if s <= base], default=self.lso_ck)
            if base > last and base > 0:
                last = self.rebuild(phase_segments, base, self.lso_ck, last)
            end = self.ld.v2_end.get(base)
            if end is not None:
                self.take(end, _state_after(self.ld.walked, base), last)

    def remove_stray_snapshots(self) -> None:
        """ProducerStateManager.removeStraySnapshots (2.8+): segment bases and the latest stray one past the
        last base stay."""
        strays = sorted(s for s in self.snaps if s not in set(self.segments))
        keep = strays[-1] if strays and self.segments and strays[-1] > max(self.segments) else None
        if self.rules.write("stray-snapshots") == "remove":
            self.drop({s for s in strays if s != keep}, "stray producer snapshot with no segment at its offset")

    def log_manager(self) -> None:
        """The log's own state manager, loaded and rebuilt to the log end."""
        if self.legacy or (self.ld.clean and not self.snaps):
            self.drop({s for s in self.snaps if s > self.leo}, "producer snapshot past the log end offset")
            last = max(self.snaps, default=0)
            for o in self.segments[-2:] + [self.leo]:
                last = self.take(o, _EMPTY_SNAPSHOT, last)
            return
        self.drop({s for s in self.snaps if s > self.leo or s <= self.log_start}, "producer snapshot past the log "
                  "end offset or at or below the log start (ProducerStateManager.truncateAndReload)")
        last = max([s for s in self.snaps if s <= self.leo], default=self.log_start)
        if self.leo > last:
            self.rebuild(self.segments, self.leo, self.log_start, last)

    def apply(self) -> None:
        """The deletes and writes that make the snapshots on disk the ones planned."""
        # the snapshot the log's state manager loads (loadFromSnapshot): its producers the batches replayed
        # past it do not touch stay in the state, those below the log start too (evicted up to 2.3 below)
        loaded = max((s for s in self.snaps & self.on_disk if s <= self.leo), default=None)
        loaded_path = self.d.files[file_name(loaded, SNAPSHOT)] if loaded is not None else None
        for s in sorted(self.on_disk - self.snaps):
            n = file_name(s, SNAPSHOT)
            self.plan.append(Action("delete", self.d.full(n), self.why.get(s, "producer snapshot Kafka removes at "
                                    "load"), phase=PHASES["snapshot"]))
            del self.d.files[n]
        for o in sorted(self.written):
            data = self.written[o] if self.written[o] is not _EMPTY else _EMPTY_SNAPSHOT
            if loaded_path is not None and o > loaded and not self.legacy and self.written[o] is not _EMPTY:
                data = _with_loaded(data, loaded_path)
            data = self.expired(data)
            n = file_name(o, SNAPSHOT)
            if n in self.d.files and (_same_snapshot(self.d.files[n], data)
                                      or kafka_files.snapshot_kept(self.d.files[n], data, self.log_start, self.rules)):
                continue
            self.plan.append(Action("write", self.d.full(n), "rebuild the producer state from the batches", data=data,
                                    phase=PHASES["snapshot"]))
            self.d.files[n] = self.d.full(n)

    def expired(self, data: bytes) -> bytes:
        """``data`` without the producers below the log start the version evicts (up to 2.3) or expires at
        ``now`` (2.4+)."""
        if data is _EMPTY_SNAPSHOT:
            return data
        if self.rules.write("producers-below-log-start") == "evict":
            return kafka_files.evict_below(data, self.log_start)
        now = self.ld.opts.now
        if now is not None:
            return kafka_files.expire_below(data, self.log_start, now,
                                            EXPIRY_DEFAULT_MS[self.rules.write("producer-expiry")])
        return data


_EMPTY_SNAPSHOT = snapshot_bytes([])


def _with_loaded(data: bytes, path: str) -> bytes:
    """``data``'s producers plus those of the snapshot Kafka loaded (``path``) that the batches replayed
    did not touch (a producer whose batches are all gone from the log lives on in the snapshot only)."""
    have = read_snapshot(data)
    ids = {e.producer_id for e in have}
    with open(path, "rb") as f:
        extra = [e for e in read_snapshot(f.read(), file=path) if e.producer_id not in ids]
    return data if not extra else snapshot_bytes(have + extra)


def _legacy_format(d: _PlannedPartition, segments: list[int]) -> bool:
    """Whether the newest non-empty segment starts with a magic 0/1 batch (a log on the old message
    format); an empty log counts as v2, the default format."""
    for base in sorted(segments, reverse=True):
        path = d.files.get(file_name(base, LOG))
        try:
            head = Segment.of_file(path).read_at(0, 17)
        except (OSError, TypeError):  # not written yet (an empty segment the plan creates)
            continue
        if len(head) == 17:
            return head[16] < 2
    return False


def _state_after(walked: list, base: int):
    for b, _nxt, st in walked:
        if b == base:
            return st
    return _EMPTY_SNAPSHOT


def _same_snapshot(path: str, data: bytes) -> bool:
    """The file holds the same producer entries as ``data``, in any order (Kafka writes hash-map order)."""
    if fsutil.same_content(path, data):
        return True
    try:
        with open(path, "rb") as f:
            have = read_snapshot(f.read(), file=path)
    except (OSError, KafkaFormatError):
        return False
    want = read_snapshot(data)
    key = lambda e: e.producer_id  # noqa: E731
    return sorted(have, key=key) == sorted(want, key=key)
