"""``kfx verify``: CRCs, structure, indexes and checkpoints checked; the report's lines (plain or rich)."""
from __future__ import annotations

import json
import os
from functools import partial
from typing import List, Optional

from cli import heavy, plain, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail, with_progress
from cli.declare import Argument, Exit, Option
from cli.options import JSON, KAFKA_VERSION, rules_version
from cli.remote import KEY_FILE, REMOTE, open_remote
from kafkaforensics.inspect import verify as inspect_verify
from kafkaforensics.inspect.remedies import problem_remedy
from kafkaforensics.log import paths as log_paths


def verify(paths: List[str] = Argument(None, metavar="PATH",
                                      help="Segment files, partition dirs or log dirs (none: the --remote tier alone)"),
           as_json: bool = JSON,
           max_message_bytes: Optional[int] = Option(None, "--max-message-bytes", min=14, metavar="BYTES",
                                                           help="Also flag batches larger than this"),
           kafka_version: Optional[str] = KAFKA_VERSION, remote: Optional[str] = REMOTE,
           key_file: List[str] = KEY_FILE):
    """Check CRCs, structure, indexes and checkpoints. Exit 0 clean, 1 problems, 2 usage/IO error."""
    paths = paths or []
    tier = open_remote(remote, key_file)
    if not paths and tier is None:
        fail("give a PATH (a segment file, partition dir or log dir) or --remote URI")
    kv = rules_version(paths[0], kafka_version) if paths and os.path.exists(paths[0]) else None
    run = inspect_verify.verify if tier is None else partial(heavy.both_tiers.verify_tiered, tier=tier)
    try:
        rep = with_progress(paths, "verify", lambda advance: run(paths, progress=advance,
                                                                 max_batch_bytes=max_message_bytes, kafka_version=kv))
    except (OSError, log_paths.PathUsageError) as e:
        fail(str(e))
    if as_json:
        j = rep.to_json()
        for key, items in (("problems", rep.problems), ("warnings", rep.warnings)):
            for d, p in zip(j[key], items):
                d["remedy"] = _remedy(p, tier)
        print(json.dumps(j))
    else:
        if rep.partitions:
            shown = [p for p in rep.partitions if p["batches"]]  # then one line counting the empty ones
            tables.print_table("kfx verify", ("partition", "segments", "batches", "bytes", "log start", "log end"),
                        [(_partition_label(p), p["segments"], p["batches"], p["bytes"], p["logStartOffset"],
                          p["logEndOffset"]) for p in shown], right=range(1, 6))
            if len(shown) < len(rep.partitions):
                print(f"{len(rep.partitions) - len(shown)} partition(s) hold no batches (not listed)")
        if rep.kafka is not None:
            print(rep.kafka.line())
        plain.print_lines(verify_report_lines(rep, tier))
    raise Exit(EXIT_OK if rep.ok else EXIT_PROBLEMS)


def _partition_label(row: dict) -> str:
    """A row's partition, with its tier when the report has a remote tier (``events-0 (remote)``)."""
    return f"{row['partition']} ({row['tier']})" if "tier" in row else row["partition"]


def _remedy(p, tier) -> str:
    """A problem's remedy: the remote tier's (its objects), else its kind's (inspect/remedies.py)."""
    return (tier is not None and heavy.both_tiers.remote_remedy(p, tier)) or problem_remedy(p)


def verify_report_lines(rep, tier=None) -> list:
    """The lines `kfx verify` prints after its table: notes, problems with their remedies, the total."""
    lines = [plain.Line(f"[dim]note: {n}[/dim]", f"note: {n}", [str(n)], highlight=False) for n in rep.notes]
    if rep.problems or rep.warnings:
        for word, style, items in (("warning", "yellow", rep.warnings), ("problem", "red", rep.problems)):
            for p in items:
                remedy = _remedy(p, tier)
                lines.append(plain.Line(f"[{style}]{word}:[/{style}] {p}", f"{word}: {p}", [str(p)], highlight=False,
                                  soft_wrap=True))
                lines.append(plain.Line(f"  remedy: {remedy}", f"  remedy: {remedy}", [remedy], highlight=False,
                                  soft_wrap=True, markup=False))
                if p.caused:  # the index problems this root cause explains, grouped under it
                    why = inspect_verify.caused_line(p.caused)
                    lines.append(plain.Line(f"  {why}", f"  {why}", [why], highlight=False, soft_wrap=True, markup=False))
    total = f"{rep.files} files, {rep.batches} batches, {rep.bytes} bytes: "
    caused = sum(len(p.caused) for p in rep.problems)
    verdict = ("OK" if rep.ok else f"{len(rep.problems)} problem(s)") + (
        f" (and {caused} they cause, grouped under them)" if caused else "") + (
        f", {len(rep.warnings)} warning(s)" if rep.warnings else "")
    lines.append(plain.Line(total + (f"[green]{verdict}[/green]" if rep.ok else f"[red]{verdict}[/red]"), total + verdict,
                                soft_wrap=True))
    return lines

