"""``kfx analyze``: what happened in a partition -- findings located by partition, offsets and bytes.

One pass over each partition's batches (after :func:`kafkaforensics.verify.verify_partition`, whose
problems become ``error`` findings) looks for what is well-formed but suspicious:

* offset gaps that compaction does not explain, overlapping segments (from verify);
* timestamps: regressions, far-future and pre-epoch values, LogAppendTime/CreateTime mixing;
* producers: sequence gaps, duplicate sequences, epoch regressions, a fenced producer still writing;
* transactions: hanging (no marker: they pin the last stable offset), aborted, markers without data;
* leader epochs: batches whose epoch disagrees with leader-epoch-checkpoint, epoch regressions, and
  the truncation points the checkpoint implies;
* producer snapshots that disagree with the state replayed from the log.

Severities: ``error`` (damage), ``warning`` (suspicious), ``info`` (worth knowing: aborted
transactions, epoch boundaries).
"""
from __future__ import annotations

import os
import time as _time
from dataclasses import asdict, dataclass, field

from specs import checkpoints as C

from .batch import resolve_legacy_wrapper
from .errors import KafkaFormatError
from .partition import PartitionDir, find_partitions, read_offset_checkpoints
from .producer_state import ProducerState, read_snapshot
from .segment import BatchScanner, open_buffer
from .verify import VerifyReport, verify_partition

_INT32_MAX = 2**31 - 1
SEVERITY = {"warning", "error", "info"}


@dataclass
class Finding:
    kind: str
    severity: str
    partition: str
    first_offset: int | None
    last_offset: int | None
    position: int | None
    file: str | None
    explanation: str

    def to_json(self) -> dict:
        d = asdict(self)
        return {"kind": d["kind"], "severity": d["severity"], "partition": d["partition"],
                "offsetRange": [d["first_offset"], d["last_offset"]], "position": d["position"],
                "file": d["file"], "explanation": d["explanation"]}


@dataclass
class PartitionSummary:
    partition: str
    path: str
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    codecs: dict = field(default_factory=dict)
    magics: dict = field(default_factory=dict)
    producers: int = 0
    transactions: dict = field(default_factory=lambda: {"committed": 0, "aborted": 0, "open": 0})
    last_stable_offset: int | None = None
    timeline: list = field(default_factory=list)   # (byte position, offset, max timestamp)
    segment_starts: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("timeline")
        d.pop("segment_starts")
        return {_camel(k): v for k, v in d.items()}


def _camel(s: str) -> str:
    head, *rest = s.split("_")
    return head + "".join(w.title() for w in rest)


@dataclass
class AnalysisReport:
    partitions: list[PartitionSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"partitions": [p.to_json() for p in self.partitions],
                "findings": [f.to_json() for f in self.findings],
                "counts": {s: sum(1 for f in self.findings if f.severity == s) for s in ("error", "warning", "info")}}

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in ("error", "warning")]


@dataclass
class AnalyzeOptions:
    now: int | None = None
    future_tolerance_ms: int = 3_600_000   # log.message.timestamp.after.max.ms's default
    timeline_points: int = 2000


def analyze(paths, opts: AnalyzeOptions | None = None) -> AnalysisReport:
    opts = opts or AnalyzeOptions()
    now = opts.now if opts.now is not None else int(_time.time() * 1000)
    rep = AnalysisReport()
    for path in paths:
        if not os.path.isdir(path):
            path = os.path.dirname(os.path.abspath(path)) or "."
        parts = find_partitions(path)
        try:
            ckpts = read_offset_checkpoints(path) if not (len(parts) == 1 and parts[0].path == path) else \
                read_offset_checkpoints(os.path.dirname(os.path.abspath(path)))
        except KafkaFormatError:
            ckpts = {}
        for pd in parts:  # a -delete/-future/-stray copy is analysed under its own name, without checkpoints
            _analyze_partition(pd, ckpts if pd.state == "live" else {}, now, opts, rep)
    return rep


def _analyze_partition(pd: PartitionDir, ckpts: dict, now: int, opts: AnalyzeOptions, rep: AnalysisReport) -> None:
    name = pd.name
    vr = VerifyReport()
    verify_partition(pd, vr, checkpoints=ckpts)
    for p in vr.problems:
        rep.findings.append(Finding(p.kind, "error", name, p.offset, p.offset, p.position, p.file, p.detail))
    summ = PartitionSummary(name, pd.path, segments=len(pd.segments))
    rep.partitions.append(summ)
    cleaner_ck = ckpts.get("cleaner-offset-checkpoint", {}).get((pd.topic, pd.partition)) if pd.topic else None
    try:
        epochs = pd.leader_epochs() or []
    except KafkaFormatError:
        epochs = []
    snapshots = {}
    for off in pd.snapshots:
        p = os.path.join(pd.path, f"{off:020d}.snapshot")
        try:
            with open(p, "rb") as f:
                snapshots[off] = (p, read_snapshot(f.read(), file=p))
        except KafkaFormatError:
            pass  # reported by verify
    a = _Walk(name, summ, rep, now, opts, cleaner_ck, epochs)
    base_pos = 0
    for seg in pd.segments:
        summ.segment_starts.append((base_pos, seg.base_offset))
        with open_buffer(seg.log) as buf:
            sc = BatchScanner(buf, file=seg.log, base_offset=seg.base_offset)
            for b in sc:
                if not b.crc_valid():
                    break  # damage: reported by verify; what follows is not trustworthy
                if b.magic < 2 and b.count is None:
                    try:
                        resolve_legacy_wrapper(b)
                    except KafkaFormatError:
                        break
                a.snapshot_check(b.base_offset, snapshots)
                a.batch(b, base_pos)
            summ.bytes += len(buf)
        base_pos += os.path.getsize(seg.log)
    a.snapshot_check(None, snapshots)
    a.finish()


class _Walk:
    """The per-partition state of the analysis as batches go by."""

    def __init__(self, name, summ: PartitionSummary, rep: AnalysisReport, now, opts, cleaner_ck, epochs):
        self.name, self.summ, self.rep, self.now, self.opts = name, summ, rep, now, opts
        self.cleaner_ck = cleaner_ck
        self.epochs = [(e["epoch"], e["startOffset"]) for e in epochs]
        self.state = ProducerState()
        self.prev_last = None
        self.prev_ts = None
        self.prev_epoch = None
        self.ts_types = {}
        self.compacted = cleaner_ck is not None and cleaner_ck > 0
        self.producers = {}          # pid -> [epoch, last_seq, max epoch seen]
        self.pending_gaps = []
        self.tl_every = 1

    def add(self, kind, severity, first, last, b, explanation):
        self.rep.findings.append(Finding(kind, severity, self.name, first, last,
                                         b.position if b is not None else None,
                                         b.file if b is not None else None, explanation))

    def batch(self, b, base_pos: int) -> None:
        s = self.summ
        s.batches += 1
        s.records += b.count or 0
        s.codecs[b.compression_name] = s.codecs.get(b.compression_name, 0) + 1
        s.magics[str(b.magic)] = s.magics.get(str(b.magic), 0) + 1
        if s.log_start_offset is None:
            s.log_start_offset = b.base_offset
        s.log_end_offset = b.last_offset + 1
        if b.max_timestamp >= 0:
            s.first_timestamp = b.max_timestamp if s.first_timestamp is None else min(s.first_timestamp, b.max_timestamp)
            s.last_timestamp = b.max_timestamp if s.last_timestamp is None else max(s.last_timestamp, b.max_timestamp)
        if len(s.timeline) < 20 * self.opts.timeline_points:
            s.timeline.append((base_pos + b.position, b.base_offset, b.max_timestamp))
        if b.magic >= 2 and (b.count is not None and b.count < b.last_offset - b.base_offset + 1
                             or b.has_delete_horizon):
            self.compacted = True
        self._offsets(b)
        self._timestamps(b)
        if b.magic >= 2:
            self._producer(b)
            self._transactions(b)
            self._leader_epoch(b)

    # -- offsets ---------------------------------------------------------------------------------
    def _offsets(self, b) -> None:
        if self.prev_last is not None and b.base_offset > self.prev_last + 1:
            self.pending_gaps.append((self.prev_last + 1, b.base_offset - 1, b))
        self.prev_last = b.last_offset if self.prev_last is None else max(self.prev_last, b.last_offset)

    # -- timestamps ------------------------------------------------------------------------------
    def _timestamps(self, b) -> None:
        t = b.timestamp_type
        if t != "NoTimestampType":
            self.ts_types[t] = self.ts_types.get(t, 0) + 1
        ts = b.max_timestamp
        if ts < -1:
            self.add("pre-epoch-timestamp", "warning", b.base_offset, b.last_offset, b,
                     f"max timestamp {ts} lies before 1970 (only -1 means 'no timestamp')")
        elif ts > self.now + self.opts.future_tolerance_ms:
            self.add("far-future-timestamp", "warning", b.base_offset, b.last_offset, b,
                     f"max timestamp {ts} is {(ts - self.now) // 1000} s after now ({self.now})")
        if ts >= 0 and self.prev_ts is not None and ts < self.prev_ts:
            self.add("timestamp-regression", "warning", b.base_offset, b.last_offset, b,
                     f"max timestamp {ts} is {self.prev_ts - ts} ms before the previous batch's {self.prev_ts}")
        if ts >= 0:
            self.prev_ts = ts if self.prev_ts is None else max(self.prev_ts, ts)

    # -- producers -------------------------------------------------------------------------------
    def _producer(self, b) -> None:
        pid = b.producer_id
        if pid < 0:
            return
        p = self.producers.get(pid)
        if p is None:
            self.producers[pid] = [b.producer_epoch, b.last_sequence if not b.is_control else -1, b.producer_epoch]
            return
        epoch, last_seq, max_epoch = p
        if b.producer_epoch < max_epoch:
            kind = "fenced-producer-write" if not b.is_control else "epoch-regression"
            self.add(kind, "warning", b.base_offset, b.last_offset, b,
                     f"producer {pid} wrote with epoch {b.producer_epoch} after epoch {max_epoch} had been seen"
                     + (" (a fenced producer kept writing)" if kind == "fenced-producer-write" else ""))
        if b.is_control:
            p[0], p[2] = b.producer_epoch, max(max_epoch, b.producer_epoch)
            return
        if b.producer_epoch == epoch and b.base_sequence >= 0 and last_seq >= 0:
            expected = (last_seq + 1) & _INT32_MAX
            if b.base_sequence != expected:
                if b.base_sequence <= last_seq and not (last_seq > _INT32_MAX - 1000 and b.base_sequence < 1000):
                    self.add("duplicate-sequence", "warning", b.base_offset, b.last_offset, b,
                             f"producer {pid} epoch {epoch}: sequence {b.base_sequence} again (last was {last_seq})")
                elif not self.compacted:
                    self.add("sequence-gap", "warning", b.base_offset, b.last_offset, b,
                             f"producer {pid} epoch {epoch}: sequence jumps from {last_seq} to {b.base_sequence}")
        p[0], p[1], p[2] = b.producer_epoch, b.last_sequence, max(max_epoch, b.producer_epoch)

    # -- transactions ----------------------------------------------------------------------------
    def _transactions(self, b) -> None:
        if b.is_control and b.producer_id >= 0:
            e = self.state.producers.get(b.producer_id)
            open_txn = e is not None and e.current_txn_first_offset >= 0
            try:
                ctl = b.records()[0].control() if b.count else None
            except KafkaFormatError:
                ctl = None
            if ctl and ctl["type"] in ("ABORT", "COMMIT") and not open_txn and not self.compacted:
                self.add("marker-without-data", "warning", b.base_offset, b.last_offset, b,
                         f"{ctl['type']} marker of producer {b.producer_id} closes no open transaction")
        done = self.state.append(b)
        if done is not None:
            if done.aborted:
                self.summ.transactions["aborted"] += 1
                self.add("aborted-transaction", "info", done.first_offset, done.last_offset, b,
                         f"producer {done.producer_id} aborted the transaction {done.first_offset}..{done.last_offset}")
            else:
                self.summ.transactions["committed"] += 1

    # -- leader epochs ---------------------------------------------------------------------------
    def _leader_epoch(self, b) -> None:
        e = b.partition_leader_epoch
        if e < 0:
            return
        if self.prev_epoch is not None and e < self.prev_epoch:
            self.add("leader-epoch-regression", "warning", b.base_offset, b.last_offset, b,
                     f"partition leader epoch {e} after epoch {self.prev_epoch}")
        self.prev_epoch = e if self.prev_epoch is None else max(self.prev_epoch, e)
        if not self.epochs:
            return
        starts = [s for ep, s in self.epochs if ep == e]
        if not starts:
            if e > self.epochs[-1][0]:
                # the checkpoint is flushed lazily; a newer epoch at the end is normal on a live log
                self.epochs.append((e, b.base_offset))
                return
            self.add("leader-epoch-mismatch", "warning", b.base_offset, b.last_offset, b,
                     f"epoch {e} is not in leader-epoch-checkpoint")
            return
        later = [s for ep, s in self.epochs if ep > e]
        if b.base_offset < starts[0] or (later and b.base_offset >= min(later)):
            self.add("leader-epoch-mismatch", "warning", b.base_offset, b.last_offset, b,
                     f"batch of epoch {e} at offset {b.base_offset} lies outside the checkpoint's range for that epoch "
                     f"[{starts[0]}, {min(later) if later else 'end'})")

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot_check(self, next_offset, snapshots: dict) -> None:
        """Compare each snapshot at offset X with the state replayed up to X."""
        for off in sorted(list(snapshots)):
            if next_offset is not None and off > next_offset:
                break
            path, entries = snapshots.pop(off)
            want = {pid: (e.epoch, e.last_sequence, e.last_offset) for pid, e in self.state.producers.items()}
            have = {e.producer_id: (e.epoch, e.last_sequence, e.last_offset) for e in entries}
            diffs = [pid for pid in set(want) | set(have) if want.get(pid) != have.get(pid)]
            # snapshots drop expired producers: only a disagreement on a producer the snapshot has counts
            diffs = [pid for pid in diffs if pid in have]
            if diffs:
                pid = sorted(diffs)[0]
                self.rep.findings.append(Finding(
                    "snapshot-mismatch", "warning", self.name, off, off, None, path,
                    f"snapshot at {off} says producer {pid} is {have.get(pid)} (epoch, last sequence, last offset) "
                    f"but the log says {want.get(pid)}" + (f"; {len(diffs) - 1} more" if len(diffs) > 1 else "")))

    # -- end of partition -----------------------------------------------------------------------
    def finish(self) -> None:
        s = self.summ
        for first, last, b in self.pending_gaps:
            explained = self.compacted or (self.cleaner_ck is not None and last < self.cleaner_ck)
            if not explained:
                self.add("offset-gap", "warning", first, last, b,
                         f"offsets {first}..{last} are missing and the log shows no sign of compaction")
        if len(self.ts_types) > 1:
            self.rep.findings.append(Finding(
                "timestamp-type-mixed", "warning", self.name, s.log_start_offset, (s.log_end_offset or 1) - 1, None,
                None, "batches mix " + " and ".join(f"{k} ({v})" for k, v in sorted(self.ts_types.items()))))
        for first, pid in sorted(self.state.ongoing.items()):
            s.transactions["open"] += 1
            self.rep.findings.append(Finding(
                "hanging-transaction", "warning", self.name, first, (s.log_end_offset or first + 1) - 1, None, None,
                f"producer {pid}'s transaction from offset {first} has no marker: it pins the last stable offset "
                f"at {min(self.state.ongoing)}"))
        s.last_stable_offset = min(self.state.ongoing) if self.state.ongoing else s.log_end_offset
        s.producers = len(self.state.producers)
        if len(self.epochs) > 1:
            ends = ", ".join(f"epoch {e}: [{start}, {nxt})" for (e, start), (_n, nxt) in zip(self.epochs, self.epochs[1:]))
            self.rep.findings.append(Finding(
                "leader-epoch-boundaries", "info", self.name, self.epochs[0][1], (s.log_end_offset or 1) - 1, None,
                None, f"a replica diverging inside an epoch truncates to that epoch's end offset: {ends}"))
        step = max(1, len(s.timeline) // self.opts.timeline_points)
        s.timeline = s.timeline[::step]
