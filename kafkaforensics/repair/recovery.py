"""``kfx recover``: what Kafka's log loading does to a partition at start, offline, applied (a whole log
dir: :mod:`.load_logs`).

The load itself -- Kafka's LogLoader.load() with its passes, each by the rules of the Kafka generation
that wrote the log dir -- is :class:`kafkaforensics.log.log_loader.LogLoader`, in the log stage, so
that ``kfx verify``, the broker's start and the Spark inventory ask the same passes.  It plans
(:mod:`kafkaforensics.log.load_plan`); this module applies its plan in a crash-safe order: later
segments are moved aside before a segment is truncated, files are replaced through a temp file,
fsync and rename, and every changed or removed file is backed up unless ``backup=False``
(``dry_run`` returns the plan).  Running it twice changes nothing the second time.
"""
from __future__ import annotations

import os

from kafkaforensics import fsutil
from kafkaforensics.log.dir_lock import refuse_live
from kafkaforensics.log.load_plan import LoadOptions, RecoveryReport
from kafkaforensics.log.log_loader import LogLoader
from kafkaforensics.repair.actions import apply_actions


def recover(partition_dir: str, load: LoadOptions | None = None, *, dry_run: bool = False, backup: bool = True,
            backup_dir: str | None = None, index_interval_bytes: int | None = None, kafka_version=None,
            full: bool = False) -> RecoveryReport:
    """Load one partition dir as Kafka's LogLoader does (see the module's doc and :class:`LogLoader`)
    and plan, then apply, what that changes (nothing with ``dry_run``; every changed file backed up
    to ``backup_dir`` unless ``backup=False``). ``load``: what the load is told (:class:`LoadOptions`);
    ``index_interval_bytes``, ``kafka_version`` and ``full`` given here replace its fields."""
    path = os.path.abspath(partition_dir)
    if not os.path.isdir(path):
        raise FileNotFoundError(partition_dir)
    refuse_live(path)
    load = (load or LoadOptions()).told(index_interval_bytes=index_interval_bytes, kafka_version=kafka_version,
                                        full=full)
    loader = LogLoader(path, load, dry_run=dry_run)
    rep = loader.load()
    if rep.actions and not dry_run:  # a dry run names no backup: it makes none
        if backup:
            rep.backup = os.path.abspath(backup_dir) if backup_dir else fsutil.default_backup_dir(path)
        apply_actions(rep.actions, rep.backup)
    return rep
