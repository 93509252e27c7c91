"""``kfx``: every command is a few lines over a public library function.

Exit codes: 0 clean, 1 problems found, 2 usage or I/O error.
"""
from __future__ import annotations

import json
import os
import sys
from enum import Enum
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from kafkaforensics import batch_json
from kafkaforensics.dump import DumpOptions, dump as dump_files
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.verify import verify as verify_paths
from kafkaforensics.writer import DEFAULT_SEGMENT_BYTES, PartitionWriter

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Forensics for Apache Kafka's storage: dump, verify, write, repair.")
err = Console(stderr=True)

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class Fmt(str, Enum):
    text = "text"
    json = "json"


class Encoding(str, Enum):
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


def _fail(msg: str) -> None:
    err.print(f"[red]error:[/red] {msg}", highlight=False)
    raise typer.Exit(EXIT_USAGE)


def _total_bytes(paths) -> int:
    total = 0
    for p in paths:
        if os.path.isdir(p):
            for root, _d, files in os.walk(p):
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
        elif os.path.exists(p):
            total += os.path.getsize(p)
    return total


def progress_bar(total: int, label: str):
    """A rich progress bar on stderr (hidden when stderr is not a terminal)."""
    return Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                    console=err, transient=True, disable=not err.is_terminal)


@app.command()
def dump(paths: List[str] = typer.Argument(..., help="Files to dump (.log .index .timeindex .txnindex .snapshot, checkpoints)"),
         deep: bool = typer.Option(False, "--deep", "--deep-iteration", help="Decode every record"),
         print_data: bool = typer.Option(False, "--print-data", "--print-data-log", help="Print keys and values (implies --deep)"),
         fmt: Fmt = typer.Option(Fmt.text, "--format", help="text (kafka-dump-log.sh lines) or json (JSON lines)"),
         encoding: Optional[Encoding] = typer.Option(None, "--encoding", help="Key/value encoding (text: utf8, json: base64)"),
         max_bytes: Optional[int] = typer.Option(None, "--max-bytes", min=0, help="Only read batches within the first N bytes"),
         verify_index_only: bool = typer.Option(False, "--verify-index-only", help="Check index entries, print only mismatches"),
         index_sanity_check: bool = typer.Option(False, "--index-sanity-check", help="Run Kafka's index sanity check only")):
    """Print Kafka storage files like kafka-dump-log.sh, or as JSON lines."""
    for p in paths:
        if not os.path.isfile(p):
            _fail(f"{p}: no such file")
    opts = DumpOptions(deep=deep, print_data=print_data, fmt=fmt.value, encoding=encoding.value if encoding else None,
                       max_bytes=max_bytes, verify_index_only=verify_index_only, index_sanity_check=index_sanity_check)
    try:
        res = dump_files(paths, opts)
    except BrokenPipeError:  # `kfx dump ... | head`: stop quietly, as a Unix filter should
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(EXIT_PROBLEMS if res.problems else EXIT_OK)


@app.command()
def verify(paths: List[str] = typer.Argument(..., help="Segment files, partition dirs or log dirs"),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
           max_message_bytes: Optional[int] = typer.Option(None, "--max-message-bytes", min=14,
                                                           help="Also flag batches larger than this")):
    """Check CRCs, structure, indexes and checkpoints. Exit 0 clean, 1 problems, 2 usage/IO error."""
    for p in paths:
        if not os.path.exists(p):
            _fail(f"{p}: no such file or directory")
    total = _total_bytes(paths)
    try:
        with progress_bar(total, "verify") as bar:
            task = bar.add_task("verify", total=total)
            rep = verify_paths(paths, progress=lambda n: bar.advance(task, n), max_batch_bytes=max_message_bytes)
    except OSError as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        out = Console()
        t = Table(title="kfx verify")
        for col in ("partition", "segments", "batches", "bytes", "log start", "log end"):
            t.add_column(col, justify="right" if col != "partition" else "left")
        for p in rep.partitions:
            t.add_row(p["partition"], str(p["segments"]), str(p["batches"]), str(p["bytes"]),
                      str(p["logStartOffset"]), str(p["logEndOffset"]))
        if rep.partitions:
            out.print(t)
        for n in rep.notes:
            out.print(f"[dim]note: {n}[/dim]", highlight=False)
        for p in rep.problems:
            out.print(f"[red]problem:[/red] {p}", highlight=False)
        out.print(f"{rep.files} files, {rep.batches} batches, {rep.bytes} bytes: "
                  + ("[green]OK[/green]" if rep.ok else f"[red]{len(rep.problems)} problem(s)[/red]"))
    raise typer.Exit(EXIT_OK if rep.ok else EXIT_PROBLEMS)


@app.command()
def write(out: str = typer.Option(..., "--out", help="Partition directory to create (must be new or empty)"),
          segment_bytes: int = typer.Option(DEFAULT_SEGMENT_BYTES, "--segment-bytes", min=14),
          index_interval_bytes: int = typer.Option(4096, "--index-interval-bytes", min=0),
          encoding: Encoding = typer.Option(Encoding.base64, "--encoding", help="Encoding the dump used for keys/values")):
    """Read `kfx dump --deep --format json` lines on stdin and write a valid partition directory."""
    try:
        w = PartitionWriter(out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    except (FileExistsError, OSError) as e:
        _fail(str(e))
    try:
        for lineno, line in enumerate(sys.stdin, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise KafkaFormatError("json", f"line {lineno}: {e}") from None
            if not isinstance(obj, dict) or "baseOffset" not in obj:
                continue  # index entries and the like: not batches
            try:
                w.append(batch_json.batch_from_json(obj, encoding=encoding.value))
            except KafkaFormatError as e:
                raise KafkaFormatError(e.kind, f"line {lineno}: {e.problem.detail}", offset=e.problem.offset) from None
        w.close()
    except KafkaFormatError as e:
        w.abort()
        _fail(str(e.problem))
    except BaseException:
        w.abort()
        raise
    err.print(f"wrote {w.batches} batches in {len(w.segments)} segment(s) to {out}", highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
