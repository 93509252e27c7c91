"""Kafka's ``LogLoader.load()`` over one partition dir, offline (:class:`LogLoader`): its passes, each a
method named after Kafka's and each by the rules of the generation that wrote the log dir
(:mod:`~kafkaforensics.log.kafka_rules`), decide what Kafka's load does to the partition -- its
truncation point, the segments it removes, the leftovers it completes, the snapshots and leader
epochs it drops -- as a plan of file actions (:mod:`.load_plan`) that ``kfx recover`` applies
(:mod:`kafkaforensics.repair.recovery`) and every other reader of a log asks (``kfx verify``, the
broker's start, the Spark inventory).  The walk of one segment is :mod:`.load_walk`; the producer
snapshots' pass :mod:`.load_snapshots`.

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
6. producer snapshots are deleted and taken as ProducerStateManager does at load
   (:class:`~.load_snapshots.SnapshotPlan`); the leader-epoch cache is truncated at the log end
   (every entry starting at or past it goes) and from the log start, and extended by the recovered
   batches (its file written only when its entries change).

The metadata partition (``__cluster_metadata-0``) loads from offset 0 as after an unclean shutdown,
as the raft layer loads it; a ``-delete`` dir is left as it is.
"""
from __future__ import annotations

import os

from specs import checkpoints as C

from kafkaforensics import fsutil
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.checkpoint_file import LOG_START_OFFSET, RECOVERY_POINT, read_checkpoint
from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES, RecoveryWalk, SegmentIndexes
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version as resolve_kafka_version
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.load_plan import PHASES, Action, LoadOptions, PlanFiles, RecoveryReport, count_dropped
from kafkaforensics.log.load_snapshots import SnapshotPlan
from kafkaforensics.log import load_plan, load_walk
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.log.partition import (METADATA_PARTITION, UNKNOWN_DIR_SUFFIX, LogDir, Partition, broker_refusal,
                                         parse_partition_dir_name, partition_dir_state)
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import (INDEX_BY_SUFFIX, INDEX_SUFFIXES, KRAFT_SNAPSHOT_FILE_RE, LOG, NEW_SEGMENT_SUFFIXES,
                                        SEGMENT_SUFFIXES, TIMEINDEX, file_name, index_bytes)


def _checkpointed(log_dir: str, name: str, tp, notes: list[str]) -> int | None:
    try:
        return LogDir(log_dir).partition_offset(name, tp)
    except KafkaFormatError as e:
        notes.append(f"{name} unreadable ({e.problem.detail}): taken as having no entry, as Kafka does")
        return None


def empty_partition_log_end(p: Partition) -> int:
    """Where the load puts the log end of partition ``p`` when it has no segment
    (:func:`~.load_walk.empty_log_end`): its checkpointed log start from 2.3, 0 before, by the rules
    of the generation that wrote its log dir (asked only when a log start is checkpointed: 0 is every
    generation's answer otherwise; an unreadable checkpoint counts as none).  The broker's start
    (:class:`~.live_log.LiveLog`) and ``kfx groups``' lag ask it."""
    try:
        start = p.checkpointed_log_start()
    except KafkaFormatError:
        start = None
    return load_walk.empty_log_end(start, resolve_kafka_version(p.path).rules()) if start else 0


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

    The per-segment plan is the loader's ``d`` (:class:`PlanFiles`: each final name to the file
    that holds its bytes) and each segment's :class:`~kafkaforensics.log.indexing.RecoveryWalk`."""

    def __init__(self, path: str, load: LoadOptions, *, dry_run: bool = False):
        self.path, self.opts = path, load
        self.plan: list[Action] = []
        kafka = resolve_kafka_version(path, load.kafka_version)
        self.rep = RecoveryReport(os.path.basename(path), 0, dry_run=dry_run, path=path, kafka=kafka)
        self.rules = kafka.rules()
        self.metadata = os.path.basename(path) == METADATA_PARTITION
        self.d = PlanFiles(path)   # the dir's files as the plan has them (one listing)
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
        self.interval: int = o.index_interval_bytes or 0
        if o.index_interval_bytes is None:
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
        note = self.rules.note()
        if not isinstance(self.opts.kafka_version, KafkaVersion) and note:  # a log dir's run says it once
            notes.append(note)
        self.rep.notes += notes
        if self.refused():
            return self.rep
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
        """LogLoader.removeTempFilesAndCollectSwapFiles and the swap completion after it (see :func:`~.load_plan.plan_leftovers`)."""
        load_plan.plan_leftovers(self.d, self.plan, self.rules)

    def load_segment_files(self) -> None:
        """LogLoader.loadSegmentFiles (orphan indexes, the index sanity check) with recoverLog's walk of
        the unflushed segments: each segment recovered or replayed into the producer state, in order."""
        _plan_orphans(self.d, self.plan)
        self.epochs = _load_epochs(self.d, self.rep)
        self.segments = [off for _n, off in self.d.with_offset((LOG,))]  # leftovers completed
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
        res = RecoveryWalk(src, base, self.state, interval=self.interval, epochs=self.epochs,
                             max_batch_bytes=self.opts.max_message_bytes,
                             entry=self.rules.write("offset-index-entry")).walk()
        self.leo = load_walk.log_end_after(self.leo, base, res.next_offset)
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
            # (the active segment; a clean shutdown trims its indexes to nothing), at 0 before 2.3; a
            # metadata log truncated to its latest snapshot, at that snapshot's end offset
            self.leo = (self.log_start_offset if self.metadata
                        else load_walk.empty_log_end(self.log_start_offset, self.rules))
            for suf in NEW_SEGMENT_SUFFIXES:
                _plan_write(d, file_name(self.leo, suf), b"", "empty active segment, as Kafka creates one for a log "
                            "without segments (LogLoader.recoverLog)", self.plan)
            kept = [self.leo]
        self.kept = kept
        rep.log_end_offset = self.leo
        rep.log_start_offset = max(self.log_start_offset, kept[0])
        rep.first_segment, rep.active_segment = kept[0], kept[-1]
        if self.leo < self.log_start_offset and not self.segments:   # no segment at all: before 2.3
            rep.notes.append(f"a log without segments: Kafka before 2.3 loads it at 0, below its checkpointed "
                             f"log start {self.log_start_offset} (KAFKA-8306)")
        elif self.leo < self.log_start_offset:
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
        ProducerStateManager.removeStraySnapshots (see :class:`SnapshotPlan`)."""
        # the segments Kafka's LogSegments holds when it recovers each: the ones loaded before it at load
        # time, all of them in recoverLog
        recoveries = ([(b, [s for s in self.segments if s < b]) for b in self.load_phase]
                      + [(b, self.segments) for b in self.log_phase])
        SnapshotPlan(self, recoveries).run()

    def truncate_leader_epochs(self) -> None:
        """LogLoader.load's leader-epoch truncation (see :func:`_plan_epochs`)."""
        _plan_epochs(self.d, self.epochs, self.leo, self.log_start_offset, self.plan)


def _plan_delete_segment(d: PlanFiles, plan: list[Action], base: int, why: str) -> None:
    """Every file of the segment at ``base`` (its log and indexes) deleted as a removed segment."""
    for suf in SEGMENT_SUFFIXES:
        n = file_name(base, suf)
        if n in d.files:
            plan.append(Action("delete", d.full(n), why, phase=PHASES["remove-segment"]))
            del d.files[n]


def _plan_write(d: PlanFiles, name: str, data: bytes, why: str, plan: list[Action]) -> None:
    plan.append(Action("write", d.full(name), why, data=data, phase=PHASES["index"]))
    d.files[name] = d.full(name)


def _plan_kraft_snapshots(d: PlanFiles, plan: list[Action], log_start: int) -> tuple[int, int] | None:
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


def _plan_truncate_fully(d: PlanFiles, plan: list[Action], kept: list[int], start: int, rep) -> None:
    """UnifiedLog.truncateFullyAndStartAt(start): every segment goes, an empty one starts at ``start``."""
    for base in kept:
        _plan_delete_segment(d, plan, base, f"metadata log segment below the latest snapshot's end offset {start} "
                             "(truncateToLatestSnapshot)")
    rep.notes.append(f"the latest metadata snapshot ends at {start}, past the log: Kafka starts the metadata log "
                     "there (KafkaMetadataLog.truncateToLatestSnapshot)")


def _plan_orphans(d: PlanFiles, plan: list[Action]) -> None:
    for n, off in list(d.with_offset(INDEX_SUFFIXES)):
        if file_name(off, LOG) not in d.files:
            plan.append(Action("delete", d.full(n), "index file without a .log", phase=PHASES["orphan"]))
            del d.files[n]


def _replay(src: str, base: int, state: ProducerState, leo: int) -> int:
    """A flushed segment into the producer state; the log end offset after it."""
    seg = load_walk.replay_segment(src, base, state)
    return load_walk.log_end_after(leo, base, seg.next_offset if seg.batches else None)


def _plan_index_writes(d: PlanFiles, base: int, res: RecoveryWalk, plan, rep: RecoveryReport, rules) -> None:
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


def _load_epochs(d: PlanFiles, rep: RecoveryReport) -> LeaderEpochCache:
    p = d.files.get(C.LEADER_EPOCH_FILE)
    if p is None:
        return LeaderEpochCache()
    try:
        return LeaderEpochCache.load(read_checkpoint(p, C.LeaderEpochCheckpoint) or [])
    except KafkaFormatError as e:
        rep.notes.append(f"leader-epoch-checkpoint unreadable ({e.problem.detail}): its entries are taken from the batches")
        return LeaderEpochCache()


def _plan_epochs(d: PlanFiles, epochs: LeaderEpochCache, leo: int, log_start: int, plan) -> None:
    """LogLoader.load: the cache is truncated at the log end (``truncateFromEnd(logEndOffset)``, in
    0.11-2.2 ``clearAndFlushLatest``: every entry starting at or past the log end goes, an entry a
    leader assigned at the log end when elected too), then from the checkpointed log start.  The file
    is written only when its entries change (an empty file is no entries: left as it is)."""
    name = C.LEADER_EPOCH_FILE
    if name not in d.files and not epochs:
        return
    past_end = load_walk.truncate_leader_epochs(epochs, leo, log_start)
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
