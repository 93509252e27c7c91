"""What the commands that write or apply a topic's policy share: the sizes and the topic config they
go by, the backup options, refusing a log dir a broker holds, one partition dir, and a repair's
actions printed."""
from __future__ import annotations

import os
import sys

from cli import tables
from cli.common import err, fail
from cli.declare import Exit
from kafkaforensics.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_SEGMENT_BYTES
from kafkaforensics.log import dir_lock as log_dir_lock
from kafkaforensics.log import log_config as log_log_config
from kafkaforensics.log import paths as log_paths


def topic_config(partition_dir: str, config=(), kafka_version=None):
    """The partition's effective topic configuration (kafkaforensics.log.log_config.LogConfig), with
    ``--config`` items; a bad item is one line and exit 2."""
    try:
        return log_log_config.LogConfig.of(partition_dir, log_log_config.parse_config_flags(config), kafka_version)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise Exit(2) from None


def sizes(partition_dir: str, segment_bytes=None, index_interval_bytes=None,
          segments: bool = True, config=None) -> tuple[int, int, list[str]]:
    """``--segment-bytes`` and ``--index-interval-bytes`` as a command uses them: the flag, else the topic's
    effective config (``config``, a LogConfig; default: ``partition_dir``'s), else Kafka's default; and
    notes naming the configs used (``segments=False``: a command that rolls no segment, whose segment
    size is neither read nor noted)."""
    config = topic_config(partition_dir) if config is None else config
    got, notes = config.settle({"index.interval.bytes": index_interval_bytes,
                                **({"segment.bytes": segment_bytes} if segments else {})})
    seg, interval = got.get("segment.bytes"), got["index.interval.bytes"]
    return (DEFAULT_SEGMENT_BYTES if seg is None else seg,
            DEFAULT_INDEX_INTERVAL_BYTES if interval is None else interval, notes)


def backup_settings(backup_dir, no_backup) -> dict:
    """``backup``/``backup_dir`` keyword arguments of a repair from the two options (exit 2 when both given)."""
    if backup_dir and no_backup:
        print("error: --backup-dir and --no-backup exclude each other", file=sys.stderr)
        raise Exit(2)
    return {"backup": not no_backup, "backup_dir": backup_dir}


def print_actions(report_json: dict, title: str, dry_run: bool = False) -> None:
    """A repair's actions as a table (a dry run's: ``would delete``...), or that there is nothing to do."""
    if report_json["actions"]:
        tables.print_table(title, ("action", "file", "detail"), [
            (("would " if dry_run else "") + a["action"],
             os.path.basename(a["file"]) + (f" -> {os.path.basename(a['target'])}" if a.get("target") else ""),
             a["detail"]) for a in report_json["actions"]])
    else:
        print(f"{title}: nothing to do")


def refuse_live(*paths) -> None:
    """What every writing command does first: one line and exit 2 when a broker holds a log dir."""
    try:
        log_dir_lock.refuse_live(*paths)
    except log_dir_lock.LogDirInUse as e:
        fail(str(e))


def one_partition(path: str, command: str, segments: bool = False) -> None:
    """The path rules (kafkaforensics.log.paths) for a command that acts on one partition dir (or,
    ``segments``, one of its segments): anything else is one line and exit 2."""
    try:
        log_paths.classify_for([path], command, accept=(log_paths.PARTITION_DIR, log_paths.FILE) if segments
                               else (log_paths.PARTITION_DIR,), file_kinds={"log"},
                               what="a partition dir (<topic>-<partition>)" + (" or a <offset>.log segment"
                                                                               if segments else ""))
    except log_paths.PathUsageError as e:
        fail(str(e))


def policy(cfg, action: str, acting: bool, ignore: bool) -> list[str]:
    """The topic's policy for ``action`` (LogConfig.check): a refusal is one line and exit 2; acting
    against the policy (--ignore-topic-config) gives the one line saying so."""
    try:
        line = cfg.check(action, acting=acting, ignore=ignore)
    except log_log_config.PolicyRefusal as e:
        fail(str(e))
    return [line] if line else []


def print_walk_problems(problems) -> None:
    """compact's and retention's exit 1: damage their walk stopped at (they act on what comes before it)."""
    for p in problems:
        err().print(f"problem: {p} (the batches from here on were left alone; `kfx recover` "
                    "truncates here as Kafka's log loading would)", highlight=False, soft_wrap=True, markup=False)
