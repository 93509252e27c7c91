"""``kfx reindex``: rebuild .index, .timeindex and .txnindex of a segment or a whole partition.

The entries follow LogSegment.recover's rule (see :mod:`kafkaforensics.log.indexing`), so with the same
``index.interval.bytes`` the files are byte-identical to the indexes Kafka rebuilds.  Producer state
is replayed from the partition's first segment so that aborted transactions spanning segments get
the same last stable offset Kafka computes.  Only the valid prefix of a damaged segment is indexed
(``kfx recover`` is what truncates).  Writes go through temp file, fsync and rename, with backups.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkaforensics.log.indexing import DEFAULT_INDEX_INTERVAL_BYTES, RecoveryWalk
from kafkaforensics.log.kafka_files import kept_as_written
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version as resolve_kafka_version
from kafkaforensics.log.partition import LOG, Partition
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.fsutil import clean_temps, default_backup_dir, same_content
from kafkaforensics.log.load_plan import Action
from kafkaforensics.repair.actions import apply_actions
from kafkaforensics.log.segment import INDEX_BY_SUFFIX, index_bytes, offset_from_name


@dataclass
class ReindexReport:
    rebuilt: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup: str | None = None
    actions: list[Action] = field(default_factory=list)
    kafka: KafkaVersion | None = None  # the KafkaVersion whose rules applied

    def to_json(self) -> dict:
        return {"rebuiltIndexes": self.rebuilt, "unchanged": self.unchanged, "notes": self.notes,
                "backup": self.backup, "actions": [a.to_json() for a in self.actions],
                "kafkaVersion": self.kafka.to_json() if self.kafka is not None else None}


def reindex(path: str, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, dry_run: bool = False,
            backup: bool = True, backup_dir: str | None = None, kafka_version=None) -> ReindexReport:
    """Rebuild the indexes of ``path``: a ``.log`` file (that segment only) or a partition dir.
    ``kafka_version`` (``X.Y`` or a KafkaVersion; default: inferred) chooses the rules: an index that
    Kafka generation would have written is kept."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        pdir, only = path, None
    else:
        if offset_from_name(path) is None or not path.endswith(LOG):
            raise ValueError(f"{path}: expected a partition directory or a <offset>.log segment")
        pdir, only = os.path.dirname(path), offset_from_name(path)
    pd = Partition.scan(pdir)
    kafka = resolve_kafka_version(pdir, kafka_version)
    rep = ReindexReport(kafka=kafka)
    rules = kafka.rules()
    state = ProducerState()
    for seg in pd.segments:
        walk = RecoveryWalk(seg.log, seg.base_offset, state, interval=index_interval_bytes, strict=False,
                              entry=rules.write("offset-index-entry")).walk()
        idx = walk.indexes
        if walk.stop is not None:
            stop = walk.stop
            why = f"CRC mismatch at offset {stop.offset}" if stop.kind == "crc-mismatch" else stop.kind
            rep.notes.append(f"{os.path.basename(seg.log)}: indexed up to byte {idx.valid_bytes} ({why}); "
                             "`kfx recover` truncates")
        if only is not None and seg.base_offset != only:
            continue
        for suf, data in index_bytes(idx, seg.base_offset):
            target = seg.path(suf)
            name = os.path.basename(target)
            if INDEX_BY_SUFFIX[suf].created_lazily and not data and not os.path.exists(target):
                continue
            if os.path.exists(target) and (same_content(target, data) or kept_as_written(
                    target, suf, seg.log, seg.base_offset, idx.valid_bytes, rules, index_interval_bytes)):
                rep.unchanged.append(name)
                continue
            rep.rebuilt.append(name)
            rep.actions.append(Action("write", target, "rebuild index from the segment's batches", data=data))
    if rep.actions and backup and not dry_run:  # a dry run names no backup: it makes none
        rep.backup = os.path.abspath(backup_dir) if backup_dir else default_backup_dir(pdir)
    if rep.actions and not dry_run:
        clean_temps(pdir)
        apply_actions(rep.actions, rep.backup)
    return rep
