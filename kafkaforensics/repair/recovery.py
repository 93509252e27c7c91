"""``kfx recover``: what Kafka's log loading does to a partition after an unclean shutdown, offline.

Rule for rule after LogLoader and LogSegment.recover:

1. leftovers -- ``.deleted`` files are removed; ``.cleaned`` files are removed, and with them every
   ``.swap`` file at or above the lowest cleaned offset (an interrupted split); the remaining
   ``.swap`` log files replace the segments whose base offsets fall in [swap base, swap next
   offset), and every ``.swap`` file is renamed to its final name;
2. index files without a ``.log`` are removed;
3. from the first unflushed segment (the recovery point, unless a clean-shutdown marker says
   there is nothing to recover; ``full`` validates every segment) each segment is walked batch by
   batch: framing (size bounds, magic), CRC, offsets increasing and, if asked, the max message
   size; it is truncated at the end of the last valid batch and every later segment is removed;
4. the offset, time and transaction indexes of every recovered segment are rebuilt;
5. producer snapshots past the new log end, corrupt ones and stray ones are removed and the
   state is rebuilt from the batches (snapshots at the recovered segments' ends and the log end);
   the leader-epoch cache is truncated at the log end and extended by the recovered batches.

Everything is planned first (``dry_run`` returns the plan) and then applied in a crash-safe order:
later segments are moved aside before a segment is truncated, files are replaced through a temp
file, fsync and rename, and every changed or removed file is backed up unless ``backup=False``.
Running it twice changes nothing the second time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from specs import checkpoints as C

from kafkaforensics import fsutil

from kafkaforensics.log import offset_index, time_index, txn_index
from kafkaforensics.repair.actions import PHASES, Action, Dropped, apply_actions
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES, SegmentIndexes, SegmentRebuild
from kafkaforensics.log.logdir import CLEAN_SHUTDOWN_FILE
from kafkaforensics.log.checkpoint_file import RECOVERY_POINT, partition_offset, read_checkpoint
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.log_loader import replay_segment
from kafkaforensics.log.partition import parse_partition_dir_name
from kafkaforensics.log.producer_state import ProducerState, read_snapshot
from kafkaforensics.log.segment import (CLEANED, DELETED, INDEX, LOG, SNAPSHOT, SWAP, TIMEINDEX, TXNINDEX, BatchScanner,
                      file_name, offset_from_name, open_buffer, without_leftover_suffix)

_INDEX_SUFFIXES = (INDEX, TIMEINDEX, TXNINDEX)


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
    #: what the truncation and the removed segments drop: bytes, and the batches in them that still
    #: pass their CRC (what ``kfx salvage`` can copy out)
    dropped: Dropped = field(default_factory=Dropped)

    def to_json(self) -> dict:
        return {"partition": self.partition, "truncatedAt": self.truncated_at,
                "removedSegments": self.removed_segments, "rebuiltIndexes": self.rebuilt_indexes,
                "backup": self.backup, "actions": [a.to_json() for a in self.actions],
                "recoveryPoint": self.recovery_point, "logEndOffset": self.log_end_offset,
                "notes": self.notes, "dryRun": self.dry_run, "dropped": self.dropped.to_json()}


class _PartitionFiles:
    """The partition directory as the plan sees it: final name -> the file that holds its bytes."""

    def __init__(self, path: str):
        self.path = path
        self.files = {n: os.path.join(path, n) for n in sorted(os.listdir(path))
                      if os.path.isfile(os.path.join(path, n))}

    def full(self, name: str) -> str:
        return os.path.join(self.path, name)

    def with_offset(self, suffixes=None):
        for n in sorted(self.files):
            off = offset_from_name(n)
            if off is not None and (suffixes is None or n.endswith(suffixes)):
                yield n, off


def recover(partition_dir: str, *, dry_run: bool = False, backup: bool = True, backup_dir: str | None = None,
            index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, max_message_bytes: int | None = None,
            recovery_point: int | None = None, full: bool = False) -> RecoveryReport:
    path = os.path.abspath(partition_dir)
    if not os.path.isdir(path):
        raise FileNotFoundError(partition_dir)
    log_dir = os.path.dirname(path)
    tp = parse_partition_dir_name(path)
    rp, clean = 0, False
    if not full:
        clean = os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
        if recovery_point is not None:
            rp = recovery_point
        else:
            try:
                rp = partition_offset(log_dir, RECOVERY_POINT, tp) or 0
            except KafkaFormatError:
                rp = 0
    rep = RecoveryReport(os.path.basename(path), rp, dry_run=dry_run)
    if backup and not dry_run:  # a dry run names no backup: it makes none
        rep.backup = os.path.abspath(backup_dir) if backup_dir else fsutil.default_backup_dir(path)
    d = _PartitionFiles(path)
    plan: list[Action] = []
    _plan_leftovers(d, plan)
    _plan_orphans(d, plan)
    state = ProducerState()
    epochs = _load_epochs(d, rep)
    segments = [off for _n, off in d.with_offset((LOG,))]
    if clean and not full:
        rep.notes.append("clean-shutdown marker present: Kafka skips segment recovery (use --full to validate)")
    leo = segments[0] if segments else 0
    truncated = False
    removed: list[int] = []
    recovered: list[tuple[int, int]] = []  # (segment base, its next offset)
    states: dict[int, bytes] = {}          # next offset of each segment walked -> producer snapshot there
    for i, base in enumerate(segments):
        name = file_name(base, LOG)
        src = d.files[name]
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        unflushed = not clean and (nxt is None or nxt > rp)
        if truncated:
            removed.append(base)
            continue
        if not unflushed and file_name(base, INDEX) in d.files:
            leo = _replay(src, base, state, leo)
            states[leo] = state.to_snapshot()
            continue
        res = _recover_segment(src, base, state, epochs, index_interval_bytes, max_message_bytes)
        leo = res["next_offset"] if res["next_offset"] is not None else max(leo, base)
        recovered.append((base, leo))
        states[leo] = state.to_snapshot()  # the state one walk gives: no second pass for snapshots
        _plan_index_writes(d, base, res["indexes"], plan, rep)
        if res["valid_bytes"] < res["size"]:
            # a segment below the recovery point is only recovered for a missing index
            # (LogLoader.loadSegmentFiles): its truncation does not remove later segments
            truncated = unflushed
            rep.truncated_at = {"segment": name, "position": res["valid_bytes"], "offset": leo,
                                "reason": res["reason"]}
            plan.append(Action("truncate", d.full(name), f"truncate at byte {res['valid_bytes']} "
                               f"(end of the last valid batch): {res['reason']}", size=res["valid_bytes"],
                               phase=PHASES["truncate"]))
    for a in plan:
        if a.action == "truncate":
            count_dropped(rep.dropped, a.file, a.size)
    for base in removed:
        count_dropped(rep.dropped, d.files[file_name(base, LOG)], 0)
    # later segments go before the truncation when the plan is applied (see PHASES)
    for base in removed:
        rep.removed_segments.append(file_name(base, LOG))
        for suf in (LOG,) + _INDEX_SUFFIXES:
            n = file_name(base, suf)
            if n in d.files:
                plan.append(Action("delete", d.full(n), "segment after the truncation point",
                                   phase=PHASES["remove-segment"]))
                del d.files[n]
    rep.log_end_offset = leo
    kept = [b for b in segments if b not in removed]
    _plan_snapshots(d, kept, leo, recovered, states, plan)
    _plan_epochs(d, epochs, leo, plan)
    rep.actions = sorted(plan, key=lambda a: a.phase)  # stable: Kafka's order within a phase
    if not rep.actions:
        rep.backup = None
    if not dry_run and rep.actions:
        apply_actions(rep.actions, rep.backup)
    return rep


def count_dropped(out: Dropped, path: str, start: int) -> None:
    """Add the bytes of ``path`` from ``start`` on to ``out``: the batches in them that pass their CRC
    and decode, found the way ``kfx salvage`` finds them (past damage too)."""
    from kafkaforensics.log.batch_search import scan_file
    out.files.append(os.path.basename(path))
    with open_buffer(path) as buf:
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


def _plan_leftovers(d: _PartitionFiles, plan: list[Action]) -> None:
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
        with open_buffer(d.files[n]) as buf:
            for b in BatchScanner(buf, file=d.files[n]):
                nxt = b.last_offset + 1
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None:
        for n, off in list(d.with_offset()):
            if not n.endswith(SWAP) and lo <= off < hi:
                plan.append(Action("delete", d.full(n), f"replaced by the swap segment(s) covering [{lo}, {hi})",
                                   phase=PHASES["leftover-delete"]))
                del d.files[n]
    for n in valid:
        final = without_leftover_suffix(n)
        plan.append(Action("rename", d.full(n), "complete the interrupted swap", target=d.full(final),
                           phase=PHASES["leftover-rename"]))
        d.files[final] = d.files.pop(n)


def _plan_orphans(d: _PartitionFiles, plan: list[Action]) -> None:
    for n, off in list(d.with_offset(_INDEX_SUFFIXES)):
        if file_name(off, LOG) not in d.files:
            plan.append(Action("delete", d.full(n), "index file without a .log", phase=PHASES["orphan"]))
            del d.files[n]


def _replay(src: str, base: int, state: ProducerState, leo: int) -> int:
    """A flushed segment into the producer state; the log end offset after it."""
    seg = replay_segment(src, base, state)
    return max(leo, base) if seg.batches == 0 else seg.next_offset


def _recover_segment(src, base, state, epochs, interval, max_bytes) -> dict:
    walk = SegmentRebuild(src, base, state, interval=interval, epochs=epochs, max_batch_bytes=max_bytes).walk()
    return {"size": walk.size, "valid_bytes": walk.indexes.valid_bytes, "next_offset": walk.next_offset,
            "indexes": walk.indexes, "reason": walk.stop[3] if walk.stop else "invalid bytes"}


def _plan_index_writes(d: _PartitionFiles, base: int, idx: SegmentIndexes, plan, rep: RecoveryReport) -> None:
    for suf, data in ((INDEX, offset_index.to_bytes(idx.offsets, base)),
                      (TIMEINDEX, time_index.to_bytes(idx.times, base)),
                      (TXNINDEX, txn_index.to_bytes(idx.aborted))):
        n = file_name(base, suf)
        current = d.files.get(n)
        if suf == TXNINDEX and not data and current is None:
            continue
        if current is not None and fsutil.same_content(current, data):
            continue
        plan.append(Action("write", d.full(n), "rebuild index from the segment's valid batches", data=data,
                           phase=PHASES["index"]))
        rep.rebuilt_indexes.append(n)
        d.files[n] = d.full(n)


def _load_epochs(d: _PartitionFiles, rep: RecoveryReport) -> LeaderEpochCache:
    p = d.files.get(C.LEADER_EPOCH_FILE)
    if p is None:
        return LeaderEpochCache()
    try:
        return LeaderEpochCache.load(read_checkpoint(p, C.LeaderEpochCheckpoint) or [])
    except KafkaFormatError as e:
        rep.notes.append(f"leader-epoch-checkpoint unreadable ({e.problem.detail}); rebuilt from the batches")
        return LeaderEpochCache()


def _plan_epochs(d: _PartitionFiles, epochs: LeaderEpochCache, leo: int, plan) -> None:
    name = C.LEADER_EPOCH_FILE
    if name not in d.files and not epochs:
        return
    epochs.truncate_from_end(leo)
    data = epochs.to_bytes()
    if name in d.files and fsutil.same_content(d.files[name], data):
        return
    plan.append(Action("write", d.full(name), "leader epochs truncated at the log end and extended by the "
                                              "recovered batches", data=data, phase=PHASES["epochs"]))


def _plan_snapshots(d: _PartitionFiles, segments: list[int], leo: int, recovered, states: dict, plan) -> None:
    """Snapshots past the log end or corrupt go; the state is rebuilt at the end of every recovered
    segment and at the log end (recoverSegment and rebuildProducerState take those); then Kafka's
    removeStraySnapshots rule: keep segment-base snapshots and only the latest stray one, if it lies
    beyond the last segment's base offset."""
    phase = PHASES["snapshot"]
    present = set()
    for n, off in list(d.with_offset((SNAPSHOT,))):
        if off > leo:
            plan.append(Action("delete", d.full(n), f"producer snapshot past the log end offset {leo}", phase=phase))
            del d.files[n]
            continue
        try:
            with open(d.files[n], "rb") as f:
                read_snapshot(f.read(), file=d.files[n])
            present.add(off)
        except KafkaFormatError as e:
            plan.append(Action("delete", d.full(n), f"corrupt producer snapshot: {e.problem.detail}", phase=phase))
            del d.files[n]
    if not segments:
        return
    wanted = {nxt for _b, nxt in recovered if nxt <= leo} | {leo}
    final = present | wanted
    bases = set(segments)
    strays = sorted(o for o in final if o not in bases)
    keep = strays[-1] if strays and strays[-1] > max(segments) else None
    drop = {o for o in strays if o != keep}
    for o in sorted(present & drop):
        n = file_name(o, SNAPSHOT)
        plan.append(Action("delete", d.full(n), "stray producer snapshot with no segment at its offset", phase=phase))
        del d.files[n]
    wanted -= drop
    for off in sorted(wanted):
        data = states[off]
        n = file_name(off, SNAPSHOT)
        if n in d.files and fsutil.same_content(d.files[n], data):
            continue
        plan.append(Action("write", d.full(n), "producer state rebuilt from the batches", data=data, phase=phase))
        d.files[n] = d.full(n)
