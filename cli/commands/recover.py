"""``kfx recover``: Kafka's log loading run offline on partition dirs or log dirs (``--plan-space``: the disk-full plan)."""
from __future__ import annotations

import json
import os
from typing import List, Optional

from cli import plain, recover_view
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail, total_bytes
from cli.declare import Argument, Exit, Option
from cli.options import (BACKUP_DIR, DRY_RUN, INDEX_INTERVAL_BYTES, JSON, KAFKA_VERSION, NO_BACKUP, NOW,
                         rules_version)
from cli.repairs import backup_settings, print_actions, refuse_live
from kafkaforensics import errors
from kafkaforensics.inspect import groups as inspect_groups
from kafkaforensics.log import load_plan as log_load_plan
from kafkaforensics.log import paths as log_paths
from kafkaforensics.repair import load_logs as repair_load_logs
from kafkaforensics.repair import plan_space as repair_plan_space
from kafkaforensics.repair import recovery as repair_recovery


def recover(paths: List[str] = Argument(..., metavar="PATH", help="Log dirs (every partition in them) or partition dirs (topic-N)"),
            dry_run: bool = DRY_RUN,
            backup_dir: Optional[str] = BACKUP_DIR,
            no_backup: bool = NO_BACKUP,
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            max_message_bytes: Optional[int] = Option(None, "--max-message-bytes", min=14, metavar="BYTES",
                                                            help="Also treat larger batches as corrupt"),
            recovery_point: Optional[int] = Option(None, "--recovery-point", min=0, metavar="OFFSET",
                                                         help="First unflushed offset of a partition dir (default: the log dir's checkpoint, else 0)"),
            full: bool = Option(False, "--full", help="Validate every segment, whatever the marker and checkpoint say"),
            jobs: Optional[int] = Option(None, "--jobs", min=1, metavar="N", help="Partitions recovered at once (default: the cores)"),
            as_json: bool = JSON,
            kafka_version: Optional[str] = KAFKA_VERSION,
            now: Optional[int] = NOW,
            plan_space: bool = Option(False, "--plan-space",
                                      help="Write nothing: the bytes Kafka's start-up would write on each log dir, "
                                           "the bytes free, and the segments that could be moved to make room"),
            move_to: Optional[str] = Option(None, "--move-to", metavar="DIR",
                                            help="With --plan-space: where the printed mv commands move segments to")):
    """Do what Kafka's log loading does at start (LogManager + LogLoader): finish swaps, truncate, rebuild."""
    if plan_space or move_to is not None:
        _plan_space(paths, move_to=move_to, as_json=as_json, now=now,
                    kafka_version=kafka_version and rules_version(paths[0], kafka_version),
                    full=full, writing=recovery_point is not None or no_backup or backup_dir is not None)
    try:
        kinds = ["log dir" if kp.kind == log_paths.LOG_DIR else "partition"
                 for kp in log_paths.classify_for(paths, "recover", accept=(log_paths.LOG_DIR, log_paths.PARTITION_DIR))]
    except log_paths.PathUsageError as e:
        fail(str(e))
    if recovery_point is not None and kinds != ["partition"]:
        fail("--recovery-point applies to one partition dir")
    refuse_live(*paths)
    load = log_load_plan.LoadOptions(index_interval_bytes=index_interval_bytes, max_message_bytes=max_message_bytes,
                                       full=full, kafka_version=kafka_version and rules_version(paths[0], kafka_version),
                                       now=now)
    opts = dict(dry_run=dry_run, **backup_settings(backup_dir, no_backup))
    try:
        if kinds == ["partition"]:
            rep = repair_recovery.recover(paths[0], load.told(recovery_point=recovery_point), **opts)
            _print_partition_recovery(rep, as_json, dry_run)
            raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)
        outs = _recover_log_dirs(paths, kinds, jobs, load, opts)
    except OSError as e:
        fail(str(e))
    except errors.KafkaFormatError as e:
        fail(str(e.problem))
    recover_view.print_log_dir_recovery(outs, as_json, dry_run)
    raise Exit(EXIT_PROBLEMS if any(o.changed for o in outs) else EXIT_OK)


def _plan_space(paths, *, move_to, as_json, now, kafka_version, full, writing) -> None:
    """``kfx recover --plan-space`` (``--move-to`` implies it): the disk-full rescue plan of each log
    dir, writing nothing; exit 0 when start-up fits everywhere, 1 when it does not (the plan says what
    could be moved), 2 for bad input."""
    if move_to is not None and (not move_to.strip() or os.path.isfile(move_to)):
        fail(f"--move-to {move_to!r}: not a directory path")
    if writing:
        fail("--plan-space writes nothing (not even a backup): it takes log dirs, --move-to, --full, --now, "
              "--kafka-version and --json, not --recovery-point, --backup-dir or --no-backup")
    try:
        kinds = log_paths.classify_for(paths, "recover --plan-space", accept=(log_paths.LOG_DIR,))
    except log_paths.PathUsageError as e:
        fail(str(e))
    refuse_live(*paths)
    try:
        plans = repair_plan_space.plan_space([str(k.path) for k in kinds], inspect_groups.committed_offsets,
                                             move_to=move_to, now=now,
                                             kafka_version=kafka_version, full=full)
    except (OSError, repair_load_logs.NotALogDir) as e:
        fail(str(e))
    except errors.KafkaFormatError as e:
        fail(str(e.problem))
    recover_view.print_space_plans(plans, as_json)
    raise Exit(EXIT_OK if all(p.fits for p in plans) else EXIT_PROBLEMS)


def _recover_log_dirs(paths, kinds, jobs, load, opts):
    """Log dirs through LogManager's loading; partition dirs among them each as a one-partition run."""
    total = sum(total_bytes([p]) for p in paths)
    with recover_view.recovery_progress(total) as (on_start, on_done):
        outs = []
        dirs = [p for p, k in zip(paths, kinds) if k == "log dir"]
        if dirs:
            outs += repair_load_logs.recover_log_dirs(dirs, load, jobs=jobs, on_start=on_start, on_done=on_done,
                                                      **opts)
        for p, k in zip(paths, kinds):
            if k == "partition":
                on_start(p, total_bytes([p]))
                rep = repair_recovery.recover(p, load, **opts)
                on_done(rep)
                outs.append(repair_load_logs.LogDirRecovery(os.path.dirname(os.path.abspath(p)), partitions=[rep],
                                           dry_run=opts["dry_run"]))
    return outs


def _print_partition_recovery(rep, as_json: bool, dry_run: bool) -> None:
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
        return
    print_actions(j, f"kfx recover {rep.partition}" + (" (dry run)" if dry_run else ""), dry_run)
    if rep.kafka is not None:
        plain.console().print(rep.kafka.line(), highlight=False, markup=False, soft_wrap=True)
    if rep.truncated_at:
        t = rep.truncated_at
        plain.console().print(f"{'would truncate' if dry_run else 'truncated'} {t['segment']} at byte {t['position']} "
                        f"(log end offset {t['offset']}): {t['reason']}", highlight=False, soft_wrap=True)
    if rep.dropped:
        hint = ""
        if rep.dropped.batches:
            hint = (f" (kept in the backup: `kfx salvage {rep.backup} --out DIR` copies the valid batches out)"
                    if rep.backup else f" (`kfx salvage {rep.path} --out DIR` first copies the valid batches out)")
        plain.console().print(f"{'would drop' if dry_run else 'dropped'} {rep.dropped.text()}{hint}", highlight=False,
                        soft_wrap=True, markup=False)
    for n in rep.notes:
        plain.console().print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
    if rep.backup:
        plain.console().print(f"backup: {rep.backup}", highlight=False, soft_wrap=True)

