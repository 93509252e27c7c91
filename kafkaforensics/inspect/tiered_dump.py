"""``kfx dump --remote``: each partition dumped as Kafka's UnifiedLog reads it -- its remote segments
below the local log start (decoded from their chunks), then its local files -- and then the tier's
partitions no path holds.  Kept apart from :mod:`.dump` so that a dump without ``--remote`` loads no
tier reader (the CLI reaches this module through cli/heavy.py)."""
from __future__ import annotations

import json
from dataclasses import replace

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect.dump import TOPIC_DECODERS, DumpOptions, DumpResult, dump_file, dump_segment, start
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.paths import FILE, LOG_DIR, classify, log_dir_files, partition_dirs, partition_files
from kafkaforensics.log.remote import RemoteCopy, RemoteTier
from kafkaforensics.log.remote.unified import LOCAL, REMOTE, local_view, remote_below


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
