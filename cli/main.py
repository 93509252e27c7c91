"""``kfx``: every command is a few lines over a public library function.

Exit codes, the same for every command (README, *Exit codes*): 0 clean or done, 1 problems found in
the input (damage, findings, differences; the repairs exit 1 when there was something to repair), 2 usage
or I/O error.

Start-up is part of the interface (operators run ``kfx dump``/``verify`` in shell loops over
thousands of files): this module imports only the standard library and the commands'
declarations (cli/declare.py: typer's Option/Argument, kept until typer is needed); a plain
command line runs through cli/fastpath.py without importing typer at all, anything else (help, an
unusual line) through the typer application built from the same declarations (``app``). Each
command imports the library module it runs, and rich, numpy, construct and pyspark load only where
a command needs them.
"""
from __future__ import annotations

import json
import os
import sys
from enum import Enum
from functools import lru_cache
from typing import List, Optional

from cli.declare import App, Argument, Exit, Option
from kafkaforensics.defaults import (DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_DELETE_RETENTION_MS, DEFAULT_INDEX_INTERVAL_BYTES,
                                     DEFAULT_SEGMENT_BYTES, DEFAULT_SPLIT_BYTES)

# plain help text: typer's rich help panels import rich and markdown-it (~0.1 s) before a line is printed
commands = App(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
               help="Forensics for Apache Kafka's storage: dump, verify, write, repair.")


def __getattr__(name: str):
    if name == "app":  # the typer application (typer imported here: help, tests, unusual lines)
        return commands.typer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=None)
def _err():
    """The rich console on stderr (made on first use)."""
    from rich.console import Console
    return Console(stderr=True)


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


def progress_bar(total: int, label: str):
    """A rich progress bar on stderr (hidden when stderr is not a terminal)."""
    if not sys.stderr.isatty() and not any(v in os.environ
                                           for v in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return _NoProgress()  # rich would hide it too: no need to import it (a shell loop's start-up)
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
    return Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                    console=_err(), transient=True, disable=not _err().is_terminal)


@commands.command()
def dump(paths: List[str] = Argument(..., help="Files to dump (.log .index .timeindex .txnindex .snapshot, checkpoints)"),
         deep: bool = Option(False, "--deep", "--deep-iteration", help="Decode every record"),
         print_data: bool = Option(False, "--print-data", "--print-data-log", help="Print keys and values (implies --deep)"),
         fmt: Fmt = Option(Fmt.text, "--format", help="text (kafka-dump-log.sh lines) or json (JSON lines)"),
         encoding: Optional[Encoding] = Option(None, "--encoding", help="Key/value encoding (text: utf8, json: base64)"),
         max_bytes: Optional[int] = Option(None, "--max-bytes", min=0, help="Only read batches within the first N bytes"),
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
                                                          help="Decode __remote_log_metadata records")):
    """Print Kafka storage files like kafka-dump-log.sh, or as JSON lines."""
    from kafkaforensics.inspect.dump import DumpOptions, dump as dump_files
    for p in paths:
        if not os.path.isfile(p):
            _fail(f"{p}: no such file")
    decoders = [n for n, on in (("offsets", offsets_decoder), ("transaction-log", transaction_log_decoder),
                                ("cluster-metadata", cluster_metadata_decoder),
                                ("share-group-state", share_group_state_decoder),
                                ("remote-log-metadata", remote_log_metadata_decoder)) if on]
    if len(decoders) > 1:
        _fail("choose one decoder")
    opts = DumpOptions(deep=deep, print_data=print_data, fmt=fmt.value, encoding=encoding.value if encoding else None,
                       max_bytes=max_bytes, verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                       decoder=decoders[0] if decoders else None)
    try:
        res = dump_files(paths, opts)
    except BrokenPipeError:  # `kfx dump ... | head`: stop quietly, as a Unix filter should
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise Exit(EXIT_OK)
    raise Exit(EXIT_PROBLEMS if res.problems else EXIT_OK)


@commands.command()
def verify(paths: List[str] = Argument(..., help="Segment files, partition dirs or log dirs"),
           as_json: bool = Option(False, "--json", help="Print the report as JSON"),
           max_message_bytes: Optional[int] = Option(None, "--max-message-bytes", min=14,
                                                           help="Also flag batches larger than this")):
    """Check CRCs, structure, indexes and checkpoints. Exit 0 clean, 1 problems, 2 usage/IO error."""
    from kafkaforensics.inspect.verify import verify as verify_paths
    _require_paths(paths)
    try:
        rep = _with_progress(paths, "verify", lambda advance: verify_paths(paths, progress=advance,
                                                                           max_batch_bytes=max_message_bytes))
    except OSError as e:
        _fail(str(e))
    if as_json:
        from kafkaforensics.inspect.analyzer import problem_remedy
        j = rep.to_json()
        for d, p in zip(j["problems"], rep.problems):
            d["remedy"] = problem_remedy(p)
        print(json.dumps(j))
    else:
        from cli.plain import print_lines
        if rep.partitions:
            from rich.console import Console
            from rich.table import Table
            t = Table(title="kfx verify")
            for col in ("partition", "segments", "batches", "bytes", "log start", "log end"):
                t.add_column(col, justify="right" if col != "partition" else "left")
            for p in rep.partitions:
                t.add_row(p["partition"], str(p["segments"]), str(p["batches"]), str(p["bytes"]),
                          str(p["logStartOffset"]), str(p["logEndOffset"]))
            Console().print(t)
        print_lines(verify_report_lines(rep))
    raise Exit(EXIT_OK if rep.ok else EXIT_PROBLEMS)


def verify_report_lines(rep) -> list:
    """The lines `kfx verify` prints after its table: notes, problems with their remedies, the total."""
    from cli.plain import Line
    lines = [Line(f"[dim]note: {n}[/dim]", f"note: {n}", [str(n)], highlight=False) for n in rep.notes]
    if rep.problems:
        from kafkaforensics.inspect.analyzer import problem_remedy
        for p in rep.problems:
            remedy = problem_remedy(p)
            lines.append(Line(f"[red]problem:[/red] {p}", f"problem: {p}", [str(p)], highlight=False, soft_wrap=True))
            lines.append(Line(f"  remedy: {remedy}", f"  remedy: {remedy}", [remedy], highlight=False, soft_wrap=True,
                              markup=False))
    total = f"{rep.files} files, {rep.batches} batches, {rep.bytes} bytes: "
    verdict = "OK" if rep.ok else f"{len(rep.problems)} problem(s)"
    lines.append(Line(total + (f"[green]{verdict}[/green]" if rep.ok else f"[red]{verdict}[/red]"), total + verdict))
    return lines


@commands.command()
def write(out: str = Option(..., "--out", help="Partition directory to create (must be new or empty)"),
          segment_bytes: int = Option(DEFAULT_SEGMENT_BYTES, "--segment-bytes", min=14),
          index_interval_bytes: int = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0),
          encoding: Encoding = Option(Encoding.base64, "--encoding", help="Encoding the dump used for keys/values")):
    """Read `kfx dump --deep --format json` lines on stdin and write a valid partition directory."""
    from kafkaforensics.records.batch_json import batches_from_json_lines
    from kafkaforensics.errors import KafkaFormatError
    from kafkaforensics.log.writer import PartitionWriter
    try:
        w = PartitionWriter(out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    except (FileExistsError, OSError) as e:
        _fail(str(e))
    try:
        with w:  # a failure leaves no partial partition behind (the writer aborts)
            for data in batches_from_json_lines(sys.stdin, encoding=encoding.value):
                w.append(data)
    except KafkaFormatError as e:
        _fail(str(e.problem))
    _err().print(f"wrote {w.batches} batches in {len(w.segments)} segment(s) to {out}", highlight=False)


def _print_actions(report_json: dict, title: str) -> None:
    from rich.console import Console
    from rich.table import Table
    out = Console()
    t = Table(title=title)
    for col in ("action", "file", "detail"):
        t.add_column(col)
    for a in report_json["actions"]:
        t.add_row(a["action"], os.path.basename(a["file"]) + (f" -> {os.path.basename(a['target'])}" if a.get("target") else ""),
                  a["detail"])
    if report_json["actions"]:
        out.print(t)
    else:
        out.print(f"{title}: nothing to do")


def _backup_opts(backup_dir, no_backup):
    if backup_dir and no_backup:
        _fail("--backup-dir and --no-backup exclude each other")
    return {"backup": not no_backup, "backup_dir": backup_dir}


@commands.command()
def recover(partition_dir: str = Argument(..., help="A partition directory (topic-N)"),
            dry_run: bool = Option(False, "--dry-run", help="Report what would be done; change nothing"),
            backup_dir: Optional[str] = Option(None, "--backup-dir", help="Where to keep the original files"),
            no_backup: bool = Option(False, "--no-backup", help="Do not keep the original files"),
            index_interval_bytes: int = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0),
            max_message_bytes: Optional[int] = Option(None, "--max-message-bytes", min=14,
                                                            help="Also treat larger batches as corrupt"),
            recovery_point: Optional[int] = Option(None, "--recovery-point", min=0,
                                                         help="First unflushed offset (default: the log dir's checkpoint, else 0)"),
            full: bool = Option(False, "--full", help="Validate every segment, whatever the checkpoint says"),
            as_json: bool = Option(False, "--json")):
    """Do what Kafka's log loading does after an unclean shutdown: finish swaps, truncate, rebuild."""
    from rich.console import Console
    from kafkaforensics.repair.recovery import recover as recover_partition
    if not os.path.isdir(partition_dir):
        _fail(f"{partition_dir}: not a directory")
    try:
        rep = recover_partition(partition_dir, dry_run=dry_run, index_interval_bytes=index_interval_bytes,
                                max_message_bytes=max_message_bytes, recovery_point=recovery_point, full=full,
                                **_backup_opts(backup_dir, no_backup))
    except OSError as e:
        _fail(str(e))
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
    else:
        _print_actions(j, f"kfx recover {rep.partition}" + (" (dry run)" if dry_run else ""))
        if rep.truncated_at:
            t = rep.truncated_at
            Console().print(f"truncated {t['segment']} at byte {t['position']} (log end offset {t['offset']}): "
                            f"{t['reason']}", highlight=False)
        for n in rep.notes:
            Console().print(f"[dim]note: {n}[/dim]", highlight=False)
        if rep.backup:
            Console().print(f"backup: {rep.backup}", highlight=False)
    raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)


@commands.command()
def reindex(path: str = Argument(..., help="A <offset>.log segment or a partition directory"),
            index_interval_bytes: int = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0),
            dry_run: bool = Option(False, "--dry-run"),
            backup_dir: Optional[str] = Option(None, "--backup-dir"),
            no_backup: bool = Option(False, "--no-backup"),
            as_json: bool = Option(False, "--json")):
    """Rebuild .index/.timeindex/.txnindex exactly as Kafka's recovery writes them."""
    from rich.console import Console
    from kafkaforensics.repair.reindex import reindex as reindex_path
    if not os.path.exists(path):
        _fail(f"{path}: no such file or directory")
    try:
        rep = reindex_path(path, index_interval_bytes=index_interval_bytes, dry_run=dry_run,
                           **_backup_opts(backup_dir, no_backup))
    except (OSError, ValueError) as e:
        _fail(str(e))
    j = rep.to_json()
    if as_json:
        print(json.dumps(j))
    else:
        _print_actions(j, "kfx reindex" + (" (dry run)" if dry_run else ""))
        for n in rep.notes:
            Console().print(f"[dim]note: {n}[/dim]", highlight=False)
    raise Exit(EXIT_PROBLEMS if rep.actions else EXIT_OK)


@commands.command()
def salvage(inputs: List[str] = Argument(..., help="Damaged segment files, partition dirs or raw disk images"),
            out: str = Option(..., "--out", help="New partition directory to write (must be new or empty)"),
            segment_bytes: int = Option(DEFAULT_SEGMENT_BYTES, "--segment-bytes", min=14),
            index_interval_bytes: int = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0),
            dry_run: bool = Option(False, "--dry-run", help="Report only; write nothing"),
            as_json: bool = Option(False, "--json")):
    """Recover every valid batch, including those after corrupted regions, into a new partition."""
    from rich.console import Console
    from rich.table import Table
    from kafkaforensics.repair.salvage import salvage as salvage_files
    _require_paths(inputs)
    try:
        rep = _with_progress(inputs, "salvage", lambda advance: salvage_files(
            inputs, out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes, progress=advance,
            dry_run=dry_run))
    except (OSError, ValueError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = Console()
        t = Table(title="recovered offset ranges")
        t.add_column("first", justify="right")
        t.add_column("last", justify="right")
        for r in rep.recovered:
            t.add_row(str(r["first"]), str(r["last"]))
        c.print(t)
        for s in rep.skipped:
            c.print(f"skipped {s['bytes']} bytes of {s['file']} [{s['start']}, {s['end']})", highlight=False)
        for x in rep.conflicts:
            c.print(f"[yellow]conflict:[/yellow] offsets {x['baseOffset']}..{x['lastOffset']} at {x['file']}@{x['position']} "
                    f"differ from the batch kept from {x['keptFile']}@{x['keptPosition']}", highlight=False)
        c.print(f"{rep.batches} batches, {rep.records} records, {rep.duplicates} duplicates"
                + (f" -> {rep.out}" if rep.out else " (dry run)"), highlight=False)
    raise Exit(EXIT_PROBLEMS if (rep.skipped or rep.conflicts) else EXIT_OK)


@commands.command()
def compact(partition_dir: str = Argument(..., help="A partition directory (topic-N)"),
            delete_retention_ms: int = Option(DEFAULT_DELETE_RETENTION_MS, "--delete-retention-ms", min=0),
            min_compaction_lag_ms: int = Option(0, "--min-compaction-lag-ms", min=0),
            max_compaction_lag_ms: Optional[int] = Option(None, "--max-compaction-lag-ms", min=0),
            now: Optional[int] = Option(None, "--now", help="The cleaner's clock, epoch ms (default: now)"),
            segment_bytes: int = Option(DEFAULT_SEGMENT_BYTES, "--segment-bytes", min=14),
            include_active: bool = Option(False, "--include-active", help="Clean the active segment too"),
            ignore_checkpoint: bool = Option(False, "--ignore-checkpoint",
                                                   help="Clean from the log start, not from cleaner-offset-checkpoint"),
            index_interval_bytes: int = Option(DEFAULT_INDEX_INTERVAL_BYTES, "--index-interval-bytes", min=0),
            dedupe_buffer_bytes: int = Option(DEFAULT_DEDUPE_BUFFER_BYTES, "--dedupe-buffer-bytes", min=1024,
                                                    help="Offset map memory (24 bytes a key, as Kafka's)"),
            out: Optional[str] = Option(None, "--out", help="Write the compacted partition here; input untouched"),
            dry_run: bool = Option(False, "--dry-run", help="Report what compaction would do; change nothing"),
            as_json: bool = Option(False, "--json")):
    """Run Kafka's log cleaner offline, with its crash-safe .cleaned/.swap/.deleted file swap."""
    from rich.console import Console
    from rich.table import Table
    from kafkaforensics.repair.cleaner import CompactOptions, compact as compact_partition
    from kafkaforensics.inspect.verify import walk_problems
    if not os.path.isdir(partition_dir):
        _fail(f"{partition_dir}: not a directory")
    opts = CompactOptions(delete_retention_ms=delete_retention_ms, min_compaction_lag_ms=min_compaction_lag_ms,
                          max_compaction_lag_ms=max_compaction_lag_ms, now=now, segment_bytes=segment_bytes,
                          include_active=include_active, index_interval_bytes=index_interval_bytes,
                          dedupe_buffer_bytes=dedupe_buffer_bytes, ignore_checkpoint=ignore_checkpoint)
    try:
        problems = walk_problems(partition_dir)
        rep = compact_partition(partition_dir, opts, out=out, dry_run=dry_run)
    except (OSError, ValueError) as e:
        _fail(str(e))
    j = rep.to_json() | {"problems": [p.to_json() for p in problems]}
    if as_json:
        print(json.dumps(j))
    else:
        c = Console()
        t = Table(title=f"kfx compact {rep.partition}" + (" (dry run)" if dry_run else ""))
        t.add_column("")
        t.add_column("before", justify="right")
        t.add_column("after", justify="right")
        t.add_row("records", str(j["records"]["before"]), str(j["records"]["after"]))
        t.add_row("bytes", str(j["bytes"]["before"]), str(j["bytes"]["after"]))
        t.add_row("dirty ratio", f"{j['dirtyRatio']['before']:.2f}", f"{j['dirtyRatio']['after']:.2f}")
        c.print(t)
        c.print(f"cleaned [{rep.first_dirty_offset}, {rep.end_offset}) in {rep.rounds} round(s); tombstones kept "
                f"{j['tombstones']['kept']} removed {j['tombstones']['removed']}; aborted records removed "
                f"{j['abortedRecordsRemoved']}; markers kept {j['markers']['kept']} removed {j['markers']['removed']}",
                highlight=False)
        for n in rep.notes:
            c.print(f"[dim]note: {n}[/dim]", highlight=False)
        _print_walk_problems(problems)
    raise Exit(EXIT_PROBLEMS if problems else EXIT_OK)


@commands.command()
def retention(partition_dir: str = Argument(..., help="A partition directory (topic-N)"),
              retention_ms: Optional[int] = Option(None, "--retention-ms"),
              retention_bytes: Optional[int] = Option(None, "--retention-bytes"),
              log_start_offset: Optional[int] = Option(None, "--log-start-offset", min=0),
              now: Optional[int] = Option(None, "--now", help="Epoch ms (default: now)"),
              dry_run: bool = Option(False, "--dry-run"),
              as_json: bool = Option(False, "--json")):
    """Apply Kafka's time, size and log-start-offset retention rules (deletion via .deleted renames)."""
    from rich.console import Console
    from rich.table import Table
    from kafkaforensics.errors import KafkaFormatError
    from kafkaforensics.repair.retention import retention as apply_retention
    from kafkaforensics.inspect.verify import walk_problems
    if not os.path.isdir(partition_dir):
        _fail(f"{partition_dir}: not a directory")
    try:
        problems = walk_problems(partition_dir)
        rep = apply_retention(partition_dir, retention_ms=retention_ms, retention_bytes=retention_bytes,
                              log_start_offset=log_start_offset, now=now, dry_run=dry_run)
    except (OSError, ValueError, KafkaFormatError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json() | {"problems": [p.to_json() for p in problems]}))
    else:
        c = Console()
        t = Table(title=f"kfx retention {rep.partition}" + (" (dry run)" if dry_run else ""))
        for col in ("segment", "offsets", "bytes", "largest timestamp", "reason"):
            t.add_column(col)
        for d in rep.deleted:
            t.add_row(d["segment"], f"{d['baseOffset']}..{d['nextOffset'] - 1}", str(d["bytes"]),
                      str(d["largestTimestamp"]), d["reason"])
        c.print(t if rep.deleted else "nothing to delete")
        if rep.rolled:
            c.print(f"rolled a new active segment {rep.rolled}", highlight=False)
        _print_walk_problems(problems)
    raise Exit(EXIT_PROBLEMS if problems else EXIT_OK)


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
def scan(inputs: List[str] = Argument(..., help="Segment files, partition dirs, log dirs or fleets of them "
                                      "(local, file://, hdfs://, s3://, s3a://)"),
         out: str = Option(..., "--out", help="Directory for the Parquet results"),
         master: str = Option("local[*]", "--master", help="Spark master (local[*] runs embedded)"),
         level: Level = Option(Level.batches, "--level", help="Rows to export: batches, records or anomalies"),
         search: Optional[str] = Option(None, "--search", help="Also write records matching this regex"),
         split_bytes: int = Option(DEFAULT_SPLIT_BYTES, "--split-bytes", min=1 << 16,
                                         help="Split segments larger than this at batch boundaries"),
         include_corrupt: bool = Option(False, "--include-corrupt",
                                              help="Export the records of batches whose CRC fails (crcValid false)"),
         s3_endpoint: Optional[str] = Option(None, "--s3-endpoint", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000"),
         s3_access_key: Optional[str] = Option(None, "--s3-access-key", help="S3 access key (else AWS_ACCESS_KEY_ID)"),
         s3_secret_key: Optional[str] = Option(None, "--s3-secret-key", help="S3 secret key (else AWS_SECRET_ACCESS_KEY)"),
         s3_region: Optional[str] = Option(None, "--s3-region", help="S3 region (else AWS_REGION)"),
         topic: List[str] = Option([], "--topic", help="Only this topic (repeatable)"),
         partition: List[int] = Option([], "--partition", help="Only this partition (repeatable)"),
         from_time: Optional[str] = Option(None, "--from-time", help="Records from this time on (epoch ms or ISO 8601, UTC)"),
         to_time: Optional[str] = Option(None, "--to-time", help="Records before this time (exclusive)"),
         from_offset: Optional[int] = Option(None, "--from-offset", help="Records from this offset on"),
         to_offset: Optional[int] = Option(None, "--to-offset", help="Records up to this offset (inclusive)"),
         option: List[str] = Option([], "--option", metavar="KEY=VALUE",
                                    help="Any kafka_segments source option, e.g. timestampDisorderMs=3600000 (repeatable)")):
    """Scan a fleet of segments with Spark, reading it once: export, inventory, anomalies (and search hits) as Parquet."""
    from rich.console import Console
    from rich.table import Table
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    from spark_jobs.common import SHORT_RUN_BYTES, end_session, get_spark, records_class_archive
    from spark_jobs.common import parse_options, window_options
    from spark_jobs.scan import plan, scan as scan_fleet
    from kafkaforensics.spark.storage import MissingInput
    c = Console(stderr=True)
    options = {k: v for k, v in (("includeCorrupt", "true" if include_corrupt else None), ("s3.endpoint", s3_endpoint),
                                 ("s3.accessKey", s3_access_key), ("s3.secretKey", s3_secret_key),
                                 ("s3.region", s3_region)) if v}
    try:
        options.update(window_options(topic, partition, from_time, to_time, from_offset, to_offset))
        options.update(parse_options(option))
        planned = plan(inputs, split_bytes, options)  # lists every input once: a missing one ends here
    except (ValueError, MissingInput) as e:
        _fail(str(e))
    c.print(f"starting Spark ({master})...", highlight=False)
    spark = get_spark(master, console_progress=False, class_archive=True, short_run=planned.bytes <= SHORT_RUN_BYTES)
    if records_class_archive(spark):
        c.print("first run: recording the driver JVM's classes for faster starts (once)", highlight=False)
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} splits"), TimeRemainingColumn(),
                  console=c, transient=True) as bar:
        task = bar.add_task("scanning", total=None)

        def progress(done, total):
            bar.update(task, completed=done, total=total)
        result = scan_fleet(spark, inputs, out, level.value, search, split_bytes, options, progress)
    p = result.plan
    c.print(f"read {p.segments} segments, {p.bytes:,} bytes in {p.splits} splits", highlight=False)
    table = Table(title=f"kfx scan -> {out}")
    for col in ("partition", "broker", "log dir", "segments", "batches", "records", "offsets", "bytes", "codecs",
                "anomalies"):
        table.add_column(col, no_wrap=col == "partition")
    for r in result.inventory:
        offsets = f"{r['firstOffset']}..{r['lastOffset']}" if r["firstOffset"] is not None else "empty"
        table.add_row(f"{r['topic']}-{r['partition']}", "" if r["brokerId"] is None else str(r["brokerId"]),
                      r["logDir"], str(r["segments"]), str(r["batches"]), str(r["records"]),
                      offsets, str(r["bytes"]), ",".join(r["codecs"]), str(r["anomalies"]))
    Console().print(table)
    Console().print(f"{result.rows} {level.value} rows -> {os.path.join(out, level.value)}; {result.anomalies} anomalies"
                    + (f"; {result.hits} search hits -> {os.path.join(out, 'search')}" if result.hits is not None else ""),
                    highlight=False)
    end_session(spark)
    raise Exit(EXIT_PROBLEMS if result.anomalies else EXIT_OK)


@commands.command()
def analyze(paths: List[str] = Argument(..., help="Segments, partition dirs or log dirs"),
            as_json: bool = Option(False, "--json", help="Print the findings as JSON"),
            html_out: Optional[str] = Option(None, "--html", help="Write a self-contained HTML report here"),
            now: Optional[int] = Option(None, "--now", help="Reference time for far-future checks (epoch ms)")):
    """Find damage and suspicious patterns: offsets, timestamps, producers, transactions, leader epochs."""
    from rich.console import Console
    from rich.table import Table
    from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze as analyze_paths
    _require_paths(paths)
    try:
        rep = analyze_paths(paths, AnalyzeOptions(now=now))
    except OSError as e:
        _fail(str(e))
    from kafkaforensics.inspect.report_html import iso
    if html_out:
        from kafkaforensics.inspect.report_html import render
        from kafkaforensics.fsutil import atomic_write
        atomic_write(html_out, render(rep, "kfx analyze " + " ".join(paths), paths).encode())
    if as_json:
        print(json.dumps(rep.to_json()))
        if html_out:
            _err().print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    else:
        c = Console()
        t = Table(title="kfx analyze")
        for col in ("partition", "offsets", "time span", "bytes", "codecs", "producers", "txns c/a/open", "findings"):
            t.add_column(col)
        for p in rep.partitions:
            n = sum(1 for f in rep.findings if f.partition == p.partition and f.severity != "info")
            span = f"{iso(p.first_timestamp)}..{iso(p.last_timestamp)}" if p.first_timestamp is not None else "-"
            tx = p.transactions
            offs = f"{p.log_start_offset}..{p.log_end_offset - 1}" if p.log_start_offset is not None else "-"
            t.add_row(p.partition, offs, span, str(p.bytes),
                      ",".join(sorted(p.codecs)), str(p.producers), f"{tx['committed']}/{tx['aborted']}/{tx['open']}",
                      f"[red]{n}[/red]" if n else "0")
        c.print(t)
        for f in rep.findings:
            style = {"error": "red", "warning": "yellow", "info": "dim"}[f.severity]
            where = " ".join(x for x in (f.offsets_text(), f"@ byte {f.position}" if f.position is not None else "") if x)
            c.print(f"[{style}]{f.severity}[/{style}] {f.partition} {f.kind}" + (f" {where}" if where else "")
                    + f": {f.explanation}", highlight=False, soft_wrap=True)
            if f.remedy:
                c.print(f"  remedy: {f.remedy}", highlight=False, soft_wrap=True, markup=False)
        if html_out:
            c.print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    raise Exit(EXIT_PROBLEMS if rep.problems else EXIT_OK)


@commands.command()
def diff(dir_a: str = Argument(..., help="Replica A (the leader's copy)"),
         dir_b: str = Argument(..., help="Replica B"),
         as_json: bool = Option(False, "--json")):
    """Compare two replicas of a partition: first divergence, one-sided batches, epoch truncation point."""
    from rich.console import Console
    from kafkaforensics.inspect.diff import diff as diff_dirs
    for p in (dir_a, dir_b):
        if not os.path.isdir(p):
            _fail(f"{p}: not a directory")
    rep = diff_dirs(dir_a, dir_b)
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = Console()
        if rep.identical:
            c.print(f"identical: {rep.same_batches} batches, log end offset {rep.log_end_offsets[0]}")
        else:
            c.print(f"first diverging offset: {rep.first_diverging_offset}; same batches before/around: "
                    f"{rep.same_batches}; log end offsets A={rep.log_end_offsets[0]} B={rep.log_end_offsets[1]}",
                    highlight=False)
            for label, items in (("only in A", rep.only_in_a), ("only in B", rep.only_in_b)):
                for x in items[:20]:
                    c.print(f"{label}: offsets {x['baseOffset']}..{x['lastOffset']} (epoch {x['epoch']})", highlight=False)
            for d in rep.different[:20]:
                c.print(f"different bytes: offsets {d['a']['baseOffset']}..{d['a']['lastOffset']} "
                        f"(A crc {d['a']['crc']} epoch {d['a']['epoch']}, B crc {d['b']['crc']} epoch {d['b']['epoch']})",
                        highlight=False)
            c.print(f"truncating B to offset {rep.truncate_b_to} reconciles it with A", highlight=False)
            if rep.epoch_truncation:
                e = rep.epoch_truncation
                c.print(f"by leader epoch (OffsetsForLeaderEpoch): B's epoch {e['epoch']} ends at {e['endOffsetInA']} "
                        f"in A, so B truncates to {e['truncateBTo']}", highlight=False)
    raise Exit(EXIT_OK if rep.identical else EXIT_PROBLEMS)


@commands.command()
def groups(log_dir: str = Argument(..., help="A log dir holding __consumer_offsets-N partitions"),
           as_json: bool = Option(False, "--json"),
           members: bool = Option(False, "--members", help="Also list the members of classic, consumer "
                                        "(KIP-848), share and streams groups")):
    """Latest committed offset of every group/topic/partition, and its lag against the log dir's partitions."""
    from rich.console import Console
    from rich.table import Table
    from kafkaforensics.inspect.groups import committed_offsets, group_members
    if not os.path.isdir(log_dir):
        _fail(f"{log_dir}: not a directory")
    rows = committed_offsets(log_dir)
    mrows = group_members(log_dir) if members else None
    if as_json:
        print(json.dumps({"offsets": rows, **({"members": mrows} if members else {})}))
    else:
        t = Table(title=f"kfx groups {log_dir}")
        for col in ("group", "topic", "partition", "committed", "log end", "lag", "metadata"):
            t.add_column(col)
        for r in rows:
            t.add_row(r["group"], r["topic"], str(r["partition"]), str(r["offset"]),
                      "" if r["logEndOffset"] is None else str(r["logEndOffset"]),
                      "" if r["lag"] is None else str(r["lag"]), r["metadata"])
        Console().print(t)
        if members:
            t = Table(title="members")
            for col in ("group", "protocol", "member", "client", "host", "subscribed", "assigned"):
                t.add_column(col)
            for m in mrows:
                t.add_row(m["group"], m["protocol"], m["memberId"], m["clientId"] or "", m["clientHost"] or "",
                          ",".join(m["subscribedTopics"] or []), " ".join(m["assignment"] or []))
            Console().print(t)
    raise Exit(EXIT_OK)


@commands.command()
def serve(log_dir: str = Argument(..., help="A log dir: every <topic>-<partition> dir is served"),
          host: str = Option("127.0.0.1", "--host"),
          port: int = Option(9092, "--port", min=0, max=65535),
          advertised_host: Optional[str] = Option(None, "--advertised-host"),
          node_id: int = Option(0, "--node-id", min=0),
          writable: bool = Option(False, "--writable", help="Accept Produce, transactions and CreateTopics"),
          auto_create: bool = Option(True, "--auto-create/--no-auto-create",
                                           help="With --writable: create a topic a client names (Kafka's auto.create.topics.enable)"),
          partitions: int = Option(1, "--partitions", min=1, help="Partitions of an auto-created topic (num.partitions)"),
          state_file: Optional[str] = Option(None, "--state-file",
                                                   help="Where committed group offsets persist (default ~/.local/state/kfx/serve/...)")):
    """Serve log directories to real Kafka clients over the Kafka protocol (read-only unless --writable)."""
    import logging
    from kafkaforensics.broker.server import serve_forever
    if not os.path.isdir(log_dir):
        _fail(f"{log_dir}: not a directory")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    try:
        serve_forever(log_dir, host, port, advertised_host, node_id, state_file, writable, auto_create, partitions)
    except KeyboardInterrupt:
        raise Exit(EXIT_OK)
    except OSError as e:
        _fail(str(e))


def main() -> None:
    from cli.fastpath import run  # a plain command line runs without typer
    run(commands, sys.argv[1:])
    commands.typer()()


if __name__ == "__main__":
    main()
