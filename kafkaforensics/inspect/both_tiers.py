"""``kfx verify --remote`` and ``kfx dump --remote``: each partition as Kafka's UnifiedLog reads it --
its remote segments below the local log start, then its local ones -- and then the tier's partitions no
path holds.  Verify walks each remote segment through its chunks as :mod:`.verify` walks a local
segment (framing, CRCs, offsets, indexes); a damaged manifest, chunk or index object is one located
problem (object key, chunk, byte); a data key no ``--key-file`` opens is one problem for all the
segments it wraps.  Dump decodes them as :mod:`.dump` does a local file.  Kept apart from
:mod:`.verify` and :mod:`.dump` so that a line without ``--remote`` loads no tier reader (the CLI
reaches this module through cli/heavy.py)."""
from __future__ import annotations

import json
from dataclasses import replace

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.inspect.dump import TOPIC_DECODERS, DumpOptions, DumpResult, dump_file, dump_segment, start
from kafkaforensics.inspect.verify import VerifyReport, after_segment, group_caused, verify, verify_segment
from kafkaforensics.log.partition import Partition, find_partitions
from kafkaforensics.log.paths import FILE, LOG_DIR, PARTITION_DIR, classify, log_dir_files, partition_dirs, partition_files
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import SegmentSummary
from kafkaforensics.log.remote import RemoteCopy, RemoteTier
from kafkaforensics.log.tier_reconcile import check_partition
from kafkaforensics.inspect.remedies import REMOTE_REMEDIES, TIER_REMEDIES
from kafkaforensics.log.remote.unified import LOCAL, REMOTE, local_view, remote_below

#: the problem kinds a remote tier's objects give (beside a segment walk's own)
REMOTE_KINDS = ("remote-manifest", "remote-chunk", "remote-index", "remote-key", "remote-tier")


def verify_tiered(paths, tier: RemoteTier, now: int | None = None, **kw) -> VerifyReport:
    """:func:`~.verify.verify` of ``paths`` (none: the tier alone), each live partition's tiers
    reconciled (:func:`~kafkaforensics.log.tier_reconcile.check_partition`: retention judged at ``now``,
    epoch ms, else by the partition's own newest timestamp), then the tier's partitions below each local
    log start; every partition row says its tier."""
    def reconcile(pd: Partition) -> list[Problem]:
        # a remote object that cannot be read is verify_remote's to report (below): the tiers' findings only
        return [p for p in check_partition(pd, tier, now)[1] if p.kind.startswith("tier-")]

    rep = verify(paths, reconcile=reconcile, **kw)
    for row in rep.partitions:
        row.setdefault("tier", LOCAL)
    verify_remote(tier, rep, local_starts(paths), progress=kw.get("progress"),
                  max_batch_bytes=kw.get("max_batch_bytes"))
    return rep


def local_starts(paths) -> dict[tuple[str, int], tuple[int | None, str | None]]:
    """(topic, partition) -> (local log start, topic id) of the live partitions ``paths`` name
    (:func:`~kafkaforensics.log.remote.unified.local_view`)."""
    out: dict[tuple[str, int], tuple[int | None, str | None]] = {}
    for p in paths:
        kp = classify(p)
        parts = find_partitions(kp.path) if kp.kind == LOG_DIR else [Partition.scan(kp.path)] \
            if kp.kind == PARTITION_DIR else []
        for pd in parts:
            if pd.topic is not None and pd.partition is not None and pd.dir_state == "live":
                out[(pd.topic, pd.partition)] = local_view(pd)
    return out


def verify_remote(tier: RemoteTier, rep: VerifyReport, starts: dict, *, progress=None, max_batch_bytes=None) -> None:
    """Every partition of the tier: its segments below the local log start (all of them when no path
    holds the partition) verified into ``rep``, one row each partition with ``tier`` remote."""
    keys: dict = {}
    for topic, partition in tier.partitions():
        segs = remote_below(tier, topic, partition, *starts.get((topic, partition), (None, None)))
        state, prev, summaries = ProducerState(), None, []
        for rs in segs:
            s = _verify_remote_segment(rs, rep, state, keys, progress=progress, max_batch_bytes=max_batch_bytes)
            if s is None:
                continue
            summaries.append(s)
            prev = after_segment(rep, prev, s, rs.uri, rs.base_offset, "remote segment")
        rep.partitions.append(_row(tier, topic, partition, segs, summaries))
    for problem, count in keys.values():
        if count > 1:
            problem.detail += f" ({count} segments)"


def _row(tier: RemoteTier, topic: str, partition: int, segs: list, summaries: list[SegmentSummary]) -> dict:
    """The partition's remote row of the report."""
    first = next((s.first_offset for s in summaries if s.first_offset is not None), None)
    end = next((s.next_offset for s in reversed(summaries) if s.next_offset is not None), None)
    return {"partition": f"{topic}-{partition}", "tier": REMOTE, "path": tier.uri, "layout": tier.layout,
            "topicId": tier.topic_id(topic), "segments": len(segs),
            "logStartOffset": first if first is not None else (segs[0].base_offset if segs else 0),
            "logEndOffset": end if end is not None else (segs[-1].base_offset if segs else 0),
            "batches": sum(s.batches for s in summaries), "bytes": sum(s.size for s in summaries)}


def _verify_remote_segment(rs: RemoteCopy, rep: VerifyReport, state: ProducerState, keys: dict, *,
                           progress=None, max_batch_bytes=None) -> SegmentSummary | None:
    """One remote segment walked as a local one; its objects' damage (manifest, key, chunk, index) is
    one located problem, a key that fails for several segments one problem counting them."""
    before = len(rep.problems)
    try:
        s = verify_segment(rs.segment(), rep, state, active=False, progress=progress, max_batch_bytes=max_batch_bytes)
    except KafkaFormatError as e:
        rep.files += 1
        _remote_problem(e.problem, rep, keys)
        return None
    rep.problems[before:] = group_caused(rep.problems[before:])
    return s


def _remote_problem(p: Problem, rep: VerifyReport, keys: dict) -> None:
    """A problem of the tier's objects; a key problem already reported for another segment counted, not repeated."""
    if p.kind == "remote-key":
        seen = keys.get(p.detail)
        if seen is not None:
            seen[1] += 1
            return
        keys[p.detail] = [p, 1]
    rep.problems.append(p)


def remote_remedy(p: Problem, tier: RemoteTier) -> str | None:
    """The remedy of a problem in the tier's objects (None: a problem of the local log dir)."""
    if p.kind in REMOTE_REMEDIES:
        return REMOTE_REMEDIES[p.kind]
    if p.kind in TIER_REMEDIES:   # the tiers reconciled (log/tier_reconcile.py)
        return TIER_REMEDIES[p.kind]
    if p.file and p.file.startswith(tier.uri + "/"):
        return ("the tier's copy of this segment is damaged and the broker serves it as it is below the local log "
                "start: restore the object (bucket versioning, another copy), compare the batches with kfx dump "
                "--remote; kfx recover never changes a tier")
    return None


def dump_tiered(paths, tier: RemoteTier, opts: DumpOptions, out=None, err=None) -> DumpResult:
    """Dump ``paths`` (log dirs, partition dirs, files; none: the tier alone) over both tiers, each
    partition as UnifiedLog sees it; JSON lines say each file's tier."""
    out, err, res = start(paths, out, err)
    done = set()
    for p in paths:
        kp = classify(p)
        if kp.kind == FILE:
            _dump_local(p, opts, out, err, res)
            continue
        for f in log_dir_files(p) if kp.kind == LOG_DIR else []:
            _dump_local(f, opts, out, err, res)
        for d in partition_dirs(p) if kp.kind == LOG_DIR else [p]:
            files = partition_files(d)
            pd = Partition.scan(d)
            if pd.topic is not None and pd.partition is not None and pd.dir_state == "live" \
                    and (pd.topic, pd.partition) not in done:
                done.add((pd.topic, pd.partition))
                for rs in remote_below(tier, pd.topic, pd.partition, *local_view(pd)):
                    _dump_remote(rs, opts, out, err, res)
            for f in files:
                _dump_local(f, opts, out, err, res)
    for tp in tier.partitions():
        if tp not in done:
            for rs in remote_below(tier, tp[0], tp[1], None):
                _dump_remote(rs, opts, out, err, res)
    return res


def _dump_local(path: str, opts: DumpOptions, out, err, res: DumpResult) -> None:
    """A local file of a tiered dump (its JSON ``file`` line says its tier)."""
    if opts.fmt == "json":
        print(json.dumps({"file": path, "tier": LOCAL}), file=out)
    dump_file(path, opts, out, err, res)


def _dump_remote(rs: RemoteCopy, opts: DumpOptions, out, err, res: DumpResult) -> None:
    """A remote segment's ``.log`` (decoded from its chunks); a manifest or key that cannot be read is
    one located problem."""
    uri = rs.uri
    if opts.fmt == "json":
        print(json.dumps({"file": uri, "tier": REMOTE, "topic": rs.topic, "partition": rs.partition,
                          "baseOffset": rs.base_offset, "segmentId": rs.segment_id}), file=out)
    try:
        seg = rs.segment()
    except KafkaFormatError as e:
        res.problems.append(e.problem)
        print(str(e.problem), file=err)
        return
    auto = TOPIC_DECODERS.get(rs.topic) if opts.decoder is None else None
    dump_segment(uri, seg, replace(opts, decoder=auto) if auto else opts, out, err, res, REMOTE)
