"""``kfx analyze``: what happened in a partition -- findings located by partition, offsets and bytes.

One pass over each partition's batches (after :func:`kafkaforensics.inspect.verify.verify_partition`, whose
problems become ``error`` findings) looks for what is well-formed but suspicious:

* offset gaps that compaction does not explain, overlapping segments (from verify);
* timestamps: regressions, far-future and pre-epoch values, LogAppendTime/CreateTime mixing;
* producers: sequence gaps, duplicate sequences, epoch regressions, a fenced producer still writing
  (an epoch bump by each end marker -- transactions v2, KIP-890 -- is normal);
* transactions: hanging (no marker: they pin the last stable offset), aborted, markers without data;
* leader epochs: batches whose epoch disagrees with leader-epoch-checkpoint, epoch regressions, and
  the truncation points the checkpoint implies;
* producer snapshots that disagree with the state replayed from the log;
* when the log dir holds the schema registry's ``_schemas`` topic: each data topic's schema timeline
  and its findings (:mod:`.schema_timeline`).

Severities: ``error`` (damage), ``warning`` (suspicious), ``info`` (worth knowing: aborted
transactions, epoch boundaries).
"""
from __future__ import annotations

import os
import time as _time
from dataclasses import asdict, dataclass, field, fields, replace

from specs.layout import INT32_MAX

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import LogDir, Partition, SegmentFiles, find_partitions, parse_partition_dir_name
from kafkaforensics.log.producer_state import ProducerState, read_snapshot
from kafkaforensics.log.remote import RemoteTier
from kafkaforensics.log.segment import (INDEX_SUFFIXES, LOG, SNAPSHOT, file_name, offset_from_name,
                                        sibling)
from kafkaforensics.log.tiered import remote_segments
from kafkaforensics.log.tier_reconcile import check_partition
from kafkaforensics.inspect.dump import TOPIC_DECODERS, decode_record
from kafkaforensics.inspect.schema_timeline import SchemaTimeline, schema_remedy
from kafkaforensics.log.schema_topic import SCHEMAS_TOPIC, load_schema_store
from kafkaforensics.records.schema_decode import SchemaDecoder
from kafkaforensics.inspect.both_tiers import remote_remedy
from kafkaforensics.inspect.remedies import problem_remedy, remedy_for
from kafkaforensics.inspect.verify import (TAIL_KINDS, WARNING_KINDS, VerifyReport, verify_identity,
                                           verify_log_dir_files, verify_partition, verify_partition_files)
from kafkaforensics.log.paths import (FILE, LOG_DIR, PARTITION_DIR, PathUsageError, classify_for, live_log_dirs,
                                      live_note)
from kafkaforensics.log.batch_search import scan_file
from kafkaforensics.records import int64


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
    remedy: str = ""   # one line: what to do about it (filled in per partition, see remedy_for)
    #: the problems this one is the root cause of (verify's grouping: fixed with it, its remedy theirs)
    caused: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        return {"kind": d["kind"], "severity": d["severity"], "partition": d["partition"],
                "offsetRange": [d["first_offset"], d["last_offset"]], "position": d["position"],
                "file": d["file"], "explanation": d["explanation"], "remedy": d["remedy"],
                **({"caused": [p.to_json() for p in self.caused]} if self.caused else {})}

    def offsets_text(self) -> str:
        """"offsets 3..7", "offset 3", or "" when the finding names no offset (never "None")."""
        a, b = self.first_offset, self.last_offset
        if a is None and b is None:
            return ""
        if a is None or b is None or a == b:
            return f"offset {a if a is not None else b}"
        return f"offsets {a}..{b}"


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
    remote_segments: list | None = None   # tiered storage: what __remote_log_metadata says exists remotely
    #: with a remote tier (``--remote``): {remoteLogStartOffset, localLogStartOffset, remoteSegments}
    tiers: dict | None = None
    #: an internal topic's records by what they are (decoded by the dir's name: offset_commit, TopicRecord...)
    record_types: dict | None = None
    timeline: list = field(default_factory=list)   # (byte position, offset, max timestamp)
    segment_starts: list = field(default_factory=list)
    #: per segment: file, base offset, byte start in the partition, size, valid bytes, batches, offsets,
    #: timestamps, codecs, and either its batch rows or (above ``batch_rows`` batches) byte-range buckets
    segment_info: list = field(default_factory=list)
    #: transactions: producer, first/last offset, byte positions, timestamps, state (committed/aborted/open)
    txns: list = field(default_factory=list)
    #: producer id -> [first offset, last offset, batches, first timestamp, last timestamp]
    producer_spans: dict = field(default_factory=dict)
    #: the schema timeline of a data topic's values (framed/unframed counts, spans of schema ids and
    #: versions over offsets and times) when schemas are known; None otherwise
    schemas: dict | None = None

    def to_json(self) -> dict:
        skip = ("timeline", "segment_starts", "segment_info", "txns", "producer_spans")  # the report's material
        return {_camel(f.name): getattr(self, f.name) for f in fields(self)
                if f.name not in skip and not (f.name == "schemas" and self.schemas is None)}


def _camel(s: str) -> str:
    head, *rest = s.split("_")
    return head + "".join(w.title() for w in rest)


@dataclass
class AnalysisReport:
    partitions: list[PartitionSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rows_kept: int = 0   # batch rows held for the report, against AnalyzeOptions.max_rows

    def to_json(self) -> dict:
        return {"partitions": [p.to_json() for p in self.partitions],
                "findings": [f.to_json() for f in self.findings],
                "counts": {s: sum(1 for f in self.findings if f.severity == s) for s in ("error", "warning", "info")}}

    @property
    def problems(self) -> list[Finding]:
        """What makes ``kfx analyze`` exit 1: errors and warnings, but not what Kafka repairs by itself
        at start-up (verify's WARNING_KINDS: a missing index, checkpoints ahead of a copied log)."""
        return [f for f in self.findings if f.severity in ("error", "warning") and f.kind not in WARNING_KINDS]

    @property
    def partitions_with_data(self) -> list[PartitionSummary]:
        return [p for p in self.partitions if p.batches]


@dataclass
class AnalyzeOptions:
    now: int | None = None
    future_tolerance_ms: int = 3_600_000   # log.message.timestamp.after.max.ms's default
    timeline_points: int = 2000
    batch_rows: int = 2000          # a segment with more batches is shown as byte-range buckets
    max_rows: int = 6000            # batch rows kept in the whole report (later segments: buckets only)
    buckets: int = 40               # ... this many per segment
    max_txns: int = 2000            # transactions kept for the report (open ones always)
    #: a SchemaDecoder for the schema timeline; None: the paths' own ``_schemas`` topic, if any
    schemas: SchemaDecoder | None = None
    #: a remote tier: each partition read over both tiers (:mod:`~kafkaforensics.log.unified_log`)
    #: and its tiers reconciled
    remote: RemoteTier | None = None


def analyze(paths, opts: AnalyzeOptions | None = None) -> AnalysisReport:
    """Analyze log dirs, partition dirs or ``.log`` segments (one meaning for every path:
    :func:`kafkaforensics.log.paths.classify_for`; anything else raises its ``PathUsageError``).
    A log dir's own files (checkpoints, clean-shutdown marker, identity, KRaft files) are checked by
    verify's checks, so both commands say the same of every file."""
    kpaths = classify_for(paths, "analyze", file_kinds=("log",),
                          what="a log dir, a partition dir or a .log segment")
    opts = opts or AnalyzeOptions()
    now = opts.now if opts.now is not None else int(_time.time() * 1000)
    rep = AnalysisReport()
    if opts.schemas is None:
        store = load_schema_store([kp.path for kp in kpaths])
        opts = replace(opts, schemas=SchemaDecoder(store) if store is not None else None)
    live = live_log_dirs(kpaths)
    for d, pid in live.items():
        rep.findings.append(Finding("live-log-dir", "info", os.path.basename(d), None, None, None, d, live_note(d, pid)))
    for kp in kpaths:
        is_live = kp.log_dir in live
        if kp.kind == LOG_DIR:
            parts = find_partitions(kp.path)
            vr = VerifyReport()
            ckpts = verify_log_dir_files(kp.path, parts, vr)
            _verify_findings(vr, os.path.basename(os.path.normpath(kp.path)), kp.path, rep)
            for pd in parts:  # a -delete/-future/-stray copy is analysed under its own name, without checkpoints
                _analyze_partition(pd, ckpts if pd.dir_state == "live" else {}, now, opts, rep, live=is_live)
            _tiered(kp.path, [pd for pd in parts if pd.dir_state == "live"], rep)
        else:
            pdir = kp.partition_dir
            if pdir is None:  # (classify_for gives a log dir, a partition dir or a segment in one)
                raise PathUsageError(f"{kp.path}: kfx analyze reads a log dir, a partition dir or a segment in one")
            pd = Partition.scan(pdir)
            ckpts = {}  # a malformed checkpoint is the log dir's analysis's to report
            if kp.log_dir is not None and pd.dir_state == "live":
                ckpts = LogDir(kp.log_dir).checkpoints()[0]
            if kp.kind == FILE:  # that segment alone: no snapshot or epoch file applies to a part
                base = offset_from_name(kp.path)
                if base is None or os.path.basename(kp.path) != file_name(base, LOG):
                    raise PathUsageError(f"{kp.path}: kfx analyze reads a segment by Kafka's name for it, "
                                         "<base offset, 20 digits>.log (kfx verify and kfx dump read any name)")
                pd = replace(pd, segments=[SegmentFiles(base, pdir)], snapshots=[], leftovers=[], orphan_indexes=[])
            _analyze_partition(pd, ckpts, now, opts, rep, live=is_live, segment_only=kp.kind == FILE)
            if kp.kind == PARTITION_DIR:
                vr = VerifyReport()
                verify_partition_files(pd, vr)
                _verify_findings(vr, pd.name, pd.path, rep)
            if kp.kind == PARTITION_DIR and kp.log_dir is not None:
                _tiered(kp.log_dir, [pd], rep)
    dirs = [kp.path for kp in kpaths if kp.kind == LOG_DIR]
    if dirs:
        vr = VerifyReport()
        verify_identity(dirs, vr)
        _verify_findings(vr, None, None, rep)
    return rep


def _verify_findings(vr: VerifyReport, name: str | None, path: str | None, rep: AnalysisReport) -> None:
    """verify's problems, warnings and notes as findings (error, warning, info), with their remedies
    (a preallocated index tail, normal on an active segment, is left out)."""
    for sev, items in (("error", vr.problems), ("warning", vr.warnings), ("info", vr.notes)):
        for p in items:
            if p.kind == "preallocated-index":
                continue
            where = name
            if where is None:  # named by the dir holding the file: its partition dir, else its log dir
                where = os.path.basename(os.path.dirname(os.path.abspath(p.file))) if p.file else ""
            f = Finding(p.kind, sev, where, p.offset, p.offset, p.position, p.file, p.detail, caused=p.caused)
            if sev == "info":
                f.remedy = "nothing to do"
            else:
                f.remedy = problem_remedy(p) if path is None else remedy_for(f, path)
            rep.findings.append(f)


def _tiered(log_dir: str, parts, rep: AnalysisReport) -> None:
    """Attach the remote segments __remote_log_metadata (in the same log dir) lists for each partition,
    and flag offsets held by neither tier: between the last copied remote segment and where the local
    log begins."""
    remote = remote_segments(log_dir)
    if not remote:
        return
    by_name = {s.path: s for s in rep.partitions}
    for pd in parts:
        r = remote.get((pd.topic, pd.partition))
        summ = by_name.get(pd.path)
        if r is None or summ is None:
            continue
        summ.remote_segments = r["segments"]
        done = [e for e in r["segments"] if e["state"] == "COPY_SEGMENT_FINISHED"]
        if done and summ.log_start_offset is not None:
            remote_end = max(e["endOffset"] for e in done)
            if summ.log_start_offset > remote_end + 1:
                rep.findings.append(Finding("tiered-gap", "warning", summ.partition, remote_end + 1,
                                            summ.log_start_offset - 1, None, None,
                                            f"remote segments end at {remote_end} but the local log begins at "
                                            f"{summ.log_start_offset}: offsets {remote_end + 1}.."
                                            f"{summ.log_start_offset - 1} are in neither tier"))


def _analyze_partition(pd: Partition, ckpts: dict, now: int, opts: AnalyzeOptions, rep: AnalysisReport, *,
                       live: bool = False, segment_only: bool = False) -> None:
    name = pd.name if not segment_only else os.path.join(pd.name, os.path.basename(pd.segments[0].log))
    vr = VerifyReport()
    # one segment of a partition is not held to the partition's checkpoints (its log end is not theirs);
    # they still say where the log starts and how far the cleaner went
    verify_partition(pd, vr, checkpoints=ckpts if not segment_only else None, live=live, epochs=not segment_only)
    walked, tiers = _over_tiers(pd, opts, vr) if not segment_only else (pd, None)
    first_finding = len(rep.findings)
    _verify_findings(vr, name, pd.path, rep)
    summ = PartitionSummary(name, pd.path, segments=len(walked.segments), tiers=tiers)
    rep.partitions.append(summ)
    log_start = ckpts.get(LogDir.LOG_START_OFFSET, {}).get((pd.topic, pd.partition)) if pd.topic else None
    if walked.segments:
        log_start = max(log_start or 0, walked.segments[0].base_offset)
    cleaner_ck = ckpts.get(LogDir.CLEANER_OFFSET, {}).get((pd.topic, pd.partition)) if pd.topic else None
    try:
        epochs = (LeaderEpochCache.read(pd.path) if not segment_only else None) or LeaderEpochCache()
    except KafkaFormatError:
        epochs = LeaderEpochCache()
    snapshots = {}
    for off in pd.snapshots:
        p = os.path.join(pd.path, file_name(off, SNAPSHOT))
        try:
            with open(p, "rb") as f:
                snapshots[off] = (p, read_snapshot(f.read(), file=p))
        except KafkaFormatError:
            pass  # reported by verify
    # a batch whose CRC fails (reported by verify) is stepped over, as salvage steps over it: the
    # valid batches after it are analysed; where framing breaks, the segment's walk ends and the
    # valid batches past it are found as salvage finds them and reported
    a = _PartitionAnalysis(name, summ, rep, now, opts, cleaner_ck, epochs, ProducerState())
    a.path = pd.path
    a.log_start = log_start
    a.decoder = TOPIC_DECODERS.get(pd.topic) if pd.topic else None
    if a.decoder is not None:
        summ.record_types = {}
    a.damaged = [p for p in vr.problems if p.kind == "crc-mismatch" and p.offset is not None]
    if opts.schemas is not None and pd.topic and pd.topic != SCHEMAS_TOPIC and a.decoder is None:
        a.schemas = SchemaTimeline(opts.schemas, pd.topic)
    first_finding = len(rep.findings) - len(vr.problems)
    base_pos = 0
    for seg, batches in walked.walk(damage="skip", strict_legacy=True, state=a.state,
                                before_apply=lambda b: a.snapshot_check(b.base_offset, snapshots)):
        summ.segment_starts.append((base_pos, seg.base_offset))
        a.segment(seg.log, seg.base_offset, base_pos, seg.size)
        for b, done in batches:
            a.batch(b, base_pos, done)
        summ.segment_info[-1]["validBytes"] = (a.seg_end if a.seg_end is not None else 0)
        if seg.damaged is not None or seg.stop is not None:
            a.after_damage(seg)
        summ.bytes += seg.size
        base_pos += seg.size
    a.snapshot_check(None, snapshots)
    a.finish()
    for finding in rep.findings[first_finding:]:
        if not finding.remedy:
            finding.remedy = ((opts.remote is not None
                               and remote_remedy(Problem(finding.file, finding.position, finding.first_offset,
                                                         finding.kind, finding.explanation), opts.remote))
                              or remedy_for(finding, pd.path))


def _over_tiers(pd: Partition, opts: AnalyzeOptions, vr: VerifyReport) -> tuple[Partition, dict | None]:
    """The partition to walk (over both tiers with ``opts.remote``) and its tiers' summary; the
    tiers' reconciliation problems (retention judged at ``--now``, else by the log's own clock) go
    into ``vr``."""
    if opts.remote is None or pd.dir_state != "live" or pd.topic_partition is None:
        return pd, None
    ul, problems = check_partition(pd, opts.remote, opts.now)
    vr.problems += problems
    return ul.partition(), {"remoteLogStartOffset": ul.remote_log_start, "localLogStartOffset": ul.local_log_start,
                            "remoteSegments": len(ul.remote)}


class _PartitionAnalysis:
    """The per-partition state of the analysis as batches go by."""

    def __init__(self, name, summ: PartitionSummary, rep: AnalysisReport, now, opts, cleaner_ck,
                 epochs: LeaderEpochCache, state: ProducerState):
        self.name, self.summ, self.rep, self.now, self.opts = name, summ, rep, now, opts
        self.cleaner_ck = cleaner_ck
        self.epochs = epochs
        self.state = state           # applied by the walk (Partition.walk) before each batch comes
        self.prev_last = None
        self.prev_ts = None
        self.prev_epoch = None
        self.ts_types: dict[str, int] = {}
        self.compacted = cleaner_ck is not None and cleaner_ck > 0
        self.producers: dict[int, list[int]] = {}  # pid -> [epoch, last_seq, max epoch seen]
        self.pending_gaps: list = []
        self.seg_end: int | None = None
        self.path = name
        self.open_txn: dict[int, dict] = {}  # pid -> the transaction being written (a dict of summ.txns' form)
        self.log_start: int | None = None        # the partition's log start offset (checkpoint, first segment)
        self.decoder: str | None = None  # an internal topic's decoder (dump's, by the dir's name)
        self.damaged: list[Problem] = []  # verify's crc-mismatch problems: their batches are stepped over
        self.schemas: SchemaTimeline | None = None  # a data topic's, when schemas are known

    def add(self, kind, severity, first, last, b, explanation):
        self.rep.findings.append(Finding(kind, severity, self.name, first, last,
                                         b.position if b is not None else None,
                                         b.file if b is not None else None, explanation))

    def segment(self, log: str, base_offset: int, start: int, size: int) -> None:
        self.summ.segment_info.append({"file": log, "baseOffset": base_offset, "start": start, "size": size,
                                       "validBytes": 0, "batches": 0, "records": 0, "firstOffset": None,
                                       "lastOffset": None, "firstTimestamp": None, "lastTimestamp": None,
                                       "codecs": {}, "rows": [], "buckets": None})
        self.seg_end = 0

    def _row(self, b) -> None:
        """The batch's row in its segment's table, or its share of a byte-range bucket."""
        g = self.summ.segment_info[-1] if self.summ.segment_info else None
        if g is None:
            return
        g["batches"] += 1
        g["records"] += b.count or 0
        g["codecs"][b.compression_name] = g["codecs"].get(b.compression_name, 0) + 1
        if g["firstOffset"] is None:
            g["firstOffset"] = b.base_offset
        g["lastOffset"] = b.last_offset
        if b.max_timestamp >= 0:
            g["firstTimestamp"] = b.max_timestamp if g["firstTimestamp"] is None else g["firstTimestamp"]
            g["lastTimestamp"] = b.max_timestamp if g["lastTimestamp"] is None else max(g["lastTimestamp"], b.max_timestamp)
        self.seg_end = b.position + b.size
        row = (b.position, b.size, b.base_offset, b.last_offset, b.count, b.compression_name, b.max_timestamp,
               b.producer_id if b.magic >= 2 else -1, ("control " if b.is_control else "")
               + ("txn" if b.magic >= 2 and b.is_transactional else ""), b.magic)
        if g["buckets"] is None:
            g["rows"].append(row)
            self.rep.rows_kept += 1
            if len(g["rows"]) > self.opts.batch_rows or self.rep.rows_kept > self.opts.max_rows:
                g["buckets"] = [None] * self.opts.buckets
                rows, g["rows"] = g["rows"], []
                self.rep.rows_kept -= len(rows)
                for r in rows:
                    self._bucket(g, r)
        else:
            self._bucket(g, row)

    def _bucket(self, g, r) -> None:
        k = min(self.opts.buckets - 1, r[0] * self.opts.buckets // max(1, g["size"]))
        bk = g["buckets"][k]
        if bk is None:  # [first byte, end byte, first offset, last offset, batches, records, codecs]
            g["buckets"][k] = [r[0], r[0] + r[1], r[2], r[3], 1, r[4] or 0, {r[5]}]
        else:
            bk[1], bk[3], bk[4], bk[5] = r[0] + r[1], max(bk[3], r[3]), bk[4] + 1, bk[5] + (r[4] or 0)
            bk[6].add(r[5])

    def _txn_spans(self, b) -> None:
        """Transactions from their first batch to their marker, and producers' offset spans."""
        if b.magic < 2 or b.producer_id < 0:
            return
        pid = b.producer_id
        sp = self.summ.producer_spans.get(pid)
        ts = b.max_timestamp if b.max_timestamp >= 0 else None
        if sp is None:
            self.summ.producer_spans[pid] = [b.base_offset, b.last_offset, 1, ts, ts]
        else:
            sp[1], sp[2] = b.last_offset, sp[2] + 1
            if ts is not None:
                sp[3] = ts if sp[3] is None else sp[3]
                sp[4] = ts if sp[4] is None else max(sp[4], ts)
        if b.is_transactional and not b.is_control and pid not in self.open_txn:
            self.open_txn[pid] = {"producerId": pid, "firstOffset": b.base_offset, "lastOffset": b.last_offset,
                                  "file": b.file, "position": b.position, "firstTimestamp": ts, "endTimestamp": ts,
                                  "markerFile": None, "markerPosition": None, "state": "open"}
        elif pid in self.open_txn:
            t = self.open_txn[pid]
            t["lastOffset"] = b.last_offset
            if ts is not None:
                t["endTimestamp"] = ts
            if b.is_control:
                del self.open_txn[pid]
                t["markerFile"], t["markerPosition"] = b.file, b.position
                try:
                    ctl = b.records()[0].control() if b.count else None
                except KafkaFormatError:
                    ctl = None
                t["state"] = "aborted" if ctl and ctl["type"] == "ABORT" else "committed"
                if len(self.summ.txns) < self.opts.max_txns:
                    self.summ.txns.append(t)

    def _decode(self, b) -> None:
        """An internal topic's records, decoded as its coordinator reads them (by the dir's name): counted
        by type, and a record that does not decode is a finding (the coordinator could not load it)."""
        decoder, types = self.decoder, self.summ.record_types  # both set for an internal topic
        if not b.crc_valid() or decoder is None or types is None:
            return  # damage: verify's
        try:
            recs = b.records()
        except KafkaFormatError:
            return
        for r in recs:
            d = decode_record(decoder, b, r)
            if "error" in d:
                self.add("undecodable-record", "warning", r.offset, r.offset, b,
                         f"a {self.name.rsplit('-', 1)[0]} record that does not decode ({d['error']})")
                continue
            k, v = d.get("key") or {}, d.get("value")
            label = ("control" if "control" in d else k.get("kind") or (v or {}).get("type") or k.get("type")
                     or "record")
            types[label] = types.get(label, 0) + 1

    def batch(self, b, base_pos: int, done=None) -> None:
        """One batch, already applied to the producer state (``done``: the transaction it completes)."""
        s = self.summ
        s.batches += 1
        if self.decoder is not None:
            self._decode(b)
        if self.schemas is not None:
            self.schemas.batch(b)
        self._row(b)
        self._txn_spans(b)
        s.records += b.count or 0
        s.codecs[b.compression_name] = s.codecs.get(b.compression_name, 0) + 1
        s.magics[str(b.magic)] = s.magics.get(str(b.magic), 0) + 1
        if s.log_start_offset is None:
            s.log_start_offset = b.base_offset
        s.log_end_offset = b.next_offset
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
            self._transactions(b, done)
            self._leader_epoch(b)

    def after_damage(self, seg) -> None:
        """The valid batches of a damaged segment after its first damage: those the walk went on to
        (past a bad CRC) and those past where framing broke (found as salvage finds them); Kafka's
        recovery would drop them all from the first damage on."""
        start = seg.damaged.position if seg.damaged is not None else seg.valid_bytes
        at = seg.damaged.base_offset if seg.damaged is not None else seg.next_offset
        batches = records = 0
        first = last = None
        with seg.files.buffer() as buf:   # through its byte source: a remote tier's segment too
            tail = memoryview(buf)[start:]
            try:
                for b, _gap in scan_file(tail, seg.path):
                    if b is not None:
                        batches += 1
                        records += max(0, min(b.count or 0, b.last_offset - b.base_offset + 1))
                        first = b.base_offset if first is None else first
                        last = b.last_offset
            finally:
                tail.release()
        if batches:
            self.rep.findings.append(Finding(
                "valid-after-damage", "warning", self.name, first, last, start, seg.path,
                f"{batches} valid batches ({records} records, offsets {first}..{last}) follow the damage at byte "
                f"{start} (offset {at}) of this segment: Kafka's recovery would drop them with it"))

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
            if b.producer_epoch != epoch:
                # transactions v2 (KIP-890): the coordinator writes each end marker with the epoch
                # bumped, and the producer's next transaction starts at sequence 0 under it
                p[1] = -1
            p[0], p[2] = b.producer_epoch, max(max_epoch, b.producer_epoch)
            return
        if b.producer_epoch == epoch and b.base_sequence >= 0 and last_seq >= 0:
            expected = int64.increment_sequence(last_seq, 1)  # Kafka's: wraps at Integer.MAX_VALUE to 0
            if b.base_sequence != expected:
                if b.base_sequence <= last_seq and not (last_seq > INT32_MAX - 1000 and b.base_sequence < 1000):
                    self.add("duplicate-sequence", "warning", b.base_offset, b.last_offset, b,
                             f"producer {pid} epoch {epoch}: sequence {b.base_sequence} again (last was {last_seq})")
                elif not self.compacted:
                    self.add("sequence-gap", "warning", b.base_offset, b.last_offset, b,
                             f"producer {pid} epoch {epoch}: sequence jumps from {last_seq} to {b.base_sequence}")
        p[0], p[1], p[2] = b.producer_epoch, b.last_sequence, max(max_epoch, b.producer_epoch)

    # -- transactions ----------------------------------------------------------------------------
    def _transactions(self, b, done) -> None:
        if b.is_control and b.producer_id >= 0:
            open_txn = done is not None  # the marker closed a transaction of its producer
            try:
                ctl = b.records()[0].control() if b.count else None
            except KafkaFormatError:
                ctl = None
            if ctl and ctl["type"] in ("ABORT", "COMMIT") and not open_txn and not self.compacted:
                self.add("marker-without-data", "warning", b.base_offset, b.last_offset, b,
                         f"{ctl['type']} marker of producer {b.producer_id} closes no open transaction")
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
        if self.log_start is not None and b.last_offset < self.log_start:
            return  # below the log start (DeleteRecords, retention): the cache was truncated from the start
        starts = [s for ep, s in self.epochs if ep == e]
        if not starts:
            if e > self.epochs.latest_epoch:
                # the checkpoint is flushed lazily; a newer epoch at the end is normal on a live log
                self.epochs.assign_newer(e, b.base_offset)
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
            # snapshots drop expired producers: only a disagreement on a producer the snapshot has counts;
            # and Kafka keeps a producer's state until producer.id.expiration.ms, after retention or
            # DeleteRecords removed its batches: an entry whose last offset is below the log start is normal
            below = {e.producer_id for e in entries if self.log_start is not None and e.last_offset < self.log_start}
            diffs = [pid for pid in diffs if pid in have and not (pid not in want and pid in below)]
            if diffs:
                pid = sorted(diffs)[0]
                self.rep.findings.append(Finding(
                    "snapshot-mismatch", "warning", self.name, off, off, None, path,
                    f"snapshot at {off} says producer {pid} is {have.get(pid)} (epoch, last sequence, last offset) "
                    f"but the log says {want.get(pid)}" + (f"; {len(diffs) - 1} more" if len(diffs) > 1 else "")))

    # -- end of partition -----------------------------------------------------------------------
    def finish(self) -> None:
        s = self.summ
        if self.schemas is not None:
            first = len(self.rep.findings)
            s.schemas = self.schemas.finish(self.add)
            for f in self.rep.findings[first:]:
                f.remedy = schema_remedy(f.kind, self.path, f.first_offset)
        for first, last, b in self.pending_gaps:
            explained = self.compacted or (self.cleaner_ck is not None and last < self.cleaner_ck) or any(
                first <= p.offset <= last for p in self.damaged)  # the offsets of a batch whose CRC fails
            if not explained:
                self.add("offset-gap", "warning", first, last, b,
                         f"offsets {first}..{last} are missing and the log shows no sign of compaction")
        if len(self.ts_types) > 1:
            self.rep.findings.append(Finding(
                "timestamp-type-mixed", "warning", self.name, s.log_start_offset, (s.log_end_offset or 1) - 1, None,
                None, "batches mix " + " and ".join(f"{k} ({v})" for k, v in sorted(self.ts_types.items()))))
        for first, pid in sorted(self.state.ongoing.items()):
            s.transactions["open"] += 1
            t = self.open_txn.get(pid)
            if t is not None:
                s.txns.append(t)
            f = Finding(
                "hanging-transaction", "warning", self.name, first, (s.log_end_offset or first + 1) - 1,
                t["position"] if t else None, t["file"] if t else None,
                f"producer {pid}'s transaction from offset {first} has no marker: it pins the last stable offset "
                f"at {min(self.state.ongoing)}, so read_committed consumers stop there")
            e = self.state.producers[pid]
            f.remedy = remedy_for(f, self.path, (pid, e.epoch, e.coordinator_epoch))
            self.rep.findings.append(f)
        s.last_stable_offset = min(self.state.ongoing) if self.state.ongoing else s.log_end_offset
        s.producers = len(self.state.producers)
        if len(self.epochs) > 1:
            es = self.epochs.entries
            ends = ", ".join(f"epoch {e}: [{start}, {nxt})" for (e, start), (_n, nxt) in zip(es, es[1:]))
            self.rep.findings.append(Finding(
                "leader-epoch-boundaries", "info", self.name, es[0][1], (s.log_end_offset or 1) - 1, None,
                None, f"a replica diverging inside an epoch truncates to that epoch's end offset: {ends}"))
        step = max(1, len(s.timeline) // self.opts.timeline_points)
        s.timeline = s.timeline[::step]
