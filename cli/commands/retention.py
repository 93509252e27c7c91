"""``kfx retention``: Kafka's time, size and log-start-offset retention applied offline."""
from __future__ import annotations

import json
from typing import List, Optional

from cli import plain, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail
from cli.declare import Argument, Exit, Option
from cli.options import BACKUP_DIR, CONFIG, DRY_RUN, IGNORE_TOPIC_CONFIG, JSON, NO_BACKUP, NOW
from cli.repairs import backup_settings, one_partition, policy, print_walk_problems, refuse_live, topic_config
from kafkaforensics import errors
from kafkaforensics.inspect import verify as inspect_verify
from kafkaforensics.log import log_config as log_log_config
from kafkaforensics.repair import retention as repair_retention


def retention(partition_dir: str = Argument(..., help="A partition directory (topic-N)"),
              retention_ms: Optional[int] = Option(None, "--retention-ms", min=-1, metavar="MS",
                                                   help="Delete segments whose newest record is older (retention.ms; "
                                                        "-1: unlimited)"),
              retention_bytes: Optional[int] = Option(None, "--retention-bytes", min=-1, metavar="BYTES",
                                                      help="Delete the oldest segments while the partition is larger "
                                                           "(retention.bytes; -1: unlimited)"),
              log_start_offset: Optional[int] = Option(None, "--log-start-offset", min=0, metavar="OFFSET",
                                                       help="Delete the segments wholly below this offset"),
              now: Optional[int] = NOW,
              dry_run: bool = DRY_RUN,
              backup_dir: Optional[str] = BACKUP_DIR,
              no_backup: bool = NO_BACKUP,
              as_json: bool = JSON,
              config: List[str] = CONFIG,
              ignore_topic_config: bool = IGNORE_TOPIC_CONFIG):
    """Apply Kafka's time, size and log-start-offset retention rules (deletion via .deleted renames)."""
    refuse_live(partition_dir)
    one_partition(partition_dir, "retention")
    cfg = topic_config(partition_dir, config)  # the topic's policy, asked once
    flags = {"retention.ms": retention_ms, "retention.bytes": retention_bytes}
    acting = any(v is not None for v in flags.values())
    from_configs = policy(cfg, log_log_config.DELETE, acting=acting or ignore_topic_config, ignore=ignore_topic_config)
    got, notes = cfg.settle(flags)
    notes += [n for n in [cfg.note_for("cleanup.policy")] if n]  # where the policy came from
    # a limit deletes data only when stated (a flag) or known (the log dir's metadata, --config, an internal
    # topic's creation), never from Kafka's built-in default: server.properties or ZooKeeper may set another
    notes += [f"{cfg.describe(name)} not applied: the log dir holds no {name} for {cfg.topic} (a broker's "
              f"server.properties or ZooKeeper may set another); --{name.replace('.', '-')} or --config "
              f"{name}=VALUE applies one" for name, v in got.items()
              if flags[name] is None and name not in cfg.noted and v is not None and v >= 0 and not acting]
    got = {name: v if flags[name] is not None or name in cfg.noted or (not acting and v is not None and v < 0) else None
           for name, v in got.items()}  # (a default of -1, unlimited, deletes nothing: it is said as such)
    if cfg.deletes or ignore_topic_config:
        from_configs = notes + from_configs
    else:  # UnifiedLog.deleteOldSegments: without cleanup.policy delete, only the log start offset applies
        got = {"retention.ms": None, "retention.bytes": None}
        from_configs = cfg.notes() + [f"{cfg.describe('cleanup.policy')}: Kafka deletes by time and size only with "
                                      "cleanup.policy delete; only the log start offset applies"]
    unlimited = [f"{name}={v}: unlimited, as Kafka reads -1" for name, v in got.items() if v is not None and v < 0]
    try:
        problems = inspect_verify.walk_problems(partition_dir)
        rep = repair_retention.retention(partition_dir, retention_ms=got["retention.ms"], retention_bytes=got["retention.bytes"],
                              log_start_offset=log_start_offset, now=now, dry_run=dry_run,
                              **backup_settings(backup_dir, no_backup))
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json() | {"notes": from_configs + unlimited,
                                          "problems": [p.to_json() for p in problems]}))
    else:
        c = plain.console()
        if rep.deleted:
            tables.print_table(f"kfx retention {rep.partition}" + (" (dry run)" if dry_run else ""),
                        ("segment", "offsets", "bytes", "largest timestamp", "reason"),
                        [(d["segment"], f"{d['baseOffset']}..{d['nextOffset'] - 1}", d["bytes"], d["largestTimestamp"],
                          d["reason"]) for d in rep.deleted])
        else:
            c.print(_nothing_to_delete(got, log_start_offset), highlight=False, soft_wrap=True, markup=False)
        for n in from_configs + (unlimited if rep.deleted else []):  # else the line above says so
            c.print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
        if rep.dropped:
            c.print(f"{'would delete' if dry_run else 'deleted'} {rep.dropped.text()}", highlight=False,
                    soft_wrap=True, markup=False)
        if rep.rolled:
            c.print(f"{'would roll' if dry_run else 'rolled'} a new active segment {rep.rolled}", highlight=False,
                    soft_wrap=True)
        if rep.backup:
            c.print(f"backup: {rep.backup}", highlight=False, soft_wrap=True, markup=False)
        print_walk_problems(problems)
    raise Exit(EXIT_PROBLEMS if problems else EXIT_OK)


def _nothing_to_delete(got: dict, log_start_offset) -> str:
    """Why retention deletes nothing: the limits no segment is past, those that are unlimited (-1)."""
    limits = [f"{name}={v}" for name, v in got.items() if v is not None and v >= 0]
    unlimited = [f"{name}={v}" for name, v in got.items() if v is not None and v < 0]
    if log_start_offset is not None:
        limits.append(f"log start offset {log_start_offset}")
    parts = [f"no segment is past {', '.join(limits)} (the active segment always remains)"] if limits else []
    if unlimited:
        parts.append(f"{' and '.join(unlimited)}: unlimited, as Kafka reads -1")
    if not parts:
        parts.append("no time or size retention applies and no log start offset was given (--log-start-offset); "
                     "only log-start-offset-checkpoint's entry applied")
    return "nothing to delete: " + "; ".join(parts)

