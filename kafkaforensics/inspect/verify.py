"""``kfx verify``: CRCs, structure, index consistency and checkpoint sanity of files, partitions, log dirs.

One streaming pass per segment (constant memory in the log's size: only the sparse index entries
are held), checking every batch's framing and CRC, offset order, and each index entry against the
batch it names.  v2 batches of segments above :data:`SMALL_SEGMENT_BYTES` are checked a run of
headers at a time (:meth:`.segment.BatchScanner.iter_runs`), anything else batch by batch, with
the same checks.  Index entries are read as lists and runs are lists of header tuples, one way for
every size (no numpy: its import costs a whole process more than the checks it would vectorise).
(``records.walks.SPEEDUPS`` off: every segment batch by batch.)  Everything found is a located
:class:`Problem`; ``notes`` hold the conditions a live broker leaves behind normally (the active
segment's preallocated zero index tail).
"""
from __future__ import annotations

import bisect
import os
from operator import le
from dataclasses import dataclass, field

from specs import checkpoints as C
from specs import record_batch as R

from kafkaforensics.log import kraft, offset_index, time_index, txn_index
from kafkaforensics.log.txn_index import AbortedTxn
from kafkaforensics.records import header_list
from kafkaforensics.records.batch import Batch, resolve_legacy_wrapper
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log import load_plan, load_snapshots, load_walk
from kafkaforensics.log.kraft import metadata_topic_ids
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import (CLEAN_SHUTDOWN_FILE, INDEX, LOG, METADATA_PARTITION, TIMEINDEX, TXNINDEX,
                                          UNKNOWN_DIR_SUFFIX, LogDir, Partition, SegmentFiles, broker_refusal,
                                          check_log_dirs, check_topic_ids, clean_shutdown_note, find_partitions,
                                          refused_dirs)
from kafkaforensics.log.producer_state import ProducerState, read_snapshot
from kafkaforensics.log.dir_lock import LOCK_FILE
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version as resolve_kafka_version
from kafkaforensics.log.paths import (LOG_DIR, PARTITION_DIR, classify, is_active_segment, live_log_dirs, live_note,
                                      live_tail)
from kafkaforensics.log.tiered import REMOTE_INDEX_RE, check_remote_index
from kafkaforensics.log.segment import INDEX_SUFFIXES, Segment, SegmentSummary, file_name, offset_from_name
from kafkaforensics.log import checkpoint_file
from kafkaforensics import fsutil


#: What Kafka repairs by itself when it loads the log, reported as a warning with that remedy and
#: never a problem (alone it makes neither ``kfx verify`` nor ``kfx analyze`` exit 1): a missing
#: offset index (LogLoader rebuilds it, clean shutdown or not); an orphan index, an .index/.timeindex
#: (and from 0.11 a .txnindex) with no .log (LogLoader deletes it: "Found an orphaned index file",
#: every version since 0.10.1); checkpoints a broker writes from
#: memory running ahead of the log (a copy taken while it ran, or unflushed writes lost): Kafka caps
#: the high watermark at the log end, drops leader-epoch entries past it (truncateFromEnd at load)
#: and cleans again from the log start -- the records between are not in this copy, which it says.
WARNING_KINDS = frozenset({"missing-index", "missing-timeindex", "log-behind-checkpoint", "epoch-beyond-log-end",
                           "orphan-index"})
#: damage Kafka's log loading truncates away (LogSegment.recover): the tail from the first bad batch
TAIL_KINDS = frozenset({"crc-mismatch", "zeroed-tail", "bad-size", "truncated-batch", "trailing-bytes", "oversized-batch",
                        "bad-header", "bad-magic", "offset-overflow", "offset-order", "offset-before-segment-base",
                        "compression", "record"})
#: index problems located in the segment's .log (a byte its entry points at, or an offset): past a tail
#: problem they are that damage's consequence, and the truncation at it fixes them
_CAUSED_KINDS = frozenset({"index-past-end", "index-mismatch", "timeindex-mismatch", "timeindex-order",
                           "txnindex-mismatch", "txnindex-extra", "txnindex-missing"})


def group_caused(problems: list[Problem]) -> list[Problem]:
    """One segment's ``problems`` with their root cause first: the first damage Kafka's loading truncates
    at (:data:`TAIL_KINDS`, by byte position), holding in its ``caused`` the index problems at or past
    that byte (or, located by offset only, at or past its offset) and the later damage of the segment
    (a walk gone astray after a corrupt length field; all of it truncated away with the root) -- their
    remedy is the root's."""
    roots = [(p.position, p) for p in problems if p.kind in TAIL_KINDS and p.position is not None]
    if not roots:
        return problems
    at, root = min(roots, key=lambda r: r[0])  # the first by byte position

    def caused(p: Problem) -> bool:
        if p.kind in TAIL_KINDS and p is not root:
            return p.position is not None and p.position > at
        if p.kind not in _CAUSED_KINDS:
            return False
        if p.position is not None:
            return p.position >= at
        return p.offset is not None and root.offset is not None and p.offset >= root.offset

    root.caused += [p for p in problems if caused(p)]
    return [root] + [p for p in problems if p is not root and not caused(p)]


def caused_line(caused: list[Problem]) -> str:
    """One line saying what a root cause's ``caused`` problems are: how many of each kind, where."""
    kinds: dict[str, int] = {}
    for p in caused:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    offs = [p.offset for p in caused if p.offset is not None]
    where = f" at offsets {min(offs)}..{max(offs)}" if offs else ""
    return f"caused by it: {len(caused)} problem(s) ({', '.join(f'{n} {k}' for k, n in kinds.items())}){where}, fixed with it"


@dataclass
class VerifyReport:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    partitions: list[dict] = field(default_factory=list)
    files: int = 0
    batches: int = 0
    bytes: int = 0
    kafka: KafkaVersion | None = None  # the KafkaVersion whose files these are

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, file, position, offset, kind, detail) -> None:
        (self.warnings if kind in WARNING_KINDS else self.problems).append(Problem(file, position, offset, kind, detail))

    def to_json(self) -> dict:
        return {"ok": self.ok, "problems": [p.to_json() for p in self.problems],
                "warnings": [p.to_json() for p in self.warnings],
                "notes": [p.to_json() for p in self.notes], "partitions": self.partitions,
                "files": self.files, "batches": self.batches, "bytes": self.bytes,
                "kafkaVersion": self.kafka.to_json() if self.kafka is not None else None}


def verify(paths, *, progress=None, max_batch_bytes: int | None = None, kafka_version=None,
           reconcile=None) -> VerifyReport:
    """Verify log dirs, partition dirs or files (:func:`kafkaforensics.log.paths.classify`: a path
    with nothing Kafka wrote raises :class:`~kafkaforensics.log.paths.PathUsageError`).
    ``progress(nbytes)`` is called as bytes are read. ``kafka_version`` ("X.Y" or a KafkaVersion;
    default: inferred from the first path's log dir) is reported as the generation whose files these are.
    ``reconcile(partition)``: the problems of a live partition's tiers (``kfx verify --remote``:
    :func:`~kafkaforensics.inspect.both_tiers.verify_tiered` passes the remote tier's reconciliation,
    so a verify without one never loads the tier's reader)."""
    kpaths = [classify(p) for p in paths]
    rep = VerifyReport()
    if kpaths:
        rep.kafka = resolve_kafka_version(paths[0], kafka_version)
    live = live_log_dirs(kpaths)
    for d, pid in live.items():
        rep.notes.append(Problem(d, None, None, "live-log-dir", live_note(d, pid)))
    for kp in kpaths:
        if kp.kind == LOG_DIR:
            parts = find_partitions(kp.path)
            _report_temps([kp.path] + [pd.path for pd in parts], rep)
            _report_refused_dirs(kp.path, rep)
            ckpts = verify_log_dir_files(kp.path, parts, rep)
            for pd in parts:
                if pd.dir_state != "live":  # a -delete/-future/-stray copy: checked, never held to the checkpoints
                    rep.notes.append(Problem(pd.path, None, None, f"{pd.dir_state}-copy",
                                             f"{pd.name} is a {pd.dir_state} copy of {pd.topic}-{pd.partition}, "
                                             "not the live partition"))
                verify_partition(pd, rep, checkpoints=ckpts if pd.dir_state == "live" else None, progress=progress,
                                 max_batch_bytes=max_batch_bytes, live=kp.log_dir in live)
                _reconcile_tiers(pd, reconcile, rep)
        elif kp.kind == PARTITION_DIR:
            pd = Partition.scan(kp.path)
            ckpts = None  # a malformed checkpoint is the log dir's verify's to report
            if kp.log_dir is not None and pd.dir_state == "live":
                ckpts = LogDir(kp.log_dir).checkpoints()[0]
            verify_partition(pd, rep, checkpoints=ckpts, progress=progress, max_batch_bytes=max_batch_bytes,
                             live=kp.log_dir in live)
            verify_partition_files(pd, rep)
            _refused_suffix(pd, rep)
            _reconcile_tiers(pd, reconcile, rep)
        else:
            before = len(rep.problems)
            _verify_file(kp.path, rep, progress, max_batch_bytes)
            if kp.is_segment and kp.log_dir in live and is_active_segment(kp.path):
                _in_flight_tail(kp.path, rep, before)
            rep.problems[before:] = group_caused(rep.problems[before:])
    dirs = [kp.path for kp in kpaths if kp.kind == LOG_DIR]
    if dirs:
        verify_identity(dirs, rep)
    return rep


def _reconcile_tiers(pd: Partition, reconcile, rep: VerifyReport) -> None:
    """The live partition ``pd``'s tiers reconciled by ``reconcile`` (None: no remote tier)."""
    if reconcile is None or pd.dir_state != "live" or pd.topic_partition is None:
        return
    rep.problems += reconcile(pd)


def _refused_suffix(pd: Partition, rep: VerifyReport) -> None:
    """A partition dir verified alone whose name its log dir's Kafka cannot parse (:func:`broker_refusal`,
    the judge a log dir's verify asks of every dir): a problem (that broker does not start)."""
    refusal = broker_refusal(pd.name, rep.kafka.rules() if rep.kafka is not None else None)
    if refusal and refusal[0] == UNKNOWN_DIR_SUFFIX:   # any name is a partition dir's given alone (kfx write --out)
        rep.add(pd.path, None, None, *refusal)


def verify_log_dir_files(log_dir: str, parts, rep: VerifyReport) -> dict:
    """A log dir's own files (the offset checkpoints, the metadata partition's snapshots and
    quorum-state, bootstrap.checkpoint) into ``rep``; the checkpoints' tables come back."""
    ckpts, problems = LogDir(log_dir).checkpoints()
    rep.problems += problems
    _verify_kraft_files(log_dir, parts, rep)
    return ckpts




def verify_partition_files(pd: Partition, rep: VerifyReport) -> None:
    """What a partition dir given alone holds beyond its segments: the metadata partition's KRaft
    snapshots and quorum-state (a log dir's verify checks them with its own files)."""
    if pd.name == METADATA_PARTITION:
        _verify_kraft_files(None, [pd], rep)


def _report_leftovers(pd: Partition, rep: VerifyReport) -> None:
    """The leftovers of interrupted swaps, cleanings and deletions, each with what Kafka's log loading does
    with it (the load's own pass, :func:`~kafkaforensics.log.load_plan.plan_leftovers`)."""
    if not pd.leftovers:
        return
    plan: list = []
    kafka = rep.kafka if rep.kafka is not None else resolve_kafka_version(pd.path, None)
    load_plan.plan_leftovers(load_plan.PlanFiles(pd.path), plan, kafka.rules())
    done = {a.file: a for a in plan}
    for f in pd.leftovers:
        a = done.get(f)
        does = (f"Kafka's log loading would {a.action} it ({a.detail})" if a is not None
                else "Kafka's log loading completes or removes it")
        rep.add(f, None, None, "leftover-file",
                "interrupted " + ("swap" if f.endswith(".swap") else "cleaning" if f.endswith(".cleaned") else "deletion")
                + f"; {does}; `kfx recover` does it")


def _report_temps(dirs, rep: VerifyReport) -> None:
    """Temp files and dirs killed kfx runs left (``*.kfx-tmp``): a dir of them in a log dir stops a
    broker (Kafka takes every dir there for a partition)."""
    for t in sorted({t for d in dirs for t in fsutil.temp_artefacts(d)}):
        rep.add(t, None, None, "kfx-temp", ("a dir" if os.path.isdir(t) else "a file")
                + " an interrupted kfx run left; it holds only a copy")


def _orphan_detail(path: str) -> str:
    """What an index with no .log is to Kafka: its log loading deletes it (a warning, not damage)."""
    when = " (from 0.11; older brokers know no .txnindex and ignore it)" if path.endswith(TXNINDEX) else ""
    return f"index file without its .log: Kafka's log loading deletes it{when}"


def _report_refused_dirs(log_dir: str, rep: VerifyReport) -> None:
    """The dirs of a log dir its broker refuses to start on (:func:`~kafkaforensics.log.partition.refused_dirs`,
    the judge ``kfx recover`` asks too: a name no Kafka parses, a -future/-stray suffix the log dir's Kafka
    does not know), but a killed kfx run's temp dirs (:func:`_report_temps` says those)."""
    temps = set(fsutil.temp_artefacts(log_dir))
    for d, kind, why in refused_dirs(log_dir, rep.kafka.rules() if rep.kafka is not None else None):
        if d not in temps:
            rep.add(d, None, None, kind, why)


def _verify_kraft_files(log_dir: str | None, parts, rep: VerifyReport) -> None:
    """The metadata partition's snapshots and quorum-state, and a controller's bootstrap.checkpoint."""
    files = [os.path.join(log_dir, kraft.BOOTSTRAP_FILE)] if log_dir is not None else []
    for pd in parts:
        if pd.name == METADATA_PARTITION:
            files += [os.path.join(pd.path, n) for n in sorted(os.listdir(pd.path))
                      if kraft.SNAPSHOT_RE.match(n) or n == kraft.QUORUM_STATE_FILE]
    for f in files:
        if os.path.exists(f):
            rep.files += 1
            _check_kraft_file(f, rep)
    for pd in parts:
        if pd.name == METADATA_PARTITION:
            rep.problems.extend(kraft.check_snapshot_ids(pd))
            for n in sorted(os.listdir(pd.path)):
                if n.endswith(kraft.PARTIAL_SUFFIX):
                    rep.notes.append(Problem(os.path.join(pd.path, n), None, None, "partial-snapshot",
                                             "a snapshot whose writing did not complete; Kafka deletes it on start-up"))


def _check_kraft_file(path: str, rep: VerifyReport) -> None:
    try:
        if os.path.basename(path) == kraft.QUORUM_STATE_FILE:
            kraft.read_quorum_state(path)
        else:
            rep.problems.extend(kraft.read_snapshot(path)["problems"])
    except KafkaFormatError as e:
        e.located(file=path)
        rep.problems.append(e.problem)


def verify_identity(dirs, rep: VerifyReport) -> None:
    """meta.properties of every log dir given (cross-checked as one broker's dirs), .kafka_cleanshutdown,
    and partition.metadata topic ids against a metadata log found among them."""
    problems, rows = check_log_dirs(dirs)
    rep.problems.extend(problems)
    for r in rows:
        if r["cleanShutdown"] is not None:
            path = os.path.join(r["logDir"], CLEAN_SHUTDOWN_FILE)
            rep.notes.append(Problem(path, None, None, "clean-shutdown", clean_shutdown_note(path, r["cleanShutdown"])))
    meta = next((os.path.join(d, METADATA_PARTITION) for d in dirs
                 if os.path.isdir(os.path.join(d, METADATA_PARTITION))), None)
    if meta is not None:
        ids = metadata_topic_ids(meta)
        for d in dirs:
            rep.problems.extend(check_topic_ids(d, ids))


#: a segment whose .log is at most this big is walked batch by batch; a larger one in header runs
SMALL_SEGMENT_BYTES = 1 << 20


def _verify_file(path: str, rep: VerifyReport, progress, max_batch_bytes) -> None:
    name = os.path.basename(path)
    base = offset_from_name(name)
    rep.files += 1
    try:
        if name.endswith(LOG) and base is not None:
            seg = SegmentFiles(base, os.path.dirname(os.path.abspath(path)))
            verify_segment(seg, rep, ProducerState(), active=True, progress=progress, max_batch_bytes=max_batch_bytes,
                           require_index=False)
        elif name.endswith(LOG):
            _WalkCheck(Segment.of_file(path, None), rep, ProducerState(), None, None, progress).walk(max_batch_bytes)
        elif name.endswith(".snapshot"):
            with open(path, "rb") as f:
                read_snapshot(f.read(), file=path)
        elif name.endswith(INDEX_SUFFIXES) and base is not None:
            seg = SegmentFiles(base, os.path.dirname(os.path.abspath(path)))
            if not os.path.exists(seg.log):
                rep.add(path, None, None, "orphan-index", _orphan_detail(path))
            else:
                verify_segment(seg, rep, ProducerState(), active=True, progress=progress,
                               max_batch_bytes=max_batch_bytes)
        elif name == C.LEADER_EPOCH_FILE:
            _check_epochs(C.LeaderEpochCheckpoint.parse(_read(path), file=path), path, None, rep)
        elif name in C.OFFSET_CHECKPOINT_FILES:
            LogDir(os.path.dirname(path)).stored_checkpoint(name)
        elif name == C.PARTITION_METADATA_FILE:
            C.parse_partition_metadata(_read(path), file=path)
        elif name == C.META_PROPERTIES_FILE:
            LogDir(os.path.dirname(path)).meta_properties()
        elif name == CLEAN_SHUTDOWN_FILE:
            marker = LogDir(os.path.dirname(path)).clean_shutdown_marker(strict=True)
            rep.notes.append(Problem(path, None, None, "clean-shutdown", clean_shutdown_note(path, marker or {})))
        elif name == LOCK_FILE:
            pass  # its lock, not its bytes, says something (live_log_dirs)
        elif REMOTE_INDEX_RE.match(name):
            rep.problems.extend(check_remote_index(path))
        elif _is_kraft_file(name):
            rep.files -= 1
            _check_kraft_file(path, rep)
            rep.files += 1
        else:
            rep.notes.append(Problem(path, None, None, "unknown-file", "not a Kafka storage file; skipped"))
    except KafkaFormatError as e:
        e.located(file=path)
        rep.problems.append(e.problem)


def _is_kraft_file(name: str) -> bool:
    return kraft.snapshot_id(name) is not None or name == kraft.QUORUM_STATE_FILE


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def verify_partition(pd: Partition, rep: VerifyReport, *, checkpoints=None, progress=None,
                     max_batch_bytes=None, live: bool = False, epochs: bool = True) -> dict:
    """Check a partition dir's segments, snapshots and checkpoints into ``rep``. ``live``: a running
    broker holds the log dir, so a partial batch at the very end of the active segment is an append
    in flight (a note), not damage. ``epochs`` False: leave leader-epoch-checkpoint and
    partition.metadata alone (``pd`` is a part of the partition: one segment)."""
    _report_leftovers(pd, rep)
    for f in pd.orphan_indexes:
        rep.add(f, None, None, "orphan-index", _orphan_detail(f))
    state = ProducerState()
    prev: SegmentSummary | None = None
    summaries = []
    for i, seg in enumerate(pd.segments):
        active = i == len(pd.segments) - 1
        before = len(rep.problems)
        s = verify_segment(seg, rep, state, active=active, progress=progress, max_batch_bytes=max_batch_bytes)
        if live and active:
            _in_flight_tail(seg.log, rep, before)
        rep.problems[before:] = group_caused(rep.problems[before:])
        summaries.append(s)
        prev = after_segment(rep, prev, s, seg.log, seg.base_offset)
    start, leo = (None, summaries[0].base_offset) if summaries else _empty_log(pd, rep, checkpoints)
    for s in summaries:   # the log end as Kafka's load finds it (the load's own rule)
        leo = load_walk.log_end_after(leo, s.base_offset, s.next_offset)
    if epochs:
        try:
            entries = pd.leader_epoch_lines()
            if entries is not None:
                _check_epochs(entries, os.path.join(pd.path, C.LEADER_EPOCH_FILE), leo, rep)
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
        try:
            pd.partition_metadata()
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
    for off in pd.snapshots:
        p = os.path.join(pd.path, file_name(off, ".snapshot"))
        rep.files += 1
        try:
            with open(p, "rb") as snapshot:
                read_snapshot(snapshot.read(), file=p)
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
    for off in load_snapshots.snapshots_past_log_end(pd.snapshots, leo):   # what the load deletes as past the end
        p = os.path.join(pd.path, file_name(off, ".snapshot"))
        rep.add(p, None, off, "snapshot-beyond-log-end", f"producer snapshot at {off} is past the log end offset {leo}")
    if checkpoints and pd.topic is not None:
        for name, table in checkpoints.items():
            off = table.get((pd.topic, pd.partition))
            past = checkpoint_file.past_log_end(name, pd.name, off, leo)
            if past is not None:
                rep.add(os.path.join(os.path.dirname(os.path.normpath(pd.path)), name), None, off, *past)
    info = {"partition": pd.name, "path": pd.path, "segments": len(pd.segments), "logEndOffset": leo,
            "logStartOffset": summaries[0].first_offset if summaries and summaries[0].first_offset is not None else
            (pd.segments[0].base_offset if pd.segments else start),
            "batches": sum(s.batches for s in summaries), "bytes": sum(s.size for s in summaries)}
    rep.partitions.append(info)
    return info


def _empty_log(pd: Partition, rep: VerifyReport, checkpoints) -> tuple[int, int]:
    """The log start and log end of a partition without segments as Kafka's load gives them: its
    checkpointed log start (0 without one), and the end of the empty segment the load makes
    (:func:`~kafkaforensics.log.load_walk.empty_log_end`, by the log dir's generation's rules)."""
    start = (checkpoints or {}).get(LogDir.LOG_START_OFFSET, {}).get((pd.topic, pd.partition)) or 0
    kafka = rep.kafka if rep.kafka is not None else resolve_kafka_version(pd.path, None)
    return start, load_walk.empty_log_end(start, kafka.rules())


def after_segment(rep: VerifyReport, prev: SegmentSummary | None, s: SegmentSummary, file: str, base: int,
                  what: str = "segment") -> SegmentSummary | None:
    """A segment (``what``: ``remote segment`` for a tier's) starting at ``base`` below the end of the one
    before it (``prev``): a ``segment-overlap`` finding; the summary the next segment is judged against."""
    if prev is not None and prev.next_offset is not None and base < prev.next_offset:
        rep.add(file, 0, base, "segment-overlap",
                f"{what} starts at {base} but the previous one ends at {prev.next_offset - 1}")
    return s if s.next_offset is not None else prev


def _in_flight_tail(log: str, rep: VerifyReport, before: int) -> None:
    """On a live log dir, the active segment's walk stopping at its very end at what a running broker
    leaves there (:func:`~kafkaforensics.log.paths.live_tail`): moved from ``rep.problems[before:]``
    to the notes."""
    for k in range(before, len(rep.problems)):
        p = rep.problems[k]
        why = live_tail(p, log) if p.file == log else None
        if why is not None:
            del rep.problems[k]
            rep.notes.append(Problem(p.file, p.position, p.offset, "append-in-flight", f"{p.detail}: {why}"))
            return


def _check_epochs(epochs, path, leo, rep: VerifyReport) -> None:
    """leader-epoch-checkpoint's lines ``epochs``: out of order, or past the log end ``leo`` (the entries
    the load's truncation drops, :func:`~kafkaforensics.log.load_walk.truncate_leader_epochs`, but one at
    the log end: a leader elected there)."""
    dropped = set(load_walk.truncate_leader_epochs(LeaderEpochCache.load(epochs), leo, 0)) if leo is not None else set()
    prev = None
    for e in epochs:
        if prev is not None and (e["epoch"] <= prev["epoch"] or e["startOffset"] < prev["startOffset"]):
            rep.add(path, None, e["startOffset"], "epoch-order",
                    f"epoch {e['epoch']}@{e['startOffset']} follows {prev['epoch']}@{prev['startOffset']}")
        if (e["epoch"], e["startOffset"]) in dropped and e["startOffset"] > leo:
            rep.add(path, None, e["startOffset"], "epoch-beyond-log-end",
                    f"epoch {e['epoch']} starts at {e['startOffset']}, past the log end offset {leo} "
                    "(Kafka drops such entries when it loads the log)")
        prev = e


def verify_segment(seg: SegmentFiles, rep: VerifyReport, state: ProducerState, *, active: bool,
                   progress=None, max_batch_bytes=None, require_index: bool = True) -> SegmentSummary:
    """Check one segment's .log and its indexes; ``state`` carries producer state along the partition."""
    log = seg.log
    base = seg.base_offset
    rep.files += 1
    idx_path, tidx_path, txn_path = seg.existing(INDEX), seg.existing(TIMEINDEX), seg.existing(TXNINDEX)
    offsets = times = None
    aborted = []
    if idx_path:
        rep.files += 1
        offsets = _read_index(seg, INDEX, offset_index, active, rep)
    if tidx_path:
        rep.files += 1
        times = _read_index(seg, TIMEINDEX, time_index, active, rep)
    if txn_path:
        rep.files += 1
        try:
            aborted = txn_index.read_entries(seg.file_bytes(TXNINDEX) or b"", file=txn_path)
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
    scan = _WalkCheck(seg, rep, state, offsets, times, progress)
    summary = scan.walk(max_batch_bytes)
    if summary.batches and not idx_path and require_index:
        rep.add(seg.path(INDEX), None, None, "missing-index", "segment has batches but no offset index (Kafka rebuilds it)")
    if summary.batches and idx_path and not tidx_path and require_index:
        rep.add(seg.path(TIMEINDEX), None, None, "missing-timeindex",
                "segment has batches and an offset index but no time index (Kafka creates it empty at load and "
                "does not rebuild it: time retention then goes by the file's modification time; kfx reindex rebuilds it)")
    _compare_aborted(aborted, scan.aborted, frozenset(scan.abort_markers), txn_path or seg.path(TXNINDEX), rep)
    return summary


def _read_index(seg: Segment, suffix: str, module, active, rep: VerifyReport):
    """The entries of the segment's index ``suffix`` as columns (lists)."""
    path, base = seg.path(suffix), seg.base_offset
    data = seg.file_bytes(suffix) or b""
    if len(data) % module.ENTRY_SIZE:
        rep.add(path, len(data) - len(data) % module.ENTRY_SIZE, None, "index-size",
                f"size {len(data)} is not a multiple of the {module.ENTRY_SIZE}-byte entry")
    *columns, zero_tail = module.read_lists(data, base, len(data))  # no limit: every entry as a list
    if zero_tail:
        where = (len(data) // module.ENTRY_SIZE - zero_tail) * module.ENTRY_SIZE
        if active:
            rep.notes.append(Problem(path, where, None, "preallocated-index",
                                     f"{zero_tail} preallocated zero entries (an active segment's index)"))
        else:
            rep.add(path, where, None, "index-zero-tail",
                    f"{zero_tail} zero entries in a rolled segment's index (left by a crash)")
    return columns


class _WalkCheck:
    """The checks verify makes along one :class:`~kafkaforensics.log.segment.Segment`'s walk (no
    segment of its own: the walk is the segment's, through its byte source), fed a batch or a run of
    batches at a time: the walk gives the :class:`SegmentSummary`; the aborted transactions the
    batches show (to compare with the ``.txnindex``) and the (producer id, offset) of every ABORT
    marker stay here."""

    def walk(self, max_batch_bytes) -> SegmentSummary:
        """The streaming pass over the segment's walk (:meth:`~.segment.Segment.walk`): framing, CRC,
        offset order, and the index entries checked on the way.

        Stretches of v2 batches of a large segment are checked as runs (:class:`~.walks.HeaderRunLike`),
        the rest batch by batch (everything, when ``records.walks.SPEEDUPS`` is off).
        """
        with self.segment.runs(max_batch_bytes, lists=True, small=SMALL_SEGMENT_BYTES) as (scanner, items):
            for item in items:
                if isinstance(item, Batch):
                    self.batch(item)
                else:
                    self.run(item)
            return self.finish(scanner, len(scanner.buf))

    def __init__(self, segment: Segment, rep: VerifyReport, state, offsets, times, progress):
        self.segment, self.log, self.base = segment, segment.log, segment.walk_base
        self.rep, self.state, self.offsets, self.times = rep, state, offsets, times
        self.progress = progress
        self.index = _OffsetIndexCheck(*offsets) if offsets is not None and len(offsets[0]) else None
        self.time_index = _TimeIndexCheck(*times) if times is not None and len(times[0]) else None
        self.prev_last: int | None = None  # the last offset of the last batch walked
        self.first: int | None = None      # the first batch's base offset
        self.next: int | None = None       # the offset after the last batch walked
        self.max_ts = -1
        self.batches = 0
        self.done_bytes = 0
        self.aborted: list[AbortedTxn] = []
        self.abort_markers: set[tuple[int, int]] = set()  # (producer id, offset) of every ABORT marker in the segment

    def batch(self, b) -> None:
        rep, log = self.rep, self.log
        self.batches += 1
        if not b.crc_valid():
            rep.add(log, b.position, b.base_offset, "crc-mismatch", f"stored CRC {b.crc} does not match the batch")
        if b.magic < 2 and b.count is None:
            try:
                resolve_legacy_wrapper(b)
            except KafkaFormatError as e:
                rep.problems.append(e.problem)
        prev_last = self.prev_last
        if prev_last is not None and b.base_offset <= prev_last and b.magic >= 2:
            rep.add(log, b.position, b.base_offset, "offset-order",
                    f"batch starts at {b.base_offset} but the previous batch ended at {prev_last}")
        elif prev_last is not None and b.last_offset <= prev_last:
            rep.add(log, b.position, b.last_offset, "offset-order",
                    f"offset {b.last_offset} does not advance past {prev_last}")
        self._first(b.position, b.base_offset)
        self.prev_last = b.last_offset
        self.next = b.next_offset
        self.max_ts = max(self.max_ts, b.max_timestamp)
        if self.index is not None:
            want = self.index.one(b.position)
            if want is not None:
                self._index_entry(b.position, b.base_offset, want)
        if self.time_index is not None:
            self.time_index.one(b.base_offset, b.last_offset, b.max_timestamp)
        if b.is_control:
            self._control(b)
        else:
            self.state.append(b)
        self._progress(b.size)

    def run(self, r) -> None:
        """The same checks as :meth:`batch` over every batch of ``r`` (a :class:`~.header_list.ListRun`),
        problems in the same order."""
        log, n = self.log, len(r)
        self.batches += n
        pos, base, last, cols = r.position, r.base_offset, r.last_offset, r.columns
        at = header_list.FIELD
        crcs, max_ts, attrs = cols[at["crc"]], cols[at["maxTimestamp"]], cols[at["attributes"]]
        found = []  # (batch index, problem), sorted into batch order at the end
        if not all(r.crc_ok):
            for i, ok in enumerate(r.crc_ok):
                if not ok:
                    found.append((i, Problem(log, pos[i], base[i], "crc-mismatch",
                                             f"stored CRC {crcs[i]} does not match the batch")))
        if self.prev_last is not None and base[0] <= self.prev_last:  # the first one against the last run
            found.append((0, Problem(log, pos[0], base[0], "offset-order",
                                     f"batch starts at {base[0]} but the previous batch ended at {self.prev_last}")))
        if any(map(le, base[1:], last)):
            for i in range(1, n):
                if base[i] <= last[i - 1]:
                    found.append((i, Problem(log, pos[i], base[i], "offset-order",
                                             f"batch starts at {base[i]} but the previous batch ended at {last[i - 1]}")))
        if self.first is None:
            found += self._problems_of_batch(0, self._first, pos[0], base[0])
        self.prev_last = last[-1]
        self.next = self.prev_last + 1
        self.max_ts = max(self.max_ts, max(max_ts))
        if self.index is not None:
            one = self.index.one
            for i in range(n):
                want = one(pos[i])
                if want is not None and base[i] > want:
                    found += self._problems_of_batch(i, self._index_entry, pos[i], base[i], want)
        if self.time_index is not None:
            one_time = self.time_index.one
            for i in range(n):
                one_time(base[i], last[i], max_ts[i])
        controls = [i for i, a in enumerate(attrs) if a & R.CONTROL_MASK] if max(attrs) & ~0x1F or min(attrs) < 0 else []
        self._end_run(r, controls, found, sum(r.size))

    def _end_run(self, r, controls: list[int], found: list, size: int) -> None:
        """A run's producer state (control batches checked in their place) and its problems in batch order."""
        lo = 0
        for c in controls:
            self.state.append_run(r, lo, c)
            found += self._problems_of_batch(c, self._control, r.batch(c))
            lo = c + 1
        self.state.append_run(r, lo, len(r))
        found.sort(key=lambda t: t[0])  # stable: a batch's problems keep their order
        self.rep.problems += [p for _, p in found]
        self._progress(size)

    def _problems_of_batch(self, i: int, check, *args) -> list:
        """Run a per-batch check for the ``i``-th batch of a run; its problems come back as
        (i, problem) pairs, to be put in batch order with the run's others."""
        before = len(self.rep.problems)
        check(*args)
        found = [(i, p) for p in self.rep.problems[before:]]
        del self.rep.problems[before:]
        return found

    def _first(self, position: int, base_offset: int) -> None:
        if self.first is None:
            if self.base is not None and base_offset < self.base:
                self.rep.add(self.log, position, base_offset, "offset-before-segment-base",
                             f"first batch starts at {base_offset}, below the segment's base offset {self.base}")
            self.first = base_offset

    def _index_entry(self, position: int, base_offset: int, want: int) -> None:
        # a lookup of any offset >= the entry's must find its batch at or after the position: the
        # batch there must not start past the entry's offset (Kafka's cleaner indexes the largest
        # retained offset of a chunk, so the entry need not be a batch's last offset)
        if base_offset > want:
            self.rep.add(self.log, position, want, "index-mismatch",
                         f"offset index entry {want} points at a batch starting at {base_offset}")

    def _control(self, b) -> None:
        try:
            ctl = b.records()[0].control() if b.count else None
        except KafkaFormatError as e:
            self.rep.problems.append(e.problem)
            ctl = None
        if ctl and ctl["type"] == "ABORT":
            self.abort_markers.add((b.producer_id, b.last_offset))
        completed = self.state.append(b)
        if completed is not None and completed.aborted:
            self.aborted.append(completed.aborted_entry())

    def _progress(self, nbytes: int) -> None:
        if self.progress is not None:
            self.done_bytes += nbytes
            if self.done_bytes >= 1 << 22:
                self.progress(self.done_bytes)
                self.done_bytes = 0

    def finish(self, scanner, size: int) -> SegmentSummary:
        rep, log, offsets, nxt = self.rep, self.log, self.offsets, self.next
        if self.progress is not None:
            self.progress(self.done_bytes + size - scanner.valid_bytes)
        rep.batches += self.batches
        rep.bytes += scanner.valid_bytes
        if scanner.stop is not None:
            rep.problems.append(scanner.stop)
        valid = scanner.valid_bytes
        if self.index is not None:
            for pos, off in self.index.unmatched():
                if pos >= valid:
                    rep.add(log, pos, off, "index-past-end", f"offset index entry {off} points at byte {pos}, past the valid log end {valid}")
                else:
                    rep.add(log, pos, off, "index-mismatch", f"offset index entry {off} points at byte {pos}, not a batch boundary")
            if nxt is not None:
                for off, pos in self.index.past(offsets, valid, nxt):
                    rep.add(log, pos, off, "index-mismatch",
                            f"offset index entry {off} is past the segment's last offset {nxt - 1}")
        if self.time_index is not None:
            self.time_index.report(log, rep)
        return SegmentSummary(self.segment.base_offset, size, scanner.valid_bytes, self.batches, 0, self.first, nxt, self.max_ts,
                              self.segment)


class _OffsetIndexCheck:
    """A segment's offset index entries (file order), matched to batch starts as the walk goes;
    of entries sharing a position the last one counts."""

    def __init__(self, offsets, positions):
        last = {}
        for off, pos in zip(offsets, positions):
            last[pos] = off  # of entries sharing a position the last one counts
        self.keys = sorted(last)
        self.wants = [last[p] for p in self.keys]
        self.matched = [False] * len(self.keys)

    def one(self, position: int) -> int | None:
        j = bisect.bisect_left(self.keys, position)
        if j < len(self.keys) and self.keys[j] == position and not self.matched[j]:
            self.matched[j] = True
            return self.wants[j]
        return None

    def unmatched(self):
        return [(p, w) for p, w, m in zip(self.keys, self.wants, self.matched) if not m]

    @staticmethod
    def past(columns, valid: int, next_offset: int):
        offs, poss = columns
        return [(off, pos) for off, pos in zip(offs, poss) if pos < valid and off >= next_offset]


class _TimeIndexCheck:
    """A segment's time index entries, each matched to the batch holding its offset as the walk
    goes (in offset order), then reported where the batch's max timestamp differs or time does not
    increase."""

    def __init__(self, timestamps, offsets):
        self.timestamps, self.offsets = timestamps, offsets
        self.order = sorted(range(len(offsets)), key=lambda k: (offsets[k], timestamps[k]))  # stable, as lexsort
        self.sorted = [offsets[k] for k in self.order]
        self.seen = [False] * len(offsets)  # by sorted position
        self.value = [0] * len(offsets)
        self.next = 0

    def one(self, base: int, last: int, max_ts: int) -> None:
        """One batch [base, last]: the entries it reaches are consumed, and seen (with the batch's
        max timestamp) when they fall inside it."""
        q, k = self.sorted, self.next
        while k < len(q) and q[k] <= last:
            if q[k] >= base:
                self.seen[k], self.value[k] = True, max_ts
            k += 1
        self.next = k

    def report(self, log, rep: VerifyReport) -> None:
        n = len(self.offsets)
        seen, value = [False] * n, [0] * n
        for j, k in enumerate(self.order):
            seen[k], value[k] = self.seen[j], self.value[j]
        ts = self.timestamps
        for k in range(n):
            t, off = ts[k], self.offsets[k]
            order_bad = k > 0 and t <= ts[k - 1]
            if not (not seen[k] or value[k] != t or order_bad):
                continue
            if not seen[k]:
                rep.add(log, None, off, "timeindex-mismatch", f"time index entry ({t}, {off}) names an offset no batch holds")
            elif value[k] != t:
                rep.add(log, None, off, "timeindex-mismatch", f"time index says {t} but the batch's max timestamp is {value[k]}")
            if order_bad:
                rep.add(log, None, off, "timeindex-order", f"timestamp {t} does not increase past {ts[k - 1]}")


def _compare_aborted(stored, found, markers, path, rep: VerifyReport) -> None:
    """Every aborted transaction replayed from the log must be indexed; an indexed one needs its
    ABORT marker in the segment (after compaction the marker can outlive the transaction's data)."""
    have = {(e.producer_id, e.last_offset): e for e in stored}
    want = {(e.producer_id, e.last_offset): e for e in found}
    for k, e in want.items():
        if k not in have:
            rep.add(path, None, e.last_offset, "txnindex-missing",
                    f"aborted transaction of producer {e.producer_id} ({e.first_offset}..{e.last_offset}) is not indexed")
        elif have[k] != e:
            rep.add(path, None, e.last_offset, "txnindex-mismatch", f"indexed {have[k].to_json()} but the log says {e.to_json()}")
    for k, e in have.items():
        if k not in want and k not in markers:
            rep.add(path, None, e.last_offset, "txnindex-extra",
                    f"indexed aborted transaction of producer {e.producer_id} ending at {e.last_offset} has no ABORT marker here")


def walk_problems(partition_dir: str) -> list[Problem]:
    """Where the walk of a partition's segments stops before a segment's end (a torn tail, a bad size,
    magic or offset): the batches from there on are what Kafka's log loading would truncate, and what
    ``compact`` and ``retention`` leave alone.  Framing only (no CRC): the cheap check those two
    commands report, exiting 1, so that a script learns the partition wants ``kfx recover``."""
    out = []
    for seg in Partition.scan(partition_dir).segments:
        with seg.walk() as scanner:
            for _batch in scanner:
                pass
        if scanner.stop is not None:
            out.append(scanner.stop)
    return out
