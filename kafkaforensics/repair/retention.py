"""``kfx retention``: which segments Kafka's retention would delete, and deleting them its way.

After UnifiedLog.deleteOldSegments / deletableSegments: segments are considered from the oldest
and deleted while the rule holds --
* time: ``now - segment.largestTimestamp > retention.ms`` (largest timestamp from the time index's
  last entry, else from the batches, else the file's modification time);
* size: while ``log size - retention.bytes`` still covers the whole segment;
* log start offset: while the next segment starts at or below the log start offset;
an empty active segment is never deleted; deleting every segment first rolls a new empty active
segment at the log end offset, so one active segment always remains.  Deletion renames the files
to ``.deleted`` (what a crash leaves is removed by ``kfx recover``) and then removes them; the
producer snapshots of deleted segments go too, and log-start-offset-checkpoint is advanced.  Every file deleted or
changed is moved into a backup (default ``<partition>/.kfx-backup/<time>``) whose manifest
``kfx restore`` undoes, unless ``backup=False``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from kafkaforensics import fsutil

from kafkaforensics.log.partition import LogDir, Partition, parse_partition_dir_name
from kafkaforensics.log.segment import DELETED, FAMILY_SUFFIXES, LOG, NEW_SEGMENT_SUFFIXES, file_name
from kafkaforensics.log.load_plan import Dropped, count_dropped


@dataclass
class RetentionReport:
    partition: str
    dry_run: bool
    deleted: list[dict] = field(default_factory=list)
    rolled: str | None = None
    log_start_offset: int = 0
    log_end_offset: int = 0
    backup: str | None = None
    #: what the deleted segments hold: bytes, batches, records, offsets
    dropped: Dropped = field(default_factory=Dropped)

    def to_json(self) -> dict:
        return {"partition": self.partition, "dryRun": self.dry_run, "deletedSegments": self.deleted,
                "rolledNewSegment": self.rolled, "logStartOffset": self.log_start_offset,
                "logEndOffset": self.log_end_offset, "backup": self.backup, "dropped": self.dropped.to_json()}


def retention(partition_dir: str, *, retention_ms: int | None = None, retention_bytes: int | None = None,
              log_start_offset: int | None = None, now: int | None = None, dry_run: bool = False,
              backup: bool = True, backup_dir: str | None = None) -> RetentionReport:
    now = int(time.time() * 1000) if now is None else now
    pd = log = Partition.of(partition_dir).load(producers=False)
    rep = RetentionReport(pd.name, dry_run)
    segs = [(s.files, s.size, s.next_offset, s.largest_timestamp()) for s in log.loaded]
    if not segs:
        return rep
    leo = segs[-1][2]
    rep.log_end_offset = leo
    total = sum(x[1] for x in segs)
    doomed = {}

    def take(pred, reason):
        for i, (s, size, nxt, largest) in enumerate(segs):
            if s.base_offset in doomed:
                continue
            last = i == len(segs) - 1
            if last and size == 0:
                break  # the empty active segment stays
            if not pred(i, s, size, nxt, largest):
                break
            doomed[s.base_offset] = reason

    if retention_ms is not None and retention_ms >= 0:
        take(lambda i, s, size, nxt, largest: now - largest > retention_ms, f"older than retention.ms={retention_ms}")
    if retention_bytes is not None and retention_bytes >= 0:
        state = {"diff": total - retention_bytes - sum(x[1] for x in segs if x[0].base_offset in doomed)}

        def by_size(i, s, size, nxt, largest):
            if state["diff"] - size >= 0:
                state["diff"] -= size
                return True
            return False
        take(by_size, f"beyond retention.bytes={retention_bytes}")
    if log_start_offset is None:
        log_start_offset = log.checkpointed_log_start()
    if log_start_offset is not None:
        take(lambda i, s, size, nxt, largest: i + 1 < len(segs) and segs[i + 1][0].base_offset <= log_start_offset,
             f"below the log start offset {log_start_offset}")
    for s, size, nxt, largest in segs:
        if s.base_offset in doomed:
            count_dropped(rep.dropped, s.log, 0)
            rep.deleted.append({"segment": os.path.basename(s.log), "baseOffset": s.base_offset, "nextOffset": nxt,
                                "bytes": size, "largestTimestamp": largest, "reason": doomed[s.base_offset]})
    remaining = [x for x in segs if x[0].base_offset not in doomed]
    rep.log_start_offset = remaining[0][0].base_offset if remaining else leo
    if log_start_offset is not None:
        rep.log_start_offset = max(rep.log_start_offset, min(log_start_offset, leo))
    if not remaining:
        rep.rolled = file_name(leo, LOG)
    if dry_run or not doomed:
        return rep
    fsutil.clean_temps(pd.path)
    bk = fsutil.Backup(backup_dir or fsutil.default_backup_dir(pd.path)) if backup else None
    if rep.rolled:  # roll first so that an active segment always exists
        for suf in NEW_SEGMENT_SUFFIXES:
            fsutil.atomic_write(os.path.join(pd.path, file_name(leo, suf)), b"", backup_dir=bk)
    renamed = []
    for base in sorted(doomed):
        for suf in FAMILY_SUFFIXES:
            p = os.path.join(pd.path, file_name(base, suf))
            if os.path.exists(p):
                fsutil.rename(p, p + DELETED, backup_dir=bk)
                renamed.append(p + DELETED)
    for p in renamed:
        fsutil.remove_file(p, backup_dir=bk)
    # advance this partition's entry of log-start-offset-checkpoint (when the log dir has one)
    LogDir(log.log_dir).set_partition_offset(LogDir.LOG_START_OFFSET, parse_partition_dir_name(pd.path), rep.log_start_offset,
                         create=False, backup_dir=bk)
    rep.backup = bk.dir if bk is not None and bk.entries else None
    return rep
