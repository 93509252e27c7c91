"""``kfx compact``: Kafka's log cleaner run offline."""
from __future__ import annotations

import json
from typing import List, Optional

from cli import plain, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail
from cli.declare import Argument, Exit, Option
from cli.options import (BACKUP_DIR, CONFIG, DRY_RUN, IGNORE_TOPIC_CONFIG, INDEX_INTERVAL_BYTES, JSON,
                         KAFKA_VERSION, NO_BACKUP, NOW, SEGMENT_BYTES, rules_version)
from cli.repairs import (backup_settings, one_partition, policy, print_walk_problems, refuse_live,
                         sizes, topic_config)
from kafkaforensics import errors
from kafkaforensics.defaults import DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_DELETE_RETENTION_MS
from kafkaforensics.inspect import verify as inspect_verify
from kafkaforensics.log import log_config as log_log_config
from kafkaforensics.repair import cleaner as repair_cleaner


def compact(partition_dir: str = Argument(..., help="A partition directory (topic-N)"),
            delete_retention_ms: Optional[int] = Option(None, "--delete-retention-ms", min=0, metavar="MS",
                                                        help="How long tombstones and markers outlive their cleaning "
                                                             "(default: the topic's delete.retention.ms in the log "
                                                             f"dir's metadata, else {DEFAULT_DELETE_RETENTION_MS})"),
            min_compaction_lag_ms: Optional[int] = Option(None, "--min-compaction-lag-ms", min=0, metavar="MS",
                                                          help="Leave records younger than this uncleaned (default: "
                                                               "the topic's min.compaction.lag.ms, else 0)"),
            max_compaction_lag_ms: Optional[int] = Option(None, "--max-compaction-lag-ms", min=0, metavar="MS",
                                                          help="Clean records older than this whatever the dirty "
                                                               "ratio (default: the topic's max.compaction.lag.ms)"),
            now: Optional[int] = NOW,
            segment_bytes: Optional[int] = SEGMENT_BYTES,
            include_active: bool = Option(False, "--include-active", help="Clean the active segment too"),
            ignore_checkpoint: bool = Option(False, "--ignore-checkpoint",
                                                   help="Clean from the log start, not from cleaner-offset-checkpoint"),
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            dedupe_buffer_bytes: int = Option(DEFAULT_DEDUPE_BUFFER_BYTES, "--dedupe-buffer-bytes", min=1024, metavar="BYTES",
                                                    help="Offset map memory (24 bytes a key, as Kafka's)"),
            out: Optional[str] = Option(None, "--out", metavar="DIR",
                                        help="Write the compacted partition here; input untouched"),
            dry_run: bool = DRY_RUN,
            backup_dir: Optional[str] = BACKUP_DIR,
            no_backup: bool = NO_BACKUP,
            as_json: bool = JSON,
            kafka_version: Optional[str] = KAFKA_VERSION,
            config: List[str] = CONFIG,
            ignore_topic_config: bool = IGNORE_TOPIC_CONFIG):
    """Run Kafka's log cleaner offline, with its crash-safe .cleaned/.swap/.deleted file swap."""
    refuse_live(partition_dir if out is None else out)
    one_partition(partition_dir, "compact")
    kv = rules_version(partition_dir, kafka_version)
    cfg = topic_config(partition_dir, config, kv)  # the topic's policy, asked once
    against = policy(cfg, log_log_config.COMPACT, acting=True, ignore=ignore_topic_config)
    settings, from_configs = _cleaner_settings(cfg, partition_dir, {
        "delete.retention.ms": delete_retention_ms, "min.compaction.lag.ms": min_compaction_lag_ms,
        "max.compaction.lag.ms": max_compaction_lag_ms, "segment.bytes": segment_bytes,
        "index.interval.bytes": index_interval_bytes, "cleanup.policy": None})
    from_configs += against
    opts = repair_cleaner.CompactOptions(now=now, include_active=include_active, dedupe_buffer_bytes=dedupe_buffer_bytes,
                                         ignore_checkpoint=ignore_checkpoint, kafka_version=kv, **settings)
    try:
        problems = inspect_verify.walk_problems(partition_dir)
        rep = repair_cleaner.compact(partition_dir, opts, out=out, dry_run=dry_run, **backup_settings(backup_dir, no_backup))
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        fail(str(e))
    rep.notes[:0] = from_configs
    j = rep.to_json() | {"problems": [p.to_json() for p in problems + rep.problems]}
    if as_json:
        print(json.dumps(j))
    else:
        c = plain.console()
        tables.print_table(f"kfx compact {rep.partition}" + (" (dry run)" if dry_run else ""), ("", "before", "after"),
                    [("records", j["records"]["before"], j["records"]["after"]),
                     ("bytes", j["bytes"]["before"], j["bytes"]["after"]),
                     ("dirty ratio", f"{j['dirtyRatio']['before']:.2f}", f"{j['dirtyRatio']['after']:.2f}")],
                    right=(1, 2))
        kept, removed = ("to keep", "to remove") if dry_run else ("kept", "removed")
        c.print(f"{'would clean' if dry_run else 'cleaned'} [{rep.first_dirty_offset}, {rep.end_offset}) in "
                f"{rep.rounds} round(s); tombstones: {j['tombstones']['kept']} {kept}, {j['tombstones']['removed']} "
                f"{removed}; aborted records: {j['abortedRecordsRemoved']} {removed}; markers: {j['markers']['kept']} "
                f"{kept}, {j['markers']['removed']} {removed}", highlight=False, soft_wrap=True)
        dr = j["dropped"]
        c.print(f"{'would drop' if dry_run else 'dropped'} {dr['records']} records, {dr['batches']} whole batches, "
                f"{dr['bytes']} bytes, rewriting {dr['segmentsRewritten']} segment(s)", highlight=False)
        if rep.kafka is not None:  # compact always says which rules applied
            c.print(rep.kafka.line(), highlight=False, markup=False)
        for n in rep.notes:
            c.print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
        if rep.backup:
            c.print(f"backup: {rep.backup}", highlight=False, soft_wrap=True, markup=False)
        print_walk_problems(problems)
        for p in rep.problems:
            err().print(f"problem: {p} (cleaning stopped here, as Kafka's cleaner would)", highlight=False,
                         soft_wrap=True, markup=False)
    raise Exit(EXIT_PROBLEMS if problems or rep.problems else EXIT_OK)


def _cleaner_settings(cfg, partition_dir: str, flags: dict) -> tuple[dict, list[str]]:
    """compact's settings (CompactOptions keywords): each flag given, else the topic's effective config
    (``cfg``), else the cleaner's default; and the notes naming the configs used."""
    got, notes = cfg.settle({k: v for k, v in flags.items() if k not in ("segment.bytes", "index.interval.bytes")})
    segment_bytes, index_interval_bytes, size_notes = sizes(partition_dir, flags["segment.bytes"],
                                                            flags["index.interval.bytes"], config=cfg)
    max_lag = got["max.compaction.lag.ms"]
    return dict(delete_retention_ms=_or(got["delete.retention.ms"], DEFAULT_DELETE_RETENTION_MS),
                min_compaction_lag_ms=_or(got["min.compaction.lag.ms"], 0),
                max_compaction_lag_ms=None if max_lag == log_log_config.LONG_MAX else max_lag,
                segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes), \
        notes + [n for n in size_notes if n not in notes]  # the config's own notes once


def _or(value, default):
    return default if value is None else value

