"""``kfx verify``: CRCs, structure, index consistency and checkpoint sanity of files, partitions, log dirs.

One streaming pass per segment (constant memory in the log's size: only the sparse index entries
are held), checking every batch's framing and CRC, offset order, and each index entry against the
batch it names.  Everything found is a located :class:`Problem`; ``notes`` hold the conditions a
live broker leaves behind normally (the active segment's preallocated zero index tail).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from specs import checkpoints as C

from . import offset_index, time_index, txn_index
from .batch import resolve_legacy_wrapper
from .errors import KafkaFormatError, Problem
from .partition import (INDEX, LOG, TIMEINDEX, TXNINDEX, PartitionDir, SegmentFiles, find_partitions,
                        read_offset_checkpoints)
from .producer_state import ProducerState, read_snapshot
from .segment import BatchScanner, offset_from_name, open_buffer


@dataclass
class SegmentSummary:
    base_offset: int
    size: int
    valid_bytes: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    next_offset: int | None = None
    max_timestamp: int = -1


@dataclass
class VerifyReport:
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    partitions: list[dict] = field(default_factory=list)
    files: int = 0
    batches: int = 0
    bytes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, file, position, offset, kind, detail) -> None:
        self.problems.append(Problem(file, position, offset, kind, detail))

    def to_json(self) -> dict:
        return {"ok": self.ok, "problems": [p.to_json() for p in self.problems],
                "notes": [p.to_json() for p in self.notes], "partitions": self.partitions,
                "files": self.files, "batches": self.batches, "bytes": self.bytes}


def verify(paths, *, progress=None, max_batch_bytes: int | None = None) -> VerifyReport:
    """Verify files, partition dirs or log dirs. ``progress(nbytes)`` is called as bytes are read."""
    rep = VerifyReport()
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        if os.path.isdir(path):
            parts = find_partitions(path)
            ckpts = {}
            try:
                ckpts = read_offset_checkpoints(path)
            except KafkaFormatError as e:
                rep.problems.append(e.problem)
            if not parts:
                rep.notes.append(Problem(path, None, None, "empty", "no partition directories or segments found"))
            for pd in parts:
                verify_partition(pd, rep, checkpoints=ckpts, progress=progress, max_batch_bytes=max_batch_bytes)
        else:
            _verify_file(path, rep, progress, max_batch_bytes)
    return rep


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
            with open_buffer(path) as buf:
                _scan(buf, path, None, rep, ProducerState(), None, None, progress, max_batch_bytes)
        elif name.endswith(".snapshot"):
            with open(path, "rb") as f:
                read_snapshot(f.read(), file=path)
        elif name.endswith((INDEX, TIMEINDEX, TXNINDEX)) and base is not None:
            seg = SegmentFiles(base, os.path.dirname(os.path.abspath(path)))
            if not os.path.exists(seg.log):
                rep.add(path, None, None, "orphan-index", "index file without its .log")
            else:
                verify_segment(seg, rep, ProducerState(), active=True, progress=progress,
                               max_batch_bytes=max_batch_bytes)
        elif name == C.LEADER_EPOCH_FILE:
            _check_epochs(C.LeaderEpochCheckpoint.parse(_read(path), file=path), path, None, rep)
        elif name in C.OFFSET_CHECKPOINT_FILES:
            C.OffsetCheckpoint.parse(_read(path), file=path)
        elif name == C.PARTITION_METADATA_FILE:
            C.parse_partition_metadata(_read(path), file=path)
        else:
            rep.notes.append(Problem(path, None, None, "unknown-file", "not a Kafka storage file; skipped"))
    except KafkaFormatError as e:
        e.located(file=path)
        rep.problems.append(e.problem)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def verify_partition(pd: PartitionDir, rep: VerifyReport, *, checkpoints=None, progress=None,
                     max_batch_bytes=None) -> dict:
    for f in pd.leftovers:
        rep.add(f, None, None, "leftover-file",
                "interrupted " + ("swap" if f.endswith(".swap") else "cleaning" if f.endswith(".cleaned") else "deletion")
                + "; `kfx recover` completes or removes it as Kafka's log loading would")
    for f in pd.orphan_indexes:
        rep.add(f, None, None, "orphan-index", "index file without its .log (Kafka deletes it on load)")
    state = ProducerState()
    prev: SegmentSummary | None = None
    summaries = []
    for i, seg in enumerate(pd.segments):
        s = verify_segment(seg, rep, state, active=(i == len(pd.segments) - 1), progress=progress,
                           max_batch_bytes=max_batch_bytes)
        summaries.append(s)
        if prev is not None and prev.next_offset is not None and seg.base_offset < prev.next_offset:
            rep.add(seg.log, 0, seg.base_offset, "segment-overlap",
                    f"segment starts at {seg.base_offset} but the previous one ends at {prev.next_offset - 1}")
        if s.next_offset is not None:
            prev = s
    leo = next((s.next_offset for s in reversed(summaries) if s.next_offset is not None),
               pd.segments[-1].base_offset if pd.segments else 0)
    try:
        epochs = pd.leader_epochs()
        if epochs is not None:
            _check_epochs(epochs, os.path.join(pd.path, C.LEADER_EPOCH_FILE), leo, rep)
    except KafkaFormatError as e:
        rep.problems.append(e.problem)
    try:
        pd.partition_metadata()
    except KafkaFormatError as e:
        rep.problems.append(e.problem)
    for off in pd.snapshots:
        p = os.path.join(pd.path, f"{off:020d}.snapshot")
        rep.files += 1
        try:
            with open(p, "rb") as f:
                read_snapshot(f.read(), file=p)
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
        if off > leo:
            rep.add(p, None, off, "snapshot-beyond-log-end", f"producer snapshot at {off} is past the log end offset {leo}")
    if checkpoints and pd.topic is not None:
        for name, table in checkpoints.items():
            off = table.get((pd.topic, pd.partition))
            if off is not None and off > leo:
                rep.add(os.path.join(os.path.dirname(os.path.normpath(pd.path)), name), None, off,
                        "checkpoint-beyond-log-end", f"{pd.name}: {name} says {off} but the log ends at {leo}")
    info = {"partition": pd.name, "path": pd.path, "segments": len(pd.segments), "logEndOffset": leo,
            "logStartOffset": summaries[0].first_offset if summaries and summaries[0].first_offset is not None else
            (pd.segments[0].base_offset if pd.segments else 0),
            "batches": sum(s.batches for s in summaries), "bytes": sum(s.size for s in summaries)}
    rep.partitions.append(info)
    return info


def _check_epochs(epochs, path, leo, rep: VerifyReport) -> None:
    prev = None
    for e in epochs:
        if prev is not None and (e["epoch"] <= prev["epoch"] or e["startOffset"] < prev["startOffset"]):
            rep.add(path, None, e["startOffset"], "epoch-order",
                    f"epoch {e['epoch']}@{e['startOffset']} follows {prev['epoch']}@{prev['startOffset']}")
        if leo is not None and e["startOffset"] > leo:
            rep.add(path, None, e["startOffset"], "epoch-beyond-log-end",
                    f"epoch {e['epoch']} starts at {e['startOffset']}, past the log end offset {leo}")
        prev = e


def verify_segment(seg: SegmentFiles, rep: VerifyReport, state: ProducerState, *, active: bool,
                   progress=None, max_batch_bytes=None, require_index: bool = True) -> SegmentSummary:
    """Check one segment's .log and its indexes; ``state`` carries producer state along the partition."""
    log = seg.log
    base = seg.base_offset
    rep.files += 1
    idx_path, tidx_path, txn_path = seg.existing(INDEX), seg.existing(TIMEINDEX), seg.existing(TXNINDEX)
    offsets, times, aborted = [], [], []
    if idx_path:
        rep.files += 1
        offsets = _read_index(idx_path, offset_index, base, active, rep)
    if tidx_path:
        rep.files += 1
        times = _read_index(tidx_path, time_index, base, active, rep)
    if txn_path:
        rep.files += 1
        try:
            with open(txn_path, "rb") as f:
                aborted = txn_index.read_entries(f.read(), file=txn_path)
        except KafkaFormatError as e:
            rep.problems.append(e.problem)
    with open_buffer(log) as buf:
        s = _scan(buf, log, base, rep, state, offsets, times, progress, max_batch_bytes)
        found_aborted = s.pop("aborted")
        markers = s.pop("abort_markers")
        summary = SegmentSummary(base, len(buf), s["valid_bytes"], s["batches"], 0, s["first"], s["next"], s["max_ts"])
    if summary.batches and not idx_path and require_index:
        rep.add(seg.path(INDEX), None, None, "missing-index", "segment has batches but no offset index (Kafka rebuilds it)")
    _compare_aborted(aborted, found_aborted, markers, txn_path or seg.path(TXNINDEX), rep)
    return summary


def _read_index(path, module, base, active, rep: VerifyReport):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % module.ENTRY_SIZE:
        rep.add(path, len(data) - len(data) % module.ENTRY_SIZE, None, "index-size",
                f"size {len(data)} is not a multiple of the {module.ENTRY_SIZE}-byte entry")
    entries, zero_tail = module.read_entries(data, base)
    if zero_tail:
        where = (len(data) // module.ENTRY_SIZE - zero_tail) * module.ENTRY_SIZE
        if active:
            rep.notes.append(Problem(path, where, None, "preallocated-index",
                                     f"{zero_tail} preallocated zero entries (an active segment's index)"))
        else:
            rep.add(path, where, None, "index-zero-tail",
                    f"{zero_tail} zero entries in a rolled segment's index (left by a crash)")
    return entries


def _scan(buf, log, base, rep: VerifyReport, state, offsets, times, progress, max_batch_bytes) -> dict:
    """The streaming pass: framing, CRC, offset order, and the index entries checked on the way."""
    idx_by_pos = {pos: off for off, pos in (offsets or [])}
    # time index entries in offset order, matched against the batch whose range holds each offset
    time_queue = sorted(((off, ts) for ts, off in (times or [])))
    tq = 0
    time_seen = {}
    scanner = BatchScanner(buf, file=log, base_offset=base, max_batch_bytes=max_batch_bytes)
    prev_last = None
    first = nxt = None
    max_ts = -1
    batches = 0
    done_bytes = 0
    aborted = []
    abort_markers = set()  # (producer id, offset) of every ABORT marker in the segment
    for b in scanner:
        batches += 1
        if not b.crc_valid():
            rep.add(log, b.position, b.base_offset, "crc-mismatch", f"stored CRC {b.crc} does not match the batch")
        if b.magic < 2 and b.count is None:
            try:
                resolve_legacy_wrapper(b)
            except KafkaFormatError as e:
                rep.problems.append(e.problem)
        if prev_last is not None and b.base_offset <= prev_last and b.magic >= 2:
            rep.add(log, b.position, b.base_offset, "offset-order",
                    f"batch starts at {b.base_offset} but the previous batch ended at {prev_last}")
        elif prev_last is not None and b.last_offset <= prev_last:
            rep.add(log, b.position, b.last_offset, "offset-order",
                    f"offset {b.last_offset} does not advance past {prev_last}")
        if base is not None and first is None and b.base_offset < base:
            rep.add(log, b.position, b.base_offset, "offset-before-segment-base",
                    f"first batch starts at {b.base_offset}, below the segment's base offset {base}")
        if first is None:
            first = b.base_offset
        prev_last = b.last_offset
        nxt = b.last_offset + 1
        max_ts = max(max_ts, b.max_timestamp)
        if idx_by_pos:
            want = idx_by_pos.pop(b.position, None)
            # a lookup of any offset >= the entry's must find its batch at or after the position:
            # the batch there must not start past the entry's offset (Kafka's cleaner indexes the
            # largest retained offset of a chunk, so the entry need not be a batch's last offset)
            if want is not None and b.base_offset > want:
                rep.add(log, b.position, want, "index-mismatch",
                        f"offset index entry {want} points at a batch starting at {b.base_offset}")
        while tq < len(time_queue) and time_queue[tq][0] <= b.last_offset:
            if time_queue[tq][0] >= b.base_offset:
                time_seen[time_queue[tq][0]] = b.max_timestamp
            tq += 1
        if b.is_control:
            try:
                ctl = b.records()[0].control() if b.count else None
            except KafkaFormatError as e:
                rep.problems.append(e.problem)
                ctl = None
            if ctl and ctl["type"] == "ABORT":
                abort_markers.add((b.producer_id, b.last_offset))
        completed = state.append(b)
        if completed is not None and completed.aborted:
            aborted.append(completed.aborted_entry())
        if progress is not None:
            done_bytes += b.size
            if done_bytes >= 1 << 22:
                progress(done_bytes)
                done_bytes = 0
    if progress is not None:
        progress(done_bytes + len(buf) - scanner.valid_bytes)
    rep.batches += batches
    rep.bytes += scanner.valid_bytes
    if scanner.stop is not None:
        rep.problems.append(scanner.stop)
    for pos, off in sorted(idx_by_pos.items()):
        if pos >= scanner.valid_bytes:
            rep.add(log, pos, off, "index-past-end", f"offset index entry {off} points at byte {pos}, past the valid log end {scanner.valid_bytes}")
        else:
            rep.add(log, pos, off, "index-mismatch", f"offset index entry {off} points at byte {pos}, not a batch boundary")
    if offsets and nxt is not None:
        for off, pos in offsets:
            if pos < scanner.valid_bytes and off >= nxt:
                rep.add(log, pos, off, "index-mismatch", f"offset index entry {off} is past the segment's last offset {nxt - 1}")
    prev_ts = None
    for ts, off in (times or []):
        if off not in time_seen:
            rep.add(log, None, off, "timeindex-mismatch", f"time index entry ({ts}, {off}) names an offset no batch holds")
        elif time_seen[off] != ts:
            rep.add(log, None, off, "timeindex-mismatch", f"time index says {ts} but the batch's max timestamp is {time_seen[off]}")
        if prev_ts is not None and ts <= prev_ts:
            rep.add(log, None, off, "timeindex-order", f"timestamp {ts} does not increase past {prev_ts}")
        prev_ts = ts
    return {"valid_bytes": scanner.valid_bytes, "batches": batches, "first": first, "next": nxt,
            "max_ts": max_ts, "aborted": aborted, "abort_markers": abort_markers}


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
