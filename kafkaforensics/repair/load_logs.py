"""``kfx recover LOG_DIR...``: what Kafka's LogManager.loadLogs does to whole log dirs, offline.

Per log dir, as LogManager does at start:

* the clean-shutdown marker is read (Kafka goes by its existence; empty from ZooKeeper-era brokers,
  JSON ``{"version":0,"brokerEpoch":N}`` later): after a clean shutdown no segment is recovered
  (``full`` recovers them all), though a missing or corrupt index is still rebuilt;
* ``recovery-point-offset-checkpoint`` gives each partition's recovery point and
  ``log-start-offset-checkpoint`` its log start (an unreadable file: no entries, as Kafka warns and
  goes on);
* every partition dir is loaded by :func:`~.recovery.recover` (LogLoader), ``jobs`` at a time in
  separate processes (``num.recovery.threads.per.data.dir``); ``__cluster_metadata-0`` as the raft
  layer loads it (from offset 0, as after an unclean shutdown); a ``-delete`` dir is left as it is
  (Kafka loads it only to delete it);
* then the two checkpoints LogManager writes are written as it writes them: the recovery point of
  every loaded log (current and future, not ``-delete`` or ``-stray`` dirs, not the metadata log):
  its log end after a clean shutdown, else by the version's rule (KAFKA-10101): up to 0.11 the
  checkpointed one, 1.0-2.7 the log end, from 2.8 the lower of the checkpointed one and the log end; the log start of those whose log start lies above their first segment. A checkpoint whose
  entries are already these (in any order: Kafka writes hash-map order) is left as it is.

Nothing else of the log dir is touched (the marker stays: the dir is as consistent as the broker
left it, and a broker restarting after a crash recovers again from the recovery point).
"""
from __future__ import annotations

import concurrent.futures as cf
import datetime as _dt
import os
from dataclasses import dataclass, field, replace

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.dir_lock import refuse_live
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version as resolve_kafka_version
from kafkaforensics.log.partition import (METADATA_PARTITION, LogDir, is_log_dir, parse_partition_dir_name,
                                          partition_dir_state)
from kafkaforensics.log.load_plan import Action, LoadOptions, RecoveryReport
from kafkaforensics.repair.actions import apply_actions
from kafkaforensics.repair.recovery import recover
from kafkaforensics.repair.restore import write_run


class NotALogDir(ValueError):
    """A path given as a log dir holds nothing a broker's log dir holds."""


@dataclass
class LogDirRecovery:
    """What recovering one log dir did: a report a partition and the checkpoint writes."""
    log_dir: str
    clean_shutdown: bool = False
    marker: dict | None = None
    partitions: list[RecoveryReport] = field(default_factory=list)
    checkpoint_actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup: str | None = None
    dry_run: bool = False
    #: the offset checkpoints as read before loading: file name -> {(topic, partition): offset}
    tables: dict = field(default_factory=dict, repr=False)
    kafka: KafkaVersion | None = None  # the KafkaVersion whose rules apply

    @property
    def changed(self) -> bool:
        return bool(self.checkpoint_actions) or any(p.actions for p in self.partitions)

    def to_json(self) -> dict:
        return {"logDir": self.log_dir, "cleanShutdown": self.clean_shutdown, "marker": self.marker,
                "checkpoints": [a.to_json() for a in self.checkpoint_actions], "notes": self.notes,
                "backup": self.backup, "dryRun": self.dry_run,
                "partitions": [p.partition for p in self.partitions]}


@dataclass
class _Task:
    """One partition to load: where it is, what its load is told (its log dir's checkpoints and marker
    too) and how its changes are written."""
    path: str
    load: LoadOptions
    size: int
    dry_run: bool = False
    backup: bool = True
    backup_dir: str | None = None


def _recover_task(task: _Task) -> RecoveryReport:
    return recover(task.path, task.load, dry_run=task.dry_run, backup=task.backup, backup_dir=task.backup_dir)


def _log_dir_backup(log_dir: str, backup_dir: str | None) -> str:
    """The run-level backup of a log dir's recovery: the log dir's own files (checkpoints) and the list
    of the partitions' backups (restore.RUN_FILE), in ``<backup-dir>/<log dir name>``, else in
    ``<log dir>.kfx-backup/<UTC time>`` beside it -- never inside: LogManager fails on a dir in a log
    dir that is no partition."""
    if backup_dir:
        return os.path.join(os.path.abspath(backup_dir), os.path.basename(log_dir))
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return os.path.join(log_dir + ".kfx-backup", stamp)


def _segments_bytes(path: str) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(path) if e.name.endswith(".log") and e.is_file())
    except OSError:
        return 0


def plan_log_dir(ld: LogDir, load: LoadOptions, *, dry_run: bool, backup: bool,
                 backup_dir: str | None) -> tuple[LogDirRecovery, list[_Task]]:
    """What LogManager reads of a log dir before it loads the partitions, and a task a partition
    (``load.kafka_version``: the log dir's, resolved)."""
    kafka_version = load.kafka_version
    out = LogDirRecovery(ld.path, dry_run=dry_run, kafka=kafka_version)
    if kafka_version is not None and kafka_version.rules().note():
        out.notes.append(kafka_version.rules().note())
    out.marker = ld.clean_shutdown_marker()
    out.clean_shutdown = ld.clean_shutdown and not load.full
    tables = {}
    for name in (LogDir.RECOVERY_POINT, LogDir.LOG_START_OFFSET):
        try:
            tables[name] = ld.checkpoint(name)
        except KafkaFormatError as e:
            out.notes.append(f"{name} unreadable ({e.problem.detail}): read as no entries, as Kafka does")
            tables[name] = {}
    for _path, _kind, why in ld.refused_dirs(kafka_version.rules() if kafka_version is not None else None):
        out.notes.append(f"{why}; left alone")   # the judge verify asks too (partition.broker_refusal)
    tasks = []
    for p in ld.partition_dirs():
        tp = parse_partition_dir_name(p)
        metadata = os.path.basename(p) == METADATA_PARTITION
        told = replace(load, clean=False if metadata else out.clean_shutdown,
                       recovery_point=0 if metadata or tp is None else tables[LogDir.RECOVERY_POINT].get(tp, 0),
                       log_start_offset=0 if metadata or tp is None else tables[LogDir.LOG_START_OFFSET].get(tp, 0))
        task_backup_dir = None
        if backup and backup_dir:
            task_backup_dir = os.path.join(os.path.abspath(backup_dir), os.path.basename(ld.path),
                                           os.path.basename(p))
        tasks.append(_Task(p, told, _segments_bytes(p), dry_run, backup, task_backup_dir))
    out.tables = tables
    return out, tasks


def _recovery_point(out: LogDirRecovery, rep: RecoveryReport, tp) -> int:
    """The recovery point LogManager checkpoints for a loaded log: its log end after a clean
    shutdown; after an unclean one by the version's rule (KAFKA-10101): up to 0.11 the checkpointed
    one, 1.0-2.7 the log end, from 2.8 the lower of the two."""
    leo, ck = rep.log_end_offset, out.tables[LogDir.RECOVERY_POINT].get(tp, 0)
    if out.clean_shutdown:
        return leo
    rule = rep.kafka.rules().write("recovery-point-unclean") if rep.kafka is not None else "min"
    return ck if rule == "keep" else leo if rule == "log-end" else min(ck, leo)


def finish_log_dir(out: LogDirRecovery, *, backup: bool, backup_dir: str | None) -> None:
    """The checkpoints LogManager writes once the logs are loaded (planned, applied unless a dry run)."""
    rps, lsos = {}, {}
    for rep in out.partitions:
        if rep.path is None:  # a report of no partition dir: no checkpoint entry
            continue
        state = partition_dir_state(rep.path)
        tp = parse_partition_dir_name(rep.path)
        if state not in ("live", "future") or rep.partition == METADATA_PARTITION or tp is None:
            continue
        rps[tp] = _recovery_point(out, rep, tp)
        if rep.first_segment is not None and rep.log_start_offset > rep.first_segment:
            lsos[tp] = rep.log_start_offset
    files = [(LogDir.RECOVERY_POINT, rps, "the recovery point of every loaded log, as LogManager checkpoints it after "
              "loading")]
    if out.kafka is None or out.kafka.rules().write("files-since-0.11") == "write":   # 0.10 has no log start
        files.append((LogDir.LOG_START_OFFSET, lsos, "the log start of every log whose start lies above its first "
                      "segment, as LogManager checkpoints it"))
    for name, table, why in files:
        ld = LogDir(out.log_dir)
        path = ld.file(name)
        try:
            have = ld.stored_checkpoint(name)
        except KafkaFormatError:
            have = None
        if have is not None and have == table:
            continue
        ordered = dict(sorted(table.items()))
        out.checkpoint_actions.append(Action("write", path, why, data=LogDir.checkpoint_bytes(ordered)))
    if out.dry_run:  # a dry run makes no backup, so names none
        return
    made = [rep.backup for rep in out.partitions if rep.backup and os.path.isdir(rep.backup)]
    if backup and (out.checkpoint_actions or made):
        out.backup = _log_dir_backup(out.log_dir, backup_dir)
    if out.checkpoint_actions:
        apply_actions(out.checkpoint_actions, out.backup)
    if out.backup:  # one run, one backup to undo it: `kfx restore` of it undoes every partition's changes too
        write_run(out.backup, made, f"kfx recover {out.log_dir}")


def recover_log_dirs(log_dirs, load: LoadOptions | None = None, *, jobs: int | None = None, dry_run: bool = False,
                     backup: bool = True, backup_dir: str | None = None, on_start=None,
                     on_done=None) -> list[LogDirRecovery]:
    """Load every partition of every log dir as LogManager.loadLogs does (see the module's doc),
    ``jobs`` partitions at a time in worker processes (default: the cores; 1: in this process).
    ``on_start(path, bytes)`` and ``on_done(report)`` are called as partitions start and finish.
    A log dir a running broker holds refuses the whole run (:class:`~.dir_lock.LogDirInUse`).
    ``load``: what every partition's load is told (:class:`~.recovery.LoadOptions`; its
    ``kafka_version``, ``X.Y`` or a KafkaVersion, default: each log dir's, inferred once from its
    files; its ``now``: the clock producer expiry is judged by, recover's)."""
    load = load or LoadOptions()
    for p in log_dirs:
        if not is_log_dir(p):
            raise NotALogDir(f"{p}: not a log dir (no meta.properties, offset checkpoint or topic-N dir in it)")
    dirs = [LogDir(p) for p in log_dirs]
    refuse_live(*[d.path for d in dirs])
    jobs = max(1, jobs or os.cpu_count() or 1)
    outs, tasks = [], []
    for ld in dirs:
        told = replace(load, kafka_version=resolve_kafka_version(ld.path, load.kafka_version))
        out, ts = plan_log_dir(ld, told, dry_run=dry_run, backup=backup, backup_dir=backup_dir)
        outs.append(out)
        tasks += [(out, t) for t in ts]
    results: dict[int, RecoveryReport] = {}
    if jobs == 1 or len(tasks) <= 1:
        for i, (_out, t) in enumerate(tasks):
            if on_start:
                on_start(t.path, t.size)
            results[i] = _recover_task(t)
            if on_done:
                on_done(results[i])
    else:
        _run_pool(tasks, jobs, results, on_start, on_done)
    for i, (out, _t) in enumerate(tasks):
        out.partitions.append(results[i])
    for out in outs:
        finish_log_dir(out, backup=backup, backup_dir=backup_dir)
    return outs


def _run_pool(tasks, jobs, results, on_start, on_done) -> None:
    """The tasks in ``jobs`` worker processes, largest first (the run ends with the small ones);
    ``on_start`` is called for a task when a worker is free for it, as far as this process can tell."""
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i][1].size)
    with cf.ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
        futures = {pool.submit(_recover_task, tasks[i][1]): i for i in order}
        pending = list(order)
        running: set[int] = set()

        def top_up():
            while pending and len(running) < jobs:
                i = pending.pop(0)
                running.add(i)
                if on_start:
                    on_start(tasks[i][1].path, tasks[i][1].size)
        top_up()
        for f in cf.as_completed(futures):
            i = futures[f]
            results[i] = f.result()
            running.discard(i)
            if i in pending:  # finished before this process saw it start
                pending.remove(i)
                if on_start:
                    on_start(tasks[i][1].path, tasks[i][1].size)
            if on_done:
                on_done(results[i])
            top_up()
