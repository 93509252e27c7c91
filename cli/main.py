"""``kfx``: every command is a few lines over a public library function.

Exit codes, the same for every command (README, *Exit codes*): 0 clean or done, 1 problems found in
the input (damage, findings, differences; the repairs exit 1 when there was something to repair), 2 usage
or I/O error.

Start-up is part of the interface (operators run ``kfx dump``/``verify`` in shell loops over
thousands of files): this module imports only the standard library and the commands'
declarations (cli/declare.py: typer's Option/Argument, kept until typer is needed); a plain
command line runs through cli/fastpath.py without importing typer at all, anything else (help, an
unusual line) through the typer application built from the same declarations (``app``). Every
library module a command runs is declared at this module's top through ``specs.lazy`` and loads
when the command first uses it, so rich, numpy, construct and pyspark load only where a command
needs them.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import List, Optional

from cli.declare import App, Argument, Exit, Option
from cli.options import (BACKUP_DIR, CONFIG, DRY_RUN, IGNORE_TOPIC_CONFIG, INDEX_INTERVAL_BYTES, JSON, KAFKA_VERSION,
                         NO_BACKUP, NOW, SCHEMA_REGISTRY, SCHEMAS, SEGMENT_BYTES, backup_settings, schema_decoder,
                         sizes, topic_config)
from kafkaforensics import __version__
from kafkaforensics.defaults import DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_DELETE_RETENTION_MS, DEFAULT_SPLIT_BYTES
from kafkaforensics.spark import engine as spark_engine
from specs.lazy import lazy

# Each command's library module, imported when the command runs (specs/lazy.py: the project's one
# lazy-import mechanism), so that start-up pays only for the command line's own module.
cli_fastpath = lazy("cli.fastpath", globals())
cli_plain = lazy("cli.plain", globals())
cli_recover_view = lazy("cli.recover_view", globals())
cli_spark_start = lazy("cli.spark_start", globals())
cli_tables = lazy("cli.tables", globals())
broker_server = lazy("kafkaforensics.broker.server", globals())
errors = lazy("kafkaforensics.errors", globals())
fsutil = lazy("kafkaforensics.fsutil", globals())
inspect_analyzer = lazy("kafkaforensics.inspect.analyzer", globals())
inspect_diff = lazy("kafkaforensics.inspect.diff", globals())
inspect_dump = lazy("kafkaforensics.inspect.dump", globals())
inspect_explain = lazy("kafkaforensics.inspect.explain", globals())
inspect_fleet = lazy("kafkaforensics.inspect.fleet", globals())
inspect_groups = lazy("kafkaforensics.inspect.groups", globals())
inspect_report_html = lazy("kafkaforensics.inspect.report_html", globals())
inspect_schema_timeline = lazy("kafkaforensics.inspect.schema_timeline", globals())
inspect_verify = lazy("kafkaforensics.inspect.verify", globals())
log_dir_lock = lazy("kafkaforensics.log.dir_lock", globals())
log_kafka_version = lazy("kafkaforensics.log.kafka_version", globals())
log_paths = lazy("kafkaforensics.log.paths", globals())
log_log_config = lazy("kafkaforensics.log.log_config", globals())
log_writer = lazy("kafkaforensics.log.writer", globals())
records_batch_json = lazy("kafkaforensics.records.batch_json", globals())
repair_cleaner = lazy("kafkaforensics.repair.cleaner", globals())
repair_load_logs = lazy("kafkaforensics.repair.load_logs", globals())
repair_plan_space = lazy("kafkaforensics.repair.plan_space", globals())
repair_recovery = lazy("kafkaforensics.repair.recovery", globals())
repair_reindex = lazy("kafkaforensics.repair.reindex", globals())
repair_restore = lazy("kafkaforensics.repair.restore", globals())
repair_retention = lazy("kafkaforensics.repair.retention", globals())
repair_salvage = lazy("kafkaforensics.repair.salvage", globals())
spark_storage = lazy("kafkaforensics.spark.storage", globals())
rich_markup = lazy("rich.markup", globals())
rich_progress = lazy("rich.progress", globals())
logging = lazy("logging", globals())  # serve's log lines only
spark_jobs_common = lazy("spark_jobs.common", globals())
spark_jobs_scan = lazy("spark_jobs.scan", globals())
spark_jobs_search = lazy("spark_jobs.search", globals())

# plain help text: typer's rich help panels import rich and markdown-it (~0.1 s) before a line is printed
commands = App(version=__version__, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
               help="Forensics for Apache Kafka's storage: dump, verify, write, repair.")


def __getattr__(name: str):
    if name == "app":  # the typer application (typer imported here: help, tests, unusual lines)
        return commands.typer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=None)
def _err():
    """The rich console on stderr (made on first use)."""
    return cli_plain.console(stderr=True)


EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class Fmt(str, Enum):
    text = "text"
    json = "json"


class Encoding(str, Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


def _fail(msg: str) -> None:
    _err().print(f"[red]error:[/red] {msg}", highlight=False, soft_wrap=True)
    raise Exit(EXIT_USAGE)


def _total_bytes(paths) -> int:
    total = 0
    for p in paths:
        if os.path.isdir(p):
            for root, _d, files in os.walk(p):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
        elif os.path.exists(p):
            total += os.path.getsize(p)
    return total


class _NoProgress:
    """What :func:`progress_bar` gives when it would be hidden anyway: every call does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _with_progress(paths, label: str, work):
    """``work(advance)`` under a progress bar over the bytes of ``paths``' segments."""
    total = _total_bytes(paths)
    with progress_bar(total, label) as bar:
        task = bar.add_task(label, total=total)
        return work(lambda n: bar.advance(task, n))


def _require_paths(paths) -> None:
    for p in paths:
        if not os.path.exists(p):
            _fail(f"{p}: no such file or directory")


def _print_live_notes(paths) -> None:
    """One note line on stderr per log dir among ``paths`` that a running broker holds."""
    for n in log_paths.live_notes(paths):
        _err().print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)


def progress_bar(total: int, label: str):
    """A rich progress bar on stderr (hidden when stderr is not a terminal)."""
    if not sys.stderr.isatty() and not any(v in os.environ
                                           for v in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return _NoProgress()  # rich would hide it too: no need to import it (a shell loop's start-up)
    rp = rich_progress
    return rp.Progress(rp.TextColumn(label), rp.BarColumn(), rp.DownloadColumn(), rp.TransferSpeedColumn(),
                       rp.TimeRemainingColumn(), console=_err(), transient=True, disable=not _err().is_terminal)


@commands.command()
def dump(paths: List[str] = Argument(..., metavar="PATH", help="Files (.log .index .timeindex .txnindex .snapshot, checkpoints), partition dirs or log dirs"),
         deep: bool = Option(False, "--deep", "--deep-iteration", help="Decode every record"),
         print_data: bool = Option(False, "--print-data", "--print-data-log", help="Print keys and values (implies --deep)"),
         fmt: Fmt = Option(Fmt.text, "--format", metavar="text|json", help="text (kafka-dump-log.sh lines) or json (JSON lines)"),
         encoding: Optional[Encoding] = Option(None, "--encoding", metavar="utf8|hex|base64", help="Key/value encoding (text: utf8, json: base64)"),
         max_bytes: Optional[int] = Option(None, "--max-bytes", min=0, metavar="BYTES", help="Only read batches within the first N bytes"),
         verify_index_only: bool = Option(False, "--verify-index-only", help="Check index entries, print only mismatches"),
         index_sanity_check: bool = Option(False, "--index-sanity-check", help="Run Kafka's index sanity check only"),
         offsets_decoder: bool = Option(False, "--offsets-decoder", help="Decode __consumer_offsets records"),
         transaction_log_decoder: bool = Option(False, "--transaction-log-decoder",
                                                      help="Decode __transaction_state records"),
         cluster_metadata_decoder: bool = Option(False, "--cluster-metadata-decoder",
                                                       help="Decode KRaft __cluster_metadata records"),
         share_group_state_decoder: bool = Option(False, "--share-group-state-decoder",
                                                        help="Decode __share_group_state records"),
         remote_log_metadata_decoder: bool = Option(False, "--remote-log-metadata-decoder",
                                                          help="Decode __remote_log_metadata records"),
         decode: bool = Option(False, "--decode", help="Decode Confluent-framed Avro/Protobuf/JSON Schema keys and "
                                                       "values (keyDecoded/valueDecoded beside the raw bytes)"),
         schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY):
    """Print Kafka storage files like kafka-dump-log.sh, or as JSON lines."""
    decoders = [n for n, on in (("offsets", offsets_decoder), ("transaction-log", transaction_log_decoder),
                                ("cluster-metadata", cluster_metadata_decoder),
                                ("share-group-state", share_group_state_decoder),
                                ("remote-log-metadata", remote_log_metadata_decoder)) if on]
    if len(decoders) > 1:
        _fail("choose one decoder")
    opts = inspect_dump.DumpOptions(deep=deep, print_data=print_data, fmt=fmt.value, encoding=encoding.value if encoding else None,
                       max_bytes=max_bytes, verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                       decoder=decoders[0] if decoders else None,
                       schemas=schema_decoder(paths, schemas, schema_registry) if decode else None)
    if decode:
        opts.print_data = True
    try:
        res = inspect_dump.dump(paths, opts)
    except log_paths.PathUsageError as e:
        _fail(str(e))
    except BrokenPipeError:  # `kfx dump ... | head`: stop quietly, as a Unix filter should
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise Exit(EXIT_OK)
    raise Exit(EXIT_PROBLEMS if res.problems else EXIT_OK)


@commands.command()
def verify(paths: List[str] = Argument(..., metavar="PATH", help="Segment files, partition dirs or log dirs"),
           as_json: bool = JSON,
           max_message_bytes: Optional[int] = Option(None, "--max-message-bytes", min=14, metavar="BYTES",
                                                           help="Also flag batches larger than this"),
           kafka_version: Optional[str] = KAFKA_VERSION):
    """Check CRCs, structure, indexes and checkpoints. Exit 0 clean, 1 problems, 2 usage/IO error."""
    kv = _kafka_version(paths[0], kafka_version) if os.path.exists(paths[0]) else None
    try:
        rep = _with_progress(paths, "verify", lambda advance: inspect_verify.verify(paths, progress=advance,
                                                                           max_batch_bytes=max_message_bytes,
                                                                           kafka_version=kv))
    except (OSError, log_paths.PathUsageError) as e:
        _fail(str(e))
    if as_json:
        j = rep.to_json()
        for key, items in (("problems", rep.problems), ("warnings", rep.warnings)):
            for d, p in zip(j[key], items):
                d["remedy"] = inspect_analyzer.problem_remedy(p)
        print(json.dumps(j))
    else:
        if rep.partitions:
            shown = [p for p in rep.partitions if p["batches"]]  # then one line counting the empty ones
            cli_tables.print_table("kfx verify", ("partition", "segments", "batches", "bytes", "log start", "log end"),
                        [(p["partition"], p["segments"], p["batches"], p["bytes"], p["logStartOffset"],
                          p["logEndOffset"]) for p in shown], right=range(1, 6))
            if len(shown) < len(rep.partitions):
                print(f"{len(rep.partitions) - len(shown)} partition(s) hold no batches (not listed)")
        if rep.kafka is not None:
            print(rep.kafka.line())
        cli_plain.print_lines(verify_report_lines(rep))
    raise Exit(EXIT_OK if rep.ok else EXIT_PROBLEMS)


def verify_report_lines(rep) -> list:
    """The lines `kfx verify` prints after its table: notes, problems with their remedies, the total."""
    lines = [cli_plain.Line(f"[dim]note: {n}[/dim]", f"note: {n}", [str(n)], highlight=False) for n in rep.notes]
    if rep.problems or rep.warnings:
        for word, style, items in (("warning", "yellow", rep.warnings), ("problem", "red", rep.problems)):
            for p in items:
                remedy = inspect_analyzer.problem_remedy(p)
                lines.append(cli_plain.Line(f"[{style}]{word}:[/{style}] {p}", f"{word}: {p}", [str(p)], highlight=False,
                                  soft_wrap=True))
                lines.append(cli_plain.Line(f"  remedy: {remedy}", f"  remedy: {remedy}", [remedy], highlight=False,
                                  soft_wrap=True, markup=False))
                if p.caused:  # the index problems this root cause explains, grouped under it
                    why = inspect_verify.caused_line(p.caused)
                    lines.append(cli_plain.Line(f"  {why}", f"  {why}", [why], highlight=False, soft_wrap=True, markup=False))
    total = f"{rep.files} files, {rep.batches} batches, {rep.bytes} bytes: "
    caused = sum(len(p.caused) for p in rep.problems)
    verdict = ("OK" if rep.ok else f"{len(rep.problems)} problem(s)") + (
        f" (and {caused} they cause, grouped under them)" if caused else "") + (
        f", {len(rep.warnings)} warning(s)" if rep.warnings else "")
    lines.append(cli_plain.Line(total + (f"[green]{verdict}[/green]" if rep.ok else f"[red]{verdict}[/red]"), total + verdict,
                                soft_wrap=True))
    return lines


@commands.command()
def write(out: str = Option(..., "--out", metavar="DIR", help="Partition directory to create (must be new or empty)"),
          segment_bytes: Optional[int] = SEGMENT_BYTES,
          index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
          encoding: Encoding = Option(Encoding.base64, "--encoding", metavar="utf8|hex|base64",
                                      help="Encoding the dump used for keys/values")):
    """Read `kfx dump --deep --format json` lines on stdin and write a valid partition directory."""
    segment_bytes, index_interval_bytes, _notes = sizes(out, segment_bytes, index_interval_bytes)
    _refuse_live(out)
    try:
        w = log_writer.PartitionWriter(out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    except (FileExistsError, OSError) as e:
        _fail(str(e))
    carried = {}  # the topic id of a dumped partition.metadata, kept as the input carries it
    try:
        with w:  # a failure leaves no partial partition behind (the writer aborts)
            for data in records_batch_json.batches_from_json_lines(sys.stdin, encoding=encoding.value, carried=carried):
                w.append(data)
            w.topic_id = carried.get("topicId") or w.topic_id
    except errors.KafkaFormatError as e:
        _fail(str(e.problem))
    _err().print(f"wrote {w.batches} batches in {len(w.segments)} segment(s) to {out}", highlight=False, soft_wrap=True)


def _print_actions(report_json: dict, title: str, dry_run: bool = False) -> None:
    """A repair's actions as a table (a dry run's: ``would delete``...), or that there is nothing to do."""
    if report_json["actions"]:
        cli_tables.print_table(title, ("action", "file", "detail"), [
            (("would " if dry_run else "") + a["action"],
             os.path.basename(a["file"]) + (f" -> {os.path.basename(a['target'])}" if a.get("target") else ""),
             a["detail"]) for a in report_json["actions"]])
    else:
        print(f"{title}: nothing to do")


_backup_opts = backup_settings


def _kafka_version(path: str, told: Optional[str]):
    """The Kafka generation whose rules apply (``--kafka-version`` or inferred); a bad value exits 2."""
    try:
        return log_kafka_version.kafka_version(path, told)
    except ValueError as e:
        _fail(str(e))


@commands.command()
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
                    kafka_version=kafka_version and _kafka_version(paths[0], kafka_version),
                    full=full, writing=recovery_point is not None or no_backup or backup_dir is not None)
    try:
        kinds = ["log dir" if kp.kind == log_paths.LOG_DIR else "partition"
                 for kp in log_paths.classify_for(paths, "recover", accept=(log_paths.LOG_DIR, log_paths.PARTITION_DIR))]
    except log_paths.PathUsageError as e:
        _fail(str(e))
    if recovery_point is not None and kinds != ["partition"]:
        _fail("--recovery-point applies to one partition dir")
    _refuse_live(*paths)
    load = repair_recovery.LoadOptions(index_interval_bytes=index_interval_bytes, max_message_bytes=max_message_bytes,
                                       full=full, kafka_version=kafka_version and _kafka_version(paths[0], kafka_version),
                                       now=now)
    opts = dict(dry_run=dry_run, **_backup_opts(backup_dir, no_backup))
    try:
        if kinds == ["partition"]:
            rep = repair_recovery.recover(paths[0], load.told(recovery_point=recovery_point), **opts)
            _print_partition_recovery(rep, as_json, dry_run)
            raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)
        outs = _recover_log_dirs(paths, kinds, jobs, load, opts)
    except OSError as e:
        _fail(str(e))
    except errors.KafkaFormatError as e:
        _fail(str(e.problem))
    cli_recover_view.print_log_dir_recovery(outs, as_json, dry_run)
    raise Exit(EXIT_PROBLEMS if any(o.changed for o in outs) else EXIT_OK)


def _plan_space(paths, *, move_to, as_json, now, kafka_version, full, writing) -> None:
    """``kfx recover --plan-space`` (``--move-to`` implies it): the disk-full rescue plan of each log
    dir, writing nothing; exit 0 when start-up fits everywhere, 1 when it does not (the plan says what
    could be moved), 2 for bad input."""
    if move_to is not None and (not move_to.strip() or os.path.isfile(move_to)):
        _fail(f"--move-to {move_to!r}: not a directory path")
    if writing:
        _fail("--plan-space writes nothing (not even a backup): it takes log dirs, --move-to, --full, --now, "
              "--kafka-version and --json, not --recovery-point, --backup-dir or --no-backup")
    try:
        kinds = log_paths.classify_for(paths, "recover --plan-space", accept=(log_paths.LOG_DIR,))
    except log_paths.PathUsageError as e:
        _fail(str(e))
    _refuse_live(*paths)
    try:
        plans = repair_plan_space.plan_space([str(k.path) for k in kinds], inspect_groups.committed_offsets,
                                             move_to=move_to, now=now,
                                             kafka_version=kafka_version, full=full)
    except (OSError, repair_load_logs.NotALogDir) as e:
        _fail(str(e))
    except errors.KafkaFormatError as e:
        _fail(str(e.problem))
    cli_recover_view.print_space_plans(plans, as_json)
    raise Exit(EXIT_OK if all(p.fits for p in plans) else EXIT_PROBLEMS)


def _recover_log_dirs(paths, kinds, jobs, load, opts):
    """Log dirs through LogManager's loading; partition dirs among them each as a one-partition run."""
    total = sum(_total_bytes([p]) for p in paths)
    with cli_recover_view.recovery_progress(total) as (on_start, on_done):
        outs = []
        dirs = [p for p, k in zip(paths, kinds) if k == "log dir"]
        if dirs:
            outs += repair_load_logs.recover_log_dirs(dirs, load, jobs=jobs, on_start=on_start, on_done=on_done,
                                                      **opts)
        for p, k in zip(paths, kinds):
            if k == "partition":
                on_start(p, _total_bytes([p]))
                rep = repair_recovery.recover(p, load, **opts)
                on_done(rep)
                outs.append(repair_load_logs.LogDirRecovery(os.path.dirname(os.path.abspath(p)), partitions=[rep],
                                           dry_run=opts["dry_run"]))
    return outs


def _refuse_live(*paths) -> None:
    """What every writing command does first: one line and exit 2 when a broker holds a log dir."""
    try:
        log_dir_lock.refuse_live(*paths)
    except log_dir_lock.LogDirInUse as e:
        _fail(str(e))


def _print_partition_recovery(rep, as_json: bool, dry_run: bool) -> None:
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
        return
    _print_actions(j, f"kfx recover {rep.partition}" + (" (dry run)" if dry_run else ""), dry_run)
    if rep.kafka is not None:
        cli_plain.console().print(rep.kafka.line(), highlight=False, markup=False, soft_wrap=True)
    if rep.truncated_at:
        t = rep.truncated_at
        cli_plain.console().print(f"{'would truncate' if dry_run else 'truncated'} {t['segment']} at byte {t['position']} "
                        f"(log end offset {t['offset']}): {t['reason']}", highlight=False, soft_wrap=True)
    if rep.dropped:
        hint = ""
        if rep.dropped.batches:
            hint = (f" (kept in the backup: `kfx salvage {rep.backup} --out DIR` copies the valid batches out)"
                    if rep.backup else f" (`kfx salvage {rep.path} --out DIR` first copies the valid batches out)")
        cli_plain.console().print(f"{'would drop' if dry_run else 'dropped'} {rep.dropped.text()}{hint}", highlight=False,
                        soft_wrap=True, markup=False)
    for n in rep.notes:
        cli_plain.console().print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
    if rep.backup:
        cli_plain.console().print(f"backup: {rep.backup}", highlight=False, soft_wrap=True)


@commands.command()
def reindex(path: str = Argument(..., help="A <offset>.log segment or a partition directory"),
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            dry_run: bool = DRY_RUN,
            backup_dir: Optional[str] = BACKUP_DIR,
            no_backup: bool = NO_BACKUP,
            as_json: bool = JSON,
            kafka_version: Optional[str] = KAFKA_VERSION,
            config: List[str] = CONFIG):
    """Rebuild .index/.timeindex/.txnindex exactly as Kafka's recovery writes them."""
    _refuse_live(path)
    _one_partition(path, "reindex", segments=True)
    partition_dir = path if os.path.isdir(path) else os.path.dirname(path) or "."
    _seg, index_interval_bytes, from_configs = sizes(partition_dir, None, index_interval_bytes, segments=False,
                                                     config=topic_config(partition_dir, config))
    try:
        rep = repair_reindex.reindex(path, index_interval_bytes=index_interval_bytes, dry_run=dry_run,
                           kafka_version=_kafka_version(path, kafka_version), **_backup_opts(backup_dir, no_backup))
    except (OSError, ValueError) as e:
        _fail(str(e))
    rep.notes[:0] = from_configs
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
    else:
        _print_actions(j, "kfx reindex" + (" (dry run)" if dry_run else ""), dry_run)
        cli_plain.console().print(rep.kafka.line(), highlight=False, markup=False)
        for n in rep.notes:
            cli_plain.console().print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
    raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)


def _backup_to_restore(path: str) -> str:
    """The backup dir ``kfx restore PATH`` undoes: PATH itself, or for a log dir (no manifest.json or
    run.json in it) the newest whole-log-dir recover run kept beside it (said on stderr)."""
    if any(os.path.isfile(os.path.join(path, n)) for n in (fsutil.MANIFEST, repair_restore.RUN_FILE)) \
            or not _is_log_dir(path):
        return path
    run = repair_restore.latest_run(path)
    if run is None:
        _fail(f"{path}: a log dir with no run of `kfx recover` backed up beside it "
              f"({os.path.abspath(path)}{fsutil.BACKUP_DIR_NAME}/); give the backup dir the repair printed")
    _err().print(f"undoing the newest recover run of {path}: {run}", highlight=False, soft_wrap=True, markup=False)
    return run


def _is_log_dir(path: str) -> bool:
    """Whether ``path`` is a log dir by :mod:`kafkaforensics.log.paths`' rules."""
    try:
        return log_paths.classify(path).kind == log_paths.LOG_DIR
    except log_paths.PathUsageError:
        return False


@commands.command()
def restore(backup_dir: str = Argument(..., metavar="BACKUP_DIR", help="A backup dir a repair wrote (it holds manifest.json, "
                                       "or run.json: a whole-log-dir recover's), or a log dir: its newest recover run"),
            dry_run: bool = DRY_RUN,
            as_json: bool = JSON):
    """Undo a repair (recover, reindex, compact, retention) from its backup: the files byte-identical again."""
    if not os.path.isdir(backup_dir):
        _fail(f"{backup_dir}: not a directory")
    backup_dir = _backup_to_restore(backup_dir)
    try:
        rep = repair_restore.restore(backup_dir, dry_run=dry_run)
    except (OSError, ValueError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        for r in rep.restored:
            print(f"{'would restore' if dry_run else 'restored'} {r['file']}: {r['detail']}")
        print(f"{len(rep.restored)} change(s) " + ("would be undone (dry run)" if dry_run else "undone")
              + (f", {len(rep.skipped)} not made or already undone" if rep.skipped else ""))
    raise Exit(EXIT_OK)


@commands.command()
def salvage(inputs: List[str] = Argument(..., metavar="INPUT", help="Damaged segment files, partition dirs or raw disk images"),
            out: str = Option(..., "--out", metavar="DIR", help="New partition directory to write (must be new or empty)"),
            segment_bytes: Optional[int] = SEGMENT_BYTES,
            index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
            dry_run: bool = DRY_RUN,
            as_json: bool = JSON):
    """Recover every valid batch, including those after corrupted regions, into a new partition."""
    _require_paths(inputs)
    segment_bytes, index_interval_bytes, _notes = sizes(out, segment_bytes, index_interval_bytes)
    if not dry_run:
        _refuse_live(out)
    try:
        rep = _with_progress(inputs, "salvage", lambda advance: repair_salvage.salvage(
            inputs, out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes, progress=advance,
            dry_run=dry_run))
    except (OSError, ValueError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = cli_plain.console()
        cli_tables.print_table("recovered offset ranges", ("first", "last"), [(r["first"], r["last"]) for r in rep.recovered],
                    right=(0, 1))
        for s in rep.skipped:
            c.print(f"skipped {s['bytes']} bytes of {s['file']} [{s['start']}, {s['end']})"
                    + (f": {s['reason']}" if s.get("reason") else ""), highlight=False, soft_wrap=True)
        for x in rep.conflicts:
            c.print(f"[yellow]conflict:[/yellow] offsets {x['baseOffset']}..{x['lastOffset']} at {x['file']}@{x['position']} "
                    f"differ from the batch kept from {x['keptFile']}@{x['keptPosition']}", highlight=False, soft_wrap=True)
        c.print(f"{rep.batches} batches, {rep.records} records, {rep.duplicates} duplicates"
                + (f" -> {rep.out}" if rep.out else " (dry run)"), highlight=False, soft_wrap=True)
    raise Exit(EXIT_PROBLEMS if (rep.skipped or rep.conflicts) else EXIT_OK)


@commands.command()
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
    _refuse_live(partition_dir if out is None else out)
    _one_partition(partition_dir, "compact")
    kv = _kafka_version(partition_dir, kafka_version)
    cfg = topic_config(partition_dir, config, kv)  # the topic's policy, asked once
    against = _policy(cfg, log_log_config.COMPACT, acting=True, ignore=ignore_topic_config)
    settings, from_configs = _cleaner_settings(cfg, partition_dir, {
        "delete.retention.ms": delete_retention_ms, "min.compaction.lag.ms": min_compaction_lag_ms,
        "max.compaction.lag.ms": max_compaction_lag_ms, "segment.bytes": segment_bytes,
        "index.interval.bytes": index_interval_bytes, "cleanup.policy": None})
    from_configs += against
    opts = repair_cleaner.CompactOptions(now=now, include_active=include_active, dedupe_buffer_bytes=dedupe_buffer_bytes,
                                         ignore_checkpoint=ignore_checkpoint, kafka_version=kv, **settings)
    try:
        problems = inspect_verify.walk_problems(partition_dir)
        rep = repair_cleaner.compact(partition_dir, opts, out=out, dry_run=dry_run, **_backup_opts(backup_dir, no_backup))
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        _fail(str(e))
    rep.notes[:0] = from_configs
    j = rep.to_json() | {"problems": [p.to_json() for p in problems + rep.problems]}
    if as_json:
        print(json.dumps(j))
    else:
        c = cli_plain.console()
        cli_tables.print_table(f"kfx compact {rep.partition}" + (" (dry run)" if dry_run else ""), ("", "before", "after"),
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
        c.print(rep.kafka.line(), highlight=False, markup=False)
        for n in rep.notes:
            c.print(f"[dim]note: {n}[/dim]", highlight=False, soft_wrap=True)
        if rep.backup:
            c.print(f"backup: {rep.backup}", highlight=False, soft_wrap=True, markup=False)
        _print_walk_problems(problems)
        for p in rep.problems:
            _err().print(f"problem: {p} (cleaning stopped here, as Kafka's cleaner would)", highlight=False,
                         soft_wrap=True, markup=False)
    raise Exit(EXIT_PROBLEMS if problems or rep.problems else EXIT_OK)


@commands.command()
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
    _refuse_live(partition_dir)
    _one_partition(partition_dir, "retention")
    cfg = topic_config(partition_dir, config)  # the topic's policy, asked once
    flags = {"retention.ms": retention_ms, "retention.bytes": retention_bytes}
    acting = any(v is not None for v in flags.values())
    from_configs = _policy(cfg, log_log_config.DELETE, acting=acting or ignore_topic_config, ignore=ignore_topic_config)
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
                              **_backup_opts(backup_dir, no_backup))
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json() | {"notes": from_configs + unlimited,
                                          "problems": [p.to_json() for p in problems]}))
    else:
        c = cli_plain.console()
        if rep.deleted:
            cli_tables.print_table(f"kfx retention {rep.partition}" + (" (dry run)" if dry_run else ""),
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
        _print_walk_problems(problems)
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


def _one_partition(path: str, command: str, segments: bool = False) -> None:
    """The path rules (kafkaforensics.log.paths) for a command that acts on one partition dir (or,
    ``segments``, one of its segments): anything else is one line and exit 2."""
    try:
        log_paths.classify_for([path], command, accept=(log_paths.PARTITION_DIR, log_paths.FILE) if segments
                               else (log_paths.PARTITION_DIR,), file_kinds={"log"},
                               what="a partition dir (<topic>-<partition>)" + (" or a <offset>.log segment"
                                                                               if segments else ""))
    except log_paths.PathUsageError as e:
        _fail(str(e))


def _policy(cfg, action: str, acting: bool, ignore: bool) -> list[str]:
    """The topic's policy for ``action`` (LogConfig.check): a refusal is one line and exit 2; acting
    against the policy (--ignore-topic-config) gives the one line saying so."""
    try:
        line = cfg.check(action, acting=acting, ignore=ignore)
    except log_log_config.PolicyRefusal as e:
        _fail(str(e))
    return [line] if line else []


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


def _print_walk_problems(problems) -> None:
    """compact's and retention's exit 1: damage their walk stopped at (they act on what comes before it)."""
    for p in problems:
        _err().print(f"problem: {p} (the batches from here on were left alone; `kfx recover` "
                     "truncates here as Kafka's log loading would)", highlight=False, soft_wrap=True, markup=False)


class Level(str, Enum):
    batches = "batches"
    records = "records"
    anomalies = "anomalies"


@commands.command()
def scan(inputs: List[str] = Argument(..., metavar="INPUT", help="Segment files, partition dirs, log dirs or fleets of them (local, file://, hdfs://, s3://, s3a://)"),
         out: str = Option(..., "--out", metavar="DIR", help="Directory for the Parquet results (new or empty; a scan that does not finish leaves nothing there)"),
         master: Optional[str] = Option(None, "--master", metavar="URL",
                                        help="Spark master (default local[*]: Spark embedded here; without --master "
                                             "(and a --search Python reads as Java does), a scan of up to 1 GiB of segments is read and written "
                                             "here with no JVM)"),
         level: Level = Option(Level.batches, "--level", metavar="batches|records|anomalies", help="Rows to export: batches, records or anomalies"),
         search: Optional[str] = Option(None, "--search", metavar="REGEX", help="Also write records matching this regex"),
         split_bytes: int = Option(DEFAULT_SPLIT_BYTES, "--split-bytes", min=1 << 16, metavar="BYTES",
                                         help="Split segments larger than this at batch boundaries"),
         include_corrupt: bool = Option(False, "--include-corrupt",
                                              help="Export the records of batches whose CRC fails (crcValid false)"),
         s3_endpoint: Optional[str] = Option(None, "--s3-endpoint", metavar="URL", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000"),
         s3_access_key: Optional[str] = Option(None, "--s3-access-key", metavar="KEY", help="S3 access key (else AWS_ACCESS_KEY_ID)"),
         s3_secret_key: Optional[str] = Option(None, "--s3-secret-key", metavar="KEY", help="S3 secret key (else AWS_SECRET_ACCESS_KEY)"),
         s3_region: Optional[str] = Option(None, "--s3-region", metavar="REGION", help="S3 region (else AWS_REGION)"),
         overwrite: bool = Option(False, "--overwrite", help="Replace an earlier run's outputs in --out (else a "
                                                                  "non-empty --out is refused)"),
         verbose: bool = Option(False, "--verbose", help="Show Spark's own start-up messages, and every partition of the inventory (else a summary past 20)"),
         topic: List[str] = Option([], "--topic", metavar="TOPIC", help="Only this topic (repeatable)"),
         partition: List[int] = Option([], "--partition", metavar="N", help="Only this partition (repeatable)"),
         from_time: Optional[str] = Option(None, "--from-time", metavar="TIME",
                                           help="Records from this time on (epoch ms or ISO 8601, UTC)"),
         to_time: Optional[str] = Option(None, "--to-time", metavar="TIME", help="Records before this time (exclusive)"),
         from_offset: Optional[int] = Option(None, "--from-offset", metavar="OFFSET", help="Records from this offset on"),
         to_offset: Optional[int] = Option(None, "--to-offset", metavar="OFFSET", help="Records up to this offset (inclusive)"),
         option: List[str] = Option([], "--option", metavar="KEY=VALUE",
                                    help="Any kafka_segments source option, e.g. timestampDisorderMs=3600000 (repeatable)"),
         partition_by: List[str] = Option([], "--partition-by", metavar="topic|date",
                                          help="Partition the records export by topic and/or the UTC date of the "
                                               "record timestamp (a date column), as Spark's partitionBy (repeatable)"),
         decode: bool = Option(False, "--decode", help="Records export: Confluent-framed keys and values decoded "
                                                       "(keyDecoded/valueDecoded JSON, schema id, subject columns)"),
         schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY):
    """Scan a fleet of segments with Spark (a small one needs none), reading it once: export, inventory, anomalies (and search hits) as Parquet."""
    run = _scan_ready(ScanArgs(inputs, out, master, level.value, search, split_bytes, include_corrupt,
                               (s3_endpoint, s3_access_key, s3_secret_key, s3_region), overwrite, verbose,
                               (topic, partition, from_time, to_time, from_offset, to_offset), option,
                               tuple(partition_by), (decode, schemas, schema_registry)))
    c = cli_plain.console(stderr=True)
    result, spark = _scan_running(c, run)
    c.print(_plan_line(result.plan), highlight=False, soft_wrap=True)
    _print_inventory(out, result.inventory, verbose)
    cli_plain.console().print(f"{result.rows} {level.value} rows -> {os.path.join(out, level.value)}; {result.anomalies} anomalies"
                    + (f" in the window ({result.notes} outside it: notes, in {os.path.join(out, 'anomalies')})"
                       if result.notes else "")
                    + (f"; {result.hits} search hits -> {os.path.join(out, 'search')}" if result.hits is not None else "")
                    + (f"; {result.races} replica race outcome(s) -> {os.path.join(out, 'races')}" if result.races else ""),
                    highlight=False, soft_wrap=True)
    if spark is not None:
        _scan_session_end(c, spark)
    raise Exit(EXIT_PROBLEMS if result.anomalies or result.races else EXIT_OK)


@dataclass
class ScanArgs:
    """``kfx scan``'s options as typer parsed them: ``s3`` (endpoint, access key, secret key, region),
    ``window`` (topics, partitions, from and to time, from and to offset)."""
    inputs: list
    out: str
    master: str | None
    level: str
    search: str | None
    split_bytes: int
    include_corrupt: bool
    s3: tuple
    overwrite: bool
    verbose: bool
    window: tuple
    option: list
    partition_by: tuple
    #: (--decode, --schemas, --schema-registry)
    decode: tuple = (False, None, None)

    def source_options(self) -> dict:
        """The ``kafka_segments`` source options they give (ValueError: one that is not)."""
        options = {k: v for k, v in zip(("includeCorrupt", "s3.endpoint", "s3.accessKey", "s3.secretKey", "s3.region"),
                                         ("true" if self.include_corrupt else None, *self.s3)) if v}
        decode, schemas, registry = self.decode
        options.update({k: v for k, v in (("decode", "true" if decode else None), ("schemas", schemas),
                                          ("schemaRegistry", registry)) if v})
        options.update(spark_jobs_common.window_options(*self.window))
        options.update(spark_jobs_common.parse_options(self.option))
        return options


def _scan_ready(a: ScanArgs) -> "ScanRun":
    """``kfx scan`` checked, planned and its engine chosen (``kafkaforensics.spark.engine``), ``--out``
    made ready last: every refusal (one line, exit 2) before anything is written."""
    if a.decode[0] and a.level != "records":
        _fail("--decode adds columns to the records export: give --level records")
    search_here = a.search is None or spark_jobs_search.python_pattern(a.search) is not None
    out_local = spark_jobs_common.local_path(a.out) is not None
    may_run_here = spark_engine.may_run_here(a.master, search_here, out_local)
    for problem in (None if may_run_here else cli_spark_start.java_problem(),
                    a.search is not None and spark_jobs_search.pattern_problem(None, a.search)):  # before anything starts
        if problem:
            _fail(problem)
    try:
        options = a.source_options()
        spark_jobs_scan.check_partition_by(a.level, a.partition_by)
        planned = spark_jobs_scan.plan(a.inputs, a.split_bytes, options)  # lists every input once: a missing one ends here
    except (ValueError, spark_storage.MissingInput) as e:
        _fail(str(e))
    engine = spark_engine.choose(a.master, planned.bytes, search_here, out_local)
    if may_run_here and engine.spark and (problem := cli_spark_start.java_problem()):  # still before --out is touched
        _fail(problem)
    made_out = cli_spark_start.out_is_new(a.out)
    problem = cli_spark_start.out_problem(a.out, a.overwrite)  # last of the checks: it makes a new --out
    if problem:
        _fail(problem)
    run = ScanRun(a.inputs, a.out, a.level, a.search, a.split_bytes, options, planned, a.verbose,
                  cli_spark_start.left_behind(a.out), a.partition_by, engine, made_out)  # what a scan that does not finish leaves
    if a.overwrite:
        cli_spark_start.clear_outputs(a.out)
    return run


def _scan_running(c, run: "ScanRun"):
    """``run`` run as its engine says -- here, or on Spark (also when its rows outgrow this process):
    (its result, the Spark session or None).  Whatever ends it early discards its outputs; Ctrl-C
    exits 130."""
    finished = interrupted = False
    result = spark = None
    try:
        if not run.engine.spark:
            result = _scan_here(c, run)
            if result is None:
                c.print("its rows outgrow what this process holds: Spark reads it", highlight=False)
                run.engine = run.engine.outgrown()
                if problem := cli_spark_start.java_problem():  # not checked for a scan that could run here
                    _fail(problem)
        if result is None:
            result, spark = _scan_on_spark(c, run)
        finished = True
    except KeyboardInterrupt:  # as a shell's Ctrl-C: 128 + SIGINT
        interrupted = True
    finally:
        if not finished:  # whatever ended it (an error, --verbose's traceback, Ctrl-C)
            if interrupted:  # its tasks would write on: pyspark's JVM ignores SIGINT
                cli_spark_start.stop_driver_jvm()
            cli_spark_start.discard_outputs(run.out, run.made_out)
    if interrupted:
        _err().print(f"interrupted: {run.left}", highlight=False, soft_wrap=True)
        raise Exit(130)
    return result, spark


def _scan_here(c, run: "ScanRun"):
    """``run`` read and written in this process, with no Spark (None: its rows outgrow it)."""
    planned = run.planned
    c.print(f"reading {planned.bytes:,} bytes of segments here: a scan this small needs no Spark "
            f"(--master {LOCAL_MASTER} runs it on Spark)", highlight=False, soft_wrap=True)
    try:
        return spark_jobs_scan.scan_here(_scan_request(run, spark_jobs_common.local_path(run.out)))
    except Exception as e:  # noqa: BLE001 -- one line, not a traceback (exit 1 means damage)
        if run.verbose:
            raise
        _fail(f"the scan stopped: {cli_spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")


def _scan_request(run: "ScanRun", out: str):
    """What ``run`` asks of ``spark_jobs.scan``, into ``out``: its inputs' listing made once, for the plan."""
    return spark_jobs_scan.ScanRequest(run.inputs, out, run.level, run.search, run.split_bytes, run.options,
                                       run.planned.listing, run.partition_by)


def _scan_session_end(c, spark) -> None:
    """The Spark session of a scan ended; on a first run, the driver JVM's classes recorded in the
    background for faster starts."""
    spark_jobs_common.end_session(spark)
    if spark_jobs_common.class_archive_recording() == "background" and spark_jobs_common.class_archive_missing():
        pid = spark_jobs_common.start_class_archive_recording()
        if pid is not None:
            c.print(f"first run: recording the driver JVM's classes for faster starts, once, in the background "
                    f"(pid {pid}; {spark_jobs_common.CLASS_ARCHIVE_RECORDING}=now records them during a scan, =no never)",
                    highlight=False, soft_wrap=True)


#: the master ``kfx scan`` runs Spark on when not told one
LOCAL_MASTER = spark_engine.LOCAL_MASTER
#: an inventory of up to this many rows is printed whole; a longer one as a summary (``--verbose``: whole)
SCAN_TABLE_ROWS = 20
#: the largest partitions a summary names
SCAN_LARGEST = 5


def _plan_line(p) -> str:
    """What a scan read: its segments, bytes and splits (a large segment is cut into several)."""
    cut = " (large segments cut at batch boundaries)" if p.splits > p.segments else ""
    return f"read {p.segments} segments, {p.bytes:,} bytes, in {p.splits} splits{cut}"


def _print_inventory(out: str, inventory: list, verbose: bool) -> None:
    """``kfx scan``'s inventory on the console: whole when short or ``verbose``; else its totals, the
    partitions with anomalies and the largest ones (the whole table is ``out/inventory``)."""
    def row(r):
        return (r["partitionDir"] or "(no partition dir)", "" if r["brokerId"] is None else r["brokerId"], r["logDir"],
                r["segments"], r["batches"], r["records"],
                f"{r['firstOffset']}..{r['lastOffset']}" if r["firstOffset"] is not None
                else "empty" if r["segments"] else "no log", r["bytes"],
                ",".join(r["codecs"]), r["anomalies"])
    columns = ("partition", "broker", "log dir", "segments", "batches", "records", "offsets", "bytes", "codecs",
               "anomalies")
    if verbose or len(inventory) <= SCAN_TABLE_ROWS:
        cli_tables.print_table(f"kfx scan -> {out}", columns, [row(r) for r in inventory])
        return
    total = {k: sum(r[k] for r in inventory) for k in ("segments", "batches", "records", "bytes", "anomalies")}
    print(f"kfx scan -> {out}: {len(inventory)} partition copies in {len({r['logDir'] for r in inventory})} log dirs, "
          f"{total['segments']:,} segments, {total['batches']:,} batches, {total['records']:,} records, "
          f"{total['bytes']:,} bytes, {total['anomalies']:,} anomalies")
    damaged = [r for r in inventory if r["anomalies"]]
    if damaged:
        cli_tables.print_table(f"partitions with anomalies ({len(damaged)})", columns,
                               [row(r) for r in sorted(damaged, key=lambda r: -r["anomalies"])[:SCAN_TABLE_ROWS]])
    largest = sorted(inventory, key=lambda r: -r["bytes"])[:SCAN_LARGEST]
    cli_tables.print_table(f"the {len(largest)} largest partitions", columns, [row(r) for r in largest])
    print(f"every partition: {os.path.join(out, 'inventory')} (--verbose prints them all here)")



@dataclass
class ScanRun:
    """What ``kfx scan`` was asked to run, checked and planned: its inputs, ``--out``, level, search
    pattern, split size and source options, the plan (``spark_jobs.scan.plan``'s, with the inputs'
    listing), whether Spark's own messages show, and what a scan that does not finish leaves in
    ``--out`` (for its error line)."""
    inputs: list
    out: str
    level: str
    search: str | None
    split_bytes: int
    options: dict
    planned: object
    verbose: bool
    left: str
    partition_by: tuple = ()
    engine: spark_engine.ScanEngine | None = None
    made_out: bool = False


def _scan_on_spark(c, run: ScanRun):
    """``kfx scan``'s ``run`` on Spark, from the JVM's start, as its engine says: (its result, the
    session)."""
    planned, verbose, search, engine = run.planned, run.verbose, run.search, run.engine
    master = engine.master
    c.print(f"starting Spark ({master})...", highlight=False)
    try:
        with cli_spark_start.quiet_start(verbose):
            spark = spark_jobs_common.get_spark(master, console_progress=False, class_archive=True,
                                                engine=engine,
                                                record_class_archive=spark_jobs_common.class_archive_recording() == "now",
                                                register_source=False)  # scan reads what it plans: no data source
    except spark_jobs_common.SparkStartError as e:
        _fail(str(e))
    if search is not None and (problem := spark_jobs_search.pattern_problem(spark, search)):
        _fail(problem)
    if not verbose:
        cli_spark_start.quiet_python_logs()
    if spark_jobs_common.records_class_archive(spark):
        c.print("first run: recording the driver JVM's classes for faster starts (once)", highlight=False)
    with rich_progress.Progress(rich_progress.TextColumn("[progress.description]{task.description}"), rich_progress.BarColumn(),
                                rich_progress.TextColumn("{task.fields[splits]}"),
                                rich_progress.TimeRemainingColumn(), console=c, transient=True) as bar:
        task = bar.add_task("reading", total=max(1, planned.splits), splits=f"0/{planned.splits} splits")

        def progress(done, total):  # once read, no second pass of the same splits is shown
            bar.update(task, completed=done, total=total, **({"description": "writing the outputs", "splits": ""}
                                                             if done >= total else {"splits": f"{done}/{total} splits"}))
        try:
            return spark_jobs_scan.scan(spark, _scan_request(run, run.out), progress, driver_bytes=engine.driver_bytes,
                                        tasks_write=engine.pyarrow_writes), spark
        except Exception as e:  # noqa: BLE001 -- Spark's and the JVM's: one line, not a traceback (exit 1 means damage)
            if verbose:
                raise
            _fail(f"the scan stopped: {cli_spark_start.error_line(e)} (--verbose shows the whole error); {run.left}")


def _new_file_problem(path: str, overwrite: bool) -> str | None:
    """Why a command cannot write the file ``path`` (a missing or read-only directory, a directory in
    its place, an existing file without ``--overwrite``), or None."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{path}: is a directory (give a file name)"
    if not os.path.isdir(parent):
        return f"{path}: no such directory {parent}"
    if os.path.exists(path) and not overwrite:
        return f"{path}: exists (--overwrite replaces it)"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"{path}: the file is read-only"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{path}: the directory {parent} is not writable"
    return None


def finding_text(f, partition_path: str | None) -> str:
    """An analyze finding as one line: partition, kind, the file it is in (else the partition's dir),
    byte position and offsets where known, then the explanation."""
    where = " ".join(x for x in (f.file or partition_path or "", f"@ byte {f.position}" if f.position is not None else "",
                                 f.offsets_text()) if x)
    return f"{f.partition} {f.kind}" + (f" {where}" if where else "") + f": {f.explanation}"


@commands.command()
def analyze(paths: List[str] = Argument(..., metavar="PATH", help="Segments, partition dirs or log dirs"),
            as_json: bool = JSON,
            html_out: Optional[str] = Option(None, "--html", metavar="FILE", help="Write a self-contained HTML report here"),
            overwrite: bool = Option(False, "--overwrite", help="Replace an existing --html file (else it is refused)"),
            now: Optional[int] = NOW, schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY):
    """Find damage and suspicious patterns: offsets, timestamps, producers, transactions, leader epochs."""
    if html_out and (problem := _new_file_problem(html_out, overwrite)):
        _fail(problem)  # before the analysis: a report it could not write is no report
    decoder = schema_decoder(paths, schemas, schema_registry) if schemas or schema_registry else None
    try:
        rep = inspect_analyzer.analyze(paths, inspect_analyzer.AnalyzeOptions(now=now, schemas=decoder))
    except (OSError, log_paths.PathUsageError) as e:
        _fail(str(e))
    if html_out:
        try:
            fsutil.atomic_write(html_out, inspect_report_html.render(rep, "kfx analyze " + " ".join(paths), paths).encode())
        except OSError as e:
            _fail(f"{html_out}: cannot write the report ({e.strerror or e})")
    if as_json:
        print(json.dumps(rep.to_json()))
        if html_out:
            _err().print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    else:
        c = cli_plain.console()
        rows = []
        for p in rep.partitions_with_data:  # then one line counting the empty ones
            n = sum(1 for f in rep.findings if f.partition == p.partition and f.severity != "info")
            iso = inspect_report_html.iso
            span = f"{iso(p.first_timestamp)}..{iso(p.last_timestamp)}" if p.first_timestamp is not None else "-"
            tx = p.transactions
            offs = inspect_report_html.offset_span(p).removeprefix("offsets ")
            rows.append((p.partition, offs, span, p.bytes, ",".join(sorted(p.codecs)), p.producers,
                         f"{tx['committed']}/{tx['aborted']}/{tx['open']}", cli_tables.Cell(str(n), "red" if n else None)))
        cli_tables.print_table("kfx analyze", ("partition", "offsets", "time span", "bytes", "codecs", "producers",
                                    "txns c/a/open", "findings"), rows)
        empty = len(rep.partitions) - len(rep.partitions_with_data)
        if empty:
            print(f"{empty} partition(s) hold no batches (not listed)")
        for p in rep.partitions:  # the schema timeline, where values are Confluent-framed
            if p.schemas is not None:
                print(inspect_schema_timeline.timeline_text(p.partition, p.schemas))
        dirs = {p.partition: p.path for p in rep.partitions}
        for f in rep.findings:
            style = {"error": "red", "warning": "yellow", "info": "dim"}[f.severity]
            c.print(f"[{style}]{f.severity}[/{style}] {rich_markup.escape(finding_text(f, dirs.get(f.partition)))}",
                    highlight=False, soft_wrap=True)
            if f.remedy:
                c.print(f"  remedy: {f.remedy}", highlight=False, soft_wrap=True, markup=False)
            if f.caused:  # the index problems this root cause explains, grouped under it
                c.print(f"  {inspect_verify.caused_line(f.caused)}", highlight=False, soft_wrap=True, markup=False)
        if html_out:
            c.print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    raise Exit(EXIT_PROBLEMS if rep.problems else EXIT_OK)


@commands.command()
def diff(dirs: List[str] = Argument(..., metavar="DIR", help="Two or more replicas: partition dirs of one partition "
                                                             "(the first is A, the leader's copy), or log dirs (one per broker)"),
         different_partitions: bool = Option(False, "--different-partitions",
                                             help="Compare dirs named after two different topic-partitions "
                                                  "(else refused: they are no replicas of one partition)"),
         as_json: bool = JSON):
    """Compare replicas: two partition dirs batch by batch, or N log dirs / N partition dirs, each divergence classified."""
    if len(dirs) < 2:
        _fail("kfx diff takes two or more dirs (replicas of a partition, or log dirs one per broker)")
    try:
        if len(dirs) > 2 or any(log_paths.classify(d).kind != log_paths.PARTITION_DIR for d in dirs):
            try:
                fleet = inspect_fleet.fleet_diff(dirs, different_partitions=different_partitions)
            except (OSError, errors.KafkaFormatError) as e:
                _fail(str(e))
            _diff_fleet(fleet, as_json)
        rep = inspect_diff.diff(dirs[0], dirs[1], different_partitions=different_partitions)
    except log_paths.PathUsageError as e:
        _fail(str(e))
    _print_live_notes(dirs)
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = cli_plain.console()
        for n in rep.notes:
            c.print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
        for label, corrupt in (("A", rep.corrupt_a), ("B", rep.corrupt_b)):
            for x in corrupt[:20]:
                c.print(f"replica {label} is corrupt: the batch at offsets {x['baseOffset']}..{x['lastOffset']} "
                        f"({x['file']} byte {x['position']}) fails its CRC; its offsets are not compared "
                        "(`kfx verify` locates the damage, `kfx recover` truncates there)",
                        highlight=False, soft_wrap=True, markup=False)
        if rep.identical:
            c.print(f"identical: {rep.same_batches} batches, log end offset {rep.log_end_offsets[0]}")
        elif rep.first_diverging_offset is None:
            c.print(f"no divergence besides the corruption: {rep.same_batches} batches the same; log end offsets "
                    f"A={rep.log_end_offsets[0]} B={rep.log_end_offsets[1]}"
                    + (f"; B truncates to offset {rep.truncate_b_to}" if rep.truncate_b_to is not None else ""),
                    highlight=False, soft_wrap=True)
        else:
            c.print(f"first diverging offset: {rep.first_diverging_offset}; same batches before/around: "
                    f"{rep.same_batches}; log end offsets A={rep.log_end_offsets[0]} B={rep.log_end_offsets[1]}",
                    highlight=False, soft_wrap=True)
            for label, items in (("only in A", rep.only_in_a), ("only in B", rep.only_in_b)):
                for x in items[:20]:
                    c.print(f"{label}: offsets {x['baseOffset']}..{x['lastOffset']} (epoch {x['epoch']})", highlight=False, soft_wrap=True)
            for d in rep.different[:20]:
                c.print(f"different bytes: offsets {d['a']['baseOffset']}..{d['a']['lastOffset']} "
                        f"(A crc {d['a']['crc']} epoch {d['a']['epoch']}, B crc {d['b']['crc']} epoch {d['b']['epoch']})",
                        highlight=False, soft_wrap=True)
            c.print(f"truncating B to offset {rep.truncate_b_to} reconciles it with A", highlight=False, soft_wrap=True)
            if rep.epoch_truncation:
                e = rep.epoch_truncation
                c.print(f"by leader epoch (OffsetsForLeaderEpoch): B's epoch {e['epoch']} ends at {e['endOffsetInA']} "
                        f"in A, so B truncates to {e['truncateBTo']}", highlight=False, soft_wrap=True)
    raise Exit(EXIT_OK if rep.identical else EXIT_PROBLEMS)


def _diff_fleet(rep, as_json: bool) -> None:
    """``kfx diff`` of N replicas: the report (JSON or lines), exit 0 consistent, 1 divergence."""
    _print_live_notes(rep.paths)
    if as_json:
        print(json.dumps(rep.to_json()))
        raise Exit(EXIT_OK if rep.consistent else EXIT_PROBLEMS)
    c = cli_plain.console()
    for n in rep.notes:
        c.print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
    for p in rep.partitions:
        for d in p["divergences"]:
            c.print(f"{p['partition']}: {d['class']}: {d['text']}", highlight=False, soft_wrap=True, markup=False)
            for e in d["evidence"]:
                c.print(f"  evidence: {e['text']}", highlight=False, soft_wrap=True, markup=False)
        for n in p["notes"]:
            c.print(f"{p['partition']}: note: {n}", highlight=False, soft_wrap=True, markup=False)
    same = sum(1 for p in rep.partitions if not p["divergences"])
    c.print(f"{len(rep.partitions)} partition(s) on 2+ replicas: {same} consistent, {len(rep.partitions) - same} "
            f"diverged; {len(rep.single)} on one replica only", highlight=False, soft_wrap=True, markup=False)
    raise Exit(EXIT_OK if rep.consistent else EXIT_PROBLEMS)


@commands.command()
def explain(path: str = Argument(..., metavar="PATH", help="A partition dir (topic-N), or a log dir with --topic and --partition"),
            offset: Optional[int] = Option(None, "--offset", metavar="N", help="The offset to explain"),
            key: Optional[str] = Option(None, "--key", metavar="K", help="Every record of this key (UTF-8), in order"),
            at_time: Optional[str] = Option(None, "--time", metavar="T", help="The offset ListOffsets gives for this "
                                                                          "time (epoch ms or ISO-8601 UTC)"),
            topic: Optional[str] = Option(None, "--topic", metavar="TOPIC", help="With a log dir: the topic"),
            partition: Optional[int] = Option(None, "--partition", min=0, metavar="P", help="With a log dir: the partition"),
            now: Optional[int] = NOW,
            config: List[str] = CONFIG,
            as_json: bool = JSON,
            decode: bool = Option(False, "--decode", help="--key K may be a Confluent-framed key's decoded value "
                                                          "(JSON, e.g. '{\"id\": 7}', else a string)"),
            schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY):
    """The fate of an offset, a key's records or a time: present (where, which transaction, visible or not) or gone, and by which rule."""
    _require_paths([path])
    try:
        pdir = inspect_explain.partition_dir(path, topic, partition)
    except ValueError as e:
        _fail(str(e))
    try:
        log_paths.classify_for([pdir], "explain", accept=(log_paths.PARTITION_DIR,),
                               what="a partition dir (<topic>-<partition>), or a log dir with --topic and --partition")
    except log_paths.PathUsageError as e:
        _fail(str(e))
    cfg = topic_config(pdir, config)
    try:
        got = inspect_explain.explain(pdir, offset=offset, key=key, at=at_time, cfg=cfg, now=now,
                                      key_decoder=schema_decoder([pdir], schemas, schema_registry) if decode else None)
    except (OSError, ValueError, errors.KafkaFormatError) as e:
        _fail(str(e))
    _print_live_notes([pdir])
    if as_json:
        print(json.dumps(got))
    else:
        _print_explained(got)
    raise Exit(EXIT_OK if got["results"] and all(r["found"] for r in got["results"]) else EXIT_PROBLEMS)


def _print_explained(got: dict) -> None:
    """explain's text: a line per result (offset, fate, reason), its evidence indented."""
    c = cli_plain.console()
    say = lambda line: c.print(line, highlight=False, soft_wrap=True, markup=False)  # noqa: E731
    say(f"{got['partition']}: log start {got['logStartOffset']}, last stable {got['lastStableOffset']}, "
        f"log end {got['logEndOffset']}")
    if not got["results"]:
        say(f"no record of key {got['key']!r} in this partition (compaction or retention may have removed them)")
    for r in got["results"]:
        sure = "" if r["certainty"] == "certain" else f" ({r['certainty']})"
        say(f"offset {r['offset']}: {r['fate']}{sure}: {r['reason']}")
        for e in r["evidence"]:
            say(f"  {e['text']}")


@commands.command()
def groups(paths: List[str] = Argument(..., metavar="PATH", help="Log dirs, or __consumer_offsets-N partition dirs"),
           as_json: bool = JSON,
           members: bool = Option(False, "--members", help="Also list the members of classic, consumer "
                                        "(KIP-848), share and streams groups"),
           group: Optional[str] = Option(None, "--group", metavar="G", help="Only this group"),
           explain: bool = Option(False, "--explain", help="Split each lag into data to consume, control markers, "
                                                           "aborted records, records held behind the last stable "
                                                           "offset and offsets compaction removed")):
    """Latest committed offset of every group/topic/partition, and its lag against the log dir's partitions."""
    try:
        rows = (inspect_groups.explain_lag(paths, group) if explain else
                [r for r in inspect_groups.committed_offsets(paths) if group is None or r["group"] == group])
        mrows = [m for m in inspect_groups.group_members(paths) if group is None or m["group"] == group] if members else None
    except log_paths.PathUsageError as e:
        _fail(str(e))
    _print_live_notes(paths)
    if as_json:
        print(json.dumps({"offsets": rows, **({"members": mrows} if members else {})}))
    elif not rows and not mrows:  # a no-op says why
        print(f"no committed offset of group {group} in {' '.join(paths)}" if group else inspect_groups.no_commits_line(paths))
    else:
        cli_tables.print_table(f"kfx groups {' '.join(paths)}", ("group", "topic", "partition", "committed", "log end", "lag", "metadata"),
                    [(r["group"], r["topic"], r["partition"], r["offset"],
                      "" if r["logEndOffset"] is None else f"{r['logEndOffset']} (no log)" if r["noLog"] else r["logEndOffset"],
                      "past log end" if r["pastLogEnd"] else "" if r["lag"] is None else r["lag"],
                      r["metadata"]) for r in rows])
        for r in rows if explain else ():
            if r["explain"] is not None:
                print(f"{r['group']} {r['topic']}-{r['partition']} lag {r['lag']}: {r['explain']['text']}")
        for r in rows:
            if r["pastLogEnd"]:
                _err().print(f"problem: group {r['group']} committed offset {r['offset']} of {r['topic']}-{r['partition']}"
                             f", past its log end offset {r['logEndOffset']}"
                             + (" (its partition dir holds no log: its segments are gone)" if r["noLog"] else "")
                             + ": the log lost records the group had consumed (a truncation or an unclean leader "
                             "election)", highlight=False, soft_wrap=True,
                             markup=False)
        if members:
            cli_tables.print_table("members", ("group", "protocol", "member", "client", "host", "subscribed", "assigned"),
                        [(m["group"], m["protocol"], m["memberId"], m["clientId"] or "", m["clientHost"] or "",
                          ",".join(m["subscribedTopics"] or []), " ".join(m["assignment"] or [])) for m in mrows])
    raise Exit(EXIT_PROBLEMS if any(r["pastLogEnd"] for r in rows) else EXIT_OK)


@commands.command()
def serve(log_dir: str = Argument(..., help="A log dir: every <topic>-<partition> dir is served"),
          host: str = Option("127.0.0.1", "--host", metavar="HOST", help="Address to listen on"),
          port: int = Option(9092, "--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free one)"),
          advertised_host: Optional[str] = Option(None, "--advertised-host", metavar="HOST",
                                                  help="Host name clients are told to connect to (default: --host)"),
          node_id: Optional[int] = Option(None, "--node-id", min=0, metavar="ID",
                                          help="The broker id clients see (default: the log dir's node.id, else "
                                               "broker.id, in meta.properties; else 0)"),
          writable: bool = Option(False, "--writable", help="Accept Produce, transactions and CreateTopics"),
          auto_create: bool = Option(True, "--auto-create/--no-auto-create",
                                           help="With --writable: create a topic a client names (Kafka's auto.create.topics.enable)"),
          partitions: int = Option(1, "--partitions", min=1, metavar="N", help="Partitions of an auto-created topic (num.partitions)"),
          state_file: Optional[str] = Option(None, "--state-file", metavar="FILE",
                                                   help="Where committed group offsets persist (default ~/.local/state/kfx/serve/...)"),
          transaction_version: int = Option(2, "--transaction-version", min=0, max=2, metavar="N",
                                            help="The transaction.version feature finalized (2: KIP-890 transactions v2)"),
          max_request_bytes: int = Option(104857600, "--socket-request-max-bytes", min=1024, metavar="BYTES",
                                          help="Largest request frame (socket.request.max.bytes)"),
          max_buffered_bytes: int = Option(536870912, "--queued-max-request-bytes", min=1024, metavar="BYTES",
                                           help="Request bytes buffered over all connections (queued.max.request.bytes)"),
          idle_ms: int = Option(600000, "--connections-max-idle-ms", min=1, metavar="MS",
                                help="Close a connection silent this long (connections.max.idle.ms)"),
          max_connections: int = Option(1000, "--max-connections", min=1, metavar="N", help="Open connections at most")):
    """Serve log directories to real Kafka clients over the Kafka protocol (read-only unless --writable)."""
    try:
        log_paths.classify_for([log_dir], "serve", accept=(log_paths.LOG_DIR,))
    except log_paths.PathUsageError as e:
        # a writable broker may start on an empty dir (a new broker's log dir); nothing else but a log dir
        if not (writable and os.path.isdir(log_dir) and not os.listdir(log_dir)):
            _fail(str(e))
    if writable:
        _refuse_live(log_dir)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    limits = broker_server.Limits(max_request_bytes=max_request_bytes, max_connections=max_connections,
                    max_buffered_bytes=max_buffered_bytes, idle_ms=idle_ms)
    try:
        broker_server.serve_forever(log_dir, host, port, broker_server.ServeOptions(
            advertised_host=advertised_host, node_id=node_id, state_path=state_file, writable=writable,
            auto_create=auto_create, partitions=partitions, limits=limits, transaction_version=transaction_version))
    except KeyboardInterrupt:
        raise Exit(EXIT_OK)
    except OSError as e:
        _fail(str(e))


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"kfx {__version__}")
        raise SystemExit(EXIT_OK)
    cli_fastpath.run(commands, sys.argv[1:])  # a plain command line runs without typer
    commands.typer()(prog_name="kfx")


if __name__ == "__main__":
    main()
